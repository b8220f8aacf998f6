"""Command line: ``python3 -m onefs_sim --backend knfsd|memory --listen HOST:PORT --cert PEM --key KEY
--user NAME --password-file FILE [--state JSON] [--ifs DIR] [--session-idle-timeout S] [--privileges JSON]
[--licence NAME=STATUS ...]``."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from .backends import KnfsdBackend, MemoryBackend
from .model import ALL_PRIVILEGES, LICENCE_STATUSES, PapiError
from .server import OneFSSimulator
from .stats import Statistics, kernel_counters


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="onefs_sim", description="OneFS Platform API simulator (HTTPS)")
    p.add_argument("--backend", choices=["memory", "knfsd"], default="memory",
                   help="memory: tests; knfsd: real directories, /etc/exports.d + exportfs, XFS project quotas")
    p.add_argument("--listen", default="127.0.0.1:8080", help="HOST:PORT (default 127.0.0.1:8080)")
    p.add_argument("--cert", required=True, help="server certificate (PEM)")
    p.add_argument("--key", required=True, help="server private key (PEM)")
    p.add_argument("--user", required=True, help="the one API user")
    p.add_argument("--password-file", required=True, help="file holding that user's password")
    p.add_argument("--state", help="JSON file the cluster state is persisted to")
    p.add_argument("--ifs", default="/ifs", help="directory that backs /ifs (knfsd backend)")
    p.add_argument("--cluster-name", default="onefs-sim")
    p.add_argument("--session-idle-timeout", type=float, default=900, help="seconds (OneFS default 900)")
    p.add_argument("--session-absolute-timeout", type=float, default=14400, help="seconds (OneFS default 14400)")
    p.add_argument("--privileges", help="JSON file {ISI_PRIV_...: 'r' | 'w'}: the API user's RBAC role (default: "
                                        "every privilege, read-write)")
    p.add_argument("--licence", action="append", default=[], metavar="NAME=STATUS",
                   help=f"set a licence's status ({', '.join(LICENCE_STATUSES)}), e.g. "
                        "'SmartConnect Advanced=Unlicensed'; repeatable")
    return p.parse_args(argv)


def load_privileges(path: str | None) -> dict[str, str] | None:
    """The --privileges file, checked: known ISI_PRIV_* names, each 'r' or 'w'."""
    if not path:
        return None
    data = json.loads(Path(path).read_text())
    bad = {k: v for k, v in data.items() if k not in ALL_PRIVILEGES or v not in ("r", "w")} if isinstance(data, dict) \
        else data
    if bad:
        raise SystemExit(f"onefs_sim: {path}: not a map of known privileges to 'r'/'w': {bad!r} "
                         f"(known: {', '.join(ALL_PRIVILEGES)})")
    return dict(data)


def parse_licences(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, status = item.partition("=")
        if not sep or status not in LICENCE_STATUSES:
            raise SystemExit(f"onefs_sim: --licence {item!r}: give NAME=STATUS, STATUS one of {LICENCE_STATUSES}")
        out[name] = status
    return out


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(0)  # unwinds serve_forever, which closes the socket


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    password = Path(args.password_file).read_text().strip()
    if not password:
        print(f"onefs_sim: {args.password_file} is empty", file=sys.stderr)
        return 2
    backend = KnfsdBackend(args.ifs) if args.backend == "knfsd" else MemoryBackend()
    sim = OneFSSimulator(backend, args.user, password, state_path=args.state,
                         idle_timeout=args.session_idle_timeout, absolute_timeout=args.session_absolute_timeout,
                         privileges=load_privileges(args.privileges))
    sim.cluster.name = args.cluster_name
    sim.cluster.licences.update(parse_licences(args.licence))
    stop = threading.Event()
    if args.backend == "knfsd":
        # the array's throughput counters (GET /platform/1/statistics/current), read every second from the kernel
        sim.statistics = Statistics(kernel_counters)
        threading.Thread(target=sim.statistics.run, args=(1.0, stop), name="onefs-sim-stats", daemon=True).start()
        try:
            sim.reapply()
        except PapiError as err:  # keep serving: the API reports the state, the next change re-applies it
            print(f"onefs_sim: re-applying the persisted exports/quotas failed: {err.message}", file=sys.stderr)
    signal.signal(signal.SIGTERM, _terminate)
    print(f"onefs_sim: {args.backend} backend on https://{host}:{port}", flush=True)
    try:
        sim.serve_forever(host.strip("[]") or "127.0.0.1", int(port), args.cert, args.key)
    except (SystemExit, KeyboardInterrupt):
        print("onefs_sim: stopped", flush=True)
    finally:
        stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
