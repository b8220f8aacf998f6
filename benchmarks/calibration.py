#!/usr/bin/env python3
"""How fast this machine is, printed beside every lab timing (docs/benchmarks.md).

    .venv/bin/python benchmarks/calibration.py [--vm-node dgx01] [--json]

Lab timings differ 3-4x between machines of the same size (TCG VMs on two host cores), so a benchmark figure is
quoted with two calibration figures of the machine that produced it:

- host: the wall time of a fixed, CPU-bound pure-Python workload on the host (best of 3, one core), with the
  host's core count and load average when it ran;
- vm: where the lab is up, the wall time of `python3 -c 'import torch'` in a DGX VM, measured inside the VM
  (SSH excluded; the second of two imports, with a warm page cache): the cost that dominates each NCCL and DDP
  case of the lab's validation stage.

A workload whose result is not the known checksum, or a VM import that fails, is an error, never a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOST_ROUNDS = 3
HOST_ITERATIONS = 3_000_000  # about 1.3 s on the 2-core development machine
HOST_CHECKSUM = 366_622_250  # the workload's result for HOST_ITERATIONS; any other value: it did not run right
# Twice, and the second one counts: the first after a boot reads torch from disk (a cold page cache), the second
# is the figure every later NCCL and DDP launch of the run pays.
VM_IMPORT = ("python3 -c 'import subprocess, time\n"
             "for _ in range(2):\n"
             "    t = time.monotonic(); subprocess.run([\"python3\", \"-c\", \"import torch\"], check=True)\n"
             "print(time.monotonic() - t)'")


@dataclass(frozen=True)
class Calibration:
    host_workload_s: float
    cpus: int
    load_average: float
    vm_node: str | None = None
    vm_import_torch_s: float | None = None

    def line(self) -> str:
        host = (f"host workload {self.host_workload_s:.2f} s (benchmarks/calibration.py, best of {HOST_ROUNDS}), "
                f"{self.cpus} cores, load average {self.load_average:.1f}")
        if self.vm_import_torch_s is None:
            return f"calibration: {host}; VM import torch: not measured (no lab)"
        return f"calibration: {host}; {self.vm_node}: python3 -c 'import torch' {self.vm_import_torch_s:.1f} s"


def workload(n: int) -> int:
    """A fixed pure-Python loop: integer arithmetic and a small dict, as interpreter-bound as Ansible's own work."""
    acc, seen = 0, {}
    for i in range(n):
        acc = (acc * 31 + i * i) % 2_147_483_647
        seen[i & 1023] = acc
    return (acc + sum(seen.values())) % 2_147_483_647


def host_workload_seconds(rounds: int = HOST_ROUNDS, n: int = HOST_ITERATIONS, expect: int = HOST_CHECKSUM) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        result = workload(n)
        best = min(best, time.perf_counter() - t0)
        if result != expect:
            raise SystemExit(f"FAIL: calibration workload returned {result}, expected {expect}")
    return best


def vm_import_torch_seconds(node: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
                            python: str = sys.executable) -> float:
    """`python3 -c 'import torch'` in a lab VM, timed inside the VM through `python -m lab ssh`."""
    proc = subprocess.run([python, "-m", "lab", "ssh", node, VM_IMPORT], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    try:
        return float(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"FAIL: import torch on {node} (exit {proc.returncode}): "
                         f"{(proc.stdout + proc.stderr)[-800:]}") from None


def measure(vm_node: str | None = None, cwd: Path = ROOT, env: dict[str, str] | None = None,
            python: str = sys.executable) -> Calibration:
    host = host_workload_seconds()
    vm = vm_import_torch_seconds(vm_node, cwd, env, python) if vm_node else None
    return Calibration(round(host, 3), os.cpu_count() or 0, round(os.getloadavg()[0], 2), vm_node,
                       None if vm is None else round(vm, 2))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vm-node", help="a DGX VM of the running lab to time `import torch` in (default: host only)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON too")
    a = p.parse_args(argv)
    cal = measure(a.vm_node)
    print(cal.line())
    if a.json:
        print(json.dumps(asdict(cal), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
