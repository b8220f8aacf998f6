#!/usr/bin/env python3
"""Run one fio phase from the launcher DGX against ``fio --server`` on the DGX nodes, and record it.

Phases:
  layout  every client writes its file set (sequential 1 MiB writes, direct I/O) into its own scratch
          directory; recorded as the ``layout`` case (write bandwidth, informational)
  read    one read sample of a case: ``aggregate`` (every client at once) or ``node-<name>`` (one client)

The job file is generated here from the acceptance profile: direct I/O, one directory per client, and
``exec_prerun`` dropping the client's page cache (``common.py drop-caches``: sync, echo 3 >
/proc/sys/vm/drop_caches) before the job (fio runs exec_prerun on the server, i.e. on each client node). The PowerScale cache flush happens
before each read phase from Ansible (isi_for_array isi_flush on the cluster), not here.

Output: fio --output-format=json; fio exits 0 even when a client could not connect, so meta.json lists
the clients expected and the verdict checks that each one reported. Standard library only, Python >= 3.8.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import add_sample, init_meta, now, run

# fio's job-file parser ends a value at ";" (a comment), so the client cache drop is one command without
# one: common.py drop-caches, at the same path on every node (the runners are installed identically).
DROP_CACHES = f"{sys.executable} {os.path.join(os.path.dirname(os.path.abspath(__file__)), 'common.py')} drop-caches"


def _fio_pid(pidfile: str) -> int | None:
    """The pid in pidfile when that process is alive and is fio, else None."""
    try:
        with open(pidfile, encoding="ascii") as fh:
            pid = int(fh.read().strip())
        with open(f"/proc/{pid}/comm", encoding="ascii") as fh:
            return pid if fh.read().strip().startswith("fio") else None
    except (OSError, ValueError):
        return None


def server(action: str, pidfile: str, bind: str, fio: str) -> int:
    """Start (or find running) / stop the node's fio server; only ever signals the pid it started."""
    pid = _fio_pid(pidfile)
    if action == "start":
        if pid is None:
            if os.path.exists(pidfile):
                os.remove(pidfile)  # stale: its process is gone
            subprocess.run([fio, f"--server={bind}", f"--daemonize={pidfile}"], check=True)
            pid = _fio_pid(pidfile)
            if pid is None:
                raise SystemExit(f"fio --server={bind} did not stay up (no live pid in {pidfile})")
        # the version for the report, from the binary that serves (one remote call less than asking apart)
        version = subprocess.run([fio, "--version"], capture_output=True, text=True, check=True).stdout.strip()
        print(json.dumps({"fio_server": "running", "pid": pid, "bind": bind, "version": version}))
        return 0
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
    if os.path.exists(pidfile):
        os.remove(pidfile)
    print(json.dumps({"fio_server": "stopped", "pid": pid}))
    return 0


def job_file(args: argparse.Namespace, rw: str, directory: str) -> str:
    lines = [
        "[global]",
        f"directory={directory}",
        f"rw={rw}",
        f"bs={args.bs}",
        f"size={args.size_per_job}",
        f"numjobs={args.numjobs}",
        f"ioengine={args.ioengine}",
        f"iodepth={args.iodepth}",
        f"direct={1 if args.direct else 0}",
        "group_reporting=1",
        "fallocate=none",
        "file_service_type=sequential",
    ]
    if rw != "write" and args.runtime:
        lines += [f"runtime={args.runtime}", "time_based=1"]
    if args.drop_caches:
        lines.append(f"exec_prerun={DROP_CACHES}")
    lines += ["", f"[acceptance-{rw}]", ""]
    return "\n".join(lines)


