"""The lab's stand-in ibnetdiscover/iblinkinfo (lab/ib_standin.py): the real formats for the lab's compute design,
labelled, read back by the parsers; its faults (swap, missing, 2x width) judged as a real fabric's would be."""

from __future__ import annotations

import pytest

from lab import ib_standin
from validation.cabling import check, dumps, plan


@pytest.fixture(scope="module")
def compute():
    return [c for c in plan.design(plan.load_view(["inventories/common", "inventories/lab"])) if c.width]


def judge(compute, faults):
    links = []
    for tool in (ib_standin.ibnetdiscover, ib_standin.iblinkinfo):
        text = tool(compute, faults)
        assert text.startswith(ib_standin.LABEL)
        links += dumps.parse(text, None, tool.__name__)[1]
    return {(str(v.a), str(v.b)): (v.status, v.reason) for v in check.check(compute, links).entries}


def test_as_designed_all_ok(compute):
    assert len(compute) == 4
    assert {s for s, _ in judge(compute, ib_standin.Faults()).values()} == {"OK"}


def test_faults(compute):
    got = judge(compute, ib_standin.Faults(swap=[(0, 1)], missing=[2], width2x=[3]))
    assert got[("dgx01 mlx5_0/1", "qm8700-01 1")] == (
        "MISWIRED", "dgx01 mlx5_0/1 goes to qm8700-01 2; qm8700-01 1 goes to dgx02 mlx5_0/1")
    assert got[("dgx01 mlx5_1/1", "qm8700-02 1")][0] == "MISSING"
    assert got[("dgx02 mlx5_1/1", "qm8700-02 2")] == ("DEGRADED", "width 2x, designed 4x; iblinkinfo: could be 4x")


def test_in_a_vm_it_runs_alone_from_the_plan_file_and_the_faults_file(compute, tmp_path):
    """As `lab up` installs it on a DGX VM: the script alone (no project package on the path), the plan JSON the
    config disk carries, faults from /etc/lab/ib-faults.json when a test wrote one, judged as above."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from lab import vmconfig
    from lab.topology import load_topology

    script = tmp_path / "ib_standin.py"
    shutil.copy(Path(ib_standin.__file__), script)
    plan_file, faults = tmp_path / "ib-plan.json", tmp_path / "ib-faults.json"
    plan_file.write_text(ib_standin.plan_json(compute))

    def run(tool):
        proc = subprocess.run([sys.executable, "-I", str(script), tool, "--plan", str(plan_file), "--faults",
                               str(faults)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return dumps.parse(proc.stdout, None, tool)[1]

    assert {v.status for v in check.check(compute, run("ibnetdiscover") + run("iblinkinfo")).entries} == {"OK"}
    faults.write_text('{"width2x": [3]}')
    got = {(str(v.a), str(v.b)): (v.status, v.reason)
           for v in check.check(compute, run("ibnetdiscover") + run("iblinkinfo")).entries}
    assert got[("dgx02 mlx5_1/1", "qm8700-02 2")] == ("DEGRADED", "width 2x, designed 4x; iblinkinfo: could be 4x")
    faults.write_text('{"widht2x": [3]}')
    proc = subprocess.run([sys.executable, "-I", str(script), "iblinkinfo", "--plan", str(plan_file), "--faults",
                           str(faults)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "not a faults file" in proc.stderr and "widht2x" in proc.stderr

    # what a DGX VM's config disk carries: the script, the plan, and the two commands in /usr/local/sbin
    dgx01 = next(n for n in load_topology().nodes if n.name == "dgx01")
    files = {f.path: f for f in vmconfig.ib_standin_files(dgx01, standin_source=script.read_bytes(),
                                                          plan_json=plan_file.read_text())}
    assert files["usr/local/sbin/ibnetdiscover"].mode == 0o755
    assert b"--plan /etc/lab/ib-plan.json --faults /etc/lab/ib-faults.json" in files["usr/local/sbin/iblinkinfo"].data
    assert files["etc/lab/ib-plan.json"].data.decode() == plan_file.read_text()
    switch = next(n for n in load_topology().nodes if n.role == "switch")
    assert vmconfig.ib_standin_files(switch, standin_source=b"", plan_json="[]") == []
