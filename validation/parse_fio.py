"""Parse fio's ``--output-format=json`` and ``json+`` output, standalone or client/server.

fio prints error text (``fio: pid=..., err=2/...``) and, in client/server mode, the servers' text
(``<host> Starting 2 processes``) on stdout before the JSON document; the parser finds the document
after that text. Client/server output holds ``client_stats``: one entry per client (``hostname``,
``port``) and, with more than one client, an ``All clients`` aggregate. A client that could not connect
simply does not appear (fio still exits 0), so the caller compares ``clients`` with the clients it
asked for. Unparseable input raises FioParseError; a job with ``error != 0`` is kept and reported.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

_ERR_LINE = re.compile(r"^(?:<[^>]+>\s*)?fio:\s*(.*)$")


@dataclass
class Direction:
    bw_bytes: int | None
    iops: float | None
    clat_ns_p99: int | None
    io_bytes: int | None = None
    runtime_ms: int | None = None


@dataclass
class FioJob:
    name: str
    error: int | None
    read: Direction | None
    write: Direction | None
    hostname: str | None = None
    port: int | None = None


@dataclass
class FioResult:
    fio_version: str | None = None
    jobs: list[FioJob] = field(default_factory=list)
    clients: list[FioJob] = field(default_factory=list)
    aggregate: FioJob | None = None
    options: dict[str, str] = field(default_factory=dict)   # "global options": the job as fio ran it
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class FioParseError(ValueError):
    """The input holds no fio JSON document."""


def _find_document(text: str) -> tuple[str, dict[str, Any], str]:
    """Split fio output into (text before the JSON, the JSON document, text after it)."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"(?m)^\{", text):
        try:
            doc, end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and ("jobs" in doc or "client_stats" in doc):
            return text[: match.start()], doc, text[end:]
    raise FioParseError("no fio JSON document (with 'jobs' or 'client_stats') found")


def _percentile(clat: dict[str, Any] | None, pct: str = "99.000000") -> int | None:
    if not clat:
        return None
    table = clat.get("percentile") or {}
    value = table.get(pct)
    return int(value) if value is not None else None


def _direction(obj: dict[str, Any] | None) -> Direction | None:
    if not obj:
        return None
    clat = obj.get("clat_ns") or obj.get("lat_ns")
    return Direction(
        bw_bytes=int(obj["bw_bytes"]) if "bw_bytes" in obj else int(obj["bw"]) * 1024 if "bw" in obj else None,
        iops=float(obj["iops"]) if "iops" in obj else None,
        clat_ns_p99=_percentile(clat),
        io_bytes=int(obj["io_bytes"]) if "io_bytes" in obj else None,
        runtime_ms=int(obj["runtime"]) if "runtime" in obj else None,
    )


def _job(obj: dict[str, Any]) -> FioJob:
    port = obj.get("port")
    return FioJob(
        name=str(obj.get("jobname", "")),
        error=int(obj["error"]) if "error" in obj else None,
        read=_direction(obj.get("read")),
        write=_direction(obj.get("write")),
        hostname=obj.get("hostname"),
        port=int(port) if port is not None else None,
    )


def parse(text: str) -> FioResult:
    """Parse fio JSON output (possibly preceded by fio's own text). Raises FioParseError."""
    before, doc, after = _find_document(text)
    result = FioResult(fio_version=doc.get("fio version"))
    options = doc.get("global options")
    result.options = {str(k): str(v) for k, v in options.items()} if isinstance(options, dict) else {}
    for line in before.splitlines():
        m = _ERR_LINE.match(line.strip())
        if m:
            result.errors.append(m.group(1))
    for line in after.splitlines():  # fio prints a late failure (a client lost mid-run) after the document
        m = _ERR_LINE.match(line.strip())
        if m or re.search(r"\b(error|failed|timeout|timed out)\b", line, re.I):
            result.errors.append(f"after the JSON: {(m.group(1) if m else line.strip())[:200]}")
    try:
        for obj in doc.get("jobs") or []:
            result.jobs.append(_job(obj))
        for obj in doc.get("client_stats") or []:
            job = _job(obj)
            if job.name == "All clients":
                result.aggregate = job
            else:
                result.clients.append(job)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise FioParseError(f"fio JSON with an unreadable job entry: {exc}") from exc
    if not result.jobs and not result.clients:
        result.errors.append("fio JSON without any job or client result")
    for job in [*result.jobs, *result.clients]:
        if job.error:
            who = f"{job.hostname}:{job.port} " if job.hostname else ""
            result.errors.append(f"{who}job {job.name!r} ended with error {job.error}")
    return result


def client_key(job: FioJob) -> str:
    """How a client is named: 'address:port', as given to --client=ip:address,port."""
    return f"{job.hostname}:{job.port}" if job.port is not None else str(job.hostname)


def _per_client(result: FioResult, direction: str, field_name: str) -> dict[str, int]:
    """A Direction field per client 'address:port', summed over the client's jobs."""
    per: dict[str, int] = {}
    for job in result.clients:
        d = getattr(job, direction)
        value = getattr(d, field_name) if d else None
        if value is not None and job.hostname:
            per[client_key(job)] = per.get(client_key(job), 0) + value
    return per


def client_bw(result: FioResult, direction: str = "read") -> dict[str, int]:
    """Bandwidth (bytes/s) per client 'address:port' (summed when a client ran several jobs)."""
    return _per_client(result, direction, "bw_bytes")


def client_io_bytes(result: FioResult, direction: str = "read") -> dict[str, int]:
    """Bytes moved per client 'address:port' (summed over its jobs)."""
    return _per_client(result, direction, "io_bytes")


# fio's own defaults of the job options the runner sets (fio(1), "JOB PARAMETERS"): an option the job file did not
# set is not printed in "global options", and fio ran it with its default.
OPTION_DEFAULTS = {"rw": "read", "bs": "4k", "numjobs": "1", "iodepth": "1", "ioengine": "psync", "direct": "0",
                   "runtime": "0", "time_based": "0"}


def done(result: FioResult) -> dict[str, Any]:
    """What fio says it ran, named as validation/asked.yml names the asked parameters: the job options (fio's default
    where the job file left one out), the clients that reported, and per direction read the shortest time and the
    fewest bytes of any client (one value: the client that did least is the one that did not do what was asked)."""
    out: dict[str, Any] = {name: result.options.get(name, default) for name, default in OPTION_DEFAULTS.items()}
    out.update(size=result.options.get("size"), directory=result.options.get("directory"),
               clients=sorted({client_key(j) for j in result.clients if j.hostname}))
    jobs = result.clients or result.jobs
    times = [j.read.runtime_ms for j in jobs if j.read and j.read.runtime_ms is not None]
    moved = [j.read.io_bytes for j in jobs if j.read and j.read.io_bytes is not None]
    # a client that printed no read time or volume leaves it unknown: the comparison then fails closed
    out["read_s"] = min(times) / 1000 if jobs and len(times) == len(jobs) else None
    out["read_bytes"] = min(moved) if jobs and len(moved) == len(jobs) else None
    return out


def size_bytes(text: str) -> int | None:
    """A fio size ('32M', '1G', '4k', '1048576') in bytes: fio's suffixes are powers of 1024 (kb_base=1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)i?b?\s*", str(text), re.I)
    if not m:
        return None
    return int(m.group(1)) * 1024 ** ("kmgtp".find(m.group(2).lower()) + 1) if m.group(2) else int(m.group(1))


def total_bw(result: FioResult, direction: str = "read") -> int | None:
    """Total bandwidth of a run: the All clients aggregate, else the sum of clients, else of jobs."""
    if result.aggregate is not None:
        d = getattr(result.aggregate, direction)
        return d.bw_bytes if d else None
    source = result.clients or result.jobs
    values = [getattr(j, direction).bw_bytes for j in source if getattr(j, direction) is not None]
    if not values or any(v is None for v in values):
        return None
    return sum(values)
