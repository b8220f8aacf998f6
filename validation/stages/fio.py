"""The fio stage's judge: the layout of the file set, the sanity of each read case (validation/parse_fio.py) and
its bandwidth against the thresholds, per node alone and every node at once. The runner is
validation/runners/fio_runner.py, the role's entry point roles/validate/tasks/fio.yml.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .. import asked, parse_fio
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
    judge_site,
    read_sample,
)
from ..site import Site
from ..thresholds import ThresholdError

# fio's words for a full file system or quota: errno 28 (ENOSPC: an XFS project quota and OneFS SmartQuotas
# answer it over NFS) and 122 (EDQUOT), as "error N" of a job or fio's own "err=N" / strerror text.
_FULL = re.compile(r"(?:\berror (?:28|122)\b|\berr=\s*(?:28|122)\b|No space left on device|Disk quota exceeded)")


def full_scratch_hint(problems: list[str], meta: dict[str, Any]) -> str | None:
    """When fio failed because the scratch export is full, the reason and the fix (None otherwise)."""
    if not any(_FULL.search(p) for p in problems):
        return None
    dirs = (asked.asked_of(meta) or {}).get("directories")
    where = sorted({os.path.dirname(str(d).rstrip("/")) for d in (dirs.values() if isinstance(dirs, dict) else [])})
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
def judge_fio_case(case_dir: Path, case: str, lab: bool, repeats: int | None = None,
                   case_nodes: list[str] | None = None) -> tuple[Check, list[float | None], dict[str, list[float]]]:
    """Sanity of one fio case; returns (check, per-sample read MB/s, per-client read MB/s samples)."""
    meta = _load_meta(case_dir)
    check, ok = _case_preamble("fio", case, meta, lab)
    values: list[float | None] = []
    per_client: dict[str, list[float]] = {}
    if not ok:
        return check, values, per_client
    assert meta is not None
    launch = asked.asked_of(meta) or {}
    expected = launch.get("clients")
    early = asked.repeat_problems("fio", meta, case_dir, repeats)
    if not isinstance(expected, dict) or not expected:
        early.append("meta.json names no asked clients (asked.clients): a missing client could not be noticed")
        expected = {}
    elif case_nodes is not None and sorted(set(map(str, expected.values()))) != sorted(set(case_nodes)):
        early.append(f"launched for the clients of {asked.show(list(expected.values()))}, the case reads from "
                     f"{asked.show(case_nodes)}")
    if early:
        check.status = FAIL
        check.reasons.extend(early)
    for sample in meta["samples"]:
        problems, result = read_sample(case_dir, meta, sample, parse_fio.parse, (parse_fio.FioParseError,))
        tag = sample.get("file")
        value = None
        if result is not None:
            problems.extend(f"{tag}: {e}" for e in result.errors)
            if not result.options:
                problems.append(f"{tag}: fio printed no job options ('global options'): what ran cannot be "
                                "compared with what was asked")
            problems.extend(f"{tag}: {p}" for p in asked.problems("fio", meta, parse_fio.done(result)))
            got = parse_fio.client_bw(result)
            moved = parse_fio.client_io_bytes(result)
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


def _link_ceilings(site: Site, nodes: list[str]) -> dict[str, float | None]:
    from ..thresholds import node_bottleneck_link_MBps

    out: dict[str, float | None] = {}
    for n in nodes:
        try:
            out[n] = node_bottleneck_link_MBps(site, n)[0]
        except ThresholdError:
            out[n] = None
    return out


def judge_stage(site: Site, fio_dir: Path, baseline: dict[str, float]) -> tuple[list[Check], dict[str, Any]]:
    """The layout, every node's read alone and the aggregate read: sanity and bandwidth; the plots' series."""
    nodes, lab, repeats = list(site.nodes), site.lab, site.repeats
    checks = judge_fio_layout(fio_dir / "layout", lab)
    node_values: dict[str, float | None] = {}
    for n in nodes:
        sanity, samples, _clients = judge_fio_case(fio_dir / f"node-{n}", f"node-{n}", lab, repeats, [n])
        checks.append(judge_site(sanity, "fio", fio_dir / f"node-{n}", site, [n]))
        perf = _perf_check(site, "fio_node_read_MBps", n, samples, sanity.status == PASS, lab, baseline,
                           f"node-{n}")
        checks.append(perf)
        node_values[n] = perf.value
    sanity, samples, clients = judge_fio_case(fio_dir / "aggregate", "aggregate", lab, repeats, nodes)
    checks.append(judge_site(sanity, "fio", fio_dir / "aggregate", site, nodes))
    checks.append(_perf_check(site, "fio_aggregate_read_MBps", None, samples, sanity.status == PASS, lab,
                              baseline, "aggregate"))
    series = {"node_read_MBps": node_values,
              "aggregate_clients_MBps": {k: max(v) for k, v in clients.items() if v},
              "link_MBps": _link_ceilings(site, nodes)}
    return checks, series
