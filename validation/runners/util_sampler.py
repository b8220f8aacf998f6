#!/usr/bin/env python3
"""Run a command (a DDP training's runner) and sample this node's utilisation while it runs.

``util_sampler.py --out FILE --what gpu|cpu [--interval S] -- COMMAND...``

gpu: ``nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv`` every interval (the GPUs of a
DGX); cpu: the aggregate ``cpu`` line of /proc/stat (the lab's VMs have no GPU: their CPU utilisation stands in
and the report says so). Each sample is kept as printed, with its time (epoch seconds); the control node parses
them (validation/parse_util.py). A sampling failure is recorded in the file and sampling stops, the command runs
on: the missing utilisation is judged by the verdict, the training is not lost. The exit status is the
command's. Standard library only, Python >= 3.8.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

GPU_QUERY = ["--query-gpu=index,utilization.gpu,memory.used", "--format=csv"]


def sample_once(what: str, nvidia_smi: str, proc_stat: str) -> str:
    if what == "gpu":
        proc = subprocess.run([nvidia_smi, *GPU_QUERY], capture_output=True, text=True, timeout=20, check=False)
        if proc.returncode != 0:
            raise OSError(f"nvidia-smi exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:200]}")
        return proc.stdout
    with open(proc_stat, encoding="ascii") as fh:
        return fh.readline()


def save(path: str, doc: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        raise SystemExit("usage: util_sampler.py --out FILE --what gpu|cpu [--interval S] -- COMMAND...")
    split = argv.index("--")
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--what", choices=["gpu", "cpu"], required=True)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--nvidia-smi", default="nvidia-smi")
    p.add_argument("--proc-stat", default="/proc/stat")
    p.add_argument("--node", default="")
    args = p.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command:
        raise SystemExit("util_sampler.py: no command after --")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    source = ["nvidia-smi", *GPU_QUERY] if args.what == "gpu" else [args.proc_stat]
    doc: dict = {"what": args.what, "node": args.node, "interval_s": args.interval, "source": source,
                 "command": command, "samples": [], "errors": [], "started": time.time()}
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        doc["errors"].append(f"cannot start {command[0]}: {exc}")
        save(args.out, doc)
        return 127
    sampling = True
    while True:
        if sampling:
            try:
                doc["samples"].append({"t": time.time(), "text": sample_once(args.what, args.nvidia_smi, args.proc_stat)})
            except (OSError, subprocess.SubprocessError, UnicodeDecodeError) as exc:
                doc["errors"].append(f"sampling stopped at {time.time():.3f}: {exc}")
                sampling = False
            if len(doc["samples"]) % 10 == 1:
                save(args.out, doc)  # a killed run still leaves what was sampled
        try:
            rc = child.wait(timeout=args.interval)
            break
        except subprocess.TimeoutExpired:
            continue
    if sampling:  # one reading after the command ended closes the last interval
        try:
            doc["samples"].append({"t": time.time(), "text": sample_once(args.what, args.nvidia_smi, args.proc_stat)})
        except (OSError, subprocess.SubprocessError, UnicodeDecodeError) as exc:
            doc["errors"].append(f"last sample failed: {exc}")
    doc["finished"] = time.time()
    doc["command_rc"] = rc
    save(args.out, doc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
