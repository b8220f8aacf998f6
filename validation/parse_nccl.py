"""Parse nccl-tests output: the stdout table of any version and the ``-J`` JSON file.

The stdout parser keys every value on the header's column names, never on positions, so it reads:
- the current layout (``size count type redop root time algbw busbw #wrong time algbw busbw #wrong``),
- older layouts without ``root`` and with an ``error`` column (maximum relative error, not a count),
- ``N/A`` under ``#wrong`` when the test ran with ``-c 0`` (no data check),
- lines prefixed by ``mpirun --tag-output`` (``[1,0]<stdout>:``) or ``srun --label`` (``0: ``), or by two
  launchers at once (``0: [1,0]<stdout>:``; Ray/SkyPilot's ``(head, rank=0, pid=3808) [1,0]<stdout>:``),
- NCCL_DEBUG lines interleaved anywhere, and several runs in one log (one per table header).

A log that stops before the footer, a row that cannot be read, or a table without rows yields a run with
``complete: false`` and the reasons in ``errors``; nothing is ever filled in with zeros.

The collective is taken from the log, never assumed: from the command line when the log echoes it
(``./build/all_reduce_perf -b 8 ...``, behind any prompt or launcher prefix), else from nccl-tests' own
``# Collective test starting:`` line, else it stays ``None``. When both name a collective and they differ, the
run gets an error (which binary printed the table is then unknown). The parser does not judge: a caller that
expects all_reduce compares ``collective`` (and the rows' ``redop``: ``none`` for all_gather, alltoall, ...)
and fails the run when they differ (validation/stages/nccl.py, nccl_table_problems).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

# mpirun --tag-output: "[1,3]<stdout>:" ; srun --label: "3: " ; Ray (SkyPilot): "(head, rank=0, pid=3808) " or
# "(worker1, rank=1, pid=2201, ip=10.0.0.2) "; pyxis/enroot adds nothing. Launchers stack: strip every one.
_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+:\s|\s*\([\w.-]+, rank=\d+, pid=\d+[^)]*\)\s)+")
# The command line when the launcher echoes it: "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1"
_COMMAND = re.compile(r"(?:^|[\s/])(?P<test>[a-z_]+_perf)(?:_mpi)?\s+-")
# The size sweep nccl-tests announces: "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor)"
_SWEEP = re.compile(r"minBytes\s+(\d+)\s+maxBytes\s+(\d+)\s+step:\s*(\d+)\((factor|bytes)\)")
# The rest of that header line: "# nThread 1 nGpus 8 ... warmup iters: 5 iters: 20 agg iters: 1 ..."
_THREADS = re.compile(r"nThread\s+(\d+)\s+nGpus\s+(\d+)")
_ITERS = re.compile(r"warmup iters:\s*(\d+)\s+iters:\s*(\d+)")
# NCCL INFO lines name their host: "dgx01:41230:41230 [0] NCCL INFO ..."
_INFO_HOST = re.compile(r"^([\w.-]+):\d+:\d+ \[\d+\] NCCL (?:INFO|WARN)")
# A result row with text glued in front of it ("garbage1048576  262144  float  sum ...")
_ROW_TAIL = re.compile(r"\D(\d+)\s+(\d+)\s+(?:float|double|half|bfloat16|int8|uint8|int32|uint32|int64|uint64|f8\w*|fp8\w*)\s+\w+\s+-?\d")
_RANK_LINE = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)")
_OOB = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([-+0-9.eE]+|nan|inf)")
_NRANKS = re.compile(r"NCCL INFO comm \S+ rank (\d+) nranks (\d+)")
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_NCCL_VERSION = re.compile(r"NCCL version (\S+)")
_TESTS_VERSION = re.compile(r"^#\s*nccl-tests version (\S+)")
_ERROR_LINE = re.compile(r"(NCCL error|Test NCCL failure|Test CUDA failure|Test failure|CANCELLED AT|Aborted|Segmentation fault)", re.I)
_WARN_LINE = re.compile(r"NCCL WARN")
# The lab's stand-in (validation/runners/gloo_allreduce.py) says what it is above its table
_STANDIN = re.compile(r"^#\s*lab stand-in:")

# The per-placement columns, in the order nccl-tests prints them after the key columns.
_PLACEMENT_COLS = ("time", "algbw", "busbw", "wrong")
_KEY_COLS = ("size", "count", "type", "redop", "root")


@dataclass
class Placement:
    time_us: float | None
    algbw_gbps: float | None
    busbw_gbps: float | None
    wrong: float | None          # count of wrong elements (#wrong); None when not checked (N/A) or not a count
    max_error: float | None = None  # older versions: maximum relative error instead of a count


@dataclass
class Row:
    size: int
    count: int | None
    type: str | None
    redop: str | None
    root: int | None
    out_of_place: Placement | None
    in_place: Placement | None


@dataclass
class NcclRun:
    collective: str | None = None
    ranks: int | None = None
    nodes: list[str] = field(default_factory=list)
    complete: bool = False
    out_of_bounds_ok: bool | None = None
    out_of_bounds_count: int | None = None
    avg_busbw_gbps: float | None = None
    nccl_version: str | None = None
    nccl_tests_version: str | None = None
    data_checked: bool | None = None
    sweep: dict[str, Any] | None = None     # {min_bytes, max_bytes, step, step_kind} from the header line
    header: dict[str, int] = field(default_factory=dict)  # {nthread, ngpus, warmup_iters, iters} from that line
    standin: bool = False   # printed by the lab's gloo stand-in ("# lab stand-in: ..."), not by nccl-tests
    info_hosts: list[str] = field(default_factory=list)  # hosts named by NCCL INFO lines (no "# Rank" lines)
    rows: list[Row] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # NCCL WARN lines: kept, not fatal by themselves

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class NcclParseError(ValueError):
    """The input holds no nccl-tests result table at all."""


def _base(test: str) -> str:
    """A test binary's name without the MPI build's suffix: all_reduce_perf_mpi -> all_reduce_perf."""
    return test.removesuffix("_mpi")


def strip_prefix(line: str) -> str:
    """Remove an mpirun --tag-output or srun --label prefix."""
    return _PREFIX.sub("", line, count=1)


def _header_columns(line: str) -> list[str] | None:
    """Column names of a result header line, or None when the line is not one."""
    body = line.lstrip("#").split()
    if len(body) < 6 or body[0] != "size" or "busbw" not in body:
        return None
    names = []
    for tok in body:
        low = tok.lower()
        if low in ("#wrong", "wrong", "error", "errors"):
            names.append("error" if low.startswith("error") else "wrong")
        elif low in ("time", "cputime"):
            names.append("time")
        else:
            names.append(low)
    return names


def _num(tok: str) -> float | None:
    if tok.upper() == "N/A":
        return None
    return float(tok)


def _parse_row(tokens: list[str], columns: list[str]) -> Row:
    """Map a data line onto the header's columns. Raises ValueError when it does not fit."""
    key: dict[str, str] = {}
    idx = 0
    for name in columns:
        if name not in _KEY_COLS:
            break
        key[name] = tokens[idx]
        idx += 1
    placements: list[Placement | None] = []
    rest = columns[idx:]
    # Group the remaining columns into placements: each starts at "time".
    groups: list[list[str]] = []
    for name in rest:
        if name == "time" or not groups:
            groups.append([])
        groups[-1].append(name)
    for group in groups[:2]:
        values: dict[str, str] = {}
        for name in group:
            if idx >= len(tokens):
                raise ValueError("row has fewer values than the header has columns")
            values[name] = tokens[idx]
            idx += 1
        wrong_tok = values.get("wrong")
        error_tok = values.get("error")
        placements.append(
            Placement(
                time_us=_num(values["time"]),
                algbw_gbps=_num(values["algbw"]),
                busbw_gbps=_num(values["busbw"]),
                wrong=_num(wrong_tok) if wrong_tok is not None else None,
                max_error=_num(error_tok) if error_tok is not None else None,
            )
        )
    if len(placements) < 2:
        raise ValueError("row lacks the in-place columns")
    root = key.get("root")
    return Row(
        size=int(key["size"]),
        count=int(key["count"]) if "count" in key else None,
        type=key.get("type"),
        redop=key.get("redop"),
        root=int(root) if root is not None else None,
        out_of_place=placements[0],
        in_place=placements[1],
    )