def size_bytes(text: str) -> int | None:
    """A fio size ('32M', '1G', '1048576') in bytes: fio's suffixes are powers of 1024 (kb_base=1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgtp]?)i?b?\s*", str(text), re.I)
    if not m:
        return None
    return int(m.group(1)) * 1024 ** ("kmgtp".find(m.group(2).lower()) + 1) if m.group(2) else int(m.group(1))


def asked(args: argparse.Namespace, rw: str, directories: dict, expected: dict) -> dict:
    """What this phase asks of fio, named as validation/asked.yml names it: the job file's options, where each
    client reads, which clients, and how much (the whole file set: size x numjobs per client, or runtime s)."""
    runtime = args.runtime if rw != "write" else 0
    per_job = size_bytes(args.size_per_job)
    return {"rw": rw, "bs": args.bs, "size": args.size_per_job, "numjobs": args.numjobs, "iodepth": args.iodepth,
            "ioengine": args.ioengine, "direct": 1 if args.direct else 0, "runtime": runtime,
            "time_based": 1 if runtime else 0, "directories": directories, "clients": expected,
            "drop_client_caches": bool(args.drop_caches),
            "read_bytes": per_job * args.numjobs if per_job is not None else None,
            "repeats": args.repeats if args.phase == "read" else 1, "nodes": sorted(directories)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--phase", choices=["layout", "read", "server-start", "server-stop"], required=True)
    p.add_argument("--pidfile", help="server-start/-stop: the fio server's pid file")
    p.add_argument("--bind", help="server-start: ip:ADDRESS,PORT")
    p.add_argument("--case", help="layout | aggregate | node-<name>")
    p.add_argument("--sample", type=int, default=1)
    p.add_argument("--repeats", type=int, default=1, help="read: how many samples of the case are asked (the role "
                   "runs one phase per sample; the layout is one)")
    p.add_argument("--out-dir", help="case directory")
    p.add_argument("--client", action="append",
                   help="NODE=ADDRESS[:PORT]=SCRATCH_DIR for each client of this phase (repeatable)")
    p.add_argument("--bs", default="1M")
    p.add_argument("--size-per-job", default="1G")
    p.add_argument("--numjobs", type=int, default=4)
    p.add_argument("--iodepth", type=int, default=16)
    p.add_argument("--ioengine", default="libaio")
    p.add_argument("--direct", type=int, default=1)
    p.add_argument("--runtime", type=int, default=0, help="seconds per read phase (0 = read the whole file set)")
    p.add_argument("--drop-caches", type=int, default=1)
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--fio", default="fio")
    args = p.parse_args(argv)
    if args.phase.startswith("server-"):
        if not args.pidfile or (args.phase == "server-start" and not args.bind):
            p.error("server-start needs --pidfile and --bind; server-stop needs --pidfile")
        return server(args.phase.split("-")[1], args.pidfile, args.bind, args.fio)
    if not (args.case and args.out_dir and args.client):
        p.error("layout and read need --case, --out-dir and at least one --client")

    os.makedirs(args.out_dir, exist_ok=True)
    cmd = [args.fio, "--output-format=json"]
    expected = {}
    clients = []
    directories = {}
    rw = "write" if args.phase == "layout" else "read"
    cannot = []
    for spec in args.client:
        node, address, scratch = spec.split("=", 2)
        if args.phase == "layout":
            # every DGX mounts the same export at the same point: the launcher creates each client's directory
            # (a full export or quota refuses it: recorded as the case's reason, not a crash that records nothing)
            try:
                os.makedirs(scratch, mode=0o777, exist_ok=True)
                os.chmod(scratch, 0o777)
            except OSError as exc:
                cannot.append(f"cannot create the client directory {scratch}: {exc}")
        host, _, port = address.partition(":")
        port = port or "8765"
        jobpath = os.path.join(args.out_dir, f"{node}-{rw}.fio")
        with open(jobpath, "w", encoding="utf-8") as fh:
            fh.write(job_file(args, rw, scratch))
        cmd += [f"--client=ip:{host},{port}", jobpath]
        expected[f"{host}:{port}"] = node
        clients.append(node)
        directories[node] = scratch
    init_meta(args.out_dir, stage="fio", case=args.case, kind=args.phase, nodes=clients, engine="fio-client/server",
              command=cmd, asked=asked(args, rw, directories, expected))
    if cannot:
        init_meta(args.out_dir, reason="; ".join(cannot))
        return 0
    name = f"r{args.sample}.json"
    result = run(cmd, os.path.join(args.out_dir, name), args.timeout,
                 err_file=os.path.join(args.out_dir, f"r{args.sample}.stderr"))
    add_sample(args.out_dir, dict(result, file=name, finished=now()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
