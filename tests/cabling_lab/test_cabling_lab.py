"""The cabling stage on the lab (issue #37, docs/cabling.md#the-lab): real LLDP between the lab's VMs (lldpd in every
image) and the stand-in InfiniBand fabric on the DGX VMs (lab/ib_standin.py, labelled in every output).

- Cabled as designed, `site.yml --tags cabling` passes: every cable OK.
- With the stand-in's 2x-width fault on one compute cable, the check reports it DEGRADED, naming the HCA and the
  switch port.
- With dgx01's and dgx02's storage cables swapped at the switch (`LAB_MISWIRE=dgx01,dgx02 python -m lab up`; the
  inventory keeps its design), the whole `site.yml` stops in the cabling stage before any change (0 changed on every
  host), naming each cable's designed and actual switch port.

Behind the lab_cabling marker (tests/conftest.py LAB_FOLDERS): `pytest -m lab_cabling tests/cabling_lab`. It boots
the lab as it needs it and leaves it as it found it (up as designed, or down). Skipped (with the reason) only where
qemu cannot run at all.
"""

from __future__ import annotations

import pytest

from tests.labrun import lab_down, lab_for_suite, lab_ssh, lab_up, playbook, recap
from validation.cabling import plan

pytestmark = pytest.mark.lab_cabling

FAULTS = "/etc/lab/ib-faults.json"


def table_rows(output: str) -> list[str]:
    """The cabling table's rows as the playbook printed them (the YAML callback folds a long row onto the next
    line): each row whole, on one line."""
    rows: list[str] = []
    in_row = False
    for line in output.splitlines():
        text = line.strip()
        if text.startswith("- ") and "|" in text:
            rows.append(text.strip("-' "))
            in_row = True
        elif in_row and line.startswith("        ") and not text.startswith("- "):
            rows[-1] = f"{rows[-1]} {text.strip(chr(39))}"
        else:
            in_row = False
    return rows


def row_for(output: str, status: str, end_a: object) -> str | None:
    """The table row of one designed cable (by its first end, the table's second column) with that status."""
    for row in table_rows(output):
        cells = [c.strip() for c in row.split("|")]
        if len(cells) == 4 and cells[0] == status and cells[1] == str(end_a):
            return row
    return None


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """The suite's log folder; at the end the lab is as the suite found it: up as designed, or down."""
    logs, was_up = lab_for_suite(tmp_path_factory, "cabling_lab", boot=False)
    yield logs
    if (logs / "lab-up-miswired.log").exists() or not was_up:   # a miswired lab never stays up
        lab_down(logs, "lab-down-final")
        if was_up:
            lab_up(logs, "lab-up-restored")


@pytest.fixture(scope="module")
def designed_lab(logs):
    """The lab up, cabled as designed (booted only for the tests that need it)."""
    lab_up(logs)
    return logs


@pytest.fixture(scope="module")
def design():
    return plan.design(plan.load_view(["inventories/common", "inventories/lab"]))


def test_cabled_as_designed_every_cable_is_ok(designed_lab, design):
    out = playbook(designed_lab / "cabling-designed.log", "site.yml", "--tags", "cabling").stdout
    assert f"cabling: {len(design)} of {len(design)} cables as designed" in out, out[-4000:]


def test_a_compute_link_at_2x_width_is_degraded_naming_the_hca_and_the_switch_port(designed_lab, design):
    compute = [c for c in design if c.width]
    first = compute[0]   # the stand-in's cable 0, in plan order
    assert lab_ssh("dgx01", f"echo '{{\"width2x\": [0]}}' > {FAULTS}").returncode == 0
    try:
        out = playbook(designed_lab / "cabling-2x.log", "site.yml", "--tags", "cabling", ok=False)
    finally:
        assert lab_ssh("dgx01", f"rm -f {FAULTS}").returncode == 0
    assert out.returncode != 0, "a 2x-width compute link passed the cabling stage"
    line = row_for(out.stdout, "DEGRADED", first.a)
    assert line is not None, f"no DEGRADED line naming {first.a}:\n{out.stdout[-4000:]}"
    assert str(first.b) in line and "2x" in line, line


def test_two_storage_cables_swapped_stop_the_site_before_any_change(logs, design):
    lab_down(logs, "lab-down-for-miswire")
    lab_up(logs, "lab-up-miswired", env={"LAB_MISWIRE": "dgx01,dgx02"})
    out = playbook(logs / "site-miswired.log", "site.yml", ok=False)
    assert out.returncode != 0, "site.yml passed with two storage cables swapped"
    assert all(row["changed"] == 0 for row in recap(out.stdout).values()), recap(out.stdout)
    assert "MISWIRED" in out.stdout and "nothing was changed" in out.stdout, out.stdout[-4000:]
    storage = {c.a.node: c for c in design if c.a.node in ("dgx01", "dgx02") and not c.width}
    for node, other in (("dgx01", "dgx02"), ("dgx02", "dgx01")):
        cable = storage[node]
        line = row_for(out.stdout, "MISWIRED", cable.a)
        assert line is not None, f"no MISWIRED line naming {cable.a}:\n{out.stdout[-4000:]}"
        # designed: dgx01 storage0 <-> sn3700v01 swp1; actual: dgx01 storage0 goes to the other DGX's port
        assert str(cable.b) in line and f"goes to {storage[other].b}" in line, line
