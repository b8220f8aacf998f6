"""Repository-wide checks: the README's commands and CI agree, playbooks parse on both inventories,
every custom module documents itself, and the linters report nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from validation.inventory_layers import inventory_args

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
INVENTORIES = ["inventories/lab", "inventories/production"]


def _quickstart_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = re.search(r"^## Quickstart\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "README.md has no '## Quickstart' section"
    return [b.strip() for b in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", section.group(1), re.S)]


def _run(args: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600, **kw)


def test_quickstart_has_exactly_two_shell_blocks():
    blocks = _quickstart_blocks()
    assert len(blocks) == 2, f"Quickstart must hold exactly two shell code blocks, found {len(blocks)}"
    assert "install.sh" in blocks[0] and "install.sh" in blocks[1], "both Quickstart blocks must install everything"


def test_ci_runs_exactly_the_readme_test_command():
    test_command = _quickstart_blocks()[1]
    ci_lines = [
        line.strip()
        for line in (ROOT / ".ci/run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert test_command in ci_lines, f".ci/run does not run the README's test command {test_command!r}"


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_site_syntax_check(inventory):
    proc = _run([str(VENV_BIN / "ansible-playbook"), *inventory_args(inventory), "--syntax-check", "site.yml"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_inventory_has_every_group(inventory):
    proc = _run([str(VENV_BIN / "ansible-inventory"), *inventory_args(inventory), "--graph"])
    assert proc.returncode == 0, proc.stderr
    for group in ("dgx", "powerscale", "sn3700v", "qm8700"):
        assert f"@{group}:" in proc.stdout, f"{inventory} lacks group {group}"
    assert "WARNING" not in proc.stderr, proc.stderr


def _custom_modules() -> list[str]:
    return sorted(p.stem for p in (ROOT / "library").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("module", _custom_modules())
def test_module_documents_itself(module):
    proc = _run([str(VENV_BIN / "ansible-doc"), "-M", "library", "-j", module])
    assert proc.returncode == 0, proc.stderr
    assert '"doc"' in proc.stdout and '"examples"' in proc.stdout and '"return"' in proc.stdout, (
        f"{module}: DOCUMENTATION, EXAMPLES and RETURN are all required"
    )


def test_ansible_lint_production_profile_is_clean():
    config = (ROOT / ".ansible-lint").read_text()
    assert "skip_list" not in config and "warn_list" not in config, "no skip list: fix the finding instead"
    proc = _run([str(VENV_BIN / "ansible-lint"), "--profile", "production", "--nocolor"])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]


def test_ruff_is_clean():
    proc = _run([str(VENV_BIN / "ruff"), "check", "."])
    assert proc.returncode == 0, proc.stdout[-6000:]


def test_ssh_host_keys_are_checked_everywhere():
    """ansible.cfg checks host keys for every inventory; no SSH command line of the project switches that off
    (the lab pins its VMs' keys in its run directory instead). The QM8700 role's own SSH client has its
    variable, qm8700_ssh_host_key_checking (default true), which only the lab inventory turns off."""
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    assert cfg.getboolean("defaults", "host_key_checking") is True
    assert "StrictHostKeyChecking=no" not in cfg.get("ssh_connection", "ssh_args")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    offenders = [f for f in tracked if f.endswith((".py", ".yml", ".yaml", ".cfg", ".sh", ".j2", ".ini"))
                 and f != "tests/test_repo.py"
                 and re.search(r"StrictHostKeyChecking[= ]+no|UserKnownHostsFile[= ]+/dev/null",
                               (ROOT / f).read_text(errors="replace"), re.I)]
    assert offenders == [], f"host-key checking switched off in: {offenders}"
