#!/usr/bin/env python3
"""Run one fio phase from the launcher DGX against ``fio --server`` on the DGX nodes, and record it.

Phases:
  layout  every client writes its file set (sequential 1 MiB writes, direct I/O) into its own scratch
          directory; recorded as the ``layout`` case (write bandwidth, informational)
  read    one read sample of a case: ``aggregate`` (every client at once) or ``node-<name>`` (one client)

The job file is generated here from the acceptance profile: direct I/O, one directory per client, and
``exec_prerun`` dropping the client's page cache (``sync; echo 3 > /proc/sys/vm/drop_caches``) before the
job (fio runs exec_prerun on the server, i.e. on each client node). The PowerScale cache flush happens
before each read phase from Ansible (isi_for_array isi_flush on the cluster), not here.

Output: fio --output-format=json; fio exits 0 even when a client could not connect, so meta.json lists
the clients expected and the verdict checks that each one reported. Standard library only, Python >= 3.8.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import add_sample, init_meta, now, run

DROP_CACHES = "sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches'"


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--phase", choices=["layout", "read"], required=True)
    p.add_argument("--case", required=True, help="layout | aggregate | node-<name>")
    p.add_argument("--sample", type=int, default=1)
    p.add_argument("--out-dir", required=True, help="case directory")
    p.add_argument("--client", action="append", required=True,
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

    os.makedirs(args.out_dir, exist_ok=True)
    cmd = [args.fio, "--output-format=json"]
    expected = {}
    clients = []
    rw = "write" if args.phase == "layout" else "read"
    for spec in args.client:
        node, address, scratch = spec.split("=", 2)
        host, _, port = address.partition(":")
        port = port or "8765"
        jobpath = os.path.join(args.out_dir, f"{node}-{rw}.fio")
        with open(jobpath, "w", encoding="utf-8") as fh:
            fh.write(job_file(args, rw, scratch))
        cmd += [f"--client=ip:{host},{port}", jobpath]
        expected[f"{host}:{port}"] = node
        clients.append(node)
    init_meta(args.out_dir, stage="fio", case=args.case, kind=args.phase, nodes=clients, expected_clients=expected,
              engine="fio-client/server", command=cmd,
              profile={"bs": args.bs, "size_per_job": args.size_per_job, "numjobs": args.numjobs,
                       "iodepth": args.iodepth, "ioengine": args.ioengine, "direct": args.direct,
                       "runtime": args.runtime, "drop_client_caches": bool(args.drop_caches)})
    name = f"r{args.sample}.json"
    result = run(cmd, os.path.join(args.out_dir, name), args.timeout,
                 err_file=os.path.join(args.out_dir, f"r{args.sample}.stderr"))
    add_sample(args.out_dir, dict(result, file=name, finished=now()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
