"""Judge a run directory: sanity first (did each measurement run correctly?), then performance.

Raw layout (written by the runners on the DGX nodes, fetched by the roles)::

    <run>/context.json                      topology + acceptance data (validation.context)
    <run>/raw/<stage>/<case>/meta.json      what ran: nodes, expected ranks/clients, engine, command,
                                            per-sample rc / timed_out / reason / file
    <run>/raw/<stage>/<case>/<sample files> nccl-tests stdout or -J JSON, fio JSON, DDP result JSON

Cases: nccl ``single-<node>`` (one per DGX), ``all`` (every DGX), ``pair-<a>-<b>`` (ring neighbours, to
localise a bad node or link); fio ``node-<node>`` and ``aggregate``; ddp ``n1`` and ``n<all>``.
Anything expected but missing, timed out, crashed or unparsed is a FAIL with its reason; a PASS needs every
measurement to have run, parsed and met every bound. Every sample is kept; the best of N is judged and the
spread reported.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from . import parse_fio, parse_nccl
from .metrics import load as metric_defs
from .metrics import outlier_metrics, stage_and_unit
from .thresholds import Bound, ThresholdError, bounds_for, metrics_with_thresholds

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
    limits: dict[str, Any] = field(default_factory=dict)  # where is the limit (validation.paths.where_is_the_limit)

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


def expected_nccl_cases(nodes: list[str]) -> list[tuple[str, list[str], str]]:
    """(case, nodes, kind) for every NCCL run a full validation makes."""
    cases = [(f"single-{n}", [n], "single") for n in nodes]
    if len(nodes) > 1:
        cases.append(("all", list(nodes), "all"))
    for a, b in ring_pairs(nodes):
        cases.append((f"pair-{a}-{b}", [a, b], "pair"))
    return cases


def ring_pairs(nodes: list[str]) -> list[tuple[str, str]]:
    """Ring neighbours (n0-n1, n1-n2, ..., nk-n0): every node in two pairs, every link between them once.

    With two nodes the all-node run is the only pair, so no separate pair runs are made.
    """
    if len(nodes) < 3:
        return []
    return [(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))]


def _node_model(ctx: dict[str, Any], models: dict[str, Any], node: str) -> dict[str, Any]:
    """The dgx_models entry of the node's dgx_model (context.json); {} when it names none or an unknown one."""
    name = ((ctx.get("dgx") or {}).get(node) or {}).get("dgx_model")
    return (models.get(name) if name is not None else None) or {}


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


def samples_duration_s(samples: list[dict[str, Any]]) -> float | None:
    """The wall time the runner recorded for a case's samples (their duration_s), None when none recorded one."""
    times = [t for t in (finite(s.get("duration_s")) for s in samples) if t is not None and t >= 0]
    return round(sum(times), 3) if times else None


def repeats_problem(samples: list[Any], repeats: int | None, what: str = "samples") -> list[str]:
    """A case judged on fewer samples than validation_repeats asked for is not the measurement asked for."""
    if repeats and len(samples) < repeats:
        return [f"{len(samples)} {what}, validation_repeats asks for {repeats}"]
    return []


# ---------------------------------------------------------------------------------------------- NCCL


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


_ASKED_FLAGS = {"-b": "min_bytes", "--minbytes": "min_bytes", "--min-bytes": "min_bytes",
                "-e": "max_bytes", "--maxbytes": "max_bytes", "--max-bytes": "max_bytes",
                "-f": "step", "--stepfactor": "step"}


def nccl_asked(command: Any) -> dict[str, Any]:
    """What the runner asked for, from the command it recorded (meta.json): the nccl-tests binary (or the
    lab's gloo stand-in, which prints all_reduce_perf's table) and the size sweep."""
    asked: dict[str, Any] = {}
    if not isinstance(command, list):
        return asked
    tokens = [str(t) for t in command]
    for i, tok in enumerate(tokens):
        base = tok.rsplit("/", 1)[-1]
        if base.endswith(("_perf", "_perf_mpi")):
            asked["test"] = base.removesuffix("_mpi")
        elif base == "gloo_allreduce.py":
            asked["test"] = "all_reduce_perf"
        key = _ASKED_FLAGS.get(tok)
        if key and i + 1 < len(tokens) and tokens[i + 1].isdigit():
            asked[key] = int(tokens[i + 1])
    return asked


