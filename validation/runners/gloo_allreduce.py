#!/usr/bin/env python3
"""Lab stand-in for nccl-tests all_reduce_perf: torch.distributed all-reduce over gloo on CPU.

Started on every node of a case by nccl_runner's env:// workers (the SSH path), or as the ranks of one srun
--mpi=pmix / mpirun launch (engines.rank_env turns the engine's rank variables into torch's). Sweeps message sizes like all_reduce_perf
(-b/-e/-f 2), times out-of-place (copy then reduce) and in-place all-reduce, checks every element of the
result (#wrong), and prints the nccl-tests table on rank 0 into r<k>.log, one file per repeat, with the
same formulas: algbw = bytes / time, busbw = algbw * 2(n-1)/n. Times are the slowest rank's. With --stdout,
rank 0 prints the tables instead (each after a "# stand-in repeat k of n" line), as all_reduce_perf does under
an engine: the engine brings them back to the launching node.

--devices G is all_reduce_perf's -g G: one process drives G ranks, here one thread each, every thread with its own
gloo process group over the same TCP store (global rank = process rank x G + thread; world = processes x G). The
collectives are the same gloo ring between G x processes ranks; what one process per node saves is the torch
import of the others (10-17 s each inside a TCG VM, several at once on a 2-core host). The "# Rank" lines
list every rank with its process id and device index, as nccl-tests does with -g.
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from engines import rank_env

# torch.distributed's default collective timeout (init_process_group's): the runner's own limit comes first
TIMEOUT = datetime.timedelta(seconds=1800)


@dataclass
class Rank:
    """One rank: its gloo process group (one per thread), global rank, world size and device index."""

    pg: dist.ProcessGroupGloo
    rank: int
    world: int
    device: int

    def all_reduce(self, tensor: torch.Tensor, op: dist.ReduceOp.RedOpType = dist.ReduceOp.SUM) -> None:
        opts = dist.AllreduceOptions()
        opts.reduceOp = op
        self.pg.allreduce([tensor], opts).wait()

    def barrier(self) -> None:
        self.pg.barrier().wait()

    def all_gather(self, out: list[torch.Tensor], tensor: torch.Tensor) -> None:
        self.pg.allgather([out], [tensor]).wait()


def fmt(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: fixed width, fewer decimals as the value grows. Unlike nccl-tests, values
    below 0.01 keep significant digits (a TCG VM moves MB/s, which two decimals of GB/s would print as 0)."""
    if 0 < value < 0.0001:
        return f"{value:{width}.0e}"
    if 0 < value < 0.01:
        return f"{value:{width}.{width - 2}f}"
    power = 0
    v = 1
    while value >= v:
        power += 1
        v *= 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


def timed(r: Rank, fn: Callable[[], None], iters: int) -> float:
    """Seconds per iteration of fn, the slowest rank's."""
    r.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    elapsed = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
    r.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed.item())


def count_wrong(buf: torch.Tensor, world: int) -> int:
    expected = world * (world + 1) / 2  # rank r contributes r + 1
    return int((buf != expected).sum().item())


