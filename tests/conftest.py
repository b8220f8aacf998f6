"""Shared pytest setup: project paths, and our module_utils importable as ansible.module_utils.<name>."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import ansible.module_utils
import pytest

ROOT = Path(__file__).resolve().parent.parent

# Modules import their shared code as `ansible.module_utils.<name>`, the way Ansible ships it to targets.
# Tests import the same names, so extend that package's search path with the project's module_utils/.
if str(ROOT / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(ROOT / "module_utils"))
# The project root first: tests/lab/ must not shadow the real `lab` package.
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))
if str(ROOT / "library") not in sys.path:
    sys.path.insert(0, str(ROOT / "library"))

os.environ.setdefault("ANSIBLE_CONFIG", str(ROOT / "ansible.cfg"))
# Every ansible-playbook a test starts caches facts in a directory of this test session, never in the
# project's .cache/facts: a test's stand-in facts for dgx01 must not leak into a real run, nor the reverse.
os.environ.setdefault("ANSIBLE_CACHE_PLUGIN_CONNECTION", tempfile.mkdtemp(prefix="pytest-facts-"))


# The two real inventories as Ansible resolves them (tests.preflight.preflight_sites.load_site), once per test module
# that asks: the inventory-rule tests of preflight and of each feature judge both. A module's own fixture of the same
# name (tests/flow's `lab`: the running lab) wins over these.
@pytest.fixture(scope="module")
def production() -> Any:
    from tests.preflight.preflight_sites import load_site

    return load_site("inventories/production")


@pytest.fixture(scope="module")
def lab() -> Any:
    from tests.preflight.preflight_sites import load_site

    return load_site("inventories/lab")


# Folders whose tests need the running lab (`python -m lab up`) and take minutes: (folder, marker, whole folder).
# Their tests run only when a marker expression names the marker (`pytest -m lab tests/dgx`, `pytest -m lab_drift
# tests/drift`, `pytest -m lab_faults tests/faults_lab`, or the full lab flow); otherwise they are deselected, and
# pytest says so in its summary ("N deselected"). In the first three only the tests marked `lab` need it; in
# drift (changes made by hand on the running lab, shown by --check --diff and repaired) and faults_lab (faults on
# the running lab, put back afterwards) every test does.
LAB_FOLDERS = (("dgx", "lab", False), ("fabric_sn3700v", "lab", False), ("powerscale", "lab", False),
               ("drift", "lab_drift", True), ("faults_lab", "lab_faults", True), ("scale_lab", "lab_scale", True),
               ("cabling_lab", "lab_cabling", True))


# Lab tests the default run (CI) leaves out, by marker: on the slow 2-core machine class (a TCG VM runs 3-4x slower
# there, `import torch` in a DGX VM 39-41 s) the lab flow's first whole site.yml alone takes over 45 minutes, more
# than CI's budget (docs/development.md). They run when a marker expression names them: `pytest -m lab_flow tests/flow`
# (lab up, the whole site.yml, what it wrote), `pytest -m "lab_flow or lab_flow_full" tests/flow` (also the second
# and --check runs, the handover checks, every Molecule scenario), `pytest -m lab_smoke tests/lab` (the small lab).
DEFERRED_MARKERS = ("lab_flow", "lab_flow_full", "lab_smoke")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    expression = config.option.markexpr or ""
    needs_lab = []
    for folder, marker, whole in LAB_FOLDERS:
        if marker in expression:
            continue
        here = ROOT / "tests" / folder
        needs_lab += [i for i in items if here in i.path.parents and (whole or i.get_closest_marker(marker))]
    needs_lab += [i for i in items if i not in needs_lab and any(
        marker not in expression and i.get_closest_marker(marker) for marker in DEFERRED_MARKERS)]
    if needs_lab:
        config.hook.pytest_deselected(items=needs_lab)
        items[:] = [i for i in items if i not in needs_lab]
