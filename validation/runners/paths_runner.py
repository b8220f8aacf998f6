#!/usr/bin/env python3
"""Path baselines: what the network under a measurement carries, measured in the same run before it.

Phases (run on the DGX nodes by roles/validate, stage paths):
  iperf3-server-start / iperf3-server-stop   an iperf3 server on this node (a compute-fabric pair's far end),
                                             daemonised with a pid file; stop signals only that pid, only if it
                                             is iperf3
  iperf3          the client: ``iperf3 -c SERVER -p PORT -P STREAMS -t SECONDS [-R] -J``, SAMPLES times, each
                  sample ``r<k>.json``; storage paths run reversed (-R: the storage side sends, as in an NFS
                  read) with as many streams as the mount's nconnect
  ib-server-start / ib-server-stop   one ``ib_write_bw`` server per HCA (perftest; production compute fabric)
  ib              the client: ``ib_write_bw -d HCA -p PORT -D SECONDS --report_gbits -F SERVER`` per HCA,
                  each HCA's report ``<hca>-r1.txt``

meta.json records what was asked (server, port, streams, seconds, direction, HCAs) so the verdict can compare it
with what ran. Exit status 0 means the outcome was recorded; the verdict decides. Standard library only,
Python >= 3.8.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import add_sample, init_meta, now, run


def _pid_of(pidfile: str, comm: str) -> int | None:
    """The pid in pidfile when that process is alive and is `comm`, else None."""
    try:
        with open(pidfile, encoding="ascii") as fh:
            pid = int(fh.read().strip())
        with open(f"/proc/{pid}/comm", encoding="ascii") as fh:
            return pid if fh.read().strip().startswith(comm) else None
    except (OSError, ValueError):
        return None


def _running(pid: int) -> bool:
    """Whether pid is a live process (a zombie waiting for its reaper has ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def iperf3_server(action: str, pidfile: str, bind: str | None, port: int, iperf3: str) -> int:
    pid = _pid_of(pidfile, "iperf3")
    if action == "start":
        if pid is None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(pidfile)  # stale: its process is gone
            cmd = [iperf3, "-s", "-D", "-p", str(port), "-I", pidfile] + (["-B", bind] if bind else [])
            subprocess.run(cmd, check=True)
            for _ in range(50):  # -D returns before the daemon wrote its pid file
                pid = _pid_of(pidfile, "iperf3")
                if pid is not None:
                    break
                time.sleep(0.1)
            if pid is None:
                raise SystemExit(f"{' '.join(cmd)} did not stay up (no live iperf3 pid in {pidfile})")
        print(json.dumps({"iperf3_server": "running", "pid": pid, "bind": bind, "port": port}))
        return 0
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):  # iperf3 ends (and removes its own pid file) shortly after SIGTERM
            if not _running(pid):
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)  # still serving after 5 s: its port must be free for the next run
    with contextlib.suppress(FileNotFoundError):  # the daemon may have removed it itself
        os.remove(pidfile)
    print(json.dumps({"iperf3_server": "stopped", "pid": pid}))
    return 0


def iperf3_command(args: argparse.Namespace) -> list[str]:
    cmd = [args.iperf3, "-c", args.server, "-p", str(args.port), "-P", str(args.streams), "-t", str(args.seconds),
           "-J", "--connect-timeout", str(int(args.connect_timeout * 1000))]
    return [*cmd, "-R"] if args.reverse else cmd


def iperf3_client(args: argparse.Namespace) -> int:
    os.makedirs(args.out_dir, exist_ok=True)
    cmd = iperf3_command(args)
    init_meta(args.out_dir, stage="paths", case=args.case, kind=args.kind, nodes=args.nodes.split(","),
              engine="iperf3", tool="iperf3", command=cmd, path=args.path,
              asked={"server": args.server, "port": args.port, "streams": args.streams, "seconds": args.seconds,
                     "reverse": bool(args.reverse), "protocol": "TCP", "repeats": args.samples,
                     # the iperf3 client runs here: its uname (system_info) names this host
                     "client": socket.gethostname().split(".")[0], "nodes": args.nodes.split(",")})
    for k in range(1, args.samples + 1):
        name = f"r{k}.json"
        out, err = os.path.join(args.out_dir, name), os.path.join(args.out_dir, f"r{k}.stderr")
        result = run(cmd, out, args.timeout, err_file=err)
        refused = _refused(out)
        if refused:
            # An iperf3 server closes its listening socket while it resets after a test, so a client that starts
            # right after the last one can be refused (seen in the lab: storage-all r2 0.2 s after r1). Once, after
            # a pause; a server that is really down is refused again, and that sample fails.
            time.sleep(REFUSED_RETRY_S)
            result = dict(run(cmd, out, args.timeout, err_file=err), retried_after=refused)
        add_sample(args.out_dir, dict(result, file=name, finished=now()))
    return 0


REFUSED_RETRY_S = 1.0


