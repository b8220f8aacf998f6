#!/usr/bin/env python3
"""Launch the DDP training of one node count (case ``n<count>``), and record it.

Runtimes (existing engines only):
  docker  on every node of the case: docker run --network host --ipc host [--gpus all] <NGC PyTorch image>
          torchrun ... (c10d rendezvous at the first node); every node runs this runner
  pyxis   once, on the first node: srun --mpi=pmix --ntasks-per-node=1 --gpus-per-node=<procs> --exclusive
          --container-image=<enroot URI, nvcr.io#nvidia/pytorch:TAG, or a .sqsh> torchrun ... (the srun line
          from engines.py, with its time limit, --immediate and --kill-on-bad-exit)
  srun    once, on the first node: the same engines.py srun line starting ddp_train.py's ranks directly on the
  mpirun  nodes' own python (or the mpirun line, for validation_engine: mpirun): one rank per process, torch's
          env:// variables from the engine's (engines.rank_env), MASTER_ADDR/PORT exported. The lab runs its
          trainings so; the program is the only difference from a site's launch
  host    on every node: the node's own python3 runs ddp_train.py's ranks directly with the env://
          variables torchrun would set (common.run_env_workers: no launcher agent, one torch import less
          per node, which is tens of seconds in the lab's TCG VMs)

The first node writes meta.json (one sample per mode and repeat: <mode>-r<k>.json, written by rank 0 of
ddp_train.py wherever it runs); the others write peer-<node>.json with their launcher's exit status.
Exit status 0 means the outcome was recorded. Standard library only, Python >= 3.8.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import add_sample, enroot_uri, init_meta, now, run, run_env_workers, scrub_env, wait_for_ranks
from engines import ENGINE_GRACE_S, LaunchSpec, job_name, launch_command, settle_launch


def train_args(args: argparse.Namespace) -> list[str]:
    """ddp_train.py's own arguments, the same under every runtime."""
    return ["--model", args.model, "--batch-size", str(args.batch_size), "--image-size", str(args.image_size),
            "--num-classes", str(args.num_classes), "--steps", str(args.steps),
            "--warmup-steps", str(args.warmup_steps), "--modes", args.modes, "--workers", str(args.workers),
            "--repeats", str(args.repeats), "--out-dir", args.out_dir, "--amp", str(args.amp),
            # GPUs asked for: a rank that sees none fails; it never trains on the CPU instead
            "--device", "cuda" if args.gpus else "cpu"] + (["--dataset", args.dataset] if args.dataset else [])


def torchrun_args(args: argparse.Namespace, nnodes: int, script: str) -> list[str]:
    # The first node hosts the c10d store. torchrun guesses that from the endpoint matching this machine's
    # hostname, which fails when the endpoint is the fabric address (IPoIB, the lab's cfab0): say it.
    # read_timeout: how long the other nodes wait for that store (torch imports take minutes in a TCG VM).
    host_conf = "" if args.runtime == "pyxis" else f"is_host={1 if args.this_node == args.nodes.split(',')[0] else 0},"
    return [f"--nnodes={nnodes}", f"--nproc-per-node={args.procs_per_node}", "--rdzv-backend=c10d",
            f"--rdzv-endpoint={args.rdzv_endpoint}", f"--rdzv-id={args.rdzv_id}",
            f"--rdzv-conf={host_conf}read_timeout={int(args.rdzv_timeout)}",
            # the workers' store address: this node's fabric address, not a hostname other nodes may not resolve
            *([f"--local-addr={args.local_addr}"] if args.local_addr else []), script, *train_args(args)]


