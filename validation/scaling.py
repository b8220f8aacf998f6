"""The scale-out section of a report (docs/scale-out.md): the aggregate figures of a run on the old node set (an
earlier report.json) against those of the run on the new one, with the node counts, so that the handover of a
scale-out shows how the site scaled from N to M nodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _node_count(instance: Any) -> int:
    """The node count of a check instance such as ``2 nodes`` (0 when it names no count)."""
    head = str(instance or "").split(" ")[0]
    return int(head) if head.isdigit() else 0


def aggregate_figure(report: dict[str, Any], metrics: tuple[str, ...]) -> tuple[float | None, str]:
    """The aggregate value of the first of ``metrics`` a report.json holds, and its label. A metric measured per
    node count (``ddp_synthetic_throughput[2 nodes]``) gives its largest count; a per-node metric
    (``nccl_single_node_busbw_gbps[dgx01]``) stands for the aggregate only in a run of one node."""
    checks = [c for c in (report.get("verdict") or {}).get("checks") or []
              if c.get("kind") == "performance" and c.get("value") is not None]
    one_node = len(report.get("nodes") or []) == 1
    for metric in metrics:
        found = [c for c in checks if c.get("name") == metric]
        counted = [c for c in found if _node_count(c.get("instance"))]
        if counted:
            best = max(counted, key=lambda c: _node_count(c.get("instance")))
        elif [c for c in found if not c.get("instance")]:
            best = next(c for c in found if not c.get("instance"))
        elif one_node and len(found) == 1:
            best = found[0]
        else:
            continue
        return float(best["value"]), str(best.get("label") or metric)
    return None, ""


# Each aggregate figure of the scale-out section: the metrics that give it, the first one a run holds wins (a
# run of one node has no multi-node all-reduce and no aggregate fio: its single-node figures stand for them).
SCALING_METRICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("NCCL all-node bus bandwidth", ("nccl_multi_node_busbw_gbps", "nccl_single_node_busbw_gbps")),
    ("fio aggregate read", ("fio_aggregate_read_MBps", "fio_node_read_MBps")),
    ("DDP synthetic throughput (all nodes)", ("ddp_synthetic_throughput",)),
)


def scaling_section(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The scale-out section of a report: node counts before and after and, per aggregate figure, its value on
    the old node set (an earlier report.json), on the new one, their ratio and that ratio against linear
    scaling (100% = the figure grew as much as the node count)."""
    old_nodes = [str(n) for n in before.get("nodes") or []]
    new_nodes = [str(n) for n in after.get("nodes") or []]
    node_ratio = len(new_nodes) / len(old_nodes) if old_nodes else None
    rows = []
    for title, metrics in SCALING_METRICS:
        old, old_label = aggregate_figure(before, metrics)
        new, new_label = aggregate_figure(after, metrics)
        ratio = new / old if old and new is not None else None
        rows.append({"title": title, "before": old, "before_label": old_label, "after": new, "after_label": new_label,
                     "ratio": None if ratio is None else round(ratio, 3),
                     "linear_pct": round(100 * ratio / node_ratio, 1) if ratio is not None and node_ratio else None})
    return {"title": f"scale-out: {len(old_nodes)} -> {len(new_nodes)} nodes",
            "before_run": str(before.get("run") or ""), "after_run": str(after.get("run") or ""),
            "before_nodes": old_nodes, "after_nodes": new_nodes,
            "added": [n for n in new_nodes if n not in old_nodes],
            "removed": [n for n in old_nodes if n not in new_nodes], "rows": rows}


def load_before(path: str | Path, base_dir: Path | None = None) -> dict[str, Any]:
    """The report.json of the earlier run (a run directory or the file itself; relative to ``base_dir``)."""
    p = Path(path)
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    if p.is_dir():
        p = p / "report.json"
    doc = json.loads(p.read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{p}: not a report.json (a JSON object)")
    return doc


def find_before(results: Path, nodes: list[str], run: str | Path | None = None) -> Path:
    """The run directory of the earlier validation of exactly ``nodes``: ``run`` when given (checked), else the
    newest under ``results`` with a report.json of that node set. Raises ValueError naming what to do."""
    wanted = sorted(nodes)
    if run:
        p = Path(run)
        p = p.parent if p.name == "report.json" else p
        try:
            have = sorted(load_before(p).get("nodes") or [])
        except (OSError, ValueError) as exc:
            raise ValueError(f"scale_out_baseline={run}: cannot read its report.json ({exc}); give the run "
                             "directory of an earlier validation of the nodes that stay") from exc
        if have != wanted:
            raise ValueError(f"scale_out_baseline={run}: that run validated {', '.join(have) or 'no node'}, not the "
                             f"nodes that stay ({', '.join(wanted)}); give a run of exactly those nodes")
        return p
    runs = sorted((p for p in results.glob("*") if (p / "report.json").is_file()), reverse=True)
    for p in runs:
        try:
            if sorted(load_before(p).get("nodes") or []) == wanted:
                return p
        except (OSError, ValueError):
            continue
    raise ValueError(f"no validation run of {', '.join(wanted)} under {results}: the scale-out report compares "
                     "with one. Validate the site as it is first (site.yml --tags validate), or give "
                     "-e scale_out_baseline=<run directory>")


def section(before_path: str, run: str, nodes: list[str], verdict: dict[str, Any],
            base_dir: Path | None = None) -> dict[str, Any] | None:
    """The report's scale-out section when the run's context names an earlier run (before_path: the Site's
    validate_scale_before); a named run that cannot be read gives a section that says so instead of its figures."""
    if not before_path:
        return None
    after = {"run": run, "nodes": nodes, "verdict": verdict}
    try:
        before = load_before(before_path, base_dir)
    except (OSError, ValueError) as exc:
        return {"title": f"scale-out: ? -> {len(nodes)} nodes", "before_run": before_path, "after_run": run,
                "before_nodes": [], "after_nodes": nodes, "added": [], "removed": [], "rows": [],
                "error": f"the earlier run {before_path} cannot be read ({exc})"}
    return scaling_section(before, after)
