"""What every stage's judge shares: the Check and Verdict types, reading a case's samples, the sanity preamble of a
case, the performance check against the thresholds and the outlier rule. The stages' own judges live in
validation/stages/ (paths, nccl, sysinfo, fio, ddp); validation/verdict.py orchestrates them (evaluate).
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .metrics import outlier_metrics, stage_and_unit
from .site import Site
from .thresholds import Bound, ThresholdError, bounds_for

PASS, FAIL, INFO = "PASS", "FAIL", "INFO"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Check:
    """One judged item: a sanity check of a case, or a performance metric (instance = node, pair or None)."""

    name: str
    stage: str
    kind: str                      # sanity | performance
    status: str                    # PASS | FAIL | INFO
    instance: str | None = None
    value: float | None = None
    unit: str = ""
    samples: list[float | None] = field(default_factory=list)
    spread_pct: float | None = None
    bounds: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    case: str | None = None
    lab_standin: bool = False
    duration_s: float | None = None  # wall time of the case's samples (meta.json), sanity checks only

    @property
    def label(self) -> str:
        return f"{self.name}[{self.instance}]" if self.instance else self.name

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["label"] = self.label
        # report.json is strict JSON: a non-finite figure is written as null (the reasons say what it was)
        d["value"] = finite(d["value"])
        d["spread_pct"] = finite(d["spread_pct"])
        d["samples"] = [finite(x) for x in d["samples"]]
        d["duration_s"] = finite(d["duration_s"])
        return d


@dataclass
class Verdict:
    status: str
    checks: list[Check]
    failed: list[str]
    lab_standins: bool
    series: dict[str, Any]          # plot data: busbw vs size per case, per-node fio, ddp vs nodes, baselines...
    limits: dict[str, Any] = field(default_factory=dict)  # where is the limit (validation.stages.limit.where_is_the_limit)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "failed": self.failed,
            "lab_standins": self.lab_standins,
            "checks": [c.to_dict() for c in self.checks],
            "series": self.series,
            "limits": self.limits,
        }


# ---------------------------------------------------------------------------------------------- helpers


def ring_pairs(nodes: list[str]) -> list[tuple[str, str]]:
    """Ring neighbours (n0-n1, n1-n2, ..., nk-n0): every node in two pairs, every link between them once.

    With two nodes the all-node run is the only pair, so no separate pair runs are made.
    """
    if len(nodes) < 3:
        return []
    return [(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))]


def _load_meta(case_dir: Path) -> dict[str, Any] | None:
    path = case_dir / "meta.json"
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {"_unreadable": True}
    return meta if isinstance(meta, dict) else {"_unreadable": True}


def judge_guard(stage: str, empty: Callable[[], tuple[Any, ...]]) -> Callable[[F], F]:
    """A judge that meets data it did not expect must still give a verdict: any exception of the judge of one
    case becomes that case's FAIL (naming the case and the error), never a crash without a report."""
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(case_dir: Path, case: str, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(case_dir, case, *args, **kwargs)
            except Exception as exc:  # the judge's own failure, turned into a FAIL of the case it judged
                check = Check(name=f"{stage}_sanity", stage=stage, kind="sanity", status=FAIL, instance=case,
                              case=case, reasons=[f"the result could not be judged ({type(exc).__name__}: {exc})"])
                return (check, *empty())
        return guarded  # type: ignore[return-value]
    return wrap


def finite(value: Any) -> float | None:
    """A measurement as a number, or None: NaN, infinities, booleans and non-numbers are no value at all."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _best_and_spread(samples: list[float | None]) -> tuple[float | None, float | None]:
    good = [v for v in (finite(s) for s in samples) if v is not None]
    if not good:
        return None, None
    best = max(good)
    spread = (best - min(good)) / best * 100 if best > 0 and len(good) > 1 else 0.0
    return best, round(spread, 2)


def _sample_problems(meta: dict[str, Any], sample: dict[str, Any]) -> list[str]:
    problems = []
    tag = sample.get("file", "?")
    if sample.get("timed_out"):
        problems.append(f"{tag}: timed out after {sample.get('duration_s')} s")
    if sample.get("rc") != 0:  # a sample without an exit status did not demonstrably run
        problems.append(f"{tag}: exit status {sample.get('rc')}{': ' + sample['reason'] if sample.get('reason') else ''}")
    elif sample.get("engine_failed"):  # the engine exited 0 but said the launch failed (engines.judge_launch)
        problems.append(f"{tag}: the launch failed although its engine exited 0: {sample.get('reason') or 'no reason'}")
    return problems


_Parsed = TypeVar("_Parsed")


def read_sample(case_dir: Path, meta: dict[str, Any], sample: dict[str, Any], parse: Callable[[str], _Parsed],
                errors: tuple[type[Exception], ...]) -> tuple[list[str], _Parsed | None]:
    """One sample of a case: its own problems (timed out, exit status) and its raw output parsed; an output that
    is missing or that parse refuses (one of errors) is a problem naming the file, and no result."""
    problems = _sample_problems(meta, sample)
    tag = sample.get("file")
    path = case_dir / str(tag or "")
    if not path.is_file():
        return [*problems, f"{tag}: raw output missing"], None
    try:
        return problems, parse(path.read_text(encoding="utf-8", errors="replace"))
    except errors as exc:
        return [*problems, f"{tag}: unparseable: {exc}"], None


def _peer_problems(case_dir: Path, meta: dict[str, Any]) -> list[str]:
    """Nodes that launched their share of a multi-node run (torchrun per node) must have exited 0 too."""
    problems = []
    for node in meta.get("peers") or []:
        path = case_dir / f"peer-{node}.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            problems.append(f"{node}: no launcher result (peer-{node}.json missing or unreadable)")
            continue
        for sample in doc.get("samples") or [{"rc": None, "file": "?"}]:
            problems.extend(f"{node}: {p}" for p in _sample_problems(meta, sample))
    return sorted(set(problems))


def _case_preamble(stage: str, case: str, meta: dict[str, Any] | None, lab: bool) -> tuple[Check, bool]:
    """The sanity check object of a case, FAIL already when the case did not produce anything usable."""
    check = Check(name=f"{stage}_sanity", stage=stage, kind="sanity", status=PASS, instance=case, case=case,
                  lab_standin=lab)
    if meta is None:
        check.status = FAIL
        check.reasons.append("not measured: no raw result was collected for this case")
        return check, False
    if meta.get("_unreadable"):
        check.status = FAIL
        check.reasons.append("meta.json is unreadable")
        return check, False
    if meta.get("reason") and not meta.get("samples"):
        check.status = FAIL
        check.reasons.append(str(meta["reason"]))
        return check, False
    if not isinstance(meta.get("samples"), list) or not all(isinstance(x, dict) for x in meta["samples"]):
        check.status = FAIL
        check.reasons.append(f"meta.json 'samples' is not a list of sample records: {str(meta.get('samples'))[:80]}")
        return check, False
    if not meta.get("samples"):
        check.status = FAIL
        check.reasons.append("no samples recorded")
        return check, False
    check.duration_s = samples_duration_s(meta["samples"])
    return check, True


def judge_site(check: Check, tool: str, case_dir: Path, site: Site,
               case_nodes: list[str] | tuple[str, ...] = ()) -> Check:
    """A case's launch record against the site's settings (validation.asked.site_problems) and against the case's
    nodes (validation.asked.node_problems): each difference is a FAIL of the case's sanity check, naming both."""
    from . import asked

    meta = _load_meta(case_dir)
    problems = asked.site_problems(tool, meta, site) + asked.node_problems(meta, case_nodes)
    if problems:
        check.status = FAIL
        check.reasons.extend(problems)
    return check


def samples_duration_s(samples: list[dict[str, Any]]) -> float | None:
    """The wall time the runner recorded for a case's samples (their duration_s), None when none recorded one."""
    times = [t for t in (finite(s.get("duration_s")) for s in samples) if t is not None and t >= 0]
    return round(sum(times), 3) if times else None


# ---------------------------------------------------------------------------------------------- performance


def _perf_check(site: Site, name: str, instance: str | None, samples: list[float | None],
                sanity_ok: bool, lab: bool, baseline: dict[str, float], case: str | None = None) -> Check:
    stage, unit = stage_and_unit(name)
    check = Check(name=name, stage=stage, kind="performance", status=PASS, instance=instance, unit=unit,
                  samples=samples, case=case, lab_standin=lab)
    check.value, check.spread_pct = _best_and_spread(samples)
    key = check.label
    try:
        bounds = bounds_for(site, name, instance, baseline.get(key))
    except ThresholdError as exc:
        check.status = FAIL
        check.reasons.append(f"threshold cannot be evaluated: {exc}")
        return check
    check.bounds = [b.to_dict() for b in bounds]
    if not sanity_ok or check.value is None:
        check.status = FAIL
        check.reasons.append("no valid measurement (see the sanity check)" if not sanity_ok else "no value")
        return check
    if not bounds:
        check.status = INFO
        return check
    for b in bounds:
        if check.value < b.limit:
            check.status = FAIL
            check.reasons.append(f"{check.value:.4g} {unit} < {b.kind} {b.limit:.4g} {unit} ({b.detail}; {b.source})")
    return check


def _apply_outliers(checks: list[Check], pct: float) -> None:
    """Outlier rule: an instance more than pct% behind the best instance of the same metric fails."""
    by_metric: dict[str, list[Check]] = {}
    outliers = outlier_metrics()  # per-node metrics whose instances (nodes, node pairs) are compared with the best one
    for c in checks:
        if c.name in outliers and c.instance and c.value is not None:
            by_metric.setdefault(c.name, []).append(c)
    for name, group in by_metric.items():
        if len(group) < 2:
            continue
        best = max(group, key=lambda c: c.value or 0)
        limit = (best.value or 0) * (1 - pct / 100)
        for c in group:
            c.bounds.append(Bound("outlier", limit, "acceptance_outlier_max_behind_pct",
                                  f"best {best.label} {best.value:.4g} - {pct:g}%").to_dict())
            if (c.value or 0) < limit:
                behind = (1 - (c.value or 0) / (best.value or 1)) * 100
                c.status = FAIL
                c.reasons.append(f"{c.instance} is {behind:.1f}% behind the best ({best.instance}), "
                                 f"more than {pct:g}% ({name})")


def summary_counts(verdict: Verdict) -> dict[str, int]:
    out = {PASS: 0, FAIL: 0, INFO: 0}
    for c in verdict.checks:
        out[c.status] = out.get(c.status, 0) + 1
    return out


def median_or_none(values: list[float | None]) -> float | None:
    good = [v for v in values if v is not None]
    return statistics.median(good) if good else None