def parse_stdout(text: str) -> list[NcclRun]:
    """Parse an nccl-tests stdout log into one NcclRun per result table. Raises NcclParseError when none."""
    runs: list[NcclRun] = []
    current: NcclRun | None = None
    columns: list[str] | None = None
    pending_rank_lines: dict[int, str] = {}
    pending_collective: str | None = None
    nccl_version: str | None = None
    tests_version: str | None = None
    nranks_seen: dict[int, int] = {}
    command_test: str | None = None
    sweep: dict[str, Any] | None = None
    header: dict[str, int] = {}
    standin = False
    info_hosts: set[str] = set()
    pre_errors: list[str] = []   # failures printed before a table header belong to that table's run
    for raw in text.splitlines():
        line = strip_prefix(raw).rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if m := _NCCL_VERSION.search(stripped):
            nccl_version = m.group(1)
        if not stripped.startswith("#") and (m := _COMMAND.search(stripped)):
            command_test = m.group("test")
        if m := _SWEEP.search(stripped):
            sweep = {"min_bytes": int(m.group(1)), "max_bytes": int(m.group(2)), "step": int(m.group(3)),
                     "step_kind": m.group(4)}
            header = {}
            if t := _THREADS.search(stripped):
                header.update(nthread=int(t.group(1)), ngpus=int(t.group(2)))
            if t := _ITERS.search(stripped):
                header.update(warmup_iters=int(t.group(1)), iters=int(t.group(2)))
        if m := _INFO_HOST.match(stripped):
            info_hosts.add(m.group(1))
        if _STANDIN.match(stripped):
            standin = True
        if m := _TESTS_VERSION.match(stripped):
            tests_version = m.group(1)
        if m := _STARTING.match(stripped):
            pending_collective = m.group(1)
            pending_rank_lines = {}
            continue
        if m := _RANK_LINE.match(stripped):
            rank = int(m.group(1))
            if current is not None and current.complete:
                current = None  # a new run's device list: the previous table is closed
            pending_rank_lines[rank] = m.group(2)
            continue
        if m := _NRANKS.search(stripped):
            nranks_seen[int(m.group(1))] = int(m.group(2))
        cols = _header_columns(stripped) if stripped.startswith("#") else None
        if cols is not None:
            current = NcclRun(collective=command_test or pending_collective, nccl_version=nccl_version,
                              nccl_tests_version=tests_version, sweep=sweep, header=dict(header),
                              standin=standin, info_hosts=sorted(info_hosts))
            current.errors.extend(pre_errors)
            if command_test and pending_collective and _base(command_test) != _base(pending_collective):
                current.errors.append(f"the command line runs {command_test} but the test announces "
                                      f"{pending_collective}: which collective this table measures is unknown")
            pre_errors = []
            if pending_rank_lines:
                current.ranks = len(pending_rank_lines)
                current.nodes = sorted(set(pending_rank_lines.values()))
            elif nranks_seen:
                current.ranks = max(nranks_seen.values())
            columns = cols
            runs.append(current)
            pending_rank_lines = {}
            pending_collective = None
            continue
        if current is None or columns is None or (current.complete and not stripped.startswith("#")):
            # outside a table: a failure here is the next table's (or, with none, the log's) failure
            if not stripped.startswith("#") and _ERROR_LINE.search(stripped) and not _WARN_LINE.search(stripped):
                if current is not None and current.complete:
                    current.errors.append(f"after the table: {stripped[:200]}")
                else:
                    pre_errors.append(f"before the table: {stripped[:200]}")
            if current is None or columns is None:
                continue
        if m := _OOB.match(stripped):
            current.out_of_bounds_count = int(m.group(1))
            current.out_of_bounds_ok = current.out_of_bounds_count == 0 and m.group(2) != "FAILED"
            continue
        if m := _AVG.match(stripped):
            current.avg_busbw_gbps = float(m.group(1))
            current.complete = True
            continue
        if stripped.startswith("#"):
            if stripped.lstrip("# ").lower().startswith("error:"):
                current.errors.append(stripped.lstrip("# "))
            continue
        tokens = stripped.split()
        if tokens[0].isdigit() and not current.complete:
            try:
                current.rows.append(_parse_row(tokens, columns))
            except (ValueError, KeyError, IndexError) as exc:
                current.errors.append(f"unreadable result row ({exc}): {stripped[:120]!r}")
            continue
        if not current.complete and _ROW_TAIL.search(stripped) and not _INFO_HOST.match(stripped):
            current.errors.append(f"unreadable result row (text before the size): {stripped[:120]!r}")
            continue
        if _WARN_LINE.search(stripped):
            current.warnings.append(stripped[:200])
        elif _ERROR_LINE.search(stripped):
            current.errors.append(stripped[:200])
    if not runs:
        raise NcclParseError("no nccl-tests result table (header with size ... busbw) found"
                             + (f"; {pre_errors[0]}" if pre_errors else ""))
    if info_hosts:
        for run in runs:
            run.info_hosts = sorted(set(run.info_hosts) | info_hosts)
    for run in runs:
        _finish(run)
    return runs


