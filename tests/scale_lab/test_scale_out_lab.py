"""The lab acceptance test of the day 2 scale-out (issue #36 item 5, docs/scale-out.md): deploy and validate the lab
with dgx02 left out of the site, then add it with the documented command,
`ansible-playbook -i inventories/common -i inventories/lab playbooks/scale_out.yml -e scale_out_nodes=dgx02`.
dgx01 reports 0 changed and keeps the same mount ID of each export in /proc/self/mountinfo; dgx02 converges (a
whole-lab `site.yml --check --diff` reports 0 changed); both validation runs pass, the second showing the
"scale-out: 1 -> 2 nodes" section; a bad request is refused before any change.

A dgx02 that mounts the exports from an earlier run is part of the site: it is removed first with the mirror image,
`playbooks/scale_in.yml -e scale_in_nodes=dgx02`, which this test thereby runs on the lab too.

Behind the lab_scale marker (tests/conftest.py LAB_FOLDERS): `pytest -m lab_scale tests/scale_lab`. It boots the lab
when it is not up and takes it down again only then. Skipped (with the reason) only where qemu cannot run at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dgx_in_use
import pytest

from tests.labrun import lab_down, lab_for_suite
from tests.labrun import playbook as _playbook
from tests.labrun import recap as _recap
from tests.scale.sites import lab_without

pytestmark = pytest.mark.lab_scale

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RESULTS = ROOT / "results"
MOUNTS = ("/mnt/training", "/mnt/scratch")
LAB = ("-i", "inventories/common", "-i", "inventories/lab")


def _mount_ids(node: str) -> dict[str, int]:
    """The mount ID of each export's mount point on the live node, from /proc/self/mountinfo."""
    proc = subprocess.run([sys.executable, "-m", "lab", "ssh", node, "cat /proc/self/mountinfo"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"cannot read {node}'s mountinfo: {proc.stderr[-1500:]}"
    return {m["mount_point"]: m["mount_id"] for m in dgx_in_use.mounted_points(proc.stdout, list(MOUNTS))
            if m["fstype"].startswith("nfs")}


def _run_dirs() -> set[Path]:
    return {p for p in RESULTS.iterdir() if (p / "context.json").is_file()} if RESULTS.is_dir() else set()


def _report(run_dir: Path) -> dict:
    path = run_dir / "report.json"
    assert path.is_file(), f"no report.json in {run_dir}"
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    logs, was_up = lab_for_suite(tmp_path_factory, "scale_lab")
    try:
        yield logs
    finally:
        if not was_up:
            lab_down(logs)


@pytest.fixture(scope="module")
def without_dgx02(lab, tmp_path_factory):
    """The lab deployed and validated with dgx02 left out of the site: the earlier run of the old node set."""
    if _mount_ids("dgx02"):
        _playbook(lab / "scale-in-dgx02.log", *LAB, "playbooks/scale_in.yml", "-e", "scale_in_nodes=dgx02")
        assert _mount_ids("dgx02") == {}, "scale_in.yml left an export mounted on dgx02"
    site = lab_without(tmp_path_factory.mktemp("site"), "dgx02")
    before = _run_dirs()
    recap = _recap(_playbook(lab / "site-without-dgx02.log", "-i", "inventories/common", "-i", str(site),
                             "site.yml").stdout)
    assert "dgx02" not in recap, f"dgx02 took part in the deployment without it: {recap}"
    (old_run,) = sorted(_run_dirs() - before)
    return {"site": site, "run": old_run, "mount_ids": _mount_ids("dgx01")}


@pytest.fixture(scope="module")
def scaled_out(lab, without_dgx02):
    """The documented command: dgx02 added to the running site."""
    before = _run_dirs()
    proc = _playbook(lab / "scale-out-dgx02.log", *LAB, "playbooks/scale_out.yml", "-e", "scale_out_nodes=dgx02")
    return {"recap": _recap(proc.stdout), "runs": sorted(_run_dirs() - before), "mount_ids": _mount_ids("dgx01"),
            "output": proc.stdout}


def test_the_site_without_dgx02_passes_on_dgx01_alone(without_dgx02):
    report = _report(without_dgx02["run"])
    assert report["nodes"] == ["dgx01"]
    assert report["verdict"]["status"] == "PASS", json.dumps(report["verdict"]["failed"])
    assert set(without_dgx02["mount_ids"]) == set(MOUNTS), f"dgx01 does not mount the exports: {without_dgx02}"


def test_the_scale_out_converges_with_no_failure(scaled_out):
    recap = scaled_out["recap"]
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in recap.values()), recap
    assert {"dgx01", "dgx02", "powerscale01", "sn3700v01"} <= set(recap), recap


def test_dgx01_reports_zero_changed(scaled_out):
    assert scaled_out["recap"]["dgx01"]["changed"] == 0, scaled_out["recap"]


def test_dgx01_mounts_are_never_remounted(without_dgx02, scaled_out):
    assert scaled_out["mount_ids"] == without_dgx02["mount_ids"], (
        f"dgx01's exports were mounted again: {without_dgx02['mount_ids']} -> {scaled_out['mount_ids']}")


def test_dgx02_mounts_the_exports(scaled_out):
    assert set(_mount_ids("dgx02")) == set(MOUNTS)


def test_the_new_node_is_validated_alone_then_with_the_old_one(without_dgx02, scaled_out):
    assert len(scaled_out["runs"]) == 2, f"expected two validation runs, found {scaled_out['runs']}"
    alone, both = (_report(run) for run in scaled_out["runs"])
    assert alone["nodes"] == ["dgx02"] and alone["verdict"]["status"] == "PASS", alone["verdict"]["failed"]
    assert both["nodes"] == ["dgx01", "dgx02"] and both["verdict"]["status"] == "PASS", both["verdict"]["failed"]
    assert "scaling" not in alone
    scaling = both["scaling"]
    assert scaling["title"] == "scale-out: 1 -> 2 nodes" and scaling["added"] == ["dgx02"]
    assert scaling["before_run"] == without_dgx02["run"].name and "error" not in scaling
    assert all(r["before"] is not None and r["after"] is not None for r in scaling["rows"]), scaling["rows"]
    summary = (scaled_out["runs"][1] / "summary.md").read_text()
    assert "## scale-out: 1 -> 2 nodes" in summary
    assert 'id="scaling"' in (scaled_out["runs"][1] / "report.html").read_text()


def test_dgx02_has_converged(lab, scaled_out):
    check = _playbook(lab / "site-check-after.log", *LAB, "site.yml", "--check", "--diff")
    changed = {h: r["changed"] for h, r in _recap(check.stdout).items() if r["changed"]}
    assert not changed, f"the whole lab is not converged after the scale-out: {changed}"


@pytest.mark.parametrize("nodes, expected", [
    ("dgx09", "dgx09 | is not a host of group dgx or powerscale"),
    ("dgx02", "is in use, so the scale-out changes nothing"),
])
def test_a_bad_request_is_refused_before_any_change(lab, scaled_out, nodes, expected):
    before = _run_dirs()
    proc = _playbook(lab / f"scale-out-refused-{nodes}.log", *LAB, "playbooks/scale_out.yml",
                     "-e", f"scale_out_nodes={nodes}", ok=False)
    assert proc.returncode != 0 and expected in proc.stdout, proc.stdout[-4000:]
    recap = _recap(proc.stdout)
    assert not any(r["changed"] for r in recap.values()), recap
    assert _run_dirs() == before, "a refused scale-out must validate nothing"
    assert _mount_ids("dgx01") == scaled_out["mount_ids"]
