"""The statistics the OneFS API simulator serves (GET /platform/1/statistics/current and /statistics/keys), from
real counters of the machine it runs on: in the lab, powerscale01's kernel NFS server.

Answer shape: ``{"stats": [{"devid", "error", "error_code", "key", "time", "value"}, ...]}``, the fields of the
isilon-sdk's StatisticsCurrentStat and the layout of a real answer (tests/fixtures/onefs/real/
statistics-current-csm-metrics-powerscale.json). The keys are the ones validation/array_telemetry.py samples,
named as Dell's own clients query them (tests/fixtures/onefs/real/SOURCES); the simulator serves those only and
answers any other key 404 (what OneFS answers for an unknown key is known from no capture: the 404 is the
simulator's own).

Counters (one simulated node, devid 1):
  node.net.ext.bytes.out.rate / .in.rate  bytes sent / received by the front-end interfaces, from /proc/net/dev
                                          (every interface but lo and the management NIC, as the simulator's
                                          network interface list)
  node.ifs.bytes.out.rate / .in.rate      bytes nfsd read from / wrote to the file system, from the ``io
                                          <bytes-read> <bytes-written>`` line of /proc/net/rpc/nfsd (format:
                                          the kernel's fs/nfsd/stats.c)
A background thread reads the counters every second; a rate is the difference of the last two readings over the
seconds between them, stamped with the epoch second of the later reading (as a cluster stamps a stat with its
collection time). Before two readings exist a key answers its own error, as a cluster does for a stat it cannot
give (error / error_code fields).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .model import not_found

COUNTER_OF = {
    "node.net.ext.bytes.out.rate": "net_tx_bytes",
    "node.net.ext.bytes.in.rate": "net_rx_bytes",
    "node.ifs.bytes.out.rate": "nfsd_read_bytes",
    "node.ifs.bytes.in.rate": "nfsd_write_bytes",
}
DESCRIPTIONS = {
    "node.net.ext.bytes.out.rate": "Bytes per second sent on the node's external network interfaces",
    "node.net.ext.bytes.in.rate": "Bytes per second received on the node's external network interfaces",
    "node.ifs.bytes.out.rate": "Bytes per second read from the file system on the node",
    "node.ifs.bytes.in.rate": "Bytes per second written to the file system on the node",
}
SKIP_INTERFACES = ("lo", "mgmt0")


def parse_proc_net_dev(text: str, skip: tuple[str, ...] = SKIP_INTERFACES) -> dict[str, tuple[int, int]]:
    """/proc/net/dev: interface -> (received bytes, transmitted bytes), leaving out the skipped interfaces."""
    out: dict[str, tuple[int, int]] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or len(fields) < 9 or name.strip() in skip:
            continue
        out[name.strip()] = (int(fields[0]), int(fields[8]))
    return out


def parse_nfsd_io(text: str) -> tuple[int, int] | None:
    """The ``io <bytes-read> <bytes-written>`` line of /proc/net/rpc/nfsd, or None when there is none."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "io":
            return int(parts[1]), int(parts[2])
    return None


def kernel_counters(net_dev: Path = Path("/proc/net/dev"), nfsd: Path = Path("/proc/net/rpc/nfsd")) -> dict[str, float]:
    """The counters behind the served keys, read now. The nfsd counters are absent while nfsd does not run."""
    nics = parse_proc_net_dev(net_dev.read_text(encoding="ascii"))
    out = {"net_rx_bytes": float(sum(rx for rx, _ in nics.values())),
           "net_tx_bytes": float(sum(tx for _, tx in nics.values()))}
    try:
        io = parse_nfsd_io(nfsd.read_text(encoding="ascii"))
    except OSError:
        io = None
    if io is not None:
        out["nfsd_read_bytes"], out["nfsd_write_bytes"] = float(io[0]), float(io[1])
    return out


class Statistics:
    """Readings of the counters (the last few) and the rates derived from them."""

    def __init__(self, read: Callable[[], dict[str, float]], devid: int = 1,
                 clock: Callable[[], float] = time.time) -> None:
        self._read = read
        self._clock = clock
        self.devid = devid
        self.readings: deque[tuple[float, dict[str, float]]] = deque(maxlen=3)
        self._lock = threading.Lock()

    def sample(self) -> None:
        reading = (self._clock(), self._read())
        with self._lock:
            self.readings.append(reading)

    def _stat(self, key: str) -> dict[str, Any]:
        counter = COUNTER_OF[key]
        with self._lock:
            readings = list(self.readings)
        stat: dict[str, Any] = {"devid": self.devid, "error": None, "error_code": None, "key": key,
                                "time": int(readings[-1][0]) if readings else int(self._clock()), "value": None}
        if len(readings) < 2 or counter not in readings[-1][1] or counter not in readings[-2][1]:
            stat["error"] = "statistic not available yet" if len(readings) < 2 else f"no counter for {key} on this node"
            stat["error_code"] = 2
            return stat
        (t0, before), (t1, after) = readings[-2], readings[-1]
        seconds = t1 - t0
        stat["value"] = max(0.0, after[counter] - before[counter]) / seconds if seconds > 0 else 0.0
        return stat

    def current(self, query: dict[str, str]) -> dict[str, Any]:
        """GET /platform/1/statistics/current?keys=...&devid=all|<n>"""
        keys = [k for k in (query.get("keys") or query.get("key") or "").split(",") if k]
        if not keys:
            raise not_found("No statistics keys given (keys=...)")
        unknown = [k for k in keys if k not in COUNTER_OF]
        if unknown:
            raise not_found(f"Statistics key(s) not found: {', '.join(unknown)}")
        devid = query.get("devid", "all")
        if devid not in ("all", str(self.devid)):
            raise not_found(f"Device id {devid} not found (this cluster has devid {self.devid})")
        return {"stats": [self._stat(k) for k in keys]}

    @staticmethod
    def keys() -> dict[str, Any]:
        """GET /platform/1/statistics/keys (the keys this simulator serves, isilon-sdk StatisticsKey fields)."""
        items = [{"aggregation_type": "avg", "base_name": None, "default_cache_time": 1,
                  "description": DESCRIPTIONS[k], "key": k, "policies": None, "policy_cache_time": None,
                  "real_name": None, "scope": "node", "type": "double", "units": "bytes/s"} for k in sorted(COUNTER_OF)]
        return {"keys": items, "total": len(items)}

    def run(self, interval_s: float, stop: threading.Event) -> None:
        """Read the counters every interval, just after each whole multiple of it (so the epoch seconds the stats
        are stamped with step by one interval), until stop is set: the simulator's background thread."""
        while not stop.is_set():
            # a counter file that cannot be read leaves the last readings: the stats keep their old time
            with contextlib.suppress(OSError, ValueError):
                self.sample()
            now = self._clock()
            stop.wait(max(0.0, (now // interval_s + 1) * interval_s + 0.05 - now))
