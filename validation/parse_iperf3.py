"""Parse ``iperf3 -J`` (JSON) output: one TCP test between a client and a server.

The layout is iperf3's own (src/iperf_api.c): ``start`` (``connected`` sockets, ``version``, ``test_start`` with
``protocol``, ``num_streams``, ``duration``, ``reverse``), ``intervals`` and ``end`` with ``sum_sent`` and
``sum_received`` (``bytes``, ``seconds``, ``bits_per_second``; ``retransmits`` on the sender). A failed test
still prints a JSON document: iperf3 adds the message as a top-level ``error`` string (src/iperf_error.c,
iperf_errexit) and leaves ``end`` empty; a test killed before its end leaves ``end`` empty with no error.
Real captures: tests/fixtures/paths/real (SOURCES). The throughput is what the receiver got
(``sum_received``): with ``-R`` the server sends and the client receives, the direction of an NFS read.
Unparseable input raises Iperf3ParseError; a document that parsed but holds no result is kept, with the reason.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any


class Iperf3ParseError(ValueError):
    """The input holds no iperf3 JSON document."""


@dataclass
class Iperf3Result:
    version: str | None = None
    protocol: str | None = None
    num_streams: int | None = None
    duration_s: float | None = None
    reverse: bool | None = None
    connected: list[dict[str, Any]] = field(default_factory=list)
    received_bytes: int | None = None
    received_seconds: float | None = None
    received_bps: float | None = None
    sent_bytes: int | None = None
    sent_bps: float | None = None
    retransmits: int | None = None
    error: str | None = None
    system_info: str | None = None     # start.system_info: the client's uname -a ("Linux HOST 5.4.0 ...")

    @property
    def received_MBps(self) -> float | None:
        """What arrived, in MB/s (1e6 bytes per second, the unit of fio's figures)."""
        if self.received_bps is None or not math.isfinite(self.received_bps):
            return None
        return self.received_bps / 8 / 1e6

    def to_dict(self) -> dict[str, Any]:
        return dict(asdict(self), received_MBps=self.received_MBps)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def parse(text: str) -> Iperf3Result:
    """One iperf3 -J document (the whole file; iperf3 prints nothing else on stdout with -J)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Iperf3ParseError(f"not an iperf3 JSON document: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("start"), dict):
        raise Iperf3ParseError("not an iperf3 JSON document: no 'start' object")
    start = doc["start"]
    test = start.get("test_start") if isinstance(start.get("test_start"), dict) else {}
    result = Iperf3Result(version=start.get("version"), protocol=test.get("protocol"),
                          num_streams=test.get("num_streams") if isinstance(test.get("num_streams"), int) else None,
                          duration_s=_number(test.get("duration")),
                          reverse=bool(test["reverse"]) if isinstance(test.get("reverse"), int) else None,
                          connected=[c for c in start.get("connected") or [] if isinstance(c, dict)],
                          system_info=start.get("system_info") if isinstance(start.get("system_info"), str) else None)
    if isinstance(doc.get("error"), str):
        result.error = doc["error"]
    end: dict[str, Any] = doc["end"] if isinstance(doc.get("end"), dict) else {}
    received: dict[str, Any] = end["sum_received"] if isinstance(end.get("sum_received"), dict) else {}
    sent: dict[str, Any] = end["sum_sent"] if isinstance(end.get("sum_sent"), dict) else {}
    if received:
        result.received_bytes = received.get("bytes") if isinstance(received.get("bytes"), int) else None
        result.received_seconds = _number(received.get("seconds"))
        result.received_bps = _number(received.get("bits_per_second"))
    if sent:
        result.sent_bytes = sent.get("bytes") if isinstance(sent.get("bytes"), int) else None
        result.sent_bps = _number(sent.get("bits_per_second"))
        result.retransmits = sent.get("retransmits") if isinstance(sent.get("retransmits"), int) else None
    return result


def done(result: Iperf3Result) -> dict[str, Any]:
    """What iperf3 says it ran, named as validation/asked.yml names the asked parameters: test_start's protocol,
    streams, duration and direction, the far end of every stream, the client's host name (short, from its uname in
    system_info) and how long the receiver received."""
    fields = (result.system_info or "").split()
    return {"protocol": result.protocol, "streams": result.num_streams, "seconds": result.duration_s,
            "reverse": result.reverse, "server": sorted({str(c.get("remote_host")) for c in result.connected}),
            "client": fields[1].split(".")[0] if len(fields) > 1 else None,
            "received_s": result.received_seconds}


def problems(result: Iperf3Result) -> list[str]:
    """What makes a parsed test no measurement at all: iperf3's own error, no result, a throughput that is not a
    positive number. (Protocol, streams, direction, length, server and client asked against done:
    validation/asked.py.)"""
    out: list[str] = []
    if result.error:
        out.append(f"iperf3 reported an error: {result.error}")
    if result.received_bps is None:
        out.append("no end.sum_received: the test did not finish (killed, or the connection failed)")
    elif result.received_bps <= 0 or not (result.received_bytes or 0) > 0:
        out.append(f"moved no data ({result.received_bytes} bytes received)")
    return out
