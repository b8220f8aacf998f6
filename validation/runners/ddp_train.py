#!/usr/bin/env python3
"""Short DDP training for the acceptance test: throughput on synthetic data and on a dataset read over NFS.

Started by torchrun (c10d rendezvous) on every node, inside the NGC PyTorch image on production (NCCL on
GPUs), or on the lab VMs (gloo on CPU, a tiny model) as the ranks of one srun --mpi=pmix or mpirun launch
(engines.rank_env turns the engine's rank variables into torch's) or as the SSH path's env:// workers. For each mode (synthetic | real) and repeat:
warm-up steps are run and excluded; every timed step is closed by a device synchronisation; each rank's
step times are gathered and the slowest rank's time per step is what counts. Rank 0 writes
``<mode>-r<k>.json`` with the per-step times and samples/s = global batch x steps / sum(slowest step).

``--bare`` runs the same model and batches in a plain single-process loop without DDP, for the benchmark
that measures the harness's overhead. Mode ``bare`` (``--modes ...,bare``) trains a copy of the model on synthetic
data on every rank at once, without DDP (no gradient exchange): what the machine gives N nodes training side by
side, the ideal their DDP training is judged against (the lab's host shares its cores between the VMs).
``bare-r<k>.json`` records each rank's samples/s and their sum.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from engines import rank_env


class TinyNet(nn.Module):
    """Lab stand-in for ResNet-50: two conv blocks and a classifier (TCG VMs are slow)."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.relu(self.c2(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def build_model(name: str, num_classes: int) -> nn.Module:
    if name == "tiny":
        return TinyNet(num_classes)
    import torchvision  # in the NGC PyTorch image

    return getattr(torchvision.models, name)(num_classes=num_classes)


