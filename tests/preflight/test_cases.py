"""Every invalid inventory of tests/preflight_cases/ is rejected: runs the same command the README gives."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(p.parent for p in (ROOT / "tests/preflight_cases").glob("*/expect.yml"))


def test_at_least_forty_cases_one_defect_each():
    assert len(CASES) >= 40
    for case in CASES:
        expect = yaml.safe_load((case / "expect.yml").read_text())
        assert {"defect", "host", "variable"} <= set(expect), case.name
        assert (case / "hosts.yml").is_file(), case.name


def test_every_case_is_rejected_before_anything_runs():
    proc = subprocess.run([sys.executable, "-m", "tests.preflight_cases", "-j", "2"], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800, check=False)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, "\n".join(line for line in lines if not line.startswith("PASS")) + proc.stderr[-2000:]
    assert len([line for line in lines if line.startswith("PASS  ")]) == len(CASES)
    assert re.fullmatch(rf"{len(CASES)} cases: {len(CASES)} passed, 0 failed \(\d+s\)", lines[-1]), lines[-1]
