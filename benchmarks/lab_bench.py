"""Lab benchmark: image build time (cold and cached), boot time to SSH, iperf3 dgx01 -> powerscale01 via sn3700v01.

    .venv/bin/python benchmarks/lab_bench.py [--skip-cold] [--dgx N] [--json]

Cold: every image built into an empty temporary cache (debootstrap, apt, pip wheelhouse, mkfs), then removed.
Cached: the same build against the cache `lab up` uses (a hash lookup when it is warm).
Boot and iperf3 run on a lab of their own (LAB_RUN_DIR in a temporary directory, LAB_PORT_OFFSET 4000 unless set,
no host services), so a developers' lab on the contract ports keeps running. The switch VM is bridged by hand
(lab/smoke.py, the README's smoke test) before iperf3. Any step that fails makes the benchmark exit non-zero
with the reason; no figure is printed for a step that did not run. The figures come with the machine's
calibration (benchmarks/calibration.py: the host workload, and `import torch` in dgx01 of the benchmark's lab).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import measure  # noqa: E402

from lab import images, smoke  # noqa: E402
from lab.topology import load_topology  # noqa: E402


def lab_cli(env: dict[str, str], *args: str, timeout: float = 1800) -> str:
    proc = subprocess.run([sys.executable, "-m", "lab", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"FAIL: python -m lab {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def build_time(cache: Path, roles: list[str]) -> float:
    t0 = time.monotonic()
    images.build_all(cache, images.Recipe(), roles, lambda m: print(f"  {m}", flush=True))
    return time.monotonic() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-cold", action="store_true", help="do not measure the cold build (about 2-3 min, 3 GB)")
    p.add_argument("--dgx", type=int, help="DGX VMs for the boot measurement (default: topology.yml)")
    p.add_argument("--iperf-seconds", type=int, default=15)
    p.add_argument("--json", action="store_true", help="print the figures as JSON too")
    a = p.parse_args()

    topo = load_topology(dgx_count=a.dgx)
    roles = topo.images()
    figures: dict[str, object] = {"dgx_count": topo.dgx_count, "cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}

    if not a.skip_cold:
        cold = Path(tempfile.mkdtemp(prefix="lab-bench-cache-"))
        try:
            print("image build, cold (empty cache):", flush=True)
            figures["build_cold_s"] = round(build_time(cold, roles), 1)
        finally:
            shutil.rmtree(cold, ignore_errors=True)
    print("image build, cached:", flush=True)
    build_time(images.default_cache_dir(), roles)  # make sure it is warm
    figures["build_cached_s"] = round(build_time(images.default_cache_dir(), roles), 2)

    run_dir = Path(tempfile.mkdtemp(prefix="lab-bench-run-", dir="/tmp"))
    env = dict(
        os.environ,
        LAB_RUN_DIR=str(run_dir),
        LAB_PORT_OFFSET=os.environ.get("LAB_PORT_OFFSET", "4000"),
        LAB_NO_HOST_SERVICES="1",
        PYTHONPATH=str(ROOT),
        LAB_DGX_COUNT=str(topo.dgx_count),
    )
    try:
        print(f"boot: python -m lab up ({', '.join(n.name for n in topo.nodes)})", flush=True)
        t0 = time.monotonic()
        lab_cli(env, "up")
        figures["up_total_s"] = round(time.monotonic() - t0, 1)
        state = json.loads((run_dir / "state.json").read_text())
        figures["accel"] = state["accel"]
        figures["boot_to_ssh_s"] = state["boot_s"]
        figures["boot_all_ssh_s"] = max(state["boot_s"].values())
        figures["boot_complete_s"] = max(state["ready_s"].values())
        figures["degraded_units"] = state["degraded"]
        figures["load_after_boot"] = os.getloadavg()[0]
        calibration = measure("dgx01", ROOT, env)
        figures["calibration"] = asdict(calibration)
        status = json.loads(lab_cli(env, "status", "--json"))
        nodes = {n["name"]: n for n in status["nodes"]}
        ports = sorted(n for n, nic in nodes["sn3700v01"]["nics"].items() if nic["kind"] == "listen")
        lab_cli(env, "ssh", "sn3700v01", smoke.switch_bridge(ports))
        server = nodes["powerscale01"]["addresses"]["storage0"].split("/")[0]
        lab_cli(env, "ssh", "powerscale01", f"iperf3 -s -D -1 -B {server}")
        time.sleep(1)
        out = lab_cli(env, "ssh", "dgx01", f"iperf3 -c {server} -t {a.iperf_seconds} -J", timeout=a.iperf_seconds + 120)
        result = json.loads(out)
        if "error" in result:
            raise SystemExit(f"FAIL: iperf3: {result['error']}")
        bps = result["end"]["sum_received"]["bits_per_second"]
        figures["iperf3_dgx01_to_powerscale01_Mbit_s"] = round(bps / 1e6, 1)
        figures["iperf3_retransmits"] = result["end"]["sum_sent"].get("retransmits")
        figures["mtu"] = 9000
    finally:
        subprocess.run([sys.executable, "-m", "lab", "down"], cwd=ROOT, env=env, capture_output=True, timeout=300)
        shutil.rmtree(run_dir, ignore_errors=True)

    print("\nlab benchmark (this machine):")
    if "build_cold_s" in figures:
        print(f"  image build, cold        {figures['build_cold_s']:>8} s   (roles: {', '.join(roles)})")
    print(f"  image build, cached      {figures['build_cached_s']:>8.2f} s")
    print(f"  boot to SSH, all nodes   {figures['boot_all_ssh_s']:>8} s   ({figures['accel']}, {topo.dgx_count} dgx; per node: "
          + ", ".join(f"{k} {v}" for k, v in figures["boot_to_ssh_s"].items()) + ")")  # type: ignore[union-attr]
    print(f"  boot complete (systemd)  {figures['boot_complete_s']:>8} s   (degraded: {figures['degraded_units'] or 'none'})")
    print(f"  lab up, total            {figures['up_total_s']:>8} s")
    print(f"  host: {figures['cpus']} CPUs, load average {figures['load_before']:.1f} before, "
          f"{figures['load_after_boot']:.1f} after boot (other labs and jobs share these cores)")
    print(f"  iperf3 dgx01 -> powerscale01 via sn3700v01 bridge: {figures['iperf3_dgx01_to_powerscale01_Mbit_s']} Mbit/s "
          f"({a.iperf_seconds} s, MTU 9000, retransmits {figures['iperf3_retransmits']})")
    print(f"  {calibration.line()}")
    if a.json:
        print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
