"""Acceptance thresholds as data, and the ceilings derived from the inventory's topology.

A threshold entry (group_vars ``acceptance_thresholds``)::

    {metric, stage, floor?, ceiling?: {derive, fraction}, measured?: {derive, fraction}, baseline?: bool, source}

- ``floor``: the value must be >= floor (absolute, in the metric's unit).
- ``ceiling``: the value must be >= fraction x a ceiling derived from the topology (``derive`` below).
- ``measured``: the value must be >= fraction x a ceiling measured in the same run (``MEASURED`` below: the path
  baselines of validation/stages/paths.py, which the verdict puts in the Site (``Site.measured``) before judging).
- ``baseline``: compare with the same metric in an earlier run's report.json (``acceptance_baseline``);
  on by default when a baseline path is set.
Every bound carries the entry's ``source`` so the report says where each number comes from.

Which metric an entry may name, its stage and its unit: validation/metrics.yml (validation.metrics). Units: NCCL
bus bandwidth in GB/s (1e9 B/s, as nccl-tests prints), fio in MB/s (1e6 B/s, as the reference reports), link rates
in Gb/s (1e9 bit/s).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .metrics import threshold_metrics
from .site import Measured, Nic, Site


class ThresholdError(ValueError):
    """A threshold entry or the topology it needs is wrong; the message names the variable and the fix."""


@dataclass(frozen=True)
class Bound:
    kind: str          # floor | ceiling | measured | baseline | outlier (value >= limit); at_most (value <= limit)
    limit: float       # the value must be >= limit
    source: str
    detail: str = ""   # how the limit was computed

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "limit": self.limit, "source": self.source, "detail": self.detail}


def gbps_to_MBps(gbit_per_s: float) -> float:
    return gbit_per_s * 1e9 / 8 / 1e6


def _links_gbps(nics: Iterable[Nic]) -> float:
    return float(sum(float(n.speed_gbps or 0) for n in nics))


def powerscale_nics(site: Site) -> list[tuple[str, Nic]]:
    """Every PowerScale storage NIC in inventory order, as (node, nic)."""
    out = []
    for node, hv in site.storage.powerscale.items():
        for nic in hv.storage_nics:
            out.append((node, nic))
    return out


def server_nics_for(site: Site, dgx: str) -> list[tuple[str, Nic]]:
    """The PowerScale NIC(s) a DGX's NFS traffic goes to, per nfs_server_mode."""
    storage = site.storage
    mode = storage.mode
    if mode == "static":  # the mapped node's own NICs: a lookup, not a walk over every NIC (N x M at scale)
        entry = storage.server_map.get(dgx)
        host = storage.powerscale.get(entry.node) if entry is not None and entry.node is not None else None
        match = [(str(entry.node), nic) for nic in (host.storage_nics if host else ())
                 if entry is not None and nic.name == entry.nic]
        if match:
            return match
    all_nics = powerscale_nics(site)
    if not all_nics:
        raise ThresholdError("no PowerScale storage_nics in the inventory: cannot derive a storage ceiling "
                             "(fix: list the powerscale hosts with their storage_nics in hosts.yml)")
    if mode == "static":
        entry = storage.server_map.get(dgx)
        if not entry:
            raise ThresholdError(f"{dgx}: nfs_server_map has no entry for this DGX (nfs_server_mode static); "
                                 f"fix: add {dgx}: {{node: ..., nic: ...}} to nfs_client.yml")
        match = [(n, nic) for n, nic in all_nics if n == entry.node and nic.name == entry.nic]
        if not match:
            raise ThresholdError(f"{dgx}: nfs_server_map names {entry.node}/{entry.nic}, "
                                 "which is not a PowerScale storage NIC in hosts.yml")
        return match
    if mode == "round_robin":
        dgx_order = sorted(site.dgx) if dgx not in site.nodes else list(site.nodes)
        return [all_nics[dgx_order.index(dgx) % len(all_nics)]]
    if mode == "smartconnect":
        # One mount resolves to one pool address at a time: the slowest NIC in the pool bounds a client.
        pool = storage.smartconnect_interfaces
        used = [(n, nic) for n, nic in all_nics if not pool or nic.name in pool]
        slowest = min(used, key=lambda item: float(item[1].speed_gbps or 0))
        return [slowest]
    raise ThresholdError(f"nfs_server_mode={mode!r} is not one of static | round_robin | smartconnect")


def node_bottleneck_link_MBps(site: Site, dgx: str | None) -> tuple[float, str]:
    """Ceiling for one DGX's NFS read: min(its storage links, the PowerScale NIC(s) it mounts through)."""
    hv = site.dgx.get(dgx) if dgx is not None else None
    if hv is None or dgx is None:
        raise ThresholdError(f"{dgx}: not a DGX of this run's inventory")
    client = _links_gbps(hv.storage_nics)
    server_nics = server_nics_for(site, dgx)
    server = _links_gbps([nic for _n, nic in server_nics])
    if client <= 0 or server <= 0:
        raise ThresholdError(f"{dgx}: storage link speeds missing (speed_gbps) for the client or its PowerScale NIC")
    gbps = min(client, server)
    names = ", ".join(f"{n}/{nic.name} {nic.speed_gbps} Gb/s" for n, nic in server_nics)
    return gbps_to_MBps(gbps), f"min({dgx} {client:g} Gb/s, {names}) = {gbps:g} Gb/s"


