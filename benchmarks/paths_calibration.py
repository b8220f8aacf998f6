#!/usr/bin/env python3
"""The spread of the ratios the lab's measured thresholds judge, over several validation runs (issue #17, item 5).

For each run directory given (results/<UTC time>, judged by `python -m validation report` or the validate stage),
re-judges it with its own context.json and prints, per ratio, every run's value, then min / median / max:

  fio node read / the same path's iperf3 baseline        (fio_node_read_MBps, measured storage_path_baseline)
  fio aggregate / the aggregate iperf3 baseline          (fio_aggregate_read_MBps, measured storage_path_baseline)
  all-reduce busbw / the slowest fabric pair's baseline  (nccl_multi_node_busbw_gbps, measured fabric_path_baseline)
  DDP scaling efficiency / the host's own efficiency     (ddp_scaling_efficiency, measured host_scaling)
  array sent / clients read, per fio read phase          (fio_array_over_client, validation_telemetry.max_gap)
  CPU utilisation during the real-data trainings         (ddp_real_util_pct, floor)

and the fraction each threshold would get at a chosen margin under the smallest value seen (--margin, default
0.8: a threshold at 0.8 x the worst healthy run). A run whose verdict failed for another reason is still read:
the figures it measured are figures of the lab.

Usage: .venv/bin/python benchmarks/paths_calibration.py results/RUN1 results/RUN2 ... [--margin 0.8] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from validation.verdict import Check, evaluate  # noqa: E402


def _value(checks: list[Check], name: str, instance: str | None = None) -> float | None:
    return next((c.value for c in checks if c.name == name and c.instance == instance and c.kind == "performance"),
                None)


def ratios(run: Path) -> dict[str, list[float]]:
    """Every ratio of one run (a run holds several: one per node, per read phase)."""
    ctx = json.loads((run / "context.json").read_text(encoding="utf-8"))
    v = evaluate(run, ctx)
    nodes = list(ctx.get("nodes") or [])
    out: dict[str, list[float]] = {}

    def add(key: str, value: float | None) -> None:
        if value is not None:
            out.setdefault(key, []).append(value)

    for n in nodes:
        fio, base = _value(v.checks, "fio_node_read_MBps", n), _value(v.checks, "path_storage_MBps", n)
        add("fio node / storage baseline", fio / base if fio and base else None)
        add("storage baseline MB/s", base)
        add("fio node MB/s", fio)
    agg, agg_base = _value(v.checks, "fio_aggregate_read_MBps"), _value(v.checks, "path_storage_aggregate_MBps")
    add("fio aggregate / aggregate baseline", agg / agg_base if agg and agg_base else None)
    fabric = [c.value for c in v.checks if c.name == "path_fabric_GBps" and c.value]
    multi = _value(v.checks, "nccl_multi_node_busbw_gbps")
    add("all-reduce busbw / slowest fabric baseline", multi / min(fabric) if multi and fabric else None)
    add("fabric baseline GB/s", min(fabric) if fabric else None)
    eff = _value(v.checks, "ddp_scaling_efficiency")
    host = next((c.value for c in v.checks if c.name == "ddp_host_speedup" and c.value), None)
    if eff is not None and host:
        add("DDP scaling efficiency / host efficiency", eff / (host / len(nodes)))
    add("host speedup (N VMs without DDP)", host)
    add("DDP scaling efficiency", eff)
    for c in v.checks:
        if c.name == "fio_array_over_client" and c.value is not None:
            add("array / client (fio phases)", c.value)
        if c.name == "ddp_real_util_pct" and c.value is not None:
            add("utilisation during real data (%)", c.value)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--margin", type=float, default=0.8)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    table: dict[str, list[float]] = {}
    for run in args.runs:
        for key, values in ratios(run).items():
            table.setdefault(key, []).extend(values)
    summary: dict[str, Any] = {}
    for key, values in table.items():
        summary[key] = {"values": [round(x, 4) for x in values], "min": round(min(values), 4),
                        "median": round(statistics.median(values), 4), "max": round(max(values), 4),
                        "threshold_at_margin": round(min(values) * args.margin, 4)}
    if args.json:
        json.dump({"runs": [r.name for r in args.runs], "margin": args.margin, "ratios": summary}, sys.stdout, indent=1)
        print()
        return 0
    print(f"{len(args.runs)} run(s): {', '.join(r.name for r in args.runs)}; threshold = {args.margin:g} x min")
    for key, s in summary.items():
        print(f"{key:48} min {s['min']:<9g} median {s['median']:<9g} max {s['max']:<9g} -> {s['threshold_at_margin']:g}"
              f"   ({', '.join(f'{x:g}' for x in s['values'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
