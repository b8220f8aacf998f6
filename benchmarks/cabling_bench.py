#!/usr/bin/env python3
"""Benchmark the cabling check at scale: parse the largest real InfiniBand dump and check a full plan for it.

    .venv/bin/python benchmarks/cabling_bench.py [--dump FILE] [--repeat N] [--json]

The dump (default: tests/fixtures/ib/real/ibnetdiscover-selene-dgx-a100-compute.txt, NVIDIA Selene's DGX A100
compute fabric: 666 QM8700, 12852 links) is parsed; a plan of every cable it shows (the aggregation nodes'
internal links left out) is written as `cabling plan` writes it, read back as `cabling check --plan` reads it,
two of its cables swapped, and checked. Printed per step: wall time and peak Python memory (tracemalloc), the best
of N repeats; and the sanity of the result (exactly the two swapped cables MISWIRED), apart from the figures.
Target (issue #37): the whole under 10 s on a 2-core machine. Writes only into a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from validation.cabling import check, dumps, plan  # noqa: E402
from validation.cabling.model import Cable  # noqa: E402

DEFAULT = ROOT / "tests" / "fixtures" / "ib" / "real" / "ibnetdiscover-selene-dgx-a100-compute.txt"
TARGET_S = 10.0


def measure(step: Callable[[], Any], traced: bool) -> tuple[Any, float, float, float]:
    """(result, wall s, CPU s, peak MB). Peak memory comes from tracemalloc, which slows Python several times: a
    traced run gives the memory figures only, an untraced run the times."""
    if traced:
        tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    result = step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1] / 1e6 if traced else 0.0
    if traced:
        tracemalloc.stop()
    return result, wall, cpu, peak


def run_once(dump: Path, scratch: Path, traced: bool) -> tuple[dict[str, tuple[float, float, float]],
                                                               dict[str, Any]]:
    figures: dict[str, tuple[float, float, float]] = {}
    (fmt, links), *fig = measure(lambda: dumps.parse_file(dump), traced)
    figures["parse"] = tuple(fig)  # type: ignore[assignment]
    cables = [Cable(lk.local, lk.remote, lk.speed, lk.width) for lk in links if not lk.internal]
    cables[0], cables[1] = (Cable(cables[0].a, cables[1].b, cables[0].speed, cables[0].width),
                            Cable(cables[1].a, cables[0].b, cables[1].speed, cables[1].width))
    path = scratch / "plan.yml"
    _, *fig = measure(lambda: path.write_text(plan.to_yaml(cables)), traced)
    figures["write plan"] = tuple(fig)  # type: ignore[assignment]
    read, *fig = measure(lambda: plan.read_plan(path), traced)
    figures["read plan"] = tuple(fig)  # type: ignore[assignment]
    report, *fig = measure(lambda: check.check(read, links), traced)
    figures["check"] = tuple(fig)  # type: ignore[assignment]
    summary = report.summary()
    miswired = [(str(v.a), str(v.b)) for v in report.entries if v.status == check.MISWIRED]
    sanity = {"format": fmt, "links": len(links), "cables": len(cables), "summary": summary,
              "exactly_the_two_swapped": miswired == [(str(cables[0].a), str(cables[0].b)),
                                                      (str(cables[1].a), str(cables[1].b))]
              and summary["OK"] == len(cables) - 2}
    return figures, sanity


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    best: dict[str, tuple[float, float]] = {}
    peaks: dict[str, float] = {}
    sanity: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cabling-bench-") as tmp:
        for _ in range(max(1, args.repeat)):
            figures, sanity = run_once(args.dump, Path(tmp), traced=False)
            for step, (wall, cpu, _) in figures.items():
                if step not in best or wall < best[step][0]:
                    best[step] = (wall, cpu)
        figures, _ = run_once(args.dump, Path(tmp), traced=True)
        peaks = {step: fig[2] for step, fig in figures.items()}
    total = sum(w for w, _ in best.values())
    total_cpu = sum(c for _, c in best.values())
    peak = max(peaks.values())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.json:
        print(json.dumps({"dump": str(args.dump), "steps": {k: {"wall_s": w, "cpu_s": c, "peak_mb": peaks[k]}
                                                            for k, (w, c) in best.items()},
                          "total_wall_s": total, "total_cpu_s": total_cpu, "peak_mb": peak, "max_rss_mb": rss,
                          "target_s": TARGET_S, "sanity": sanity}, indent=2))
    else:
        print(f"dump: {args.dump.relative_to(ROOT) if args.dump.is_relative_to(ROOT) else args.dump} "
              f"({sanity['links']} links, {sanity['cables']} cables planned; best of {args.repeat}, "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
        for step, (w, c) in best.items():
            print(f"  {step:11} {w:7.2f} s wall  {c:7.2f} s CPU   peak {peaks[step]:7.1f} MB")
        print(f"  {'total':11} {total:7.2f} s wall  {total_cpu:7.2f} s CPU   peak {peak:7.1f} MB Python heap, "
              f"{rss:.0f} MB max RSS   (target < {TARGET_S:.0f} s)")
        print(f"sanity: {sanity['summary']['MISWIRED']} MISWIRED, {sanity['summary']['OK']} OK; exactly the two "
              f"swapped: {sanity['exactly_the_two_swapped']}")
    return 0 if sanity.get("exactly_the_two_swapped") else 1


if __name__ == "__main__":
    sys.exit(main())
