"""The host's capacity and the trainings' utilisation: the same training without DDP on every node at once against
one node alone (validation_ddp.host_scaling), and GPU (lab: CPU) utilisation sampled on each node during the DDP
cases (raw/ddp/n<count>/util-<node>.json), judged against its floor (called by validation.verdict).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import parse_util
from ..checks import (
    FAIL,
    INFO,
    Check,
    _load_meta,
    _perf_check,
    finite,
)
from ..site import Site

# ---------------------------------------------------------------------------------------------- host capacity


def mode_docs(case_dir: Path, mode: str) -> list[dict[str, Any]]:
    meta = _load_meta(case_dir) or {}
    out = []
    for s in meta.get("samples") or []:
        if isinstance(s, dict) and s.get("mode") == mode:
            try:
                doc = json.loads((case_dir / str(s.get("file"))).read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            if isinstance(doc, dict):
                out.append(doc)
    return out


def real_docs(case_dir: Path) -> list[dict[str, Any]]:
    return mode_docs(case_dir, "real")


def judge_host_scaling(site: Site, ddp_dir: Path) -> tuple[list[Check], float | None]:
    """What the machine gives N nodes training side by side: the same training without DDP on every node at once
    (mode bare of the all-node case) against one node alone (the 1-node case), validation_ddp.host_scaling.
    Returns the check and the host's efficiency (speedup / N), the ideal DDP scaling is judged against."""
    nodes, lab = site.nodes, site.lab
    if not site.settings.host_scaling.enabled or len(nodes) < 2:
        return [], None
    n = len(nodes)
    check = Check(name="ddp_host_speedup", stage="ddp", kind="performance", status=INFO, instance=f"{n} nodes",
                  unit="x", case=f"n{n}", lab_standin=lab)

    def best(count: int) -> float | None:
        values = [finite(d.get("samples_per_s")) for d in mode_docs(ddp_dir / f"n{count}", "bare")
                  if d.get("complete") and d.get("ddp") is False]
        good = [v for v in values if v is not None and v > 0]
        return max(good) if good else None

    alone, together = best(1), best(n)
    check.samples = [together]
    if alone is None or together is None:
        check.status = FAIL
        check.reasons.append("the training without DDP (mode bare: validation_ddp.host_scaling) did not complete "
                             + ("on one node" if alone is None else f"on {n} nodes at once")
                             + ": what the host can give is unknown, so DDP scaling cannot be judged against it")
        return [check], None
    check.value = together / alone
    check.reasons.append(f"{n} nodes training side by side without DDP gave {check.value:.2f} x one node "
                         f"({together:.4g} against {alone:.4g} samples/s): the ideal for DDP on this machine")
    return [check], check.value / n


def apply_host_limit(checks: list[Check], host: list[Check], min_speedup: float) -> None:
    """A machine whose nodes side by side train no faster than one cannot show DDP scaling: its scaling check
    says so instead of passing (or failing on the host's account)."""
    if not host or host[0].value is None or host[0].value >= min_speedup:
        return
    for c in checks:
        if c.name == "ddp_scaling_efficiency" and c.value is not None:
            # the bound measured against the host is not judged; any other bound (a floor) still is
            others = [b for b in c.bounds if b["kind"] not in ("measured", "outlier") and c.value < b["limit"]]
            c.reasons = [r for r in c.reasons if " < measured " not in r]
            c.status = FAIL if others else INFO
            c.reasons.append(f"not judged against the host: the host cannot scale ({host[0].value:.2f} x with every "
                             f"node training at once without DDP, below validation_ddp.host_scaling.min_speedup "
                             f"{min_speedup:g})")


# ---------------------------------------------------------------------------------------------- utilisation


def judge_util(site: Site, ddp_dir: Path, counts: list[int], baseline: dict[str, float]
               ) -> tuple[list[Check], dict[str, Any]]:
    """Per DDP case and node: the mean utilisation during the real-data trainings (GPU from nvidia-smi; in the lab
    the CPU from /proc/stat, named as such), judged against its floor (acceptance_thresholds)."""
    checks: list[Check] = []
    series: dict[str, Any] = {"what": None, "nodes": {}}
    nodes, lab = site.nodes, site.lab
    for count in counts:
        case = f"n{count}"
        windows = [(float(d["wall_start"]), float(d["wall_end"])) for d in real_docs(ddp_dir / case)
                   if finite(d.get("wall_start")) is not None and finite(d.get("wall_end")) is not None]
        pyxis = site.settings.ddp_runtime == "pyxis"
        for node in nodes[:count]:
            label = f"{node} ({count} node{'s' if count > 1 else ''})"
            path = ddp_dir / case / f"util-{node}.json"
            what = "cpu" if lab else "gpu"
            metric = "ddp_real_util_pct"
            if pyxis and node != nodes[0]:
                checks.append(Check(name=metric, stage="ddp", kind="performance", status=INFO, instance=label,
                                    case=case, lab_standin=lab, reasons=[
                                        "not sampled: under pyxis one srun on the first node starts every node's "
                                        "ranks, so the sampler wraps the first node's launcher only (a gap, not a "
                                        "measurement)"]))
                continue
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                reason = "not sampled: no utilisation file" if isinstance(exc, OSError) else f"unreadable: {exc}"
                check = _perf_check(site, metric, label, [None], False, lab, baseline, case)
                check.reasons.insert(0, f"{path.name}: {reason}")
                checks.append(check)
                continue
            util, problems = parse_util.series_from_samples(doc if isinstance(doc, dict) else {})
            if util.what != what:
                problems.insert(0, f"sampled {util.what} utilisation, {what} is judged "
                                   f"({'the lab has no GPU' if lab else 'a DGX trains on its GPUs'})")
            series["what"] = util.what
            means = [m for m in (util.mean_between(a, b) for a, b in windows) if m is not None]
            value = sum(means) / len(means) if means else None
            check = _perf_check(site, metric, label, [value], value is not None and not problems, lab, baseline, case)
            if not windows:
                check.reasons.append("no real-data training recorded its time window (wall_start, wall_end)")
            elif value is None:
                check.reasons.append("no utilisation sample fell inside the real-data trainings")
            check.reasons.extend(problems)
            if util.what == "cpu":
                check.unit = "% CPU"
                check.reasons.append("lab stand-in: CPU utilisation of the VM (the lab has no GPU)")
            elif util.what == "gpu":
                check.unit = "% GPU"
            checks.append(check)
            start = min((t for t, _ in util.points), default=0.0)
            series["nodes"][label] = {"mean_real": value, "points": [[round(t - start, 3), round(v, 2)]
                                                                     for t, v in util.points],
                                      "windows": [[round(a - start, 3), round(b - start, 3)] for a, b in windows],
                                      "gpus": util.gpus, "peak_memory_mib": util.peak_memory_mib}
    return checks, series