def launch_spec(args: argparse.Namespace, engine: str, procs: int, env_keys: list[str], image: str = "",
                mounts: str = "") -> LaunchSpec:
    """The training's launch as engines.py builds it: Slurm's node names, the fabric addresses for mpirun (the
    rendezvous host first), the time limit of the whole training (every mode and repeat: one launch)."""
    nodes = args.nodes.split(",")
    hostnames = (args.node_hostnames or args.nodes).split(",")
    addrs = (args.addrs or args.nodes).split(",")
    return LaunchSpec(engine=engine, nodes=tuple(hostnames), addrs=tuple(addrs) if len(addrs) == len(nodes)
                      else tuple(nodes), procs_per_node=procs,
                      gpus_per_node=args.procs_per_node if args.gpus else 0, time_limit_s=args.timeout,
                      job_name=job_name("ddp", args.case), export=tuple(sorted(env_keys)),
                      partition=args.partition, alloc_wait_s=args.alloc_wait, container_image=image,
                      container_mounts=mounts)


def engine_env_keys(env: dict[str, str]) -> list[str]:
    """What the ranks must get from the launching node: the rendezvous, the thread count, NCCL's settings."""
    return [k for k in env if k in ("MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS") or k.startswith("NCCL_")
            or k.startswith("GLOO_")]


