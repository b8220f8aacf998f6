"""The NCCL stage's judge: the all-reduce cases a run makes (single node, all nodes, ring-neighbour pairs), the
sanity of each nccl-tests table (validation/parse_nccl.py) and its bus bandwidth against the thresholds. The runner
is validation/runners/nccl_runner.py, the role's entry point roles/validate/tasks/nccl.yml.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

from .. import asked, parse_nccl
from ..checks import (
    FAIL,
    PASS,
    Check,
    _case_preamble,
    _load_meta,
    _peer_problems,
    _perf_check,
    finite,
    judge_guard,
    judge_site,
    read_sample,
    ring_pairs,
)
from ..site import Site
from ..thresholds import ThresholdError


def expected_nccl_cases(nodes: list[str]) -> list[tuple[str, list[str], str]]:
    """(case, nodes, kind) for every NCCL run a full validation makes."""
    cases = [(f"single-{n}", [n], "single") for n in nodes]
    if len(nodes) > 1:
        cases.append(("all", list(nodes), "all"))
    for a, b in ring_pairs(nodes):
        cases.append((f"pair-{a}-{b}", [a, b], "pair"))
    return cases


def nccl_table_problems(run: parse_nccl.NcclRun, ceiling_gbps: float | None, lab: bool) -> list[str]:
    """What makes a parsed table something other than a sane all-reduce: the wrong collective or reduction,
    non-numbers, negative or physically impossible figures, duplicated or out-of-order sizes, a sweep that
    does not follow the header's step, an old-format error column above tolerance."""
    out: list[str] = []
    collective = (run.collective or "").removesuffix("_perf").removesuffix("_mpi")
    if run.collective and collective != "all_reduce":
        out.append(f"the log is a {run.collective} run, not all_reduce_perf")
    redops = sorted({r.redop for r in run.rows if r.redop is not None})
    if redops and redops != ["sum"]:
        out.append(f"reduction {'/'.join(redops)}: an all-reduce sum was asked for")
    # the runners never pass -d: nccl-tests' default data type, float (the busbw figures are for 4-byte floats)
    types = sorted({r.type for r in run.rows if r.type is not None})
    if types and types != ["float"]:
        out.append(f"data type {'/'.join(types)}: the all-reduce was asked for on float (nccl-tests' default)")
    sizes = [r.size for r in run.rows]
    dup = sorted({x for x in sizes if sizes.count(x) > 1})
    if dup:
        out.append(f"size(s) {dup[:4]} appear more than once in one table")
    elif any(b <= a for a, b in itertools.pairwise(sizes)):
        out.append("sizes do not rise from row to row")
    sweep = run.sweep or {}
    if sizes and sweep.get("step_kind") == "factor" and sweep.get("step", 0) > 1 and not dup:
        factor = sweep["step"]
        odd = [(a, b) for a, b in itertools.pairwise(sizes) if a <= 0 or not (factor * 0.5 < b / a <= factor * 1.05)]
        if odd:
            out.append(f"sizes do not follow the header's step x{factor}: {odd[0][0]} -> {odd[0][1]}")
        if sizes[-1] > sweep["max_bytes"] or sizes[0] < sweep["min_bytes"] // 2:
            out.append(f"sizes {sizes[0]}..{sizes[-1]} outside the header's minBytes {sweep['min_bytes']} .. "
                       f"maxBytes {sweep['max_bytes']}")
    for r in run.rows:
        for where, pl in (("out-of-place", r.out_of_place), ("in-place", r.in_place)):
            if pl is None:
                continue
            for label, v in (("busbw", pl.busbw_gbps), ("algbw", pl.algbw_gbps), ("time", pl.time_us)):
                if v is not None and (not math.isfinite(v) or v < 0):
                    out.append(f"{where} {label} {v} at {r.size} B: not a finite, non-negative number")
            if pl.busbw_gbps is not None and ceiling_gbps and math.isfinite(pl.busbw_gbps) \
                    and pl.busbw_gbps > ceiling_gbps * 1.05:
                out.append(f"{where} busbw {pl.busbw_gbps:g} GB/s at {r.size} B is above the physical ceiling "
                           f"{ceiling_gbps:g} GB/s of the links it ran over: not a believable measurement")
            if pl.max_error is not None and (not math.isfinite(pl.max_error) or pl.max_error > 1e-3):
                out.append(f"{where} error column {pl.max_error:g} at {r.size} B: above the 1e-3 tolerance")
    return out