class ShardDataset(torch.utils.data.Dataset):
    """Fixed-size records (1 label byte + C*H*W uint8) in shard files written by make_dataset.py."""

    def __init__(self, root: str) -> None:
        with open(os.path.join(root, "manifest.json"), encoding="utf-8") as fh:
            self.manifest = json.load(fh)
        self.root = root
        s = int(self.manifest["image_size"])
        self.shape = (3, s, s)
        self.record = 1 + 3 * s * s
        self.per_shard = int(self.manifest["shard_samples"])
        self.samples = int(self.manifest["samples"])
        self.files: dict[int, int] = {}

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, index: int):
        shard, offset = divmod(index, self.per_shard)
        fd = self.files.get(shard)
        if fd is None:
            fd = os.open(os.path.join(self.root, self.manifest["shards"][shard]), os.O_RDONLY)
            self.files[shard] = fd
        raw = os.pread(fd, self.record, offset * self.record)
        if len(raw) != self.record:
            raise OSError(f"short read in shard {shard} record {offset}")
        label = raw[0] % int(self.manifest["num_classes"])
        image = torch.frombuffer(bytearray(raw[1:]), dtype=torch.uint8).view(self.shape)
        return image, label


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_mode(args, mode, model, opt, device, rank, world, loader_iter_factory):
    """Warm-up then timed steps; returns this rank's per-step seconds."""
    model.train()
    crit = nn.CrossEntropyLoss()
    if mode == "synthetic":
        x = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
        y = torch.randint(0, args.num_classes, (args.batch_size,), device=device)

        def batches():
            while True:
                yield x, y
        it = batches()
    else:
        it = loader_iter_factory()
    times = []
    for step in range(args.warmup_steps + args.steps):
        t0 = time.perf_counter()
        images, labels = next(it)
        if mode == "real":
            images = images.to(device, non_blocking=True).float().div_(255.0)
            labels = torch.as_tensor(labels).to(device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = crit(model(images), labels)
        loss.backward()
        opt.step()
        sync(device)
        if step >= args.warmup_steps:
            times.append(time.perf_counter() - t0)
    return times


def gather_hostnames(world: int, device: torch.device) -> list[str]:
    """Every rank's short hostname (all_gather_object needs numpy, which the lab image lacks)."""
    name = socket.gethostname().split(".")[0].encode()[:64].ljust(64, b"\0")
    mine = torch.tensor(list(name), dtype=torch.uint8, device=device)
    out = [torch.zeros(64, dtype=torch.uint8, device=device) for _ in range(world)]
    dist.all_gather(out, mine)
    return [bytes(t.tolist()).rstrip(b"\0").decode() for t in out]


def refuse_without_gpu(args: argparse.Namespace) -> None:
    """GPUs were asked for and this rank sees none (no --gpus-per-node/--gres on a Slurm step with device
    constraints, CUDA_VISIBLE_DEVICES empty, a driver mismatch): record why, as a result that did not
    complete, and stop, rather than train on the CPU with gloo."""
    reason = (f"asked to train on GPUs (--device cuda) but this rank on {socket.gethostname()} sees none "
              f"(torch.cuda.is_available() is False, CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}, "
              f"torch {torch.__version__} built for CUDA {torch.version.cuda}): request the GPUs "
              "(srun --gpus-per-node, docker --gpus all) and check the driver")
    print(f"ddp_train: {reason}", file=sys.stderr)
    if os.environ.get("RANK", "0") == "0":
        os.makedirs(args.out_dir, exist_ok=True)
        for mode in args.modes.split(","):
            for k in range(1, args.repeats + 1):
                doc = {"mode": mode, "model": args.model, "backend": None, "device": "none", "complete": False,
                       "errors": [reason], "torch": torch.__version__}
                with open(os.path.join(args.out_dir, f"{mode}-r{k}.json"), "w", encoding="utf-8") as fh:
                    json.dump(doc, fh, indent=1)
    sys.exit(3)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=256, help="per rank")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup-steps", type=int, default=10)
    p.add_argument("--modes", default="synthetic,real")
    p.add_argument("--dataset", help="directory written by make_dataset.py (mode real)")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--amp", type=int, default=1, help="mixed precision on GPUs")
    p.add_argument("--bare", action="store_true", help="no DDP, one process: the benchmark's reference loop")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                   help="cuda: GPUs were asked for, a rank that sees none fails (never a CPU result); "
                        "cpu: the lab's stand-in; auto: whatever is there")
    args = p.parse_args()
    os.environ.update(rank_env(os.environ))

    cuda = torch.cuda.is_available() and args.device != "cpu"
    if args.device == "cuda" and not cuda:
        refuse_without_gpu(args)
    if args.bare:
        device = torch.device("cuda" if cuda else "cpu")
        model = build_model(args.model, args.num_classes).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
        y = torch.randint(0, args.num_classes, (args.batch_size,), device=device)
        crit = nn.CrossEntropyLoss()
        for step in range(args.warmup_steps + args.steps):
            if step == args.warmup_steps:
                sync(device)
                t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            crit(model(x), y).backward()
            opt.step()
        sync(device)
        elapsed = time.perf_counter() - t0
        with open(os.path.join(args.out_dir, "bare.json"), "w", encoding="utf-8") as fh:
            json.dump({"samples_per_s": args.batch_size * args.steps / elapsed, "seconds": elapsed,
                       "steps": args.steps, "batch_size": args.batch_size, "model": args.model}, fh)
        return

    backend = "nccl" if cuda else "gloo"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    hosts = gather_hostnames(world, device)
    model = build_model(args.model, args.num_classes).to(device)
    if cuda:
        model = model.to(memory_format=torch.channels_last)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)

    def loader_iter():
        ds = ShardDataset(args.dataset)
        sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, sampler=sampler,
                                             num_workers=args.workers, pin_memory=cuda, drop_last=True,
                                             persistent_workers=False)
        epoch = 0
        while True:
            sampler.set_epoch(epoch)
            yield from loader
            epoch += 1

    bare: tuple[nn.Module, torch.optim.Optimizer] | None = None
    for mode in args.modes.split(","):
        if mode == "bare" and bare is None:  # an independent copy: no DDP hooks, no collective per step
            bare_model = build_model(args.model, args.num_classes).to(device)
            bare = (bare_model, torch.optim.SGD(bare_model.parameters(), lr=0.01, momentum=0.9))
        for k in range(1, args.repeats + 1):
            doc = {"mode": mode, "model": args.model, "backend": backend, "device": device.type,
                   "world_size": world, "nodes": sorted(set(hosts)), "batch_size_per_rank": args.batch_size,
                   "global_batch": args.batch_size * world, "steps": args.steps,
                   "warmup_steps": args.warmup_steps, "image_size": args.image_size,
                   "lab_standin": not cuda, "torch": torch.__version__, "complete": False, "errors": [],
                   "dataset": args.dataset if mode == "real" else None}
            if mode == "real" and not args.dataset:
                doc["errors"].append("mode real needs --dataset")
                times: list[float] = []
            else:
                dist.barrier()
                doc["wall_start"] = time.time()  # the window the utilisation and array samples are judged in
                with torch.autocast(device_type=device.type, enabled=bool(args.amp and cuda)):
                    if mode == "bare" and bare is not None:
                        times = run_mode(args, "synthetic", bare[0], bare[1], device, rank, world, loader_iter)
                    else:
                        times = run_mode(args, mode, ddp, opt, device, rank, world, loader_iter)
                doc["wall_end"] = time.time()
            t = torch.tensor(times or [0.0], dtype=torch.float64, device=device if backend == "nccl" else "cpu")
            gathered = [torch.zeros_like(t) for _ in range(world)]
            dist.all_gather(gathered, t)
            if rank == 0:
                slowest = torch.stack(gathered).max(dim=0).values.tolist() if times else []
                doc["step_times_s"] = slowest
                doc["rank_mean_step_s"] = [float(g.mean().item()) for g in gathered]
                if slowest and sum(slowest) > 0:
                    doc["samples_per_s"] = args.batch_size * world * len(slowest) / sum(slowest)
                    doc["complete"] = len(slowest) == args.steps
                if mode == "bare" and slowest:  # every rank on its own: the sum of the ranks' throughputs
                    per_rank = [args.batch_size * len(slowest) / float(g.sum().item()) for g in gathered]
                    doc["rank_samples_per_s"] = per_rank
                    doc["samples_per_s"] = sum(per_rank)
                    doc["ddp"] = False
                # the runner makes it where it runs; a rank launched elsewhere (torchrun by hand, srun's rank 0 on
                # another node) must not lose minutes of training at the write (seen on an H100 under torchrun)
                os.makedirs(args.out_dir, exist_ok=True)
                path = os.path.join(args.out_dir, f"{mode}-r{k}.json")
                with open(path + ".tmp", "w", encoding="utf-8") as fh:
                    json.dump(doc, fh, indent=1)
                os.replace(path + ".tmp", path)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
