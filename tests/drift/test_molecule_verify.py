"""The roles' Molecule verify steps fail when the live state they assert is broken by hand on the running lab, one
case per kind of target (the OneFS API simulator, the switch VM, the MLNX-OS simulators, a DGX VM):

1. `molecule verify` on the converged lab passes,
2. the change by hand (the same changes as test_drift.py),
3. `molecule verify` fails, naming what differs,
4. `molecule converge` repairs it, and `molecule verify` passes again.

    pytest -m lab_drift tests/drift/test_molecule_verify.py        (the lab up and converged: python -m lab up)
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .test_drift import (
    BIN,
    ROOT,
    add_export_client,
    export_clients_repaired,
    lab_ssh,
    set_sm_priority,
    sm_priority_repaired,
)

pytestmark = pytest.mark.lab_drift

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Broken:
    role: str
    make: Callable[[], None]
    named: tuple[str, ...]  # what the failing verify's output must name
    repaired: Callable[[], bool]


CASES = [
    Broken("powerscale", add_export_client,
           ("export /ifs/data/scratch (zone System): clients", "198.51.100.99"), export_clients_repaired),
    Broken("sn3700v", lambda: lab_ssh("sn3700v01", "ip link set swp2 mtu 1500"),
           ("swp2: MTU 1500, expected 9216",), lambda: "mtu 9216" in lab_ssh("sn3700v01", "ip -o link show swp2")),
    Broken("qm8700", set_sm_priority, ("qm8700-01 does not match the inventory", "priority"), sm_priority_repaired),
    Broken("dgx_host", lambda: lab_ssh("dgx01", "sysctl -w net.core.rmem_max=1000000"),
           ("dgx01 (lab-vm) is not ready", "net.core.rmem_max"),
           lambda: lab_ssh("dgx01", "sysctl -n net.core.rmem_max").strip() == "268435456"),
]


def molecule(role: str, step: str, ephemeral: Path) -> tuple[int, str]:
    proc = subprocess.run([str(BIN / "molecule"), step, "--no-command-borders"], cwd=ROOT / "roles" / role,
                          env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", NO_COLOR="1",
                                   ANSIBLE_NOCOLOR="1", MOLECULE_EPHEMERAL_DIRECTORY=str(ephemeral)),
                          capture_output=True, text=True, timeout=900)
    # one line per message: the YAML result format and molecule's logger wrap long ones
    return proc.returncode, " ".join(ANSI.sub("", proc.stdout + proc.stderr).split())


@pytest.mark.parametrize("case", CASES, ids=[c.role for c in CASES])
def test_molecule_verify_fails_on_live_state_broken_by_hand(case: Broken, tmp_path):
    rc, out = molecule(case.role, "verify", tmp_path)
    assert rc == 0, f"roles/{case.role}: verify fails on the lab before the change by hand (converge it first):\n{out[-5000:]}"
    case.make()
    try:
        assert not case.repaired(), f"roles/{case.role}: the change by hand did not take"
        rc, out = molecule(case.role, "verify", tmp_path)
        assert rc != 0, f"roles/{case.role}: verify passed with the live state broken by hand:\n{out[-5000:]}"
        for text in case.named:
            assert text in out, f"roles/{case.role}: the failing verify does not name {text!r}:\n{out[-5000:]}"
    finally:
        rc, out = molecule(case.role, "converge", tmp_path)
        assert rc == 0 and case.repaired(), f"roles/{case.role}: converge did not repair the change:\n{out[-5000:]}"
    rc, out = molecule(case.role, "verify", tmp_path)
    assert rc == 0, f"roles/{case.role}: verify fails after the repair:\n{out[-5000:]}"
