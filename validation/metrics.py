"""The metric definitions (validation/metrics.yml): stage, unit, direction, outlier rule, reference figures and
source of every metric the validation judges. ``load`` is the one reader; thresholds, the verdict, the report and
preflight (through plugins/action/preflight_inventory.py) all take their metric facts from it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

METRICS_FILE = Path(__file__).resolve().parent / "metrics.yml"
STAGES = ("paths", "nccl", "fio", "ddp")
DIRECTIONS = ("higher", "within")
OUTLIER_RULES = ("behind_best", "none")


class MetricsError(ValueError):
    """metrics.yml is malformed; the message names the metric, the key and the fix."""


@dataclass(frozen=True)
class Figure:
    """A published figure for the report's reference column (a comparison for the reader, not a threshold)."""

    text: str
    value: float | None
    unit: str
    source: str
    nodes_at_most: int | None = None


@dataclass(frozen=True)
class Metric:
    name: str
    stage: str
    unit: str
    direction: str
    outlier: str
    threshold: bool
    source: str
    reference: tuple[Figure, ...] = ()

    def reference_for(self, node_count: int) -> Figure | None:
        """The first published figure that applies to a run of this many nodes, or None."""
        return next((f for f in self.reference if f.nodes_at_most is None or node_count <= f.nodes_at_most), None)


def _figure(name: str, doc: Any) -> Figure:
    if not isinstance(doc, dict) or not doc.get("text") or not doc.get("source"):
        raise MetricsError(f"metrics.{name}.reference: each figure needs text and source (fix: {METRICS_FILE})")
    value = doc.get("value")
    return Figure(text=str(doc["text"]), value=None if value is None else float(value), unit=str(doc.get("unit", "")),
                  source=str(doc["source"]), nodes_at_most=doc.get("nodes_at_most"))


def parse(doc: Any) -> dict[str, Metric]:
    """The definitions of a metrics.yml document; MetricsError on a missing or unknown value."""
    entries = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise MetricsError(f"{METRICS_FILE}: no 'metrics' mapping")
    out: dict[str, Metric] = {}
    for name, entry in entries.items():
        where = f"metrics.{name}"
        if not isinstance(entry, dict):
            raise MetricsError(f"{where}: a mapping of stage, unit, direction, outlier, threshold, reference, source")
        for key, allowed in (("stage", STAGES), ("direction", DIRECTIONS), ("outlier", OUTLIER_RULES)):
            if entry.get(key) not in allowed:
                raise MetricsError(f"{where}.{key}={entry.get(key)!r}: use one of {', '.join(allowed)}")
        if not entry.get("unit"):
            raise MetricsError(f"{where}.unit: every metric names its unit")
        if not str(entry.get("source") or "").strip():
            raise MetricsError(f"{where}.source: every definition records where it comes from")
        if not isinstance(entry.get("threshold"), bool):
            raise MetricsError(f"{where}.threshold: true or false (may an acceptance_thresholds entry name it)")
        out[str(name)] = Metric(name=str(name), stage=entry["stage"], unit=str(entry["unit"]),
                                direction=entry["direction"], outlier=entry["outlier"], threshold=entry["threshold"],
                                source=str(entry["source"]),
                                reference=tuple(_figure(name, f) for f in entry.get("reference") or []))
    return out


@functools.cache
def load(path: Path = METRICS_FILE) -> dict[str, Metric]:
    """Every metric definition, by name (the file is read once per process)."""
    return parse(yaml.safe_load(path.read_text(encoding="utf-8")))


def threshold_metrics() -> dict[str, Metric]:
    """The metrics an acceptance_thresholds entry may name."""
    return {name: m for name, m in load().items() if m.threshold}


def stage_and_unit(name: str) -> tuple[str, str]:
    """A check's stage and unit from its metric's definition (a name without one: its prefix, no unit)."""
    metric = load().get(name)
    return (metric.stage, metric.unit) if metric else (name.split("_", 1)[0], "")


def outlier_metrics() -> tuple[str, ...]:
    """The metrics whose instances (nodes, node pairs) are compared with the best one."""
    return tuple(name for name, m in load().items() if m.outlier == "behind_best")


def as_plain(metrics: dict[str, Metric]) -> dict[str, dict[str, Any]]:
    """The definitions as plain data (what preflight's rule reads: stage and whether a threshold may name it)."""
    return {name: {"stage": m.stage, "unit": m.unit, "threshold": m.threshold} for name, m in metrics.items()}
