#!/usr/bin/env python3
"""Scale benchmark: cost of the control-node parts as the site grows, on generated sites and model runs.

    .venv/bin/python benchmarks/scale_bench.py [--sizes 4,16,64,140] [--pure 560] [--json]

For each size N (DGX; F800 nodes as validation/sitegen.py's default, one per DGX up to 252) it generates the site
(validation/sitegen.py) in a scratch directory and times, each with its peak Python memory (tracemalloc):

- preflight: Ansible's inventory load (tests/preflight/preflight_sites.load_site, what the preflight play's action
  plugin sees) and preflight's inventory rules (module_utils/preflight_rules.evaluate) apart;
- cable plan: ``python -m validation cabling plan``'s design of the generated site (validation/cabling/plan.py:
  the inventory read by Ansible, every storage, peerlink and compute cable), at the sizes that load Ansible;
- verdict: validation.verdict.evaluate on a run directory of N nodes written by the MODEL ENGINE
  (tests/scale/model_engine.py: a model of the cluster, every file it writes says so), every stage;
- report: validation/report.py's report.json, junit, metrics, summary and HTML of that verdict (and the HTML's
  size).

The sizes of --pure (560) skip Ansible's inventory load (the pure-Python parts only). Then the growth from 16 to
140: each part's time ratio against the node ratio (8.75: linear). Everything is written under one temporary
directory, removed at the end; nothing else is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

import ansible.module_utils  # noqa: E402

if str(ROOT / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(ROOT / "module_utils"))

from ansible.module_utils import preflight_rules  # noqa: E402

from tests.scale import model_engine  # noqa: E402
from validation import report, sitegen  # noqa: E402
from validation.cabling import plan as cabling_plan  # noqa: E402
from validation.context import context_from_inventory  # noqa: E402
from validation.verdict import evaluate  # noqa: E402


def cable_plan(site_dir: Path, site: sitegen.Site) -> int:
    """The number of designed cables of the generated site, as `python -m validation cabling plan` finds them."""
    view = cabling_plan.load_view([str(ROOT / "inventories" / "common"), str(site_dir)])
    return len(cabling_plan.design(view))


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float, float]:
    """fn's result, its wall and CPU seconds (a plain run), and its peak traced memory in MiB (a second run under
    tracemalloc, which slows Python several times: never the timed one)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, elapsed, used, peak / 2**20


def bench_size(n: int, scratch: Path, base_ctx: dict[str, Any], ansible: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"dgx": n, "f800": sitegen.default_f800(n)}
    site, row["generate_s"], row["generate_cpu"], row["generate_mib"] = timed(lambda: sitegen.generate(n, row["f800"]))
    site_dir = sitegen.write(site, scratch / f"site-{n}")
    if ansible:
        from tests.preflight.preflight_sites import load_site

        loaded, row["inventory_load_s"], row["inventory_load_cpu"], row["inventory_load_mib"] = timed(
            lambda: load_site(str(site_dir)))
        problems, row["preflight_rules_s"], row["preflight_rules_cpu"], row["preflight_rules_mib"] = timed(
            lambda: preflight_rules.evaluate(loaded))
        row["preflight_errors"] = sum(p.severity == "error" for p in problems)
        row["cables"], row["cable_plan_s"], row["cable_plan_cpu"], row["cable_plan_mib"] = timed(
            lambda: cable_plan(site_dir, site))
    ctx = model_engine.context_from_site(site, base_ctx)
    model = model_engine.ModelCluster(list(site.layout.dgx), f800=len(site.layout.f800))
    run = model_engine.write_full_run(scratch / f"run-{n}", model, ctx)
    verdict, row["verdict_s"], row["verdict_cpu"], row["verdict_mib"] = timed(lambda: evaluate(run, ctx))
    row["verdict"] = verdict.status

    def write_report() -> dict[str, Path]:
        doc = report.build_report(run, ctx, verdict, {"model_engine": model_engine.LABEL}, None)
        return report.write_all(run, doc)

    files, row["report_s"], row["report_cpu"], row["report_mib"] = timed(write_report)
    row["html_kib"] = round(files["html"].stat().st_size / 1024)
    row["summary_lines"] = len(files["markdown"].read_text(encoding="utf-8").splitlines())
    row["verdict_report_s"] = row["verdict_s"] + row["report_s"]
    row["verdict_report_cpu"] = row["verdict_cpu"] + row["report_cpu"]
    return row


PARTS = ("inventory_load", "preflight_rules", "cable_plan", "verdict", "report")


def show(rows: list[dict[str, Any]]) -> str:
    lines = ["MODEL ENGINE run directories (a model of the cluster, not measurements); "
             f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
             "per part: wall s / CPU s / peak MiB (tracemalloc)",
             f"{'DGX':>5} {'F800':>5}" + "".join(f" {p:>22}" for p in PARTS) +
             f" {'verdict+report':>15} {'HTML KiB':>9} {'summary':>8} {'cables':>7} verdict"]
    for r in rows:
        cells = "".join(f" {_cell(r, p):>22}" for p in PARTS)
        lines.append(f"{r['dgx']:>5} {r['f800']:>5}{cells} {_num(r['verdict_report_s'], 2):>6}/"
                     f"{_num(r['verdict_report_cpu'], 2):<8} {r['html_kib']:>9} {r['summary_lines']:>8} {r.get('cables', '-'):>7} "
                     f"{r['verdict']}")
    by_n = {r["dgx"]: r for r in rows}
    if 16 in by_n and 140 in by_n:
        lines.append("growth 16 -> 140 (CPU time ratio; nodes x8.75 = linear):")
        for p in PARTS:
            a, b = by_n[16].get(p + "_cpu"), by_n[140].get(p + "_cpu")
            if a and b:
                lines.append(f"  {p:>16}: x{b / a:.2f} (memory x{by_n[140][p + '_mib'] / max(by_n[16][p + '_mib'], 1e-3):.2f})")
    return "\n".join(lines)


def _cell(row: dict[str, Any], part: str) -> str:
    if row.get(part + "_s") is None:
        return "-"
    return f"{row[part + '_s']:.2f}/{row[part + '_cpu']:.2f}/{row[part + '_mib']:.1f}"


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4,16,64,140", help="DGX counts with every part (default 4,16,64,140)")
    parser.add_argument("--pure", default="560", help="DGX counts with the pure-Python parts only (default 560)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    sizes = [(int(s), True) for s in args.sizes.split(",") if s] + [(int(s), False) for s in args.pure.split(",") if s]
    base_ctx = context_from_inventory(ROOT / "inventories" / "production")
    rows = []
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as tmp:
        for n, ansible in sizes:
            rows.append(bench_size(n, Path(tmp), base_ctx, ansible))
            print(f"... {n} DGX done", file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1) if args.json else show(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