def nccl_asked_problems(run: parse_nccl.NcclRun, meta: dict[str, Any]) -> list[str]:
    """The run against the command the runner recorded: the same test, the same size sweep."""
    if not meta.get("command"):
        return ["meta.json records no command: what was asked cannot be compared with what ran"]
    asked = nccl_asked(meta["command"])
    out = []
    if "test" not in asked:
        out.append(f"the recorded command runs no nccl-tests binary: {' '.join(map(str, meta['command']))[:120]}")
    elif asked["test"] != "all_reduce_perf":
        out.append(f"the runner launched {asked['test']}, not all_reduce_perf")
    sweep = run.sweep or {}
    for key in ("min_bytes", "max_bytes", "step"):
        if key in asked and key in sweep and asked[key] != sweep[key]:
            out.append(f"ran {key} {sweep[key]}, the command asked {asked[key]}")
    return out


def nccl_ceiling_gbps(ctx: dict[str, Any], nodes: list[str], lab: bool) -> float | None:
    """The most busbw the case's links can carry: across nodes, HCAs x rate per node (thresholds'
    hcas_x_link_rate); inside one DGX A100, NVLink 3 (12 links x 25 GB/s = 300 GB/s per GPU per direction).
    None in the lab (gloo on CPU over virtual links has no physical ceiling worth the name)."""
    if lab:
        return None
    from .thresholds import hcas_x_link_rate_GBps

    if len(nodes) > 1:
        try:
            return hcas_x_link_rate_GBps(ctx, nodes)[0]
        except ThresholdError:
            return None
    model = _node_model(ctx, ctx.get("dgx_models") or {}, nodes[0])
    return float(model.get("nvlink_gbps_per_gpu") or 300.0) if model.get("nvswitch") else None


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
    if expected_ranks is None:
        expected_ranks = meta.get("expected_ranks")
    elif meta.get("expected_ranks") not in (None, expected_ranks):
        check.status = FAIL
        check.reasons.append(f"launched for {meta.get('expected_ranks')} ranks, the site expects {expected_ranks}")
    peer = _peer_problems(case_dir, meta) + repeats_problem(meta["samples"], repeats)
    if peer:
        check.status = FAIL
        check.reasons.extend(peer)
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
            if expected_ranks is not None and run.ranks != expected_ranks:
                problems.append(f"{tag}: {run.ranks} ranks, expected {expected_ranks}")
            wanted = sorted(set(meta.get("node_hostnames") or nodes))
            ran_on = run.nodes or run.info_hosts
            if ran_on and sorted(set(ran_on)) != wanted:
                problems.append(f"{tag}: ran on {ran_on}, expected {wanted}")
            problems.extend(f"{tag}: {p}" for p in nccl_table_problems(run, ceiling_gbps, lab))
            problems.extend(f"{tag}: {p}" for p in nccl_asked_problems(run, meta))
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


def judge_sysinfo(sys_dir: Path, nodes: list[str], ctx: dict[str, Any], models: dict[str, Any]) -> list[Check]:
    """Per node: every HCA of the model Active at the fabric rate (ibstat), every GPU pair on NVLink (topo -m)."""
    from .parse_sysinfo import SysinfoParseError, ib_port_problems, parse_ibstat, parse_topo

    out = []
    for n in nodes:
        case_dir = sys_dir / n
        meta = _load_meta(case_dir)
        check, ok = _case_preamble("fabric", n, meta, False)
        check.name, check.stage = "fabric_sanity", "nccl"
        out.append(check)
        if not ok:
            continue
        assert meta is not None
        model = _node_model(ctx, models, n)
        problems = [p for s in meta["samples"] for p in _sample_problems(meta, s)]
        try:
            ports = parse_ibstat((case_dir / "ibstat.txt").read_text(encoding="utf-8", errors="replace"))
            problems += ib_port_problems(ports, int(model.get("hcas") or 0),
                                         int(model.get("hca_rate_gbps") or ctx.get("ib_rate_gbps") or 0),
                                         [str(n) for n in model.get("compute_hcas") or []])
        except (OSError, SysinfoParseError) as exc:
            problems.append(f"ibstat: {exc}")
        try:
            topo = parse_topo((case_dir / "topo.txt").read_text(encoding="utf-8", errors="replace"))
            if len(topo.gpus) != int(model.get("gpus") or 0):
                problems.append(f"nvidia-smi topo -m shows {len(topo.gpus)} GPUs, {model.get('gpus')} expected")
            if model.get("nvswitch") and not topo.nvlink_all_pairs():
                problems.append("not every GPU pair is connected through NVLink (NVSwitch expected)")
        except (OSError, SysinfoParseError) as exc:
            problems.append(f"topo: {exc}")
        if problems:
            check.status = FAIL
            check.reasons.extend(problems)
    return out


