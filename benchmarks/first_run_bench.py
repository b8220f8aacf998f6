#!/usr/bin/env python3
"""Benchmark the README's main job as a newcomer runs it, and print where the time goes.

    .venv/bin/python benchmarks/first_run_bench.py [--cold] [--keep] [--json]
    .venv/bin/python benchmarks/first_run_bench.py --from-log SITE_LOG [--noop-log LOG] [--run-dir DIR]

Full mode: a fresh clone of this repository's HEAD in a temporary directory, then, timed one by one:
install (scripts/install.sh), image build (`python -m lab build`; `--cold`: into an empty image cache,
else the cache `lab up` uses), boot (`python -m lab up`), the whole `site.yml` (each stage from its plays'
task timings: the ansible.posix.profile_tasks callback, enabled for these runs), each validation case (the
run's raw meta.json: launcher wall time per sample), and the no-op re-run (`site.yml --skip-tags validate`
on the converged lab) with its ratio to the first converge of the same stages (target: <= 0.3).
Beside the figures it prints the machine's calibration (benchmarks/calibration.py): the host workload before the
install, and `python3 -c 'import torch'` in the clone's dgx01 once the lab is up (docs/benchmarks.md).
The clone's lab uses the inventory's ports, so a developers' lab must be down first (`python -m lab down`);
the benchmark takes its own lab down at the end unless --keep.

--from-log: the same table from the logs of a run that already happened (e.g. the lab flow test's
site-1.log / site-2.log, which the flow test prints the path of).

Any step that fails stops the benchmark with exit status 1 and the tail of its output; no figure is printed
for a step that did not run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from calibration import Calibration, host_workload_seconds, measure, vm_import_torch_seconds

ROOT = Path(__file__).resolve().parents[1]

PLAY = re.compile(r"^PLAY \[(?P<name>.*)\] \*+$")
# profile_tasks: "Monday 23 November 2026  22:51:06 +0000 (0:00:00.045)       0:00:00.045 *******"
STAMP = re.compile(r"^\w+ \d+ \w+ \d{4}\s+[\d:]+ [+-]\d{4} \((?P<last>[\d:.]+)\)\s+(?P<total>[\d:.]+) \*+\s*$")
# Per-task timestamps and the slowest tasks at the end (enabled per run, not in ansible.cfg: it prints on
# stdout, which would corrupt a site's ANSIBLE_STDOUT_CALLBACK=json output).
TIMING_CALLBACK = "ansible.posix.profile_tasks"
STAGES = ("Preflight", "Storage", "Fabric", "Compute", "Containers", "Validate")


def _seconds(hms: str) -> float:
    h, m, s = hms.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


@dataclass
class StageTimes:
    """Wall seconds per stage of one ansible-playbook run, from its profile_tasks timestamps."""

    stages: dict[str, float] = field(default_factory=dict)
    total: float = 0.0


def stage_times(log: str) -> StageTimes:
    """Attribute the time between consecutive profile_tasks stamps to the play that was running.

    A play's name starts with its stage ("Storage | ...", "Validate | ..."); the preflight plays that every
    stage playbook imports count as Preflight. Raises ValueError when the log has no profile_tasks stamps
    (the callback was not enabled): a table of zeros would be a lie."""
    out = StageTimes()
    stage = None
    open_stage = None  # the play of the task the next stamp closes
    last_total = 0.0
    seen = False
    for line in log.splitlines():
        m = PLAY.match(line)
        if m:
            name = m["name"].split("|")[0].strip()
            stage = name if name in STAGES else "other"
            continue
        s = STAMP.match(line)
        if s:
            seen = True
            total = _seconds(s["total"])
            if open_stage is not None:
                # the stamp closes the previous task (which ran in open_stage) and opens the next one
                out.stages[open_stage] = out.stages.get(open_stage, 0.0) + (total - last_total)
            open_stage = stage
            last_total = total
    if not seen:
        raise ValueError("no ansible.posix.profile_tasks timestamps in the log: run with "
                         "ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks")
    recap = re.search(r"^\w+ \d+ \w+ \d{4}\s+[\d:]+ [+-]\d{4} \([\d:.]+\)\s+(?P<total>[\d:.]+) \*+\s*\n=+",
                      log, re.M)
    out.total = _seconds(recap["total"]) if recap else last_total
    return out


def case_times(run_dir: Path) -> dict[str, float]:
    """Launcher wall seconds per validation case (sum over its samples), from the run's raw meta.json files."""
    times: dict[str, float] = {}
    for meta in sorted((run_dir / "raw").glob("*/*/meta.json")):
        try:
            doc = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        samples = doc.get("samples") if isinstance(doc, dict) else None
        if not isinstance(samples, list):
            continue
        # DDP records one sample per mode and repeat of one launch: count that launch once
        durations = {(s.get("console"), s.get("duration_s")) for s in samples if isinstance(s, dict)}
        secs = sum(float(d) for _, d in durations if isinstance(d, int | float))
        times[f"{meta.parent.parent.name}/{meta.parent.name}"] = secs
    return times


def _fmt(secs: float) -> str:
    return f"{int(secs // 60)} min {secs % 60:04.1f} s" if secs >= 60 else f"{secs:.1f} s"


