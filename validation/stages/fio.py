"""The fio stage's judge: the layout of the file set, the sanity of each read case (validation/parse_fio.py) and
its bandwidth against the thresholds, per node alone and every node at once. The runner is
validation/runners/fio_runner.py, the role's entry point roles/validate/tasks/fio.yml.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .. import parse_fio
from ..checks import (
    FAIL,
    PASS,
    Check,
    _case_preamble,
    _load_meta,
    _perf_check,
    _sample_problems,
    finite,
    judge_guard,
    read_sample,
    repeats_problem,
)
from ..thresholds import ThresholdError


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


def _link_ceilings(ctx: dict[str, Any], nodes: list[str]) -> dict[str, float | None]:
    from ..thresholds import node_bottleneck_link_MBps

    out: dict[str, float | None] = {}
    for n in nodes:
        try:
            out[n] = node_bottleneck_link_MBps(ctx, n)[0]
        except ThresholdError:
            out[n] = None
    return out


def judge_stage(ctx: dict[str, Any], fio_dir: Path, nodes: list[str], lab: bool, baseline: dict[str, float],
                repeats: int | None) -> tuple[list[Check], dict[str, Any]]:
    """The layout, every node's read alone and the aggregate read: sanity and bandwidth; the plots' series."""
    checks = judge_fio_layout(fio_dir / "layout", lab)
    node_values: dict[str, float | None] = {}
    for n in nodes:
        sanity, samples, _clients = judge_fio_case(fio_dir / f"node-{n}", f"node-{n}", lab, repeats)
        checks.append(sanity)
        perf = _perf_check(ctx, "fio_node_read_MBps", n, samples, sanity.status == PASS, lab, baseline,
                           f"node-{n}")
        checks.append(perf)
        node_values[n] = perf.value
    sanity, samples, clients = judge_fio_case(fio_dir / "aggregate", "aggregate", lab, repeats)
    checks.append(sanity)
    checks.append(_perf_check(ctx, "fio_aggregate_read_MBps", None, samples, sanity.status == PASS, lab,
                              baseline, "aggregate"))
    series = {"node_read_MBps": node_values,
              "aggregate_clients_MBps": {k: max(v) for k, v in clients.items() if v},
              "link_MBps": _link_ceilings(ctx, nodes)}
    return checks, series