# ---------------------------------------------------------------------------------------------- fio


def fio_job_problems(result: parse_fio.FioResult, meta: dict[str, Any]) -> list[str]:
    """The job fio ran against the job the runner asked for (meta.json: profile, rw, directories): where it
    read (a directory of this run's NFS scratch, never a local disk), what (a sequential read), how (block
    size, direct I/O) and for how long (the asked runtime, not a fraction of it)."""
    out: list[str] = []
    profile = meta.get("profile") or {}
    ran = result.options or {}
    if not ran:
        return ["fio printed no job options ('global options'): what ran cannot be compared with what was asked"]
    rw = str(meta.get("rw") or "read")
    if ran.get("rw") != rw:
        out.append(f"fio ran rw={ran.get('rw')}, the case asked rw={rw}")
    if "bs" in profile and str(ran.get("bs")) != str(profile["bs"]):
        out.append(f"fio ran bs={ran.get('bs')}, the profile asks bs={profile['bs']}")
    if "direct" in profile and str(ran.get("direct", "0")) != str(int(bool(profile["direct"]))):
        out.append(f"fio ran direct={ran.get('direct', '0')}, the profile asks direct={int(bool(profile['direct']))}")
    dirs = meta.get("directories")
    if not isinstance(dirs, dict) or not dirs:
        out.append("meta.json records no scratch directories: where fio was asked to read cannot be checked")
    elif ran.get("directory") not in set(dirs.values()):
        out.append(f"fio read {ran.get('directory')}, not a scratch directory of this run "
                   f"({', '.join(sorted(set(dirs.values())))})")
    runtime = finite(profile.get("runtime"))
    if rw == "read" and runtime and runtime > 0:
        if str(ran.get("runtime")) != str(int(runtime)) or str(ran.get("time_based")) != "1":
            out.append(f"fio ran runtime={ran.get('runtime')} time_based={ran.get('time_based')}, the profile asks "
                       f"{int(runtime)} s time-based")
        for job in result.clients or result.jobs:
            ms = job.read.runtime_ms if job.read else None
            if ms is None or ms < runtime * 1000 * 0.9:
                who = job.hostname or job.name
                out.append(f"{who}: read phase lasted {ms} ms, {int(runtime)} s were asked")
    return out


# fio's words for a full file system or quota: errno 28 (ENOSPC: an XFS project quota and OneFS SmartQuotas
# answer it over NFS) and 122 (EDQUOT), as "error N" of a job or fio's own "err=N" / strerror text.
_FULL = re.compile(r"(?:\berror (?:28|122)\b|\berr=\s*(?:28|122)\b|No space left on device|Disk quota exceeded)")


def full_scratch_hint(problems: list[str], meta: dict[str, Any]) -> str | None:
    """When fio failed because the scratch export is full, the reason and the fix (None otherwise)."""
    if not any(_FULL.search(p) for p in problems):
        return None
    where = sorted({os.path.dirname(str(d).rstrip("/")) for d in (meta.get("directories") or {}).values()})
    return (f"the scratch export is full (ENOSPC/EDQUOT writing {', '.join(where) or 'the file set'}): its directory "
            "quota (powerscale_quotas, hard threshold) or the file system has no room for the fio file set; free "
            "space on the export or raise the quota, then run the validate stage again")


def judge_fio_layout(case_dir: Path, lab: bool) -> list[Check]:
    """The layout (the file set written before the reads) is informational while it works; when it was recorded and
    broke (fio's error, exit status, time limit), a FAIL with fio's words: a read of a file set that was never
    written whole cannot be judged as a read of it."""
    meta = _load_meta(case_dir)
    if meta is None:
        return []
    check, ok = _case_preamble("fio", "layout", meta, lab)
    check.name = "fio_layout"
    if not ok:
        hint = full_scratch_hint(check.reasons, meta or {})
        if hint:
            check.reasons.append(hint)
        return [check]
    problems: list[str] = []
    for sample in meta["samples"]:
        problems.extend(_sample_problems(meta, sample))
        path = case_dir / str(sample.get("file") or "")
        try:
            problems.extend(f"{sample.get('file')}: {e}"
                            for e in parse_fio.parse(path.read_text(encoding="utf-8", errors="replace")).errors)
        except (OSError, parse_fio.FioParseError) as exc:
            problems.append(f"{sample.get('file')}: {exc}")
    if not problems:
        return []
    check.status = FAIL
    check.reasons.extend(problems)
    hint = full_scratch_hint(problems, meta)
    if hint:
        check.reasons.append(hint)
    return [check]


