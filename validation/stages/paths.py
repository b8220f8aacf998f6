"""Path baselines: what each storage path (DGX <- PowerScale, iperf3 with the mount's nconnect streams) and each
compute-fabric pair (ib_write_bw per HCA; the lab: iperf3 over cfab0) carries, measured in the same run and judged
from a run directory (called by validation.verdict.evaluate). The other stages' fio, NCCL and DDP thresholds are
fractions of them. The array's own throughput is validation/stages/telemetry.py, the host's capacity and the
trainings' utilisation validation/stages/utilisation.py, the "where is the limit" section validation/stages/limit.py.

Raw layout (besides the other stages' own, see validation/verdict.py)::

    raw/paths/storage-<node>/       iperf3 -R from the storage side to <node>, that node alone (meta.json, r<k>.json)
    raw/paths/storage-all-<node>/   the same with every DGX at once (the aggregate baseline is their sum)
    raw/paths/fabric-<a>-<b>/       the compute-fabric pair a -> b: iperf3 (lab: over cfab0) or ib_write_bw per
                                    HCA (<hca>-r1.txt)

Everything expected but missing, failed or unparseable is a FAIL with its reason, or (where the issue allows a
flag) an INFO that says what is missing; never a silent PASS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .. import asked, parse_iperf3, parse_perftest
from ..checks import (
    FAIL,
    PASS,
    Check,
    _case_preamble,
    _load_meta,
    _perf_check,
    _sample_problems,
    judge_guard,
    judge_site,
    read_sample,
    ring_pairs,
)
from ..site import Measured, Site
from ..thresholds import (
    ThresholdError,
    hcas_x_link_rate_GBps,
    node_bottleneck_link_MBps,
    server_nics_for,
)

STORAGE, STORAGE_ALL, FABRIC = "storage", "storage-all", "fabric"
@dataclass(frozen=True)
class PathCase:
    case: str
    kind: str           # storage | storage-all | fabric
    nodes: tuple[str, ...]


def fabric_pairs(nodes: list[str]) -> list[tuple[str, str]]:
    """The compute-fabric pairs measured: the ring neighbours (as NCCL's pair cases), or the one pair of two nodes."""
    if len(nodes) == 2:
        return [(nodes[0], nodes[1])]
    return ring_pairs(nodes)


def expected_path_cases(nodes: list[str]) -> list[PathCase]:
    cases = [PathCase(f"storage-{n}", STORAGE, (n,)) for n in nodes]
    if len(nodes) > 1:
        cases += [PathCase(f"storage-all-{n}", STORAGE_ALL, (n,)) for n in nodes]
    cases += [PathCase(f"fabric-{a}-{b}", FABRIC, (a, b)) for a, b in fabric_pairs(nodes)]
    return cases


# ---------------------------------------------------------------------------------------------- baselines


@judge_guard("paths", lambda: ([],))
def judge_path_case(case_dir: Path, case: str, repeats: int | None = None) -> tuple[Check, list[float | None]]:
    """Sanity of one baseline case; returns (check, per-sample value): MB/s for a storage path, GB/s for a
    compute-fabric pair (iperf3's received throughput, or the sum over the HCAs of ib_write_bw's average)."""
    meta = _load_meta(case_dir)
    check, ok = _case_preamble("paths", case, meta, False)
    values: list[float | None] = []
    if not ok:
        return check, values
    assert meta is not None
    tool = meta.get("tool")
    fabric = meta.get("kind") == FABRIC
    if tool == "ib_write_bw":
        return _judge_ib(case_dir, check, meta)
    if tool != "iperf3":
        check.status = FAIL
        check.reasons.append(f"meta.json names no known tool ({tool!r}; iperf3 or ib_write_bw)")
        return check, values
    early = asked.repeat_problems("iperf3", meta, case_dir, repeats)
    if early:
        check.status = FAIL
        check.reasons.extend(early)
    for sample in meta["samples"]:
        problems, result = read_sample(case_dir, meta, sample, parse_iperf3.parse, (parse_iperf3.Iperf3ParseError,))
        tag = sample.get("file")
        value = None
        if result is not None:
            problems.extend(f"{tag}: {p}" for p in parse_iperf3.problems(result))
            problems.extend(f"{tag}: {p}" for p in asked.problems("iperf3", meta, parse_iperf3.done(result)))
            mbps = result.received_MBps
            value = None if mbps is None else (mbps / 1000 if fabric else mbps)
        if problems:
            check.status = FAIL
            check.reasons.extend(problems)
            value = None
        values.append(value)
    return check, values


def _judge_ib(case_dir: Path, check: Check, meta: dict[str, Any]) -> tuple[Check, list[float | None]]:
    devices = [str(d) for d in (asked.asked_of(meta) or {}).get("devices") or []]
    if not devices:
        check.status = FAIL
        check.reasons.append("meta.json names no HCA: which links were asked for cannot be checked")
        return check, [None]
    total = 0.0
    problems: list[str] = asked.repeat_problems("ib_write_bw", meta, case_dir, None)
    by_device = {str(s.get("device")): s for s in meta["samples"]}
    for dev in devices:
        sample = by_device.get(dev)
        if sample is None:
            problems.append(f"{dev}: not measured (no sample)")
            continue
        problems.extend(_sample_problems(meta, sample))
        path = case_dir / str(sample.get("file") or "")
        try:
            run = parse_perftest.parse(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            problems.append(f"{sample.get('file')}: raw output missing")
            continue
        except parse_perftest.PerftestParseError as exc:
            problems.append(f"{sample.get('file')}: unparseable: {exc}")
            continue
        problems.extend(f"{dev}: {p}" for p in parse_perftest.problems(run))
        problems.extend(f"{dev}: {p}" for p in asked.problems("ib_write_bw", meta, parse_perftest.done(run), sample))
        total += run.average_gbps() or 0.0
    if problems:
        check.status = FAIL
        check.reasons.extend(problems)
        return check, [None]
    return check, [total / 8]


def measured_baselines(checks: list[Check]) -> Measured:
    """The baselines of this run that passed their sanity, for the thresholds derived from them."""
    storage: dict[str, float] = {}
    fabric: dict[str, float] = {}
    aggregate: float | None = None
    for c in checks:
        if c.kind != "performance" or c.value is None or c.name not in ("path_storage_MBps", "path_fabric_GBps",
                                                                          "path_storage_aggregate_MBps"):
            continue
        if c.name == "path_storage_MBps" and c.instance:
            storage[c.instance] = c.value
        elif c.name == "path_fabric_GBps" and c.instance:
            fabric[c.instance] = c.value
        elif c.name == "path_storage_aggregate_MBps":
            aggregate = c.value
    return Measured(judged=True, storage=MappingProxyType(storage), storage_aggregate=aggregate,
                    fabric=MappingProxyType(fabric))


def judge_paths(site: Site, paths_dir: Path, baseline: dict[str, float]) -> tuple[list[Check], dict[str, Any]]:
    """Every baseline case of the run: sanity, then the metric (path_storage_MBps per node, the aggregate,
    path_fabric_GBps per pair); returns the checks and the plot series."""
    checks: list[Check] = []
    series: dict[str, Any] = {"storage_MBps": {}, "storage_aggregate_MBps": None, "fabric_GBps": {},
                              "nominal_storage_MBps": {}, "nominal_fabric_GBps": {}, "paths": {}}
    concurrent: dict[str, list[float | None]] = {}
    nodes, lab, repeats = list(site.nodes), site.lab, site.repeats
    for pc in expected_path_cases(nodes):
        sanity, samples = judge_path_case(paths_dir / pc.case, pc.case, repeats)
        meta = _load_meta(paths_dir / pc.case) or {}
        if meta.get("tool") in asked.load():
            judge_site(sanity, str(meta["tool"]), paths_dir / pc.case, site, pc.nodes)
        checks.append(sanity)
        if pc.kind == STORAGE_ALL:
            concurrent[pc.nodes[0]] = samples if sanity.status == PASS else [None]
            continue
        if pc.kind == STORAGE:
            node = pc.nodes[0]
            perf = _perf_check(site, "path_storage_MBps", node, samples, sanity.status == PASS, lab, baseline, pc.case)
            series["storage_MBps"][node] = perf.value
            series["nominal_storage_MBps"][node] = _nominal_storage(site, node)
        else:
            pair = "+".join(pc.nodes)
            perf = _perf_check(site, "path_fabric_GBps", pair, samples, sanity.status == PASS, lab, baseline, pc.case)
            series["fabric_GBps"][pair] = perf.value
            series["nominal_fabric_GBps"][pair] = _nominal_fabric(site, list(pc.nodes), lab)
        series["paths"][pc.case] = str(meta.get("path") or pc.case)
        checks.append(perf)
    if len(nodes) > 1:
        counts = {len(v) for v in concurrent.values()}
        rounds = max(counts) if counts else 0
        sums: list[float | None] = []
        for k in range(rounds):
            parts = [v[k] if k < len(v) else None for v in concurrent.values()]
            sums.append(None if len(parts) < len(nodes) or any(p is None for p in parts)
                        else sum(p for p in parts if p is not None))
        ok = bool(sums) and any(s is not None for s in sums) and len(concurrent) == len(nodes)
        agg = _perf_check(site, "path_storage_aggregate_MBps", None, sums or [None], ok, lab, baseline,
                          "storage-all")
        if not ok:
            agg.reasons.append("every DGX's concurrent storage baseline must have run and parsed (storage-all-*)")
        checks.append(agg)
        series["storage_aggregate_MBps"] = agg.value
    return checks, series


def _nominal_storage(site: Site, node: str) -> float | None:
    try:
        return node_bottleneck_link_MBps(site, node)[0]
    except ThresholdError:
        return None


def _nominal_fabric(site: Site, nodes: list[str], lab: bool) -> float | None:
    if lab:
        return None  # the lab's cfab0 is a virtual cable: no line rate to compare with
    try:
        return hcas_x_link_rate_GBps(site, nodes)[0]
    except ThresholdError:
        return None


def storage_path_text(site: Site, node: str) -> str:
    """'dgx01 -> powerscale01/storage0' (the PowerScale NIC the node mounts), or the node alone."""
    try:
        ends = ", ".join(f"{n}/{nic.name}" for n, nic in server_nics_for(site, node))
    except ThresholdError:
        return f"{node} -> storage"
    return f"{node} -> {ends}"