def _finish(run: NcclRun) -> None:
    """Derive the run-level facts and record what is missing, so nothing incomplete passes for complete."""
    if not run.rows:
        run.errors.append("the result table has no rows")
        run.complete = False
    if run.avg_busbw_gbps is None:
        run.errors.append("log ends before the 'Avg bus bandwidth' footer (truncated, killed or timed out)")
        run.complete = False
    if run.out_of_bounds_ok is None:
        run.errors.append("no 'Out of bounds values' line")
        run.complete = False
    checked = [p.wrong for r in run.rows for p in (r.out_of_place, r.in_place) if p is not None]
    if run.rows and all(p is None for p in checked):
        has_error_col = any(r.out_of_place and r.out_of_place.max_error is not None for r in run.rows)
        run.data_checked = has_error_col
    elif run.rows:
        run.data_checked = True
    if any(e.startswith("unreadable result row") for e in run.errors):
        run.complete = False


def parse_json(text: str) -> list[NcclRun]:
    """Parse the ``-J`` JSON file of recent nccl-tests (format version 2)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NcclParseError(f"not JSON: {exc}") from exc
    if not isinstance(doc, dict) or "results" not in doc:
        raise NcclParseError("JSON without a 'results' list: not an nccl-tests -J file")
    run = NcclRun()
    args = doc.get("args") or []
    if args:
        run.collective = str(args[0]).rsplit("/", 1)[-1]
    version = doc.get("nccl_version")
    if isinstance(version, int):
        run.nccl_version = f"{version // 10000}.{version // 100 % 100}.{version % 100}"
    config = doc.get("config") or {}
    devices = config.get("devices") or []
    if all(isinstance(config.get(k), int) for k in ("minimum_bytes", "maximum_bytes", "step_factor")):
        run.sweep = {"min_bytes": config["minimum_bytes"], "max_bytes": config["maximum_bytes"],
                     "step": config["step_factor"], "step_kind": "factor"}
    run.header = {key: config[name] for key, name in (("nthread", "nthreads"), ("ngpus", "ngpus"),
                                                      ("warmup_iters", "warmup_iters"), ("iters", "iterations"))
                  if isinstance(config.get(name), int) and not isinstance(config.get(name), bool)}
    if devices:
        run.ranks = len(devices)
        run.nodes = sorted({str(d.get("hostname")) for d in devices})
    for item in doc.get("results") or []:
        try:
            run.rows.append(
                Row(
                    size=int(item["size"]),
                    count=int(item["count"]) if "count" in item else None,
                    type=item.get("type"),
                    redop=item.get("redop"),
                    root=int(str(item["root"]).strip()) if "root" in item else None,
                    out_of_place=_json_placement(item.get("out_of_place")),
                    in_place=_json_placement(item.get("in_place")),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            run.errors.append(f"unreadable result entry ({exc})")
    oob = doc.get("out_of_bounds")
    if isinstance(oob, dict) and "count" in oob:
        run.out_of_bounds_count = int(oob["count"])
        run.out_of_bounds_ok = run.out_of_bounds_count == 0 and str(oob.get("okay")).lower() == "true"
    avg = doc.get("average_bus_bandwidth")
    if isinstance(avg, dict) and isinstance(avg.get("bandwidth"), (int, float)):
        run.avg_busbw_gbps = float(avg["bandwidth"])
        run.complete = True
    # nccl-tests writes ncclGetLastError() into "errors" even when it is empty: "errors": [""] on a clean run
    # (src/util.cu, writeErrors; seen with 2.19.6 on an H100). An empty string is no error.
    run.errors.extend(str(e) for e in doc.get("errors") or [] if str(e).strip())
    if "end_time" not in doc:
        run.errors.append("JSON has no end_time: the test did not finish")
        run.complete = False
    _finish(run)
    return [run]


def _json_placement(obj: Any) -> Placement | None:
    if obj is None:
        return None
    time_us = obj.get("time", obj.get("cpu_time"))
    return Placement(
        time_us=_json_float(time_us),
        algbw_gbps=_json_float(obj.get("alg_bw")),
        busbw_gbps=_json_float(obj.get("bus_bw")),
        wrong=_json_float(obj.get("nwrong")),
    )


def _json_float(value: Any) -> float | None:
    if value is None or value == "nan":
        return None
    return float(value)


def parse(text: str) -> list[NcclRun]:
    """Parse either form: JSON when the text is a JSON object, else stdout."""
    if text.lstrip().startswith("{"):
        return parse_json(text)
    return parse_stdout(text)


def done(run: NcclRun) -> dict[str, Any]:
    """What the table says was run, named as validation/asked.yml names the asked parameters: the header's thread,
    GPU, sweep and iteration counts, how many sizes were measured, the ranks and the nodes they ran on, and whether
    the lab's stand-in printed it (the engine: nccl-tests does not name the launcher that started its ranks)."""
    sweep = run.sweep or {}
    return {**run.header, "min_bytes": sweep.get("min_bytes"), "max_bytes": sweep.get("max_bytes"),
            "step": sweep.get("step"), "sizes": len(run.rows), "ranks": run.ranks,
            "nodes": run.nodes or run.info_hosts, "standin": run.standin}


def peak_busbw(run: NcclRun, min_bytes: int = 0, placement: str = "out_of_place") -> float | None:
    """Largest bus bandwidth at message sizes >= min_bytes (the reference judges large messages)."""
    values = []
    for row in run.rows:
        p = getattr(row, placement)
        if row.size >= min_bytes and p is not None and p.busbw_gbps is not None:
            values.append(p.busbw_gbps)
    return max(values) if values else None


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' busbw/algbw factor (doc/PERFORMANCE.md): all-reduce 2(n-1)/n."""
    if ranks < 1:
        raise ValueError("ranks must be >= 1")
    if collective.startswith("all_reduce"):
        return 2.0 * (ranks - 1) / ranks
    if collective.startswith(("all_gather", "reduce_scatter", "alltoall")):
        return (ranks - 1) / ranks
    return 1.0