@judge_guard("fio", lambda: ([], {}))
def judge_fio_case(case_dir: Path, case: str, lab: bool, repeats: int | None = None
                   ) -> tuple[Check, list[float | None], dict[str, list[float]]]:
    """Sanity of one fio case; returns (check, per-sample read MB/s, per-client read MB/s samples)."""
    meta = _load_meta(case_dir)
    check, ok = _case_preamble("fio", case, meta, lab)
    values: list[float | None] = []
    per_client: dict[str, list[float]] = {}
    if not ok:
        return check, values, per_client
    assert meta is not None
    expected = meta.get("expected_clients")
    early = repeats_problem(meta["samples"], repeats)
    if not isinstance(expected, dict) or not expected:
        early.append("meta.json names no expected clients: a missing client could not be noticed")
        expected = {}
    if early:
        check.status = FAIL
        check.reasons.extend(early)
    for sample in meta["samples"]:
        problems, result = read_sample(case_dir, meta, sample, parse_fio.parse, (parse_fio.FioParseError,))
        tag = sample.get("file")
        value = None
        if result is not None:
            problems.extend(f"{tag}: {e}" for e in result.errors)
            problems.extend(f"{tag}: {e}" for e in fio_job_problems(result, meta))
            got = parse_fio.client_bw(result)
            moved = parse_fio.client_io_bytes(result)
            missing = sorted(set(expected) - set(got))
            if missing:
                problems.append(f"{tag}: client(s) missing from the results: "
                                + ", ".join(f"{expected[m]} ({m})" for m in missing))
            unknown = sorted(set(got) - set(expected))
            if expected and unknown:
                problems.append(f"{tag}: result(s) from client(s) nobody asked for: {', '.join(unknown)}")
            for key in sorted(set(expected) & set(got)):
                if not (finite(got[key]) or 0) > 0 or not (moved.get(key) or 0) > 0:
                    problems.append(f"{tag}: {expected[key]} ({key}) read {moved.get(key, 0)} bytes: present "
                                    "but moved no data")
            for key, bw in got.items():
                if finite(bw) is not None:
                    per_client.setdefault(expected.get(key, key), []).append(bw / 1e6)
            total = finite(parse_fio.total_bw(result, "read"))
            if total is None or total <= 0:
                problems.append(f"{tag}: no read bandwidth in the result")
            else:
                value = total / 1e6
        if problems:
            check.status = FAIL
            check.reasons.extend(problems)
            value = None
        values.append(value)
    hint = full_scratch_hint(check.reasons, meta)
    if hint:
        check.reasons.append(hint)
    return check, values, per_client


# ---------------------------------------------------------------------------------------------- DDP


def ddp_result_problems(doc: dict[str, Any], meta: dict[str, Any], mode: str, expected_world: int | None,
                        lab: bool) -> list[str]:
    """A training result against what was launched and against itself: every rank timed, step times real,
    the throughput what batch x world x steps / time gives, GPUs and NCCL outside the lab, the nodes launched,
    and a real-data sample that read the dataset it was given."""
    out: list[str] = []
    world = doc.get("world_size")
    if expected_world is not None and world != expected_world:
        out.append(f"world size {world}, expected {expected_world}")
    steps = doc.get("steps")
    timed = doc.get("step_times_s")
    if not isinstance(timed, list):
        return [*out, "no step times recorded"]
    times = [finite(t) for t in timed]
    if len(timed) < int(finite(steps) or 1):
        out.append(f"{len(timed)} timed steps, expected {steps}")
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
    launched = meta.get("nodes")
    ran = doc.get("nodes")
    if isinstance(launched, list) and isinstance(ran, list):
        wanted = sorted(set(meta.get("node_hostnames") or launched))
        if len(set(ran)) != len(set(launched)) or (meta.get("node_hostnames") and sorted(set(ran)) != wanted):
            out.append(f"trained on {sorted(set(ran))}, launched on {wanted}")
    else:
        out.append("the result or meta.json does not name the nodes: what trained cannot be checked")
    if doc.get("mode", mode) != mode:
        out.append(f"result of a {doc.get('mode')} run recorded as {mode}")
    training = meta.get("training")
    if not isinstance(training, dict):
        return [*out, f"meta.json 'training' is not the launch's training settings: {str(training)[:60]}"]
    asked = training.get("dataset")
    if mode == "real":
        if "dataset" not in doc:
            out.append("real-data result does not record the dataset it read")
        elif asked and doc.get("dataset") != asked:
            out.append(f"real-data run read {doc.get('dataset')}, the dataset asked for is {asked}")
    elif doc.get("dataset"):
        out.append(f"synthetic run records a dataset ({doc.get('dataset')})")
    return out