_COMMAND_FLAGS = {"-b": "min_bytes", "--minbytes": "min_bytes", "--min-bytes": "min_bytes",
                  "-e": "max_bytes", "--maxbytes": "max_bytes", "--max-bytes": "max_bytes",
                  "-f": "step", "--stepfactor": "step", "-n": "iters", "--iters": "iters",
                  "-w": "warmup_iters", "--warmup_iters": "warmup_iters", "--warmup": "warmup_iters"}


def nccl_command(command: Any) -> dict[str, Any]:
    """The recorded command line (meta.json) read back: the nccl-tests binary (or the lab's gloo stand-in, which
    prints all_reduce_perf's table), the size sweep and the iterations it passes."""
    found: dict[str, Any] = {}
    if not isinstance(command, list):
        return found
    tokens = [str(t) for t in command]
    for i, tok in enumerate(tokens):
        base = tok.rsplit("/", 1)[-1]
        if base.endswith(("_perf", "_perf_mpi")):
            found["test"] = base.removesuffix("_mpi")
        elif base == "gloo_allreduce.py":
            found["test"] = "all_reduce_perf"
        key = _COMMAND_FLAGS.get(tok)
        if key and i + 1 < len(tokens) and tokens[i + 1].isdigit():
            found[key] = int(tokens[i + 1])
    return found


def nccl_command_problems(meta: dict[str, Any]) -> list[str]:
    """The launch record against itself: the command it records runs the asked test with the asked sweep."""
    if not meta.get("command"):
        return ["meta.json records no command: what was launched cannot be compared with what was asked"]
    ran = nccl_command(meta["command"])
    wanted = asked.asked_of(meta) or {}
    out = []
    if "test" not in ran:
        out.append(f"the recorded command runs no nccl-tests binary: {' '.join(map(str, meta['command']))[:120]}")
    elif ran["test"] != "all_reduce_perf":
        out.append(f"the runner launched {ran['test']}, not all_reduce_perf")
    for key in ("min_bytes", "max_bytes", "step", "iters", "warmup_iters"):
        if key in ran and key in wanted and ran[key] != wanted[key]:
            out.append(f"{key}: asked {wanted[key]}, the recorded command passes {ran[key]}")
    return out


def nccl_ceiling_gbps(site: Site, nodes: list[str], lab: bool) -> float | None:
    """The most busbw the case's links can carry: across nodes, HCAs x rate per node (thresholds'
    hcas_x_link_rate); inside one DGX A100, NVLink 3 (12 links x 25 GB/s = 300 GB/s per GPU per direction).
    None in the lab (gloo on CPU over virtual links has no physical ceiling worth the name)."""
    if lab:
        return None
    from ..thresholds import hcas_x_link_rate_GBps

    if len(nodes) > 1:
        try:
            return hcas_x_link_rate_GBps(site, nodes)[0]
        except ThresholdError:
            return None
    model = site.model_of(nodes[0])
    return float(model.nvlink_gbps_per_gpu or 300.0) if model.nvswitch else None


