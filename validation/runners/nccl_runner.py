#!/usr/bin/env python3
"""Run one NCCL all-reduce case and record it: nccl-tests all_reduce_perf, or the lab's gloo stand-in.

Launchers (existing engines only):
  direct   one node, one process driving every GPU (all_reduce_perf -g <gpus>)
  mpirun   Open MPI (nccl-tests built with MPI=1): one rank per GPU, --tag-output, NCCL variables exported
  srun     Slurm: srun --mpi=pmix, one task per GPU, optionally inside the NGC image through pyxis
  gloo     lab stand-in without a scheduler (the SSH path): gloo_allreduce.py workers (torch.distributed, env://
           rendezvous at the case's first node) on every node of the case; rank 0 prints the nccl-tests table
           with the same busbw formula. Every node of the case runs this runner; the first writes meta.json, the
           others peer-<node>.json.

mpirun and srun build their command line in engines.py, the same for a site and for the lab; with --standin
the program they start is gloo_allreduce.py (one launch runs every repeat: a torch import per rank costs tens of
seconds in the lab's VMs) instead of all_reduce_perf, and its table comes back through the engine's output
like nccl-tests' does. The engine's own words on a failure (an allocation refused, a node drained, a rank that
exited non-zero, a time limit) become the sample's reason.

Each repeat is one sample (r<k>.log). Exit status 0 means the outcome was recorded, not that it passed.
Standard library only, Python >= 3.8: this file runs on the DGX nodes.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import add_sample, enroot_uri, init_meta, now, run, run_env_workers, save_meta, scrub_env
from engines import ENGINE_GRACE_S, LaunchSpec, job_name, launch_command, settle_launch


def compute_hcas() -> list[str]:
    """InfiniBand HCAs of this node (link layer InfiniBand), for an exact-match NCCL_IB_HCA."""
    out = []
    for port in sorted(glob.glob("/sys/class/infiniband/*/ports/1/link_layer")):
        try:
            with open(port, encoding="ascii") as fh:
                if fh.read().strip() == "InfiniBand":
                    out.append(port.split("/")[4])
        except OSError:
            continue
    return out


def nccl_env(args: argparse.Namespace) -> dict[str, str]:
    """NCCL variables for this case: exact-match HCA list (=mlx5_0,...), Ring for fabric tests, extras."""
    env: dict[str, str] = {}
    hcas = args.ib_hca.split(",") if args.ib_hca and args.ib_hca != "auto" else compute_hcas()
    if hcas and args.launcher != "gloo":
        # "=" makes NCCL match these names exactly (mlx5_1 must not also select mlx5_10, mlx5_11)
        env["NCCL_IB_HCA"] = "=" + ",".join(hcas)
    if args.kind in ("all", "pair") and args.launcher != "gloo":
        env["NCCL_ALGO"] = "Ring"  # tree/NVLS can report more than the network rate on two nodes
    for item in args.env or []:
        key, _, value = item.partition("=")
        env[key] = value
    return env


def perf_args(args: argparse.Namespace, gpus_per_process: int) -> list[str]:
    return [args.bin, "-b", str(args.min_bytes), "-e", str(args.max_bytes), "-f", "2", "-g", str(gpus_per_process),
            "-c", "1", "-n", str(args.iters), "-w", str(args.warmup)]


def standin_args(args: argparse.Namespace, *, to_stdout: bool) -> list[str]:
    """gloo_allreduce.py with the case's sweep; to_stdout: rank 0 prints every repeat's table (an engine's launch),
    else it writes r<k>.log itself (the SSH path's workers)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [args.python, os.path.join(here, "gloo_allreduce.py"), "--min-bytes", str(args.min_bytes),
            "--max-bytes", str(args.max_bytes), "--iters", str(args.iters), "--warmup", str(args.warmup),
            "--repeats", str(args.repeats), "--devices", str(args.gpus_per_process), "--out-dir", args.out_dir,
            *(["--stdout"] if to_stdout else [])]


def sweep_sizes(min_bytes: int, max_bytes: int, factor: int = 2) -> int:
    """How many sizes the x factor sweep from min_bytes to max_bytes measures (one result row each, as
    all_reduce_perf -f and the stand-in step)."""
    count, size = 0, max(min_bytes, 1)
    while size <= max_bytes:
        count += 1
        size *= factor
    return count


def asked(args: argparse.Namespace) -> dict:
    """What this case asks of nccl-tests (or the stand-in), named as validation/asked.yml names it: written once in
    meta.json, compared by the verdict with the table's header, rows and rank lines."""
    nodes = args.nodes.split(",")
    return {"test": "all_reduce_perf", "nthread": 1,
            "ngpus": args.gpus_per_node if args.launcher == "direct" else args.gpus_per_process,
            "min_bytes": args.min_bytes, "max_bytes": args.max_bytes, "step": 2, "warmup_iters": args.warmup,
            "iters": args.iters, "sizes": sweep_sizes(args.min_bytes, args.max_bytes),
            "ranks": len(nodes) * args.gpus_per_node, "nodes": (args.node_hostnames or args.nodes).split(","),
            "engine": args.launcher, "standin": args.launcher == "gloo" or bool(args.standin),
            "repeats": args.repeats}


def procs_per_node(args: argparse.Namespace) -> int:
    """Processes per node: the node's ranks (GPUs) over the ranks each process drives (-g)."""
    return args.gpus_per_node // args.gpus_per_process


def launch_spec(args: argparse.Namespace, env: dict[str, str]) -> LaunchSpec:
    """The case as engines.py launches it: Slurm's node names (the hostnames the nodes report), the fabric
    addresses for mpirun, one rank per GPU (or per stand-in process), the case's environment exported."""
    nodes = args.nodes.split(",")
    hostnames = (args.node_hostnames or args.nodes).split(",")
    addrs = (args.addrs or args.nodes).split(",")
    image = enroot_uri(args.container_image) if args.container_image else ""
    return LaunchSpec(engine=args.launcher, nodes=tuple(hostnames), addrs=tuple(addrs) if len(addrs) == len(nodes)
                      else tuple(nodes), procs_per_node=procs_per_node(args),
                      gpus_per_node=0 if args.standin else args.gpus_per_node,
                      time_limit_s=args.timeout * (args.repeats if args.standin else 1),
                      job_name=job_name("nccl", args.case), export=tuple(sorted(env)), partition=args.partition,
                      alloc_wait_s=args.alloc_wait, container_image=image,
                      container_mounts=(args.container_mounts or "") if image else "",
                      extra=tuple((args.srun_arg if args.launcher == "srun" else args.mpirun_arg) or []))


def build_command(args: argparse.Namespace, env: dict[str, str]) -> list[str]:
    nodes = args.nodes.split(",")
    if args.launcher == "direct":
        if len(nodes) != 1:
            raise SystemExit("launcher direct runs one node only")
        if args.standin:
            raise SystemExit("the stand-in needs a launcher that starts ranks (gloo, srun or mpirun), not direct")
        return perf_args(args, args.gpus_per_node)
    if args.launcher in ("mpirun", "srun"):
        program = standin_args(args, to_stdout=True) if args.standin else perf_args(args, args.gpus_per_process)
        return launch_command(launch_spec(args, env), program)
    # gloo stand-in: this node's worker processes, rendezvous through torch.distributed's env:// TCP store at
    # the first node (no torchrun agent: one torch import less per node, which counts in a TCG VM)
    return standin_args(args, to_stdout=False)


# gloo_allreduce.py --stdout starts each repeat's table with this line (after the engine's prefix, if any)
_REPEAT = re.compile(r"^.*# stand-in repeat (\d+) of (\d+)\s*$")


def split_repeats(text: str) -> dict[int, str]:
    """The launch's output cut into one text per repeat, at the stand-in's markers; lines before the first
    marker (the engine's own) go with no repeat."""
    parts: dict[int, list[str]] = {}
    current = None
    for line in text.splitlines(keepends=True):
        m = _REPEAT.match(line.rstrip("\n"))
        if m:
            current = int(m.group(1))
            parts[current] = []
        if current is not None:
            parts[current].append(line)
    return {k: "".join(v) for k, v in parts.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--case", required=True)
    p.add_argument("--kind", choices=["single", "all", "pair"], required=True)
    p.add_argument("--out-dir", required=True, help="case directory for meta.json and the samples")
    p.add_argument("--nodes", required=True, help="inventory names of the case's nodes, comma-separated")
    p.add_argument("--addrs", help="addresses for mpirun -H, same order as --nodes")
    p.add_argument("--node-hostnames", help="hostnames the nodes report (default: --nodes)")
    p.add_argument("--this-node", help="inventory name of the node running this (gloo)")
    p.add_argument("--gpus-per-node", type=int, required=True, help="ranks per node (GPUs, or gloo ranks)")
    p.add_argument("--gpus-per-process", type=int, default=1,
                   help="ranks each process drives (all_reduce_perf -g; the stand-in's threads): mpirun, srun and "
                        "gloo start gpus-per-node / gpus-per-process processes per node")
    p.add_argument("--launcher", choices=["direct", "mpirun", "srun", "gloo"], required=True)
    p.add_argument("--bin", default="all_reduce_perf")
    p.add_argument("--min-bytes", type=int, default=8)
    p.add_argument("--max-bytes", type=int, default=8 << 30)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--ib-hca", default="auto")
    p.add_argument("--env", action="append", help="extra KEY=VALUE for NCCL (repeatable)")
    p.add_argument("--mpirun-arg", action="append")
    p.add_argument("--srun-arg", action="append")
    p.add_argument("--container-image")
    p.add_argument("--container-mounts")
    p.add_argument("--standin", action="store_true",
                   help="launch the lab's gloo stand-in instead of all_reduce_perf (with srun or mpirun)")
    p.add_argument("--partition", default="", help="srun --partition (default: the cluster's default partition)")
    p.add_argument("--alloc-wait", type=int, default=60,
                   help="srun --immediate: seconds an allocation may wait before the case fails")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--rdzv-endpoint")
    p.add_argument("--rdzv-id", default="validation")
    args = p.parse_args(argv)

    nodes = args.nodes.split(",")
    if args.gpus_per_process < 1 or args.gpus_per_node % args.gpus_per_process:
        raise SystemExit(f"--gpus-per-process {args.gpus_per_process} must divide --gpus-per-node "
                         f"{args.gpus_per_node}: every process drives the same number of ranks")
    env = nccl_env(args)
    if args.standin and args.launcher in ("srun", "mpirun"):
        # the stand-in's env:// rendezvous: every rank gets the store's address through the engine, with the
        # rest of the case's environment (srun --export=ALL, mpirun -x)
        host, _, port = (args.rdzv_endpoint or "").rpartition(":")
        if not host or not port.isdigit():
            raise SystemExit(f"--standin with {args.launcher} needs --rdzv-endpoint HOST:PORT (the case's first node), "
                             f"got {args.rdzv_endpoint!r}")
        env.update(MASTER_ADDR=host, MASTER_PORT=port, OMP_NUM_THREADS="1")
    cmd = build_command(args, env)
    full_env = dict(os.environ)
    full_env.update(env)
    launcher_node = nodes[0]
    is_launcher = args.launcher != "gloo" or (args.this_node or launcher_node) == launcher_node
    os.makedirs(args.out_dir, exist_ok=True)
    if is_launcher:
        init_meta(args.out_dir, stage="nccl", case=args.case, kind=args.kind, nodes=nodes, engine=args.launcher,
                  lab_standin=args.launcher == "gloo" or args.standin, command=cmd, env=scrub_env(env),
                  peers=nodes[1:] if args.launcher == "gloo" else [], asked=asked(args))
    if args.launcher == "gloo":
        # One launch runs every repeat (torch import alone takes tens of seconds in a TCG VM).
        full_env.setdefault("OMP_NUM_THREADS", "1")
        log = os.path.join(args.out_dir, f"workers-{args.this_node or launcher_node}.log")
        result = run_env_workers(cmd, nodes=nodes, this_node=args.this_node or launcher_node,
                                 procs_per_node=procs_per_node(args),
                                 endpoint=args.rdzv_endpoint or "127.0.0.1:29400", env=full_env, log=log,
                                 timeout_s=args.timeout * args.repeats)
        samples = [dict(result, file=f"r{k}.log", finished=now(), console=os.path.basename(log))
                   for k in range(1, args.repeats + 1)]
        if is_launcher:
            for s in samples:
                add_sample(args.out_dir, s)
        else:
            peer = {"node": args.this_node, "samples": samples}
            with open(os.path.join(args.out_dir, f"peer-{args.this_node}.json"), "w", encoding="utf-8") as fh:
                json.dump(peer, fh, indent=2)
        return 0
    grace = ENGINE_GRACE_S if args.launcher in ("srun", "mpirun") else 0.0
    if args.standin:
        # one launch, every repeat: the engine's whole output is launch.log, each repeat's table its r<k>.log
        log = os.path.join(args.out_dir, "launch.log")
        result = run(cmd, log, args.timeout * args.repeats + grace, env=full_env)
        text = _read(log)
        result = settle_launch(result, args.launcher, text, "nccl", args.case)
        tables = split_repeats(text)
        for k in range(1, args.repeats + 1):
            if k in tables:
                with open(os.path.join(args.out_dir, f"r{k}.log"), "w", encoding="utf-8") as fh:
                    fh.write(tables[k])
            add_sample(args.out_dir, dict(result, file=f"r{k}.log", finished=now(), console="launch.log"))
        return 0
    for k in range(1, args.repeats + 1):
        out = os.path.join(args.out_dir, f"r{k}.log")
        result = run(cmd, out, args.timeout + grace, env=full_env)
        result = settle_launch(result, args.launcher, _read(out), "nccl", args.case)
        add_sample(args.out_dir, dict(result, file=f"r{k}.log", finished=now()))
    return 0


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except Exception as exc:  # record why, so the verdict can say it; the verdict then FAILs the case
        out_dir = next((sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--out-dir"), ".")
        save_meta(out_dir, {"stage": "nccl", "reason": f"runner crashed: {exc!r}", "samples": []})
        raise