def aggregate_links_MBps(site: Site, nodes: Sequence[str]) -> tuple[float, str]:
    """Ceiling for the aggregate read: min(sum of the clients' links, sum of the storage links in use)."""
    client = sum(_links_gbps(hv.storage_nics if hv is not None else ()) for hv in (site.dgx.get(n) for n in nodes))
    if site.storage.mode == "smartconnect":
        pool = site.storage.smartconnect_interfaces
        in_use = {(n, nic.name): nic for n, nic in powerscale_nics(site) if not pool or nic.name in pool}
    else:
        in_use = {}
        for dgx in nodes:
            for n, nic in server_nics_for(site, dgx):
                in_use[(n, nic.name)] = nic
    storage = _links_gbps(list(in_use.values()))
    gbps = min(client, storage)
    return gbps_to_MBps(gbps), (f"min(clients {client:g} Gb/s, {len(in_use)} PowerScale links in use "
                                f"{storage:g} Gb/s) = {gbps:g} Gb/s")


def hcas_x_link_rate_GBps(site: Site, nodes: Sequence[str]) -> tuple[float, str]:
    """Ceiling for multi-node all-reduce bus bandwidth: HCAs per node x per-link rate (in GB/s)."""
    rates = []
    for n in nodes:
        hv = site.dgx.get(n)
        model_name = hv.model if hv is not None else None
        model = site.model_of(n)
        hcas = int(model.hcas or 0)
        rate = float(model.hca_rate_gbps or site.ib_rate_gbps or 0)
        if hcas <= 0 or rate <= 0:
            raise ThresholdError(f"{n}: dgx_model {model_name!r} has {hcas} HCAs at {rate:g} Gb/s: no "
                                 "compute-fabric ceiling can be derived (fix: drop 'ceiling' from this threshold "
                                 "or set hcas/hca_rate_gbps in dgx_models)")
        rates.append((hcas, rate))
    hcas, rate = min(rates)
    return hcas * rate / 8, f"{hcas} HCAs x {rate:g} Gb/s = {hcas * rate / 8:g} GB/s"


def _measured(site: Site) -> Measured:
    if not site.measured.judged:
        raise ThresholdError("no path baseline was measured in this run (validation_stages.paths disabled, or "
                             "the baselines failed: see paths_sanity)")
    return site.measured


def storage_path_baseline_MBps(site: Site, instance: str | None) -> tuple[float, str]:
    """This run's iperf3 baseline of a node's storage path (instance = node), or of every DGX at once (None)."""
    measured = _measured(site)
    value: float | None
    if instance is None and measured.storage_aggregate is None and len(site.nodes) == 1:
        # One DGX: every DGX at once is that DGX alone, the baseline the paths stage measured (it runs no second,
        # identical storage-all case).
        node = site.nodes[0]
        value = measured.storage.get(node)
        what = f"the storage path baseline of {node}, the only DGX (every DGX at once)"
    elif instance is None:
        value = measured.storage_aggregate
        what = "the aggregate storage baseline (every DGX at once)"
    else:
        value = measured.storage.get(instance)
        what = f"the storage path baseline of {instance}"
    if not isinstance(value, (int, float)) or value <= 0:
        raise ThresholdError(f"{what} was not measured in this run (see paths_sanity): nothing to compare with")
    return float(value), f"{what} {value:.4g} MB/s (iperf3, this run)"


def fabric_path_baseline_GBps(site: Site, instance: str | None) -> tuple[float, str]:
    """This run's compute-fabric baseline of a pair (instance = 'a+b'), or the slowest pair (all nodes)."""
    fabric = _measured(site).fabric
    if instance is not None and "+" in instance:
        value = fabric.get(instance)
        if not isinstance(value, (int, float)) or value <= 0:
            raise ThresholdError(f"the compute-fabric baseline of {instance} was not measured in this run "
                                 "(see paths_sanity): nothing to compare with")
        return float(value), f"the fabric baseline of {instance} {value:.4g} GB/s (this run)"
    values = {k: v for k, v in fabric.items() if isinstance(v, (int, float)) and v > 0}
    if not values:
        raise ThresholdError("no compute-fabric baseline was measured in this run (see paths_sanity)")
    pair = min(values, key=lambda k: values[k])
    return float(values[pair]), f"the slowest fabric baseline, {pair} {values[pair]:.4g} GB/s (this run)"