@judge_guard("ddp", lambda: ({},))
def judge_ddp_case(case_dir: Path, case: str, expected_world: int | None, lab: bool, repeats: int | None = None
                   ) -> tuple[Check, dict[str, list[float | None]]]:
    """Sanity of one DDP case (one node count); returns (check, {mode: per-sample samples/s})."""
    meta = _load_meta(case_dir)
    check, ok = _case_preamble("ddp", case, meta, lab)
    per_mode: dict[str, list[float | None]] = {}
    if not ok:
        return check, per_mode
    assert meta is not None
    if expected_world is None:
        expected_world = meta.get("expected_world_size")
    peer = _peer_problems(case_dir, meta)
    for mode in ("synthetic", "real"):
        peer += repeats_problem([x for x in meta["samples"] if str(x.get("mode") or "synthetic") == mode], repeats,
                                f"{mode}-data samples")
    if peer:
        check.status = FAIL
        check.reasons.extend(peer)
    for sample in meta["samples"]:
        if sample.get("mode") == "bare":
            continue  # the training without DDP: the host's capacity, judged by validation.paths.judge_host_scaling
        problems = _sample_problems(meta, sample)
        tag = sample.get("file")
        mode = str(sample.get("mode") or "synthetic")
        path = case_dir / str(tag or "")
        value = None
        doc: dict[str, Any] | None = None
        if not path.is_file():
            problems.append(f"{tag}: raw output missing")
        else:
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                problems.append(f"{tag}: unparseable: {exc}")
            else:
                if isinstance(loaded, dict):
                    doc = loaded
                else:  # `null` too: a sample with no result is a problem, not a silent gap
                    problems.append(f"{tag}: a JSON {type(loaded).__name__}, not a training result object")
        if doc is not None:
            if not doc.get("complete"):
                problems.append(f"{tag}: training did not complete: {'; '.join(map(str, doc.get('errors') or [])) or 'no reason'}")
            problems.extend(f"{tag}: {p}" for p in ddp_result_problems(doc, meta, mode, expected_world, lab))
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


# ---------------------------------------------------------------------------------------------- verdict


def _perf_check(ctx: dict[str, Any], name: str, instance: str | None, samples: list[float | None],
                sanity_ok: bool, lab: bool, baseline: dict[str, float], case: str | None = None) -> Check:
    stage, unit = stage_and_unit(name)
    check = Check(name=name, stage=stage, kind="performance", status=PASS, instance=instance, unit=unit,
                  samples=samples, case=case, lab_standin=lab)
    check.value, check.spread_pct = _best_and_spread(samples)
    key = check.label
    try:
        bounds = bounds_for(ctx, name, instance, baseline.get(key))
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


def load_baseline(ctx: dict[str, Any], base_dir: Path | None = None) -> dict[str, float]:
    """Metric values of an earlier report.json (acceptance_baseline.path), keyed by label."""
    path = ((ctx.get("acceptance_baseline") or {}).get("path") or "").strip()
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


