"""Judge a run directory: sanity first (did each measurement run correctly?), then performance.

Raw layout (written by the runners on the DGX nodes, fetched by the roles)::

    <run>/context.json                      topology + acceptance data (validation.context)
    <run>/raw/<stage>/<case>/meta.json      the launch: nodes, engine, command, what was asked (asked:
                                            validation/asked.yml), per-sample rc / timed_out / reason / file
    <run>/raw/<stage>/<case>/<sample files> nccl-tests stdout or -J JSON, fio JSON, DDP result JSON

Cases: nccl ``single-<node>`` (one per DGX), ``all`` (every DGX), ``pair-<a>-<b>`` (ring neighbours, to
localise a bad node or link); fio ``node-<node>`` and ``aggregate``; ddp ``n1`` and ``n<all>``.
Anything expected but missing, timed out, crashed or unparsed is a FAIL with its reason, and so is a
measurement done otherwise than asked (validation/asked.py: parameters, durations, repeats, nodes, ranks);
a PASS needs every measurement to have run, parsed and met every bound. Every sample is kept; the best of N is judged and the
spread reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .checks import FAIL, INFO, PASS, Check, Verdict, _apply_outliers, ring_pairs, summary_counts
from .metrics import load as metric_defs
from .metrics import stage_and_unit
from .site import Site
from .stages import ddp, fio, limit, nccl, paths, sysinfo, telemetry, utilisation
from .stages.cabling import judge_cabling
from .stages.fio import full_scratch_hint, judge_fio_case, judge_fio_layout
from .stages.nccl import expected_nccl_cases, nccl_table_problems

# The verdict's public names (the report, the CLI and the tests import them from here); each stage's judge lives in
# validation/stages/<stage>.py, what they share in validation/checks.py.
__all__ = ["FAIL", "INFO", "PASS", "Check", "Verdict", "evaluate", "expected_nccl_cases", "full_scratch_hint",
           "judge_fio_case", "judge_fio_layout", "judge_nodes", "load_baseline", "nccl_table_problems", "ring_pairs",
           "summary_counts"]


def load_baseline(site: Site, base_dir: Path | None = None) -> dict[str, float]:
    """Metric values of an earlier report.json (acceptance_baseline.path), keyed by label."""
    path = site.acceptance.baseline_path.strip()
    if not path:
        return {}
    p = Path(path)
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    if p.is_dir():
        p = p / "report.json"
    doc = json.loads(p.read_text(encoding="utf-8"))
    return {c["label"]: c["value"] for c in doc.get("verdict", doc).get("checks", [])
            if c.get("kind") == "performance" and c.get("value") is not None}


def judge_nodes(path: Path) -> list[Check]:
    """A FAIL per DGX that did not finish its measurements (nodes.json, written by the report play after it tried
    to reach each one again), with why and what to do. A run directory without nodes.json (one judged again, or
    made before it existed) adds nothing: its missing measurements fail on their own."""
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        unfinished = [str(n) for n in data["unfinished"]]
        unreachable = {str(n) for n in data.get("unreachable") or []}
        reasons = {str(k): str(v) for k, v in (data.get("reasons") or {}).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return [Check(name="node_finished", stage="report", kind="sanity", status=FAIL,
                      reasons=[f"{path.name} cannot be read ({exc}): which nodes finished is unknown"])]
    checks = []
    for node in unfinished:
        why = f": {reasons[node].strip()[:300]}" if reasons.get(node, "").strip() else ""
        if node in unreachable:
            text = (f"{node} was unreachable during the validation stage and still is{why}. Its measurements are "
                    "missing. Make it reachable over SSH (power it on, check its management network), then run the "
                    "validate stage again")
        else:
            text = (f"{node} did not finish its measurements: a task failed on it (its error is in the stage's "
                    "output), or it was unreachable for a while and answers again. Fix the cause, then run the "
                    "validate stage again")
        checks.append(Check(name="node_finished", stage="report", kind="sanity", status=FAIL, instance=node,
                            reasons=[text]))
    return checks


def evaluate(run_dir: Path, site_or_ctx: Site | Mapping[str, Any]) -> Verdict:
    """Judge every stage of a run directory against the site (a Site, or a context mapping read into one), in one
    pass. Pure apart from reading run_dir."""
    site = Site.of(site_or_ctx)
    nodes = list(site.nodes)
    lab = site.lab
    checks: list[Check] = []
    series: dict[str, Any] = {"nccl": {}, "fio": {}, "ddp": {}}
    try:
        baseline = load_baseline(site, run_dir.parent)
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        baseline = {}
        checks.append(Check(name="baseline", stage="report", kind="sanity", status=FAIL,
                            reasons=[f"acceptance_baseline.path cannot be read: {exc}"]))
    checks.extend(judge_nodes(run_dir / "nodes.json"))
    raw = run_dir / "raw"

    if site.enabled("paths"):
        path_checks, series["paths"] = paths.judge_paths(site, raw / "paths", baseline)
        checks.extend(path_checks)
        # the thresholds measured against the same run's baselines (acceptance_thresholds' "measured") see them
        site = replace(site, measured=paths.measured_baselines(path_checks))
    if site.enabled("nccl") and not lab:
        checks.extend(sysinfo.judge_sysinfo(raw / "sysinfo", site))
    if site.enabled("nccl"):
        nccl_checks, series["nccl"] = nccl.judge_stage(site, raw / "nccl", baseline)
        checks.extend(nccl_checks)
    if site.enabled("fio"):
        fio_checks, series["fio"] = fio.judge_stage(site, raw / "fio", baseline)
        checks.extend(fio_checks)
        array_checks, series["array"] = telemetry.judge_fio_array(site, run_dir, [c for c in checks if c.stage == "fio"])
        checks.extend(array_checks)
    if site.enabled("ddp"):
        host, host_efficiency = utilisation.judge_host_scaling(site, raw / "ddp")
        site = replace(site, measured=replace(site.measured, judged=True, host_scaling=host_efficiency))
        checks.extend(host)
        checks.extend(ddp.judge_stage(site, raw / "ddp", baseline, series))
        utilisation.apply_host_limit(checks, host, site.settings.host_scaling.min_speedup)
        counts = sorted({1, len(nodes)}) if nodes else [1]
        util_checks, series["util"] = utilisation.judge_util(site, raw / "ddp", counts, baseline)
        ddp_array, series["ddp_array"] = telemetry.judge_ddp_array(site, run_dir, counts)
        checks.extend(util_checks + ddp_array)
    cabling_checks, cabling_series = judge_cabling(raw / "cabling")
    checks.extend(cabling_checks)
    if cabling_series:
        series["cabling"] = cabling_series
    _apply_outliers(checks, site.acceptance.outlier_max_behind_pct)
    # A threshold nobody measured is a FAIL, never a silent skip.
    measured = {c.name for c in checks}
    for metric in sorted(site.acceptance.metrics()):
        stage = stage_and_unit(metric)[0] if metric in metric_defs() else "?"
        single = len(nodes) < 2 and metric in ("nccl_multi_node_busbw_gbps", "path_fabric_GBps",
                                                 "path_storage_aggregate_MBps")
        if metric not in measured and site.enabled(stage) and \
                not (metric == "nccl_pair_busbw_gbps" and not ring_pairs(nodes)) and not single:
            checks.append(Check(name=metric, stage=stage, kind="performance", status=FAIL,
                                reasons=["threshold configured but nothing measured it"], lab_standin=lab))
    for stage in ("paths", "nccl", "fio", "ddp"):
        if not site.enabled(stage):
            checks.append(Check(name=f"{stage}_stage", stage=stage, kind="sanity", status=INFO,
                                reasons=["stage disabled in validation_stages"], lab_standin=lab))
    failed = [c.label for c in checks if c.status == FAIL]
    status = FAIL if failed or not any(c.kind == "performance" and c.status != FAIL for c in checks) else PASS
    return Verdict(status=status, checks=checks, failed=failed, lab_standins=lab, series=series,
                   limits=limit.where_is_the_limit(checks, series, site))