def host_scaling(site: Site, instance: str | None) -> tuple[float, str]:
    """The efficiency the machine itself gives N nodes training side by side without DDP (speedup / N, this run):
    the ideal a DDP scaling efficiency is judged against where the nodes share a host (the lab)."""
    value = site.measured.host_scaling
    if value is None and len(site.nodes) == 1:
        # One node: N nodes side by side is that node alone, speedup 1 / N = 1 by definition (the training without
        # DDP is not run: validation/stages/utilisation.py judge_host_scaling).
        return 1.0, "the host's own scaling efficiency at one node, 1 by definition"
    if not isinstance(value, (int, float)) or value <= 0:
        raise ThresholdError("the host's capacity (the training without DDP on every node at once, "
                             "validation_ddp.host_scaling) was not measured in this run: nothing to compare with")
    return float(value), f"the host's own scaling efficiency {value:.3g} (every node training without DDP, this run)"


MEASURED: dict[str, Callable[[Site, str | None], tuple[float, str]]] = {
    "storage_path_baseline": storage_path_baseline_MBps,
    "fabric_path_baseline": fabric_path_baseline_GBps,
    "host_scaling": host_scaling,
}

DERIVATIONS: dict[str, Callable[[Site, str | None, Sequence[str]], tuple[float, str]]] = {
    "node_bottleneck_link": lambda site, instance, nodes: node_bottleneck_link_MBps(site, instance),
    "aggregate_links": lambda site, instance, nodes: aggregate_links_MBps(site, nodes),
    "hcas_x_link_rate": lambda site, instance, nodes: hcas_x_link_rate_GBps(
        site, instance.split("+") if instance and "+" in instance else nodes),
}


def check_entry(entry: Mapping[str, Any], index: int) -> None:
    """Reject a malformed threshold entry with a message that names it and says how to fix it."""
    where = f"acceptance_thresholds[{index}] ({entry.get('metric')!r})"
    known = threshold_metrics()
    if entry.get("metric") not in known:
        raise ThresholdError(f"{where}: unknown metric; known: {', '.join(sorted(known))}")
    if not entry.get("source"):
        raise ThresholdError(f"{where}: every threshold records its source (fix: add source: \"...\")")
    if "floor" not in entry and "ceiling" not in entry and "measured" not in entry and not entry.get("baseline"):
        raise ThresholdError(f"{where}: give at least one of floor, ceiling, measured or baseline")
    if "floor" in entry and not isinstance(entry["floor"], (int, float)):
        raise ThresholdError(f"{where}: floor={entry['floor']!r} is not a number")
    ceiling = entry.get("ceiling")
    if ceiling is not None:
        if not isinstance(ceiling, dict) or ceiling.get("derive") not in DERIVATIONS:
            raise ThresholdError(f"{where}: ceiling.derive must be one of {', '.join(DERIVATIONS)}")
        frac = ceiling.get("fraction")
        if not isinstance(frac, (int, float)) or not 0 < frac <= 1.5:
            raise ThresholdError(f"{where}: ceiling.fraction={frac!r} must be a number in (0, 1.5]")
    measured = entry.get("measured")
    if measured is not None:
        if not isinstance(measured, dict) or measured.get("derive") not in MEASURED:
            raise ThresholdError(f"{where}: measured.derive must be one of {', '.join(MEASURED)}")
        frac = measured.get("fraction")
        if not isinstance(frac, (int, float)) or not 0 < frac <= 1.5:
            raise ThresholdError(f"{where}: measured.fraction={frac!r} must be a number in (0, 1.5]")


def bounds_for(site: Site, metric: str, instance: str | None,
               baseline_value: float | None = None) -> list[Bound]:
    """Every bound configured for one metric instance. Raises ThresholdError when one cannot be derived."""
    nodes = site.nodes
    out: list[Bound] = []
    acceptance = site.acceptance
    for index, entry in enumerate(acceptance.thresholds):
        if entry.get("metric") != metric:
            continue
        check_entry(entry, index)
        source = str(entry["source"])
        if "floor" in entry:
            out.append(Bound("floor", float(entry["floor"]), source, f"floor {entry['floor']}"))
        if entry.get("ceiling"):
            derive = entry["ceiling"]["derive"]
            fraction = float(entry["ceiling"]["fraction"])
            ceiling, how = DERIVATIONS[derive](site, instance, nodes)
            out.append(Bound("ceiling", round(fraction * ceiling, 6), source, f"{fraction:g} x {how}"))
        if entry.get("measured"):
            fraction = float(entry["measured"]["fraction"])
            value, how = MEASURED[entry["measured"]["derive"]](site, instance)
            out.append(Bound("measured", round(fraction * value, 6), source, f"{fraction:g} x {how}"))
        wants_baseline = entry.get("baseline", bool(acceptance.baseline_path))
        if wants_baseline and baseline_value is not None:
            pct = acceptance.max_regression_pct
            out.append(Bound("baseline", baseline_value * (1 - pct / 100), f"baseline {acceptance.baseline_path}",
                             f"{baseline_value:g} - {pct:g}%"))
    return out
