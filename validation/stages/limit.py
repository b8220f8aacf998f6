"""Where is the limit: per path, each layer as a fraction of the one below it (nominal link -> measured baseline ->
fio / NCCL -> the training), and one diagnosis line per node naming the lowest layer that failed (called by
validation.verdict after every stage is judged).
"""

from __future__ import annotations

import math
from typing import Any

from ..checks import (
    FAIL,
    Check,
)
from ..site import Site
from .paths import FABRIC, STORAGE, storage_path_text
from .telemetry import record_bytes

# The layers of a path, from the wire up: the diagnosis names the lowest layer that failed.
LAYER_OF = {
    "path_storage_MBps": "network", "path_storage_aggregate_MBps": "network", "path_fabric_GBps": "network",
    "paths_sanity": "network",
    "fio_node_read_MBps": "protocol", "fio_aggregate_read_MBps": "protocol", "fio_sanity": "protocol",
    "nccl_pair_busbw_gbps": "protocol", "nccl_multi_node_busbw_gbps": "protocol",
    "nccl_single_node_busbw_gbps": "protocol", "nccl_sanity": "protocol",
    "fio_array_over_client": "array", "array_sanity": "array",
    "ddp_scaling_efficiency": "application", "ddp_real_over_synthetic": "application",
    "ddp_real_util_pct": "application", "ddp_sanity": "application",
}
LAYER_ORDER = ("network", "protocol", "array", "application")
LAYER_TEXT = {"network": "network path", "protocol": "protocol (NFS / collective)", "array": "storage array",
              "application": "application (training)"}



# ---------------------------------------------------------------------------------------------- where is the limit


def _fraction(upper: float | None, lower: float | None) -> float | None:
    if upper is None or lower is None or lower <= 0 or not math.isfinite(upper):
        return None
    return round(upper / lower, 4)


class _Indexed(list[Check]):
    """The checks with their first check and first performance check per (name, instance): where_is_the_limit
    looks up a few per node, a walk over all of them each time cost N x checks (quadratic at 560 nodes)."""

    def __init__(self, checks: list[Check]) -> None:
        super().__init__(checks)
        self.first: dict[tuple[str, str | None], Check] = {}
        self.performance: dict[tuple[str, str | None], Check] = {}
        for c in checks:
            self.first.setdefault((c.name, c.instance), c)
            if c.kind == "performance":
                self.performance.setdefault((c.name, c.instance), c)


def _value(checks: list[Check], name: str, instance: str | None) -> float | None:
    if isinstance(checks, _Indexed):
        found = checks.performance.get((name, instance))
        return found.value if found is not None else None
    return next((c.value for c in checks if c.name == name and c.instance == instance and c.kind == "performance"),
                None)


def _layer(name: str, value: float | None, unit: str, below: float | None, status: str | None) -> dict[str, Any]:
    return {"layer": name, "value": value, "unit": unit, "fraction_of_below": _fraction(value, below),
            "status": status}


def _status(checks: list[Check], name: str, instance: str | None) -> str | None:
    if isinstance(checks, _Indexed):
        found = checks.first.get((name, instance))
        return found.status if found is not None else None
    return next((c.status for c in checks if c.name == name and c.instance == instance), None)


