"""Parse perftest's ``ib_write_bw`` report (linux-rdma/perftest): the RDMA write bandwidth between two HCAs.

The report is a banner (``RDMA_Write BW Test``, then ``Key : value`` settings two to a line, ``Device``, ``Link
type``, ...), a dashed rule, the table header ``#bytes #iterations BW peak[<unit>] BW average[<unit>]
MsgRate[Mpps]`` and one row per message size, closed by a dashed rule. ``--report_gbits`` gives the unit
``Gb/sec``; without it perftest prints ``MB/sec``. A duration run (``-D``) does not measure the peak
(``BW peak`` 0.00, perftest issue #234). Real capture: tests/fixtures/paths/real/ib_write_bw-gbits-perftest-273.txt.
The runner always asks ``--report_gbits``; a report in another unit is a problem, never converted by guess.
Unparseable input raises PerftestParseError.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

_HEADER = re.compile(r"^\s*#bytes\s+#iterations\s+BW peak\[([^\]]+)\]\s+BW average\[([^\]]+)\]\s+MsgRate\[Mpps\]")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([-+0-9.eE]+)\s+([-+0-9.eE]+)\s+([-+0-9.eE]+)\s*$")
_RULE = re.compile(r"^-{20,}\s*$")
_SETTING = re.compile(r"([A-Za-z][A-Za-z0-9 .*_]*?)\s*:\s*(\S[^\t]*?)\s*(?=\t|$)")
_ERROR = re.compile(r"(?i)^\s*(couldn't|unable|failed|error|cannot|can't)\b")


class PerftestParseError(ValueError):
    """The input holds no ib_write_bw report."""


@dataclass
class PerftestRow:
    size: int
    iterations: int
    peak: float
    average: float
    msg_rate_mpps: float


@dataclass
class PerftestRun:
    test: str | None = None
    settings: dict[str, str] = field(default_factory=dict)
    unit: str | None = None
    rows: list[PerftestRow] = field(default_factory=list)
    complete: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def device(self) -> str | None:
        return self.settings.get("Device")

    def average_gbps(self) -> float | None:
        """The average bandwidth of the largest message size, in Gb/s; None unless the report is in Gb/sec."""
        if self.unit != "Gb/sec" or not self.rows:
            return None
        value = max(self.rows, key=lambda r: r.size).average
        return value if math.isfinite(value) else None

    def to_dict(self) -> dict[str, Any]:
        return dict(asdict(self), average_gbps=self.average_gbps())


def parse(text: str) -> PerftestRun:
    run = PerftestRun()
    in_table = False
    for line in text.splitlines():
        if not run.test and line.strip().endswith(" Test") and "BW" in line:
            run.test = line.strip()
            continue
        header = _HEADER.match(line)
        if header:
            units = {header.group(1), header.group(2)}
            run.unit = header.group(2) if len(units) == 1 else "/".join(sorted(units))
            in_table = True
            continue
        if in_table:
            row = _ROW.match(line)
            if row:
                run.rows.append(PerftestRow(int(row.group(1)), int(row.group(2)), float(row.group(3)),
                                            float(row.group(4)), float(row.group(5))))
                continue
            if _RULE.match(line) and run.rows:
                run.complete = True
                in_table = False
                continue
        if _ERROR.match(line):
            run.errors.append(line.strip())
            continue
        if not in_table and ":" in line and not line.lstrip().startswith(("#", "local address", "remote address")):
            for key, value in _SETTING.findall(line):
                run.settings.setdefault(key.strip(), value.strip())
    if run.test is None and run.unit is None:
        raise PerftestParseError("no ib_write_bw report: neither the test banner nor the result table header")
    return run


def done(run: PerftestRun) -> dict[str, Any]:
    """What the report says was run, named as validation/asked.yml names the asked parameters: the HCA. (The
    duration -D and the peer are not printed in the report: they cannot be compared.)"""
    return {"device": run.device}


def problems(run: PerftestRun) -> list[str]:
    """The report as a measurement: the RDMA write test, Gb/s, a closed table with a positive average. (The HCA
    asked against the one in the banner: validation/asked.py.)"""
    out = list(run.errors)
    if run.test and "RDMA_Write" not in run.test:
        out.append(f"the report is a {run.test!r}, an RDMA write bandwidth test was asked for")
    if run.unit is None:
        out.append("no result table")
    elif run.unit != "Gb/sec":
        out.append(f"bandwidth in {run.unit}: the runner asks --report_gbits (Gb/sec)")
    if run.unit is not None and not run.complete:
        out.append("the result table is not closed: the test did not finish")
    value = run.average_gbps()
    if run.unit == "Gb/sec" and (value is None or value <= 0):
        out.append("no positive average bandwidth")
    return out