def print_table(rows: list[tuple[str, float]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"| {'phase':<{width}} | {'wall time':>13} |")
    print(f"|{'-' * (width + 2)}|{'-' * 15}|")
    for name, secs in rows:
        print(f"| {name:<{width}} | {_fmt(secs):>13} |")


def rows_for(first: StageTimes, noop: StageTimes | None, cases: dict[str, float]) -> list[tuple[str, float]]:
    rows = [(f"site.yml: {s}", first.stages[s]) for s in (*STAGES, "other") if s in first.stages]
    rows.append(("site.yml: whole run", first.total))
    rows += [(f"  validation case {c}", t) for c, t in cases.items()]
    if noop is not None:
        rows.append(("no-op re-run (--skip-tags validate)", noop.total))
    return rows


def noop_ratio(first: StageTimes, noop: StageTimes) -> float:
    deploy = sum(t for s, t in first.stages.items() if s != "Validate")
    return noop.total / deploy if deploy else float("inf")


def _step(name: str, args: list[str], cwd: Path, env: dict[str, str], log_dir: Path) -> tuple[float, str]:
    print(f"{name}: $ {' '.join(args)}", flush=True)
    t0 = time.monotonic()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    secs = time.monotonic() - t0
    (log_dir / f"{name.replace(' ', '-')}.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if proc.returncode != 0:
        print(f"FAIL: {name} exited {proc.returncode} after {_fmt(secs)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
        raise SystemExit(1)
    print(f"{name}: {_fmt(secs)}", flush=True)
    return secs, proc.stdout


def full(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="first-run-bench-"))
    clone = work / "clone"
    logs = work / "logs"
    logs.mkdir()
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_CALLBACKS_ENABLED=TIMING_CALLBACK)
    env.pop("VIRTUAL_ENV", None)
    if args.cold:
        env["LAB_CACHE_DIR"] = str(work / "image-cache")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    py = str(clone / ".venv" / "bin" / "python")
    rows: list[tuple[str, float]] = []
    host_before = measure()
    print(host_before.line(), flush=True)
    try:
        rows.append(("install", _step("install", ["./scripts/install.sh", "--lab"], clone, env, logs)[0]))
        rows.append(("image build" + (" (cold cache)" if args.cold else " (warm cache)"),
                     _step("image build", [py, "-m", "lab", "build"], clone, env, logs)[0]))
        rows.append(("boot (lab up)", _step("boot", [py, "-m", "lab", "up"], clone, env, logs)[0]))
        vm_torch = vm_import_torch_seconds("dgx01", clone, env, py)
        site_bin = str(clone / ".venv" / "bin" / "ansible-playbook")
        _, out = _step("site", [site_bin, "site.yml"], clone, env, logs)
        first = stage_times(out)
        runs = sorted(p for p in (clone / "results").iterdir() if (p / "report.json").is_file())
        cases = case_times(runs[-1]) if runs else {}
        _, noop_out = _step("noop", [site_bin, "site.yml", "--skip-tags", "validate"], clone, env, logs)
        noop = stage_times(noop_out)
        rows += rows_for(first, noop, cases)
        to_pass = sum(t for name, t in rows if not name.startswith(("  ", "site.yml: ", "no-op")))
        rows.append(("README main job to a PASS report (install .. site.yml)", to_pass + first.total))
        print()
        print_table(rows)
        print(f"\nno-op re-run / first converge of the same stages: {noop_ratio(first, noop):.2f} (target <= 0.30)")
        cal = Calibration(host_before.host_workload_s, host_before.cpus, host_before.load_average, "dgx01",
                          round(vm_torch, 2))
        print(cal.line())
        print(f"host workload after the run: {host_workload_seconds():.2f} s; logs in {logs}")
        if args.json:
            print(json.dumps({"rows": rows, "noop_ratio": noop_ratio(first, noop), "calibration": asdict(cal)},
                             indent=1))
    finally:
        if not args.keep:
            subprocess.run([py, "-m", "lab", "down"], cwd=clone, env=env, capture_output=True, check=False)
    return 0


def from_log(args: argparse.Namespace) -> int:
    first = stage_times(Path(args.from_log).read_text())
    noop = stage_times(Path(args.noop_log).read_text()) if args.noop_log else None
    cases = case_times(Path(args.run_dir)) if args.run_dir else {}
    print_table(rows_for(first, noop, cases))
    if noop is not None:
        print(f"\nre-run / first converge of the same stages: {noop_ratio(first, noop):.2f}")
    print(f"{measure().line()} (this machine now, not necessarily the machine of the log)")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cold", action="store_true", help="build the images into an empty cache")
    p.add_argument("--keep", action="store_true", help="leave the benchmark's lab up")
    p.add_argument("--json", action="store_true")
    p.add_argument("--from-log", help="a site.yml log with profile_tasks timestamps: print its table only")
    p.add_argument("--noop-log", help="with --from-log: the log of the no-op re-run")
    p.add_argument("--run-dir", help="with --from-log: the validation run directory (results/<id>)")
    a = p.parse_args()
    return from_log(a) if a.from_log else full(a)


if __name__ == "__main__":
    sys.exit(main())
