"""The full lab flow, as README command 1 runs it: `python -m lab up`, `ansible-playbook site.yml` on the lab
inventory (the real roles), then a second run and a `--check --diff` run that must both report 0 changed, and
the testinfra handover checks against the live DGX VMs.

The deployment stages (preflight, storage, fabric, compute, containers) run in the default test command.
The validation stage's measurements take tens of minutes on TCG VMs, so its lab run is a separate test
(`pytest -m lab_validate tests/flow`), deselected by default with the reason printed in the summary.

Skipped (with the reason) only where qemu cannot run at all. A lab that was already up before the test is
left up; one the test started is taken down again.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.qemu import qemu_usable

pytestmark = pytest.mark.lab_flow

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RECAP = re.compile(
    r"^(?P<host>\S+)\s+:\s+ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)\s+"
    r"failed=(?P<failed>\d+)",
    re.M,
)


def _run(args: list[str], log: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    t0 = time.monotonic()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, ANSIBLE_FORCE_COLOR="0", PYTHONPATH=str(ROOT)))
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    print(f"$ {' '.join(args)}  -> exit {proc.returncode} in {time.monotonic() - t0:.0f} s (log {log})")
    return proc


def _recap(output: str) -> dict[str, dict[str, int]]:
    recap = output[output.rfind("PLAY RECAP"):]
    rows = {m["host"]: {k: int(m[k]) for k in ("ok", "changed", "unreachable", "failed")}
            for m in RECAP.finditer(recap)}
    assert rows, f"no PLAY RECAP in the output:\n{output[-3000:]}"
    return rows


def _playbook(log: Path, *extra: str) -> dict[str, dict[str, int]]:
    proc = _run([str(BIN / "ansible-playbook"), "site.yml", *extra], log, timeout=3600)
    assert proc.returncode == 0, f"site.yml {' '.join(extra)} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"
    return _recap(proc.stdout)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    ok, why = qemu_usable()
    if not ok:
        pytest.skip(f"qemu cannot run here: {why}")
    logs = tmp_path_factory.mktemp("flow")
    status = _run([sys.executable, "-m", "lab", "status", "--json"], logs / "status-before.log", timeout=120)
    was_up = status.returncode == 0 and any(
        n.get("state") == "running" for n in json.loads(status.stdout or "{}").get("nodes", []))
    up = _run([sys.executable, "-m", "lab", "up"], logs / "lab-up.log", timeout=3600)
    assert up.returncode == 0, f"python -m lab up failed:\n{up.stdout[-4000:]}\n{up.stderr[-4000:]}"
    try:
        yield logs
    finally:
        if not was_up:
            down = _run([sys.executable, "-m", "lab", "down"], logs / "lab-down.log", timeout=600)
            assert down.returncode == 0, down.stderr


DEPLOY = ("--skip-tags", "validate")


@pytest.fixture(scope="module")
def first_run(lab):
    return _playbook(lab / "site-1.log", *DEPLOY)


def test_site_converges_the_lab(first_run):
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in first_run.values()), first_run
    for group_member in ("dgx01", "dgx02", "powerscale01", "sn3700v01", "qm8700-01", "qm8700-02"):
        assert group_member in first_run, f"{group_member} took no part in site.yml: {first_run}"


def test_second_run_reports_zero_changed(lab, first_run):
    second = _playbook(lab / "site-2.log", *DEPLOY)
    changed = {h: r["changed"] for h, r in second.items() if r["changed"]}
    assert not changed, f"a second site.yml run changed something: {changed} (log {lab / 'site-2.log'})"


def test_check_diff_run_reports_zero_changed(lab, first_run):
    check = _playbook(lab / "site-check.log", "--check", "--diff", *DEPLOY)
    changed = {h: r["changed"] for h, r in check.items() if r["changed"]}
    assert not changed, f"site.yml --check --diff would change something: {changed}"


@pytest.mark.lab_validate
def test_validation_stage_passes_on_the_lab(lab, first_run):
    proc = _run([str(BIN / "ansible-playbook"), "site.yml", "--tags", "validate"], lab / "validate.log", timeout=5400)
    assert proc.returncode == 0, f"the validation stage failed:\n{proc.stdout[-6000:]}"
    latest = _run([sys.executable, "-m", "validation", "latest"], lab / "latest.log", timeout=120)
    assert latest.returncode == 0, latest.stderr
    run_dir = Path(latest.stdout.strip().splitlines()[0])
    report = json.loads((run_dir / "report.json").read_text())
    verdict = report["verdict"]
    assert verdict["status"] == "PASS", json.dumps(verdict.get("checks", verdict), indent=1)[:6000]
    for name in ("junit.xml", "summary.md", "report.html"):
        assert (run_dir / name).is_file(), f"{name} missing from {run_dir}"


def test_handover_checks_pass_on_the_live_nodes(lab, first_run):
    proc = _run([str(BIN / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/handover",
                 "--hosts=ansible://dgx", "--ansible-inventory=inventories/lab"], lab / "handover.log", timeout=1800)
    assert proc.returncode == 0, proc.stdout[-6000:]
