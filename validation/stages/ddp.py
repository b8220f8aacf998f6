"""The DDP stage's judge: the sanity of each training case (the runner's result JSON), the throughputs on synthetic
and real data, the scaling efficiency and real over synthetic against the thresholds. The runner is
validation/runners/ddp_runner.py, the role's entry point roles/validate/tasks/ddp.yml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import asked, parse_ddp
from ..checks import (
    FAIL,
    INFO,
    PASS,
    Check,
    _best_and_spread,
    _case_preamble,
    _load_meta,
    _peer_problems,
    _perf_check,
    finite,
    judge_guard,
    judge_site,
    read_sample,
)
from ..site import Site


def ddp_result_problems(doc: dict[str, Any], meta: dict[str, Any], mode: str, lab: bool) -> list[str]:
    """A training result against itself and the site's rules (what was asked against what was done:
    validation/asked.py): every rank timed, step times real, the throughput what batch x world x steps / time
    gives, GPUs and NCCL outside the lab, and a real-data sample that read the dataset it was given."""
    out: list[str] = []
    world = doc.get("world_size")
    timed = doc.get("step_times_s")
    if not isinstance(timed, list):
        return [*out, "no step times recorded"]
    times = [finite(t) for t in timed]
    if any(t is None or t <= 0 for t in times):
        out.append("step times of zero, negative or not a number: the steps were not timed")
    ranks = doc.get("rank_mean_step_s")
    if not isinstance(ranks, list):
        out.append("no per-rank step times (rank_mean_step_s): whether every rank trained cannot be checked")
    elif isinstance(world, int) and len(ranks) != world:
        out.append(f"step times from {len(ranks)} rank(s), world size {world}")
    elif any((finite(r) or 0) <= 0 for r in ranks):
        out.append("a rank recorded no step time")
    value = finite(doc.get("samples_per_s"))
    batch = finite(doc.get("batch_size_per_rank"))
    if value is not None and batch and isinstance(world, int) and times and all(t and t > 0 for t in times):
        implied = batch * world * len(times) / sum(t for t in times if t)
        if not 0.95 <= value / implied <= 1.05:
            out.append(f"samples/s {value:g} disagrees with batch {batch:g} x world {world} x {len(times)} steps / "
                       f"{sum(t for t in times if t):g} s = {implied:g}")
    if not lab and (doc.get("backend") != "nccl" or doc.get("device") != "cuda"):
        out.append(f"trained with {doc.get('backend')} on {doc.get('device')}: an acceptance run trains on GPUs "
                   "with NCCL")
    if doc.get("mode", mode) != mode:
        out.append(f"result of a {doc.get('mode')} run recorded as {mode}")
    wanted = (asked.asked_of(meta) or {}).get("dataset")
    if mode == "real":
        if "dataset" not in doc:
            out.append("real-data result does not record the dataset it read")
        elif not wanted:
            out.append("the launch record (meta.json asked.dataset) names no dataset for the real-data training")
        elif doc.get("dataset") != wanted:
            out.append(f"dataset: asked {wanted}, done {doc.get('dataset')}: the real-data run read another "
                       "directory")
    elif doc.get("dataset"):
        out.append(f"synthetic run records a dataset ({doc.get('dataset')})")
    return out


@judge_guard("ddp", lambda: ({},))
def judge_ddp_case(case_dir: Path, case: str, expected_world: int | None, lab: bool, repeats: int | None = None,
                   case_nodes: list[str] | None = None) -> tuple[Check, dict[str, list[float | None]]]:
    """Sanity of one DDP case (one node count); returns (check, {mode: per-sample samples/s})."""
    meta = _load_meta(case_dir)
    check, ok = _case_preamble("ddp", case, meta, lab)
    per_mode: dict[str, list[float | None]] = {}
    if not ok:
        return check, per_mode
    assert meta is not None
    launch = asked.asked_of(meta) or {}
    peer = _peer_problems(case_dir, meta) + asked.repeat_problems("ddp_train", meta, case_dir, repeats)
    if expected_world is not None and launch.get("world_size") not in (None, expected_world):
        peer.append(f"launched world size {launch.get('world_size')}, the site expects {expected_world}")
    if case_nodes is not None and isinstance(launch.get("nodes"), list) \
            and len(set(launch["nodes"])) != len(set(case_nodes)):
        peer.append(f"launched on {asked.show(launch['nodes'])}, the case is {len(case_nodes)} node(s): "
                    f"{', '.join(case_nodes)}")
    if peer:
        check.status = FAIL
        check.reasons.extend(peer)
    for sample in meta["samples"]:
        if sample.get("mode") == "bare":
            continue  # the training without DDP: the host's capacity, judged by validation.stages.utilisation.judge_host_scaling
        tag = sample.get("file")
        mode = str(sample.get("mode") or "synthetic")
        value = None
        problems, doc = read_sample(case_dir, meta, sample, parse_ddp.parse, (parse_ddp.DdpParseError,))
        if doc is not None:
            if not doc.get("complete"):
                problems.append(f"{tag}: training did not complete: {'; '.join(map(str, doc.get('errors') or [])) or 'no reason'}")
            problems.extend(f"{tag}: {p}" for p in asked.problems("ddp_train", meta, parse_ddp.done(doc)))
            problems.extend(f"{tag}: {p}" for p in ddp_result_problems(doc, meta, mode, lab))
            value = finite(doc.get("samples_per_s"))
            if value is None or value <= 0:
                problems.append(f"{tag}: no throughput")
                value = None
        if problems:
            check.status = FAIL
            check.reasons.extend(problems)
            value = None
        per_mode.setdefault(mode, []).append(value)
    return check, per_mode


def judge_stage(site: Site, ddp_dir: Path, baseline: dict[str, float], series: dict[str, Any]) -> list[Check]:
    """Every DDP case of the run: sanity, throughputs, scaling efficiency and real over synthetic; series['ddp']."""
    checks: list[Check] = []
    nodes, lab = list(site.nodes), site.lab
    counts = sorted({1, len(nodes)}) if nodes else [1]
    per_node = site.ranks_per_node(nodes[0], "ddp") if nodes else None
    throughput: dict[int, dict[str, tuple[float | None, bool]]] = {}
    for count in counts:
        case = f"n{count}"
        sanity, per_mode = judge_ddp_case(ddp_dir / case, case, per_node * count if per_node else None, lab,
                                          site.repeats, nodes[:count])
        checks.append(judge_site(sanity, "ddp_train", ddp_dir / case, site, nodes[:count]))
        ok = sanity.status == PASS
        throughput[count] = {}
        for mode in ("synthetic", "real"):
            samples = per_mode.get(mode, [])
            if not samples:
                sanity.status = FAIL
                sanity.reasons.append(f"no {mode}-data training result")
                ok = False
            best, spread = _best_and_spread(samples)
            throughput[count][mode] = (best, ok)
            info = Check(name=f"ddp_{mode}_throughput", stage="ddp", kind="performance",
                         status=INFO if ok and best else FAIL, instance=f"{count} node{'s' if count > 1 else ''}",
                         value=best, unit="samples/s", samples=samples, spread_pct=spread, case=case,
                         lab_standin=lab)
            if info.status == FAIL:
                info.reasons.append(f"no valid {mode}-data throughput at {count} node(s)")
            checks.append(info)
    top = counts[-1]
    syn1, ok1 = throughput[1]["synthetic"]
    synn, okn = throughput[top]["synthetic"]
    eff: list[float | None] = [synn / (top * syn1)] if ok1 and okn and syn1 and synn else [None]
    checks.append(_perf_check(site, "ddp_scaling_efficiency", None, eff, ok1 and okn, lab, baseline))
    if top == 1 and checks[-1].status != FAIL:
        checks[-1].reasons.append("one node only: scaling from 1 node to all is trivially 1")
    for count in counts:
        syn, oks = throughput[count]["synthetic"]
        real, okr = throughput[count]["real"]
        ratio: list[float | None] = [real / syn] if oks and okr and syn and real else [None]
        checks.append(_perf_check(site, "ddp_real_over_synthetic", f"{count} node{'s' if count > 1 else ''}",
                                  ratio, oks and okr, lab, baseline))
    series["ddp"] = {
        "nodes": counts,
        "synthetic": [throughput[c]["synthetic"][0] for c in counts],
        "real": [throughput[c]["real"][0] for c in counts],
    }
    return checks