def one_sweep(args: argparse.Namespace, r: Rank) -> list[str]:
    rank, world = r.rank, r.world
    lines = []
    factor = 2.0 * (world - 1) / world
    size = args.min_bytes
    oob = 0
    busbws = []
    while size <= args.max_bytes:
        count = max(1, size // 4)
        nbytes = count * 4
        src = torch.full((count,), float(rank + 1), dtype=torch.float32)
        dst = torch.empty_like(src)
        row = f"{nbytes:12d}  {count:12d}  {'float':>8}  {'sum':>6}  {-1:6d}"

        def out_of_place(src: torch.Tensor = src, dst: torch.Tensor = dst) -> None:
            dst.copy_(src)
            r.all_reduce(dst)

        def in_place(src: torch.Tensor = src) -> None:
            r.all_reduce(src)

        for _ in range(args.warmup):
            out_of_place()
        for placement in ("out", "in"):
            fn = out_of_place if placement == "out" else in_place
            t = timed(r, fn, args.iters)
            # correctness on a fresh buffer: one more collective, then every element checked
            src.fill_(float(rank + 1))
            fn()
            wrong = torch.tensor([count_wrong(dst if placement == "out" else src, world)], dtype=torch.int64)
            r.all_reduce(wrong)
            src.fill_(float(rank + 1))
            algbw = nbytes / t / 1e9
            busbw = algbw * factor
            busbws.append(busbw)
            oob += int(wrong.item())
            row += f"  {fmt(t * 1e6, 7):>7}  {fmt(algbw, 6):>6}  {fmt(busbw, 6):>6}  {int(wrong.item()):6d}"
        lines.append(row)
        size *= 2
    avg = sum(busbws) / len(busbws) if busbws else float("nan")
    lines.append(f"# {'Out of bounds values':<20} : {oob} {'FAILED' if oob else 'OK'}")
    lines.append(f"# {'Avg bus bandwidth':<20} : {avg:g} ")
    lines.append("#")
    lines.append("# Collective test concluded: all_reduce_perf")
    return lines


def header(args: argparse.Namespace, ranks: list[tuple[str, int, int]]) -> list[str]:
    """ranks: (host, pid, device) of every rank, in rank order."""
    out = [
        f"# lab stand-in: torch.distributed all_reduce over gloo on CPU (torch {torch.__version__}), not NCCL",
        "# Collective test starting: all_reduce_perf",
        f"# nThread 1 nGpus {args.devices} minBytes {args.min_bytes} maxBytes {args.max_bytes} step: 2(factor) "
        f"warmup iters: {args.warmup} iters: {args.iters} agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for r, (host, pid, device) in enumerate(ranks):
        out.append(f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10} device {device:2d} [cpu] gloo")
    widths = (10, 12, 8, 6, 6, 7, 6, 6, 6, 7, 6, 6, 6)

    def cols(names: tuple[str, ...]) -> str:
        return "# " + "  ".join(f"{names[i]:>{widths[i]}}" for i in range(len(widths))) + " "

    out += [
        "#",
        "# " + " " * 50 + "   out-of-place                       in-place          ",
        cols(("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
              "busbw", "#wrong")),
        cols(("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")),
    ]
    return out


def gather_ranks(r: Rank) -> list[tuple[str, int, int]]:
    """Every rank's short hostname, process id and device index (all_gather_object needs numpy, which the lab
    image lacks)."""
    name = socket.gethostname().split(".")[0].encode()[:64].ljust(64, b"\0")
    names = [torch.zeros(64, dtype=torch.uint8) for _ in range(r.world)]
    r.all_gather(names, torch.tensor(list(name), dtype=torch.uint8))
    ids = [torch.zeros(2, dtype=torch.int64) for _ in range(r.world)]
    r.all_gather(ids, torch.tensor([os.getpid(), r.device], dtype=torch.int64))
    return [(bytes(n.tolist()).rstrip(b"\0").decode(), int(i[0]), int(i[1])) for n, i in zip(names, ids, strict=True)]


def run_rank(args: argparse.Namespace, r: Rank) -> None:
    """Every repeat's sweep on this rank; rank 0 prints or writes the tables."""
    ranks = gather_ranks(r)
    for k in range(1, args.repeats + 1):
        lines = header(args, ranks) + one_sweep(args, r)
        if r.rank == 0 and args.stdout:
            # one write per line: mpirun --tag-output tags every piece it reads, so a line written in pieces
            # would come back cut by tags (tests/fixtures/slurm/real/mpirun-4.1.4-debian12-ranks.txt)
            for line in [f"# stand-in repeat {k} of {args.repeats}", *lines]:
                os.write(1, (line + "\n").encode())
        elif r.rank == 0:
            path = os.path.join(args.out_dir, f"r{k}.log")
            with open(path + ".tmp", "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")
            os.replace(path + ".tmp", path)
    r.barrier()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--min-bytes", type=int, default=1 << 20)
    p.add_argument("--max-bytes", type=int, default=16 << 20)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--devices", type=int, default=1, help="ranks this process drives, one thread each (-g)")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--stdout", action="store_true", help="rank 0 prints the tables (under srun or mpirun)")
    args = p.parse_args()
    if args.devices < 1:
        p.error(f"--devices must be at least 1, got {args.devices}")
    os.environ.update(rank_env(os.environ))
    proc, procs = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # the env:// rendezvous of init_process_group: the first process holds the store, every rank connects to it.
    # One client per rank: a TCPStore client is one socket, and a rank blocked in its wait would hold it.
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    server = dist.TCPStore(host, port, None, True, TIMEOUT, wait_for_workers=False) if proc == 0 else None
    world = procs * args.devices

    def thread(device: int) -> None:
        try:
            rank = proc * args.devices + device
            store = dist.TCPStore(host, port, None, False, TIMEOUT)
            pg = dist.ProcessGroupGloo(dist.PrefixStore("standin", store), rank, world, TIMEOUT)
            run_rank(args, Rank(pg, rank, world, device))
        except BaseException:  # a rank that fails ends the process, as a crashed rank does: the engine sees it
            sys.stderr.write(f"rank {proc * args.devices + device}: " + traceback.format_exc())
            sys.stderr.flush()
            os._exit(1)

    threads = [threading.Thread(target=thread, args=(d,), name=f"rank-{proc * args.devices + d}")
               for d in range(args.devices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    del server  # the store outlives every rank of this process (the last collective is a barrier)


if __name__ == "__main__":
    main()