@judge_guard("nccl", lambda: ([], []))
def judge_nccl_case(case_dir: Path, case: str, nodes: list[str], expected_ranks: int | None, lab: bool,
                    min_bytes: int, repeats: int | None = None, ceiling_gbps: float | None = None
                    ) -> tuple[Check, list[float | None], list[dict[str, Any]]]:
    """Sanity of one NCCL case; returns (check, per-sample peak busbw, per-sample rows for plots)."""
    meta = _load_meta(case_dir)
    check, ok = _case_preamble("nccl", case, meta, lab)
    values: list[float | None] = []
    series: list[dict[str, Any]] = []
    if not ok:
        return check, values, series
    assert meta is not None
    launch = asked.asked_of(meta) or {}
    early = nccl_command_problems(meta) + _peer_problems(case_dir, meta)
    if expected_ranks is not None and launch.get("ranks") not in (None, expected_ranks):
        early.append(f"launched for {launch.get('ranks')} ranks, the site expects {expected_ranks}")
    if isinstance(launch.get("nodes"), list) and len(set(launch["nodes"])) != len(set(nodes)):
        early.append(f"launched on {asked.show(launch['nodes'])}, the case is {len(nodes)} node(s): "
                     f"{', '.join(nodes)}")
    early += asked.repeat_problems("nccl-tests", meta, case_dir, repeats)
    if early:
        check.status = FAIL
        check.reasons.extend(early)
    for sample in meta["samples"]:
        problems, runs = read_sample(case_dir, meta, sample, parse_nccl.parse, (parse_nccl.NcclParseError,))
        run = runs[-1] if runs else None
        if runs is not None and not runs:
            problems.append(f"{sample.get('file')}: no result table")
        if runs and len(runs) > 1:
            problems.append(f"{sample.get('file')}: {len(runs)} result tables where one was expected")
        value = None
        if run is not None:
            tag = sample.get("file")
            if not run.complete:
                problems.append(f"{tag}: incomplete: {'; '.join(run.errors) or 'no footer'}")
            elif run.errors:
                problems.append(f"{tag}: errors: {'; '.join(run.errors[:3])}")
            problems.extend(f"{tag}: {p}" for p in asked.problems("nccl-tests", meta, parse_nccl.done(run)))
            problems.extend(f"{tag}: {p}" for p in nccl_table_problems(run, ceiling_gbps, lab))
            if run.out_of_bounds_ok is False:
                problems.append(f"{tag}: out of bounds values: {run.out_of_bounds_count} FAILED")
            wrong = [(r.size, p.wrong) for r in run.rows for p in (r.out_of_place, r.in_place)
                     if p is not None and p.wrong]
            if wrong:
                problems.append(f"{tag}: #wrong > 0 at sizes {sorted({s for s, _ in wrong})[:5]}")
            if run.data_checked is False:
                problems.append(f"{tag}: data check disabled (-c 0): #wrong is N/A, correctness unverified")
            value = finite(parse_nccl.peak_busbw(run, min_bytes))
            if value is None:
                problems.append(f"{tag}: no out-of-place busbw at sizes >= {min_bytes} B")
            series.append({"file": tag, "rows": [
                [r.size, finite(r.out_of_place.busbw_gbps) if r.out_of_place else None] for r in run.rows]})
        if problems:
            check.status = FAIL
            check.reasons.extend(problems)
            value = None
        values.append(value)
    return check, values, series


def judge_stage(site: Site, nccl_dir: Path, baseline: dict[str, float]) -> tuple[list[Check], dict[str, Any]]:
    """Every NCCL case of the run: its sanity check and its bus bandwidth; the per-case rows for the plots."""
    checks: list[Check] = []
    series: dict[str, Any] = {}
    lab, repeats = site.lab, site.repeats
    min_bytes = site.settings.nccl_judge_min_bytes
    for case, case_nodes, kind in expected_nccl_cases(list(site.nodes)):
        per_node = site.ranks_per_node(case_nodes[0])
        expected = per_node * len(case_nodes) if per_node else None
        sanity, samples, rows = judge_nccl_case(nccl_dir / case, case, case_nodes, expected, lab, min_bytes,
                                                repeats, nccl_ceiling_gbps(site, case_nodes, lab))
        checks.append(judge_site(sanity, "nccl-tests", nccl_dir / case, site, case_nodes))
        series[case] = rows
        metric = {"single": "nccl_single_node_busbw_gbps", "all": "nccl_multi_node_busbw_gbps",
                  "pair": "nccl_pair_busbw_gbps"}[kind]
        instance = case_nodes[0] if kind == "single" else ("+".join(case_nodes) if kind == "pair" else None)
        checks.append(_perf_check(site, metric, instance, samples, sanity.status == PASS, lab, baseline, case))
    return checks, series