def evaluate(run_dir: Path, ctx: dict[str, Any]) -> Verdict:
    """Judge every stage of a run directory against ctx. Pure apart from reading run_dir."""
    nodes = list(ctx.get("nodes") or [])
    lab = bool(ctx.get("validation_lab_standins"))
    stages = ctx.get("validation_stages") or {}
    checks: list[Check] = []
    series: dict[str, Any] = {"nccl": {}, "fio": {}, "ddp": {}}
    try:
        baseline = load_baseline(ctx, run_dir.parent)
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        baseline = {}
        checks.append(Check(name="baseline", stage="report", kind="sanity", status=FAIL,
                            reasons=[f"acceptance_baseline.path cannot be read: {exc}"]))
    checks.extend(judge_nodes(run_dir / "nodes.json"))
    raw = run_dir / "raw"
    models = ctx.get("dgx_models") or {}
    repeats = _repeats(ctx)

    def enabled(stage: str) -> bool:
        return bool((stages.get(stage) or {}).get("enabled", False))

    from . import paths  # the layers under the stages' figures (it judges with this module's helpers)

    if enabled("paths"):
        path_checks, series["paths"] = paths.judge_paths(ctx, raw / "paths", nodes, lab, baseline, repeats)
        checks.extend(path_checks)
        # the thresholds measured against the same run's baselines (acceptance_thresholds' "measured") see them
        ctx = dict(ctx, measured_baselines=paths.measured_baselines(path_checks))
    if enabled("nccl") and not lab:
        checks.extend(judge_sysinfo(raw / "sysinfo", nodes, ctx, models))
    if enabled("nccl"):
        ncfg = ctx.get("validation_nccl") or {}
        min_bytes = int(ncfg.get("judge_min_bytes", 0))
        for case, case_nodes, kind in expected_nccl_cases(nodes):
            per_node = _ranks_per_node(ctx, case_nodes[0], models)
            expected = per_node * len(case_nodes) if per_node else None
            sanity, samples, rows = judge_nccl_case(raw / "nccl" / case, case, case_nodes, expected, lab, min_bytes,
                                                    repeats, nccl_ceiling_gbps(ctx, case_nodes, lab))
            checks.append(sanity)
            series["nccl"][case] = rows
            metric = {"single": "nccl_single_node_busbw_gbps", "all": "nccl_multi_node_busbw_gbps",
                      "pair": "nccl_pair_busbw_gbps"}[kind]
            instance = case_nodes[0] if kind == "single" else ("+".join(case_nodes) if kind == "pair" else None)
            checks.append(_perf_check(ctx, metric, instance, samples, sanity.status == PASS, lab, baseline, case))
    if enabled("fio"):
        checks.extend(judge_fio_layout(raw / "fio" / "layout", lab))
        node_values: dict[str, float | None] = {}
        for n in nodes:
            sanity, samples, _clients = judge_fio_case(raw / "fio" / f"node-{n}", f"node-{n}", lab, repeats)
            checks.append(sanity)
            perf = _perf_check(ctx, "fio_node_read_MBps", n, samples, sanity.status == PASS, lab, baseline,
                               f"node-{n}")
            checks.append(perf)
            node_values[n] = perf.value
        sanity, samples, clients = judge_fio_case(raw / "fio" / "aggregate", "aggregate", lab, repeats)
        checks.append(sanity)
        checks.append(_perf_check(ctx, "fio_aggregate_read_MBps", None, samples, sanity.status == PASS, lab,
                                  baseline, "aggregate"))
        series["fio"] = {"node_read_MBps": node_values,
                         "aggregate_clients_MBps": {k: max(v) for k, v in clients.items() if v},
                         "link_MBps": _link_ceilings(ctx, nodes)}
        array_checks, series["array"] = paths.judge_fio_array(ctx, run_dir, nodes, lab,
                                                              [c for c in checks if c.stage == "fio"])
        checks.extend(array_checks)
    if enabled("ddp"):
        host, host_efficiency = paths.judge_host_scaling(ctx, raw / "ddp", nodes, lab)
        ctx = dict(ctx, measured_baselines=dict(ctx.get("measured_baselines") or {}, host_scaling=host_efficiency))
        checks.extend(host)
        checks.extend(_judge_ddp(ctx, raw / "ddp", nodes, lab, baseline, series, models))
        paths.apply_host_limit(checks, host, float(((ctx.get("validation_ddp") or {}).get("host_scaling") or {})
                                                   .get("min_speedup") or 1.0))
        counts = sorted({1, len(nodes)}) if nodes else [1]
        util_checks, series["util"] = paths.judge_util(ctx, raw / "ddp", counts, nodes, lab, baseline)
        ddp_array, series["ddp_array"] = paths.judge_ddp_array(ctx, run_dir, counts, nodes, lab)
        checks.extend(util_checks + ddp_array)
    _apply_outliers(checks, float(ctx.get("acceptance_outlier_max_behind_pct") or 5))
    # A threshold nobody measured is a FAIL, never a silent skip.
    measured = {c.name for c in checks}
    for metric in sorted(metrics_with_thresholds(ctx)):
        stage = stage_and_unit(metric)[0] if metric in metric_defs() else "?"
        single = len(nodes) < 2 and metric in ("nccl_multi_node_busbw_gbps", "path_fabric_GBps",
                                                 "path_storage_aggregate_MBps")
        if metric not in measured and enabled(stage) and not (metric == "nccl_pair_busbw_gbps" and not ring_pairs(nodes)) \
                and not single:
            checks.append(Check(name=metric, stage=stage, kind="performance", status=FAIL,
                                reasons=["threshold configured but nothing measured it"], lab_standin=lab))
    for stage in ("paths", "nccl", "fio", "ddp"):
        if not enabled(stage):
            checks.append(Check(name=f"{stage}_stage", stage=stage, kind="sanity", status=INFO,
                                reasons=["stage disabled in validation_stages"], lab_standin=lab))
    failed = [c.label for c in checks if c.status == FAIL]
    status = FAIL if failed or not any(c.kind == "performance" and c.status != FAIL for c in checks) else PASS
    return Verdict(status=status, checks=checks, failed=failed, lab_standins=lab, series=series,
                   limits=paths.where_is_the_limit(checks, series, ctx, nodes))


