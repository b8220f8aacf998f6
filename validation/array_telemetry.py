"""The array's own throughput counters, sampled through the OneFS Platform API during a measurement.

``GET /platform/1/statistics/current?keys=K1,K2&devid=all`` answers ``{"stats": [{"devid", "key", "time",
"value", "error", "error_code"}, ...]}``, one entry per key and node (devid; 0 for a cluster-scoped key). The
fields are those of the isilon-sdk's StatisticsCurrentStat model; a real answer is
tests/fixtures/onefs/real/statistics-current-csm-metrics-powerscale.json (SOURCES). ``value`` is a number there
(the SDK types it as a string: both are read). ``time`` is the epoch second the cluster collected the value.

Keys (names as Dell's own clients query them, SOURCES; their meaning from the key descriptions as those clients
chart them): ``node.net.ext.bytes.out.rate`` / ``.in.rate``: bytes per second leaving / entering the node's
front-end (external) network interfaces; ``node.ifs.bytes.out.rate`` / ``.in.rate``: bytes per second read from /
written to the file system. A read measured on a client must show up as bytes leaving the array's front end: the
array sends what the clients read.

How much the array sent during a phase: for each node, the rate values at each distinct collection ``time`` are
integrated over the intervals between those times (rate x seconds since the previous collection; the first
collection only opens the window, so traffic from before the sampler started is not counted). Polling faster
than the cluster updates a key repeats the same ``time``: repeats are counted once. A collection the sampler
missed (polled slower than the cluster updates) leaves its bytes out and counts the next rate twice as long:
poll at least as often as the cluster collects (validation_telemetry.interval_s).

``python -m validation.array_telemetry sample ...`` is the sampler the validate roles start on the control node
(async) before each fio read phase and training, and stop with a stop file after it. The API password comes
from stdin (--password-stdin, what the role uses) or the environment (POWERSCALE_API_PASSWORD), never from
the command line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NET_OUT = "node.net.ext.bytes.out.rate"
NET_IN = "node.net.ext.bytes.in.rate"
IFS_OUT = "node.ifs.bytes.out.rate"
IFS_IN = "node.ifs.bytes.in.rate"
KEYS = (NET_OUT, NET_IN, IFS_OUT, IFS_IN)
STATISTICS_PATH = "/platform/1/statistics/current"


@dataclass(frozen=True)
class Stat:
    key: str
    devid: int
    time: float
    value: float | None
    error: str | None = None


def parse_current(doc: Any) -> tuple[list[Stat], list[str]]:
    """The stats of one statistics/current answer, and what is wrong with it (a key's own error included)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("stats"), list):
        return [], [f"not a statistics/current answer (no 'stats' list): {str(doc)[:120]}"]
    stats: list[Stat] = []
    problems: list[str] = []
    for item in doc["stats"]:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            problems.append(f"a stat without a key: {str(item)[:80]}")
            continue
        key = item["key"]
        devid = item.get("devid")
        when = item.get("time")
        if isinstance(devid, bool) or not isinstance(devid, int) or isinstance(when, bool) \
                or not isinstance(when, (int, float)):
            problems.append(f"{key}: no devid or time ({str(item)[:80]})")
            continue
        if item.get("error"):
            problems.append(f"{key} devid {devid}: {item['error']} (error_code {item.get('error_code')})")
            stats.append(Stat(key, devid, float(when), None, str(item["error"])))
            continue
        raw = item.get("value")
        try:
            value = float(raw) if not isinstance(raw, bool) and raw is not None else None
        except (TypeError, ValueError):
            value = None
        if value is None or not math.isfinite(value):
            problems.append(f"{key} devid {devid}: value {raw!r} is not a number")
            value = None
        stats.append(Stat(key, devid, float(when), value))
    return stats, problems


def bytes_moved(samples: list[list[Stat]], key: str) -> tuple[float | None, list[str]]:
    """Bytes a rate key adds up to over the sampled window, summed over the nodes (devids); None when fewer than
    two distinct collection times of the key were seen on any node (nothing to integrate)."""
    by_node: dict[int, dict[float, float]] = {}
    for stats in samples:
        for s in stats:
            if s.key == key and s.value is not None:
                by_node.setdefault(s.devid, {})[s.time] = s.value
    if not by_node:
        return None, [f"{key}: no value in any sample"]
    total = 0.0
    integrated = False
    for points in by_node.values():
        times = sorted(points)
        for before, after in itertools.pairwise(times):
            total += points[after] * (after - before)
            integrated = True
    if not integrated:
        return None, [f"{key}: one collection time only: the phase was shorter than the cluster's update interval"]
    return total, []


def load_samples(path: Path) -> tuple[list[list[Stat]], dict[str, Any], list[str]]:
    """A sampler's JSON-lines file: a header line, then one line per request ({"t", "answer"} or {"t", "error"})."""
    problems: list[str] = []
    header: dict[str, Any] = {}
    samples: list[list[Stat]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        return [], {}, [f"not sampled: {path.name} cannot be read ({exc.strerror})"]
    for n, line in enumerate(lines):
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"line {n + 1} of {path.name} is not JSON (the sampler was cut off?)")
            continue
        if not isinstance(doc, dict):
            problems.append(f"line {n + 1} of {path.name} is not an object")
        elif n == 0 and "sampler" in doc:
            header = doc
        elif "error" in doc:
            problems.append(f"request at {doc.get('t')}: {doc['error']}")
        else:
            stats, bad = parse_current(doc.get("answer"))
            samples.append(stats)
            problems.extend(bad)
    if not header:
        problems.insert(0, f"{path.name} has no sampler header: not a sampler's file")
    return samples, header, sorted(set(problems), key=problems.index)


# ---------------------------------------------------------------------------------------------- the sampler


def onefs_module() -> Any:
    """module_utils/onefs.py under the name Ansible gives it (ansible.module_utils.onefs), as the modules use it."""
    from .inventory_layers import module_utils

    return module_utils("onefs")


def sample(get: Callable[[str, dict[str, Any]], Any], out: Path, stop_file: Path, interval_s: float, max_s: float,
           keys: tuple[str, ...] = KEYS, clock: Callable[[], float] = time.time,
           sleep: Callable[[float], None] = time.sleep) -> int:
    """Query the keys every interval until stop_file exists (then once more, to close the window) or max_s passed.
    Every request's answer or error is one line of out. Returns the number of requests."""
    started = clock()
    query = {"keys": ",".join(keys), "devid": "all"}
    requests = 0
    with out.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"sampler": "array_telemetry", "path": STATISTICS_PATH, "query": query,
                             "interval_s": interval_s, "started": started}) + "\n")
        stopping = False
        while True:
            t = clock()
            try:
                line = {"t": t, "answer": get(STATISTICS_PATH, query)}
            except Exception as exc:  # the API's answer, whatever it is, is recorded: the verdict judges it
                line = {"t": t, "error": f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"}
            fh.write(json.dumps(line) + "\n")
            fh.flush()
            requests += 1
            if stopping or clock() - started > max_s:
                break
            sleep(max(0.0, started + requests * interval_s - clock()))  # a fixed period, whatever a request took
            stopping = stop_file.exists()
    stop_file.unlink(missing_ok=True)
    return requests


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m validation.array_telemetry", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample", help="sample the array's counters until a stop file appears")
    s.add_argument("--out", required=True)
    s.add_argument("--stop-file", required=True)
    s.add_argument("--interval", type=float, default=1.0)
    s.add_argument("--max-s", type=float, default=3600)
    s.add_argument("--api-host", required=True)
    s.add_argument("--api-port", type=int, default=8080)
    s.add_argument("--api-user", required=True)
    s.add_argument("--ca-path", default="")
    s.add_argument("--validate-certs", type=int, default=1)
    s.add_argument("--api-timeout", type=float, default=10)
    s.add_argument("--password-stdin", action="store_true",
                   help="read the API password from the first line of stdin (what the role does: a task's "
                        "environment would show on the control node's process list)")
    args = p.parse_args(argv)
    password = (sys.stdin.readline().rstrip("\n") if args.password_stdin
                else os.environ.get("POWERSCALE_API_PASSWORD", ""))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not password:
        out.write_text(json.dumps({"sampler": "array_telemetry", "path": STATISTICS_PATH}) + "\n"
                       + json.dumps({"t": time.time(), "error": "no API password: none on stdin (--password-stdin) or in POWERSCALE_API_PASSWORD"})
                       + "\n", encoding="utf-8")
        return 0
    onefs = onefs_module()
    conn = onefs.OneFSConnection(host=args.api_host, port=args.api_port, user=args.api_user, password=password,
                                 validate_certs=bool(args.validate_certs), ca_path=args.ca_path or None,
                                 timeout=args.api_timeout, retries=0, retry_backoff=0.0)
    client = onefs.OneFSClient(conn)
    try:
        sample(lambda path, query: client.get(path, query=query), out, Path(args.stop_file), args.interval,
               args.max_s)
    finally:
        client.logout()
    return 0


if __name__ == "__main__":
    sys.exit(main())
