"""Utilisation samples taken on a DGX during a training (validation/runners/util_sampler.py): GPU utilisation
from ``nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv``, or, in the lab where the VMs have
no GPU, CPU utilisation from the aggregate ``cpu`` line of ``/proc/stat``.

nvidia-smi's CSV: a header naming each queried field with its unit in brackets (``utilization.gpu [%]``), then
one line per GPU with the unit after each value (``87 %``, ``2679 MiB``); a value the GPU cannot report is
``[N/A]`` or ``[Not Supported]`` (real capture: tests/fixtures/paths/real/nvidia-smi-query-gpu-4gpu.csv).
``/proc/stat``'s ``cpu`` line: jiffies spent in user, nice, system, idle, iowait, irq, softirq, steal (guest and
guest_nice are already counted in user and nice; proc(5)); busy = 1 - (idle + iowait) / total between two
readings (real capture: tests/fixtures/paths/real/proc-stat-dev-machine.txt).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

GPU_FIELDS = ("index", "utilization.gpu", "memory.used")
_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")


class UtilParseError(ValueError):
    """A sample that is not the output it should be."""


@dataclass(frozen=True)
class GpuReading:
    index: int
    util_pct: float | None
    memory_used_mib: float | None


def _value(cell: str) -> float | None:
    text = cell.strip()
    if text.startswith("[") or not text:
        return None  # [N/A], [Not Supported], [Unknown Error]
    number = text.split()[0]
    try:
        value = float(number)
    except ValueError:
        raise UtilParseError(f"not a number: {cell.strip()!r}") from None
    return value if math.isfinite(value) else None


def parse_nvidia_smi(text: str, fields: tuple[str, ...] = GPU_FIELDS) -> list[GpuReading]:
    """One nvidia-smi --query-gpu CSV answer (with its header), one reading per GPU."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise UtilParseError("nvidia-smi printed nothing")
    header = [_UNIT.sub("", cell).strip() for cell in lines[0].split(",")]
    if tuple(header) != fields:
        raise UtilParseError(f"nvidia-smi header {lines[0].strip()!r} does not name the fields asked for "
                             f"({', '.join(fields)})")
    out = []
    for line in lines[1:]:
        cells = line.split(",")
        if len(cells) != len(fields):
            raise UtilParseError(f"nvidia-smi line {line.strip()!r}: {len(cells)} values for {len(fields)} fields")
        row = dict(zip(fields, cells, strict=True))
        index = _value(row["index"])
        if index is None:
            raise UtilParseError(f"nvidia-smi line {line.strip()!r} has no GPU index")
        out.append(GpuReading(int(index), _value(row["utilization.gpu"]), _value(row["memory.used"])))
    if not out:
        raise UtilParseError("nvidia-smi listed no GPU")
    return out


def parse_proc_stat_cpu(text: str) -> tuple[int, ...]:
    """The aggregate ``cpu`` line of /proc/stat (the first line, or the whole file) as its jiffy counters."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                values = tuple(int(x) for x in parts[1:])
            except ValueError:
                raise UtilParseError(f"/proc/stat cpu line {line.strip()!r} holds a non-integer") from None
            if len(values) < 8:
                raise UtilParseError(f"/proc/stat cpu line {line.strip()!r}: {len(values)} counters, 8 or more expected")
            return values
    raise UtilParseError("no aggregate 'cpu' line (not /proc/stat)")


def cpu_busy_pct(before: tuple[int, ...], after: tuple[int, ...]) -> float | None:
    """Busy share of all CPUs between two /proc/stat readings, in percent (None when no time passed)."""
    total = sum(after[:8]) - sum(before[:8])
    idle = (after[3] + after[4]) - (before[3] + before[4])
    if total <= 0:
        return None
    return max(0.0, min(100.0, 100.0 * (total - idle) / total))


@dataclass(frozen=True)
class UtilSeries:
    """One node's utilisation over time: (epoch seconds, percent) points and the peak memory (GPU only)."""

    what: str                                  # gpu | cpu
    points: list[tuple[float, float]]
    gpus: int | None = None
    peak_memory_mib: float | None = None

    def mean_between(self, start: float | None, end: float | None) -> float | None:
        inside = [v for t, v in self.points if (start is None or t >= start) and (end is None or t <= end)]
        return sum(inside) / len(inside) if inside else None


def series_from_samples(doc: dict[str, Any]) -> tuple[UtilSeries, list[str]]:
    """The util_sampler document of one node as a series, with the problems found in its samples."""
    what = str(doc.get("what"))
    problems: list[str] = [str(e) for e in doc.get("errors") or []]
    samples = [s for s in doc.get("samples") or [] if isinstance(s, dict)]
    points: list[tuple[float, float]] = []
    gpus: set[int] = set()
    peak: float | None = None
    previous: tuple[float, tuple[int, ...]] | None = None
    for sample in samples:
        t = sample.get("t")
        text = sample.get("text")
        if not isinstance(t, (int, float)) or not isinstance(text, str):
            problems.append(f"a sample without time or output: {str(sample)[:80]}")
            continue
        try:
            if what == "gpu":
                readings = parse_nvidia_smi(text)
                values = [r.util_pct for r in readings if r.util_pct is not None]
                gpus.update(r.index for r in readings)
                mems = [r.memory_used_mib for r in readings if r.memory_used_mib is not None]
                if mems:
                    peak = max([*mems, peak or 0.0])
                if values:
                    points.append((float(t), sum(values) / len(values)))
            elif what == "cpu":
                counters = parse_proc_stat_cpu(text)
                if previous is not None:
                    busy = cpu_busy_pct(previous[1], counters)
                    if busy is not None:
                        points.append(((previous[0] + float(t)) / 2, busy))
                previous = (float(t), counters)
            else:
                problems.append(f"unknown utilisation kind {what!r} (gpu or cpu)")
                break
        except UtilParseError as exc:
            problems.append(f"sample at {t}: {exc}")
    return UtilSeries(what, points, len(gpus) or None, peak), problems
