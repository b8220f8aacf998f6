"""What the lab suites share (tests/scale_lab, tests/cabling_lab): run a command of the suite with its output kept in a
log file, read a playbook's recap, and bring the developers' lab up in a given shape (a test that changes the shape,
such as a deliberate miswire, takes the running lab down first and leaves the lab as it found it: down)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)"
                   r"\s+failed=(?P<failed>\d+)", re.M)


def run(args: list[str], log: Path, timeout: float = 3600,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    t0 = time.monotonic()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
                          env=dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", PYTHONPATH=str(ROOT),
                                   **(env or {})))
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    print(f"$ {' '.join(args)}  -> exit {proc.returncode} in {time.monotonic() - t0:.0f} s (log {log})")
    return proc


# A guard against a hung run, not a budget: on the slow TCG class (import torch in a DGX VM 39-41 s) the day-2
# scale-out (deploy a node, validate it alone, then both) ran past 60 minutes and was killed at 3600 s.
PLAYBOOK_TIMEOUT_S = 3 * 3600


def playbook(log: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = run([str(BIN / "ansible-playbook"), *args], log, timeout=PLAYBOOK_TIMEOUT_S)
    if ok:
        assert proc.returncode == 0, f"{' '.join(args)} failed (log {log}):\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"
    return proc


def recap(output: str) -> dict[str, dict[str, int]]:
    text = output[output.rfind("PLAY RECAP"):]
    rows = {m["host"]: {k: int(m[k]) for k in ("ok", "changed", "unreachable", "failed")} for m in RECAP.finditer(text)}
    assert rows, f"no PLAY RECAP in the output:\n{output[-3000:]}"
    return rows


def lab_is_up(logs: Path) -> bool:
    status = run([sys.executable, "-m", "lab", "status", "--json"], logs / "status-before.log", timeout=120)
    return status.returncode == 0 and any(
        n.get("state") == "running" for n in json.loads(status.stdout or "{}").get("nodes", []))


def lab_up(logs: Path, name: str = "lab-up", env: dict[str, str] | None = None) -> None:
    up = run([sys.executable, "-m", "lab", "up"], logs / f"{name}.log", env=env)
    assert up.returncode == 0, f"python -m lab up failed:\n{up.stdout[-4000:]}\n{up.stderr[-4000:]}"


def lab_down(logs: Path, name: str = "lab-down") -> None:
    down = run([sys.executable, "-m", "lab", "down"], logs / f"{name}.log", timeout=600)
    assert down.returncode == 0, down.stderr


def lab_for_suite(tmp_path_factory, name: str, boot: bool = True) -> tuple[Path, bool]:
    """A lab suite's start: skipped (with the reason) only where qemu cannot run at all; its log folder; the lab up
    (booted when it was down, unless boot is false). Returns the folder and whether the lab was up before, for the
    suite's teardown."""
    import pytest

    from lab.qemu import qemu_usable

    ok, why = qemu_usable()
    if not ok:
        pytest.skip(f"qemu cannot run here: {why}")
    logs = tmp_path_factory.mktemp(name)
    was_up = lab_is_up(logs)
    if boot:
        lab_up(logs)
    return logs, was_up


def lab_ssh(node: str, script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", "ssh", node, script], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)
