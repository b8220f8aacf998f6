#!/usr/bin/env python3
"""Generate the real-data training set once on the NFS export: shards of fixed-size uint8 image records.

Record: 1 label byte (class i mod min(classes, 256)) + 3 x S x S pixel bytes. Pixels are slices of a large random pool at varying offsets,
so no two records are equal (nothing for a deduplicating or compressing store to shortcut) while the
generator stays fast enough for a set larger than a client's RAM. The set is written under <dir>.tmp and
renamed when complete; a set whose manifest matches the request is kept ("generated once").
Prints one JSON line: {"changed": bool, "dir": ..., "bytes": ...}. Standard library only, Python >= 3.8.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from multiprocessing import Pool

POOL_BYTES = 64 << 20
# The label is one byte: with more classes than it holds (ImageNet's 1000, the production default), the records'
# labels cycle over the first 256. A throughput set needs valid labels, not every class.
LABEL_VALUES = 256


def write_shard(job: tuple[str, int, int, int, int]) -> str:
    path, first, count, record_pixels, num_classes = job
    pool = os.urandom(POOL_BYTES)
    labels = min(num_classes, LABEL_VALUES)
    with open(path, "wb") as fh:
        for i in range(first, first + count):
            start = (i * 7919 * 64) % (POOL_BYTES - record_pixels)
            fh.write(bytes([i % labels]))
            fh.write(pool[start:start + record_pixels])
    return os.path.basename(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", required=True)
    p.add_argument("--bytes", type=int, required=True, help="total size wanted")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--shard-bytes", type=int, default=1 << 30)
    p.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    args = p.parse_args(argv)

    record = 1 + 3 * args.image_size * args.image_size
    samples = max(1, args.bytes // record)
    per_shard = max(1, min(samples, args.shard_bytes // record))
    wanted = {"format": "raw-uint8-chw", "image_size": args.image_size, "num_classes": args.num_classes,
              "samples": samples, "shard_samples": per_shard}
    manifest_path = os.path.join(args.dir, "manifest.json")
    if os.path.isfile(manifest_path):
        with open(manifest_path, encoding="utf-8") as fh:
            have = json.load(fh)
        if all(have.get(k) == v for k, v in wanted.items()):
            print(json.dumps({"changed": False, "dir": args.dir, "bytes": samples * record}))
            return 0
    tmp = args.dir.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    jobs = []
    for n, first in enumerate(range(0, samples, per_shard)):
        jobs.append((os.path.join(tmp, f"shard-{n:05d}.bin"), first, min(per_shard, samples - first),
                     record - 1, args.num_classes))
    with Pool(max(1, min(args.procs, len(jobs)))) as pool:
        shards = pool.map(write_shard, jobs)
    with open(os.path.join(tmp, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(dict(wanted, shards=shards), fh, indent=1)
    shutil.rmtree(args.dir, ignore_errors=True)
    os.rename(tmp, args.dir)
    print(json.dumps({"changed": True, "dir": args.dir, "bytes": samples * record}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