def _refused(path: str) -> str | None:
    """iperf3 -J's error when the connection was refused before anything was measured, else None."""
    try:
        with open(path, encoding="utf-8") as fh:
            error = str(json.load(fh).get("error") or "")
    except (OSError, ValueError, AttributeError):
        return None
    return error if "Connection refused" in error else None


def ib_servers(action: str, devices: list[str], port_base: int, seconds: int, pid_dir: str, ib: str) -> int:
    """Start one ib_write_bw server per HCA (each serves one test and exits), or stop those still running."""
    os.makedirs(pid_dir, exist_ok=True)
    out = []
    for i, dev in enumerate(devices):
        pidfile = os.path.join(pid_dir, f"ib_write_bw-{dev}.pid")
        pid = _pid_of(pidfile, "ib_write_bw")
        if action == "start" and pid is None:
            with open(os.path.join(pid_dir, f"ib_write_bw-{dev}.log"), "wb") as log:
                proc = subprocess.Popen([ib, "-d", dev, "-p", str(port_base + i), "-D", str(seconds), "--report_gbits",
                                         "-F"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            with open(pidfile, "w", encoding="ascii") as fh:
                fh.write(f"{proc.pid}\n")
            pid = proc.pid
        elif action == "stop":
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
            if os.path.exists(pidfile):
                os.remove(pidfile)
        out.append({"device": dev, "port": port_base + i, "pid": pid})
    print(json.dumps({"ib_write_bw_servers": action, "servers": out}))
    return 0


def ib_client(args: argparse.Namespace) -> int:
    os.makedirs(args.out_dir, exist_ok=True)
    devices = args.devices.split(",")
    commands = {dev: [args.ib_write_bw, "-d", dev, "-p", str(args.port_base + i), "-D", str(args.seconds),
                      "--report_gbits", "-F", args.server] for i, dev in enumerate(devices)}
    init_meta(args.out_dir, stage="paths", case=args.case, kind=args.kind, nodes=args.nodes.split(","),
              engine="perftest", tool="ib_write_bw", command=commands[devices[0]], commands=commands, path=args.path,
              asked={"server": args.server, "devices": devices, "seconds": args.seconds, "port_base": args.port_base,
                     "repeats": 1, "nodes": args.nodes.split(",")})
    for dev, cmd in commands.items():
        name = f"{dev}-r1.txt"
        result = run(cmd, os.path.join(args.out_dir, name), args.timeout)
        add_sample(args.out_dir, dict(result, file=name, device=dev, finished=now()))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--phase", required=True, choices=["iperf3-server-start", "iperf3-server-stop", "iperf3",
                                                      "ib-server-start", "ib-server-stop", "ib"])
    p.add_argument("--case")
    p.add_argument("--kind", choices=["storage", "storage-all", "fabric"], default="storage")
    p.add_argument("--out-dir")
    p.add_argument("--nodes", default="", help="this node, and the far end when it is a DGX (comma separated)")
    p.add_argument("--path", default="", help="what the path is, for the report (e.g. dgx01 -> powerscale01/storage0)")
    p.add_argument("--server", help="address of the far end")
    p.add_argument("--bind", help="iperf3-server-start: the address to listen on")
    p.add_argument("--port", type=int, default=5201)
    p.add_argument("--pidfile", action="append", default=[],
                   help="iperf3-server-start: the one pid file; -stop: each server's (repeat it, one call stops all)")
    p.add_argument("--streams", type=int, default=1)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--reverse", type=int, default=0)
    p.add_argument("--samples", type=int, default=1)
    p.add_argument("--connect-timeout", type=float, default=10.0)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--devices", default="", help="ib: HCAs, comma separated")
    p.add_argument("--port-base", type=int, default=18515)
    p.add_argument("--pid-dir", default="")
    p.add_argument("--iperf3", default="iperf3")
    p.add_argument("--ib-write-bw", default="ib_write_bw")
    args = p.parse_args(argv)
    if args.phase.startswith("iperf3-server-"):
        action = args.phase.rsplit("-", 1)[1]
        if not args.pidfile or (action == "start" and len(args.pidfile) > 1):
            p.error("iperf3-server-start needs one --pidfile, iperf3-server-stop at least one")
        return max(iperf3_server(action, f, args.bind, args.port, args.iperf3) for f in args.pidfile)
    if args.phase.startswith("ib-server-"):
        if not (args.devices and args.pid_dir):
            p.error("ib-server-start/-stop need --devices and --pid-dir")
        return ib_servers(args.phase.rsplit("-", 1)[1], args.devices.split(","), args.port_base, args.seconds,
                          args.pid_dir, args.ib_write_bw)
    if not (args.case and args.out_dir and args.server):
        p.error(f"{args.phase} needs --case, --out-dir and --server")
    if args.phase == "ib":
        if not args.devices:
            p.error("ib needs --devices")
        return ib_client(args)
    return iperf3_client(args)


if __name__ == "__main__":
    sys.exit(main())
