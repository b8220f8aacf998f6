"""Every invalid inventory of tests/preflight_cases/ is rejected: runs the command tests/preflight_cases/README.md
gives, each case through playbooks/preflight.yml (which site.yml and every stage playbook import first), and a
sample of cases through site.yml itself."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
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


# One case of each kind: the production inventory offline, the lab inventory, the controller's secret checks.
SITE_SAMPLE = ("dgx-model-unknown", "nfs-smartconnect-mode-disabled", "secret-resolves-empty")


@pytest.mark.parametrize("name", SITE_SAMPLE)
def test_site_yml_stops_at_the_same_rejection_before_any_other_play(name):
    from preflight_cases.__main__ import run_case

    outcome = run_case(ROOT / "tests/preflight_cases" / name, playbook="site.yml")
    assert outcome.ok, outcome.reason


def test_runner_reports_a_case_that_preflight_does_not_reject(tmp_path):
    """The runner can fail: an overlay without a defect must come out as FAIL, not PASS."""
    from preflight_cases.__main__ import run_case

    case = tmp_path / "no-defect-at-all"
    case.mkdir()
    (case / "hosts.yml").write_text("all: {}\n")
    (case / "expect.yml").write_text("defect: none\ninventory: production\nhost: dgx01\nvariable: dgx_model\n")
    outcome = run_case(case)
    assert not outcome.ok and outcome.reason == "preflight passed an invalid inventory"


def test_runner_parses_the_table():
    from ansible.module_utils import inventory_problem as rules
    from preflight_cases.__main__ import parse_table

    rows = [rules.Problem("dgx03", "nfs_mounts[0].extra_options[1]", "a | b", "unknown option", "remove it").as_dict()]
    text = "\n".join("        " + line for line in rules.render_table(rows, "preflight (inventory)").splitlines())
    parsed = parse_table("TASK [x]\n    msg: |-\n" + text + "\n\nTASK [y]\n")
    assert [(r.host, r.variable, r.value, r.problem, r.fix) for r in parsed] == [
        ("dgx03", "nfs_mounts[0].extra_options[1]", "a / b", "ERROR: unknown option", "remove it")]
