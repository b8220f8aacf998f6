#!/usr/bin/env python3
"""Record the node facts the verdict checks before trusting NCCL figures: nvidia-smi topo -m and ibstat.

Writes <out>/topo.txt, <out>/ibstat.txt and meta.json (exit status of each). Standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import add_sample, init_meta, now, run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--timeout", type=float, default=120)
    args = p.parse_args(argv)
    init_meta(args.out_dir, stage="sysinfo", case=args.node, kind="sysinfo", nodes=[args.node])
    for name, cmd in (("topo.txt", ["nvidia-smi", "topo", "-m"]), ("ibstat.txt", ["ibstat"])):
        result = run(cmd, os.path.join(args.out_dir, name), args.timeout)
        add_sample(args.out_dir, dict(result, file=name, finished=now()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
