"""The install tiers (scripts/install.sh, scripts/apt-packages.txt) and the pinned Python environment
(constraints.txt): what a control node gets, what the lab and the tests add, and a re-run without network."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALL = ROOT / "scripts" / "install.sh"
PROJECT = "powerscale-dgx-ra"
# Packages only the lab or the tests use: a control node that deploys a real site must not need them.
LAB_OR_DEV_ONLY = {"debootstrap", "qemu-system-x86", "qemu-utils", "qemu-system-common", "docker-registry",
                   "xfsprogs", "chromium", "fio"}


def _apt(*flags: str) -> list[str]:
    proc = subprocess.run([str(INSTALL), *flags, "--list-apt"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_control_tier_holds_no_lab_or_test_package():
    control = _apt()
    assert {"python3-venv", "openssh-client"} <= set(control), control
    assert not set(control) & LAB_OR_DEV_ONLY, f"control tier lists {sorted(set(control) & LAB_OR_DEV_ONLY)}"


def test_each_tier_adds_its_own_packages_once():
    control, lab, dev, both = _apt(), _apt("--lab"), _apt("--dev"), _apt("--lab", "--dev")
    for tier in (control, lab, dev, both):
        assert len(tier) == len(set(tier)), f"a package is listed twice: {tier}"
    assert lab[: len(control)] == control and dev[: len(control)] == control
    lab_only, dev_only = set(lab) - set(control), set(dev) - set(control)
    assert {"qemu-system-x86", "debootstrap", "docker-registry"} <= lab_only
    assert {"chromium", "fio"} <= dev_only
    assert not lab_only & dev_only
    assert set(both) == set(control) | lab_only | dev_only
    assert lab_only | dev_only >= LAB_OR_DEV_ONLY


def test_every_listed_package_is_installed_here():
    """The suite runs after `install.sh --lab --dev` (README, .ci/run): every tier's package is present."""
    missing = []
    for pkg in _apt("--lab", "--dev"):
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
        if "install ok installed" not in proc.stdout:
            missing.append(pkg)
    assert not missing, f"not installed: {missing} (./scripts/install.sh --lab --dev installs them)"


def test_unknown_option_is_refused():
    proc = subprocess.run([str(INSTALL), "--labs"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "unknown option --labs" in proc.stderr


def _constraints() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"constraints.txt: {line!r} is not NAME==VERSION"
            pins[_norm(name)] = version
    return pins


def test_constraints_pin_exactly_the_installed_distributions():
    installed = {_norm(d.metadata["Name"]): d.version for d in metadata.distributions()}
    installed.pop(_norm(PROJECT), None)
    pins = _constraints()
    assert _norm(PROJECT) not in pins
    unpinned = sorted(set(installed) - set(pins))
    stale = sorted(set(pins) - set(installed))
    differ = sorted(f"{n}: installed {installed[n]}, pinned {pins[n]}" for n in set(pins) & set(installed)
                    if installed[n] != pins[n])
    assert not (unpinned or stale or differ), f"unpinned {unpinned}, pinned but absent {stale}, differ {differ}"


def test_pyproject_keeps_ranges_and_caps_the_linters():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    dev = {re.split(r"[<>=!~ ]", r, maxsplit=1)[0]: r for r in project["optional-dependencies"]["dev"]}
    for tool in ("ruff", "ansible-lint"):
        assert "<" in dev[tool], f"pyproject.toml: {dev[tool]!r} has no upper bound"
    assert not [r for r in project["dependencies"] if "==" in r], "exact versions belong in constraints.txt"
    script = INSTALL.read_text()
    assert script.count("-c constraints.txt") == 2 and "--no-build-isolation" in script


def test_readme_and_ci_use_the_tiers_they_need():
    readme = (ROOT / "README.md").read_text()
    assert "./scripts/install.sh --lab && .venv/bin/python -m lab up" in readme
    assert "./scripts/install.sh --lab --dev && .venv/bin/python -m pytest" in (ROOT / ".ci/run").read_text()


def _offline_prefix() -> tuple[list[str], dict[str, str]]:
    """No network for the re-run: a new network namespace as root, else pip pointed at a closed port."""
    if os.geteuid() == 0 and shutil.which("unshare") and \
            subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        return ["unshare", "-n"], {}
    closed = "http://127.0.0.1:9/simple"
    return [], {"PIP_INDEX_URL": closed, "PIP_EXTRA_INDEX_URL": closed, "PIP_FIND_LINKS": "",
                "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}


def test_rerun_with_everything_installed_needs_no_network():
    prefix, env = _offline_prefix()
    proc = subprocess.run([*prefix, str(INSTALL), "--lab", "--dev"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "install: done, tiers: control lab dev" in proc.stdout
    assert "apt packages:" not in proc.stdout