def build_command(args: argparse.Namespace, nnodes: int, env: dict[str, str] | None = None) -> list[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    if args.runtime == "host":
        return [args.python, os.path.join(here, "ddp_train.py"), *train_args(args)]
    if args.runtime in ("srun", "mpirun"):
        program = [args.python, os.path.join(here, "ddp_train.py"), *train_args(args)]
        return launch_command(launch_spec(args, args.runtime, args.procs_per_node, engine_env_keys(env or {})),
                              program)
    inner = ["torchrun", *torchrun_args(args, nnodes, "/validation-runners/ddp_train.py")]
    mounts = [f"{here}:/validation-runners:ro", f"{args.out_dir}:{args.out_dir}"]
    if args.dataset:
        mounts.append(f"{args.dataset}:{args.dataset}:ro")
    if args.runtime == "docker":
        cmd = ["docker", "run", "--rm", "--network=host", "--ipc=host", "--ulimit", "memlock=-1",
               "--ulimit", "stack=67108864", "--name", f"validation-ddp-{args.rdzv_id}"]
        if args.gpus:
            cmd += ["--gpus", "all"]
        for dev in ("/dev/infiniband",):
            if os.path.exists(dev):
                cmd += ["--device", dev]
        for m in mounts:
            cmd += ["-v", m]
        for key, value in sorted(scrub_env(dict(os.environ)).items()):
            if key.startswith("NCCL_"):
                cmd += ["-e", f"{key}={value}"]
        return [*cmd, args.image, *inner]
    # pyxis: one srun starts torchrun on every node inside the image. The step asks for the GPUs (with
    # Slurm's device constraints a step without --gpus-per-node sees none) and the whole nodes (--exclusive).
    spec = launch_spec(args, "srun", 1, [], image=enroot_uri(args.image),
                       mounts=",".join(m.replace(":ro", "") for m in mounts))
    return launch_command(spec, inner)


def asked(args: argparse.Namespace, modes: list[str]) -> dict:
    """What this training asks, named as validation/asked.yml names it: written once in meta.json, compared by
    the verdict with each result document (ddp_train.py records what it ran)."""
    nodes = args.nodes.split(",")
    return {"model": args.model, "steps": args.steps, "warmup_steps": args.warmup_steps,
            "batch_size_per_rank": args.batch_size, "image_size": args.image_size,
            "world_size": len(nodes) * args.procs_per_node, "nodes": (args.node_hostnames or args.nodes).split(","),
            "backend": "nccl" if args.gpus else "gloo", "device": "cuda" if args.gpus else "cpu",
            "modes": modes, "repeats": args.repeats, "dataset": args.dataset, "engine": args.runtime}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--case", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--nodes", required=True)
    p.add_argument("--this-node", required=True)
    p.add_argument("--runtime", choices=["docker", "pyxis", "host", "srun", "mpirun"], required=True)
    p.add_argument("--node-hostnames", help="the nodes' hostnames, Slurm's node names (default: --nodes)")
    p.add_argument("--addrs", help="the nodes' fabric addresses for mpirun -H (default: --nodes)")
    p.add_argument("--partition", default="", help="srun --partition (default: the cluster's default partition)")
    p.add_argument("--alloc-wait", type=int, default=60,
                   help="srun --immediate: seconds an allocation may wait before the case fails")
    p.add_argument("--image", default="")
    p.add_argument("--gpus", type=int, default=1)
    p.add_argument("--procs-per-node", type=int, required=True)
    p.add_argument("--rdzv-endpoint", required=True)
    p.add_argument("--rdzv-id", required=True)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup-steps", type=int, default=10)
    p.add_argument("--modes", default="synthetic,real")
    p.add_argument("--dataset")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--amp", type=int, default=1)
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--rdzv-timeout", type=float, default=900, help="seconds the nodes wait for the c10d store")
    p.add_argument("--local-addr", help="this node's address on the fabric (torchrun --local-addr)")
    p.add_argument("--python", default=sys.executable)
    args = p.parse_args(argv)

    nodes = args.nodes.split(",")
    is_launcher = args.this_node == nodes[0]
    one_launch = args.runtime in ("pyxis", "srun", "mpirun")   # the engine starts every node's share
    if one_launch and not is_launcher:
        if args.runtime in ("srun", "mpirun"):
            # stay while this node's ranks train, so util_sampler.py (which wraps this runner) samples them
            # (the launcher's allocation may take alloc_wait; its step starts the ranks within seconds after)
            wait_for_ranks(["ddp_train.py", args.out_dir], appear_s=args.alloc_wait + 60.0,
                           finish_s=args.timeout + ENGINE_GRACE_S)
        return 0
    os.makedirs(args.out_dir, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1" if args.runtime in ("host", "srun", "mpirun") and not args.gpus
                   else env.get("OMP_NUM_THREADS", "4"))
    if args.runtime in ("srun", "mpirun"):
        host, _, port = args.rdzv_endpoint.rpartition(":")
        env.update(MASTER_ADDR=host, MASTER_PORT=port)
    cmd = build_command(args, len(nodes), env)
    modes = args.modes.split(",")
    if is_launcher:
        engine = {"host": "env-workers/host", "srun": "srun", "mpirun": "mpirun", "pyxis": "srun/pyxis"}.get(
            args.runtime, f"torchrun/{args.runtime}")
        init_meta(args.out_dir, stage="ddp", case=args.case, kind="ddp", nodes=nodes, engine=engine, command=cmd,
                  image=args.image, lab_standin=not args.gpus, env=scrub_env(env),
                  peers=[] if one_launch else nodes[1:],
                  asked=asked(args, modes))
    if args.runtime == "host":
        log = os.path.join(args.out_dir, f"workers-{args.this_node}.log")
        result = run_env_workers(cmd, nodes=nodes, this_node=args.this_node, procs_per_node=args.procs_per_node,
                                 endpoint=args.rdzv_endpoint, env=env, log=log, timeout_s=args.timeout)
    else:
        log = os.path.join(args.out_dir, f"torchrun-{args.this_node}.log" if args.runtime == "docker"
                           else "launch.log")
        engine_name = "srun" if args.runtime == "pyxis" else args.runtime
        grace = ENGINE_GRACE_S if engine_name in ("srun", "mpirun") else 0.0
        result = run(cmd, log, args.timeout + grace, env=env)
        text = ""
        if engine_name in ("srun", "mpirun"):
            with open(log, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        result = settle_launch(result, engine_name, text, "ddp", args.case)
    samples = [dict(result, file=f"{m}-r{k}.json", mode=m, finished=now(), console=os.path.basename(log))
               for m in modes for k in range(1, args.repeats + 1)]
    if is_launcher:
        for s in samples:
            add_sample(args.out_dir, s)
    else:
        with open(os.path.join(args.out_dir, f"peer-{args.this_node}.json"), "w", encoding="utf-8") as fh:
            json.dump({"node": args.this_node, "samples": samples}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