def _repeats(ctx: dict[str, Any]) -> int | None:
    """validation_repeats of the run (context.json), or None when it is not a positive number."""
    try:
        value = int(ctx.get("validation_repeats") or 0)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def _ranks_per_node(ctx: dict[str, Any], node: str, models: dict[str, Any], stage: str = "nccl") -> int | None:
    """Ranks each node contributes: validation_<stage>.procs_per_node, or (auto) the GPUs of its dgx_model."""
    setting = (ctx.get(f"validation_{stage}") or {}).get("procs_per_node", "auto")
    if isinstance(setting, int) and not isinstance(setting, bool):
        return setting
    model = _node_model(ctx, models, node)
    gpus = int(model.get("gpus") or 0)
    return gpus or None


def _link_ceilings(ctx: dict[str, Any], nodes: list[str]) -> dict[str, float | None]:
    from .thresholds import node_bottleneck_link_MBps

    out: dict[str, float | None] = {}
    for n in nodes:
        try:
            out[n] = node_bottleneck_link_MBps(ctx, n)[0]
        except ThresholdError:
            out[n] = None
    return out


def _judge_ddp(ctx: dict[str, Any], ddp_dir: Path, nodes: list[str], lab: bool, baseline: dict[str, float],
               series: dict[str, Any], models: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    counts = sorted({1, len(nodes)}) if nodes else [1]
    per_node = _ranks_per_node(ctx, nodes[0], models, "ddp") if nodes else None
    throughput: dict[int, dict[str, tuple[float | None, bool]]] = {}
    for count in counts:
        case = f"n{count}"
        sanity, per_mode = judge_ddp_case(ddp_dir / case, case, per_node * count if per_node else None, lab,
                                          _repeats(ctx))
        checks.append(sanity)
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
    checks.append(_perf_check(ctx, "ddp_scaling_efficiency", None, eff, ok1 and okn, lab, baseline))
    if top == 1 and checks[-1].status != FAIL:
        checks[-1].reasons.append("one node only: scaling from 1 node to all is trivially 1")
    for count in counts:
        syn, oks = throughput[count]["synthetic"]
        real, okr = throughput[count]["real"]
        ratio: list[float | None] = [real / syn] if oks and okr and syn and real else [None]
        checks.append(_perf_check(ctx, "ddp_real_over_synthetic", f"{count} node{'s' if count > 1 else ''}",
                                  ratio, oks and okr, lab, baseline))
    series["ddp"] = {
        "nodes": counts,
        "synthetic": [throughput[c]["synthetic"][0] for c in counts],
        "real": [throughput[c]["real"][0] for c in counts],
    }
    return checks


def summary_counts(verdict: Verdict) -> dict[str, int]:
    out = {PASS: 0, FAIL: 0, INFO: 0}
    for c in verdict.checks:
        out[c.status] = out.get(c.status, 0) + 1
    return out


def median_or_none(values: list[float | None]) -> float | None:
    good = [v for v in values if v is not None]
    return statistics.median(good) if good else None