def where_is_the_limit(checks: list[Check], series: dict[str, Any], site: Site) -> dict[str, Any]:
    """Per path, each layer as a fraction of the one below it (nominal link -> measured baseline -> fio / NCCL ->
    the training), and one diagnosis line per node (or for the cluster) naming the lowest layer that failed."""
    checks = _Indexed(checks)
    nodes = list(site.nodes)
    paths = series.get("paths") or {}
    ddp = series.get("ddp") or {}
    image = site.settings.ddp_image_size
    rows: list[dict[str, Any]] = []
    for node in nodes:
        nominal = paths.get("nominal_storage_MBps", {}).get(node)
        base = _value(checks, "path_storage_MBps", node)
        fio = _value(checks, "fio_node_read_MBps", node)
        layers = [_layer("link (nominal)", nominal, "MB/s", None, None),
                  _layer("network (iperf3)", base, "MB/s", nominal, _status(checks, "path_storage_MBps", node)),
                  _layer("NFS read (fio)", fio, "MB/s", base, _status(checks, "fio_node_read_MBps", node))]
        array = next((r for r in series.get("array") or [] if r.get("node") == node), None)
        if array is not None:
            layers.append(_layer("array sent during that read (its own counters)", array.get("array_MBps"), "MB/s",
                                 array.get("client_MBps"), _status(checks, "fio_array_over_client", node)))
        if node == nodes[0] and ddp.get("real") and image:
            real = ddp["real"][0]
            consumed = real * record_bytes(image) / 1e6 if real else None
            layers.append(_layer("training reads (DDP real data, 1 node)", consumed, "MB/s", fio,
                                 _status(checks, "ddp_real_over_synthetic", "1 node")))
        rows.append({"path": storage_path_text(site, node), "kind": STORAGE, "nodes": [node], "layers": layers})
    for pair, value in (paths.get("fabric_GBps") or {}).items():
        a_b = pair.split("+")
        nominal = paths.get("nominal_fabric_GBps", {}).get(pair)
        busbw = _value(checks, "nccl_pair_busbw_gbps", pair) if len(nodes) > 2 else \
            _value(checks, "nccl_multi_node_busbw_gbps", None)
        metric = "nccl_pair_busbw_gbps" if len(nodes) > 2 else "nccl_multi_node_busbw_gbps"
        layers = [_layer("link (nominal)", nominal, "GB/s", None, None),
                  _layer("network (baseline)", value, "GB/s", nominal, _status(checks, "path_fabric_GBps", pair)),
                  _layer("all-reduce busbw (NCCL)", busbw, "GB/s", value,
                         _status(checks, metric, pair if len(nodes) > 2 else None))]
        eff = _value(checks, "ddp_scaling_efficiency", None)
        layers.append({"layer": "training scaling efficiency (DDP)", "value": eff, "unit": "ratio",
                       "fraction_of_below": None, "status": _status(checks, "ddp_scaling_efficiency", None)})
        rows.append({"path": f"{a_b[0]} -> {a_b[-1]} (compute fabric)", "kind": FABRIC, "nodes": a_b,
                     "layers": layers})
    return {"paths": rows, "diagnosis": diagnose(checks, site)}


def _touches(check: Check, node: str) -> bool:
    inst = check.instance or ""
    return inst == node or node in inst.split("+") or inst.startswith(f"{node} (") or check.case in (
        f"node-{node}", f"storage-{node}", f"storage-all-{node}", f"single-{node}")


def diagnose(checks: list[Check], site: Site) -> list[str]:
    """One line per node with a failure (and one for failures of the whole cluster): the lowest failing layer,
    the metric there, and what holds below it."""
    failed = [c for c in checks if c.status == FAIL]
    if not failed:
        return ["no limit reached: every measured layer is within its bounds"]
    lines = []
    claimed: set[int] = set()
    for node in site.nodes:
        mine = [c for c in failed if _touches(c, node)]
        if not mine:
            continue
        claimed.update(id(c) for c in mine)
        lines.append(_line(node, mine, site))
    rest = [c for c in failed if id(c) not in claimed]
    if rest:
        lines.append(_line("all nodes", rest, site))
    return lines


def _line(who: str, failed: list[Check], site: Site) -> str:
    def rank(c: Check) -> int:
        return LAYER_ORDER.index(LAYER_OF.get(c.name, "application"))

    lowest = min(failed, key=rank)
    layer = LAYER_OF.get(lowest.name, "application")
    where = storage_path_text(site, who) if layer == "network" and who != "all nodes" and \
        (lowest.name.startswith("path_storage") or (lowest.case or "").startswith("storage")) else \
        (lowest.instance or lowest.case or "")
    value = f" {lowest.value:.4g} {lowest.unit}" if lowest.value is not None else ""
    # each reason without its source (the report's tables hold those): "1212 MB/s < ceiling 4000 MB/s"
    reason = "; ".join(r.split(" (", 1)[0] for r in lowest.reasons[:2])[:240] or "failed"
    above = sorted({c.label for c in failed if c is not lowest})
    tail = f"; above it also failing: {', '.join(above[:6])}" if above else ""
    return f"{who}: the limit is the {LAYER_TEXT[layer]} ({where}): {lowest.label}{value}: {reason}{tail}"
