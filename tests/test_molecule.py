"""The roles' Molecule scenarios, without the lab: every role that changes a host or a device has one, each keeps
only its playbooks and takes the rest from the one shared base config (.config/molecule/config.yml), nothing
turns SSH host-key checking off, `molecule syntax` passes for each, and the SSH command a scenario's converge
builds checks the lab's pinned host keys. tests/flow runs the scenarios themselves against the lab it converged
(test_molecule_scenario_passes_on_the_converged_lab)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BASE_CONFIG = ROOT / ".config" / "molecule" / "config.yml"
# Roles that change nothing on a host or device: preflight and cabling read (cabling: neighbour tables, forwarding
# tables, ibnetdiscover, all with changed_when false), the validation roles measure (their runs leave every node as
# they found it, README "What changed counts").
READ_ONLY_ROLES = re.compile(r"^(preflight|cabling|validate(_\w+)?)$")
SCENARIO_FILES = {"molecule.yml", "converge.yml", "verify.yml"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
HOST_KEYS_OFF = re.compile(r"ANSIBLE_HOST_KEY_CHECKING|\bhost_key_checking\s*[:=]\s*[\"']?(false|no|0)\b"
                           r"|StrictHostKeyChecking[= ]+no|UserKnownHostsFile[= ]+/dev/null", re.I)


def changing_roles() -> list[str]:
    return sorted(p.name for p in (ROOT / "roles").iterdir()
                  if (p / "tasks" / "main.yml").is_file() and not READ_ONLY_ROLES.match(p.name))


def scenario_roles() -> list[str]:
    return sorted(p.parents[2].name for p in (ROOT / "roles").glob("*/molecule/*/molecule.yml"))


def molecule_env(ephemeral: Path) -> dict[str, str]:
    """molecule as a developer runs it from a role directory: the venv's ansible first on PATH; its working
    directory in the test's tmp_path (by default it is ~/.ansible/tmp, shared by every checkout)."""
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", NO_COLOR="1", ANSIBLE_NOCOLOR="1",
                MOLECULE_EPHEMERAL_DIRECTORY=str(ephemeral))


def test_every_role_that_changes_a_host_or_device_has_a_scenario():
    roles = changing_roles()
    assert {"powerscale", "sn3700v", "qm8700", "dgx_host", "dgx_nfs", "ngc"} <= set(roles), roles
    missing = [r for r in roles if not (ROOT / "roles" / r / "molecule" / "default" / "molecule.yml").is_file()]
    assert not missing, f"roles without a Molecule scenario (roles/<role>/molecule/default/): {missing}"
    assert scenario_roles() == roles, "a read-only role has a scenario, or a scenario lies outside molecule/default"


def test_the_lab_flow_runs_every_scenario():
    """tests/flow lists the scenarios it runs (in stage order): the same set as the roles that have one."""
    tree = ast.parse((ROOT / "tests" / "flow" / "test_site_lab.py").read_text())
    listed = [ast.literal_eval(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == "MOLECULE_ROLES" for t in node.targets)]
    assert len(listed) == 1 and sorted(listed[0]) == scenario_roles(), listed


def test_the_base_config_holds_the_shared_settings():
    base = yaml.safe_load(BASE_CONFIG.read_text())
    assert base["driver"] == {"name": "default", "options": {"managed": False}}, "delegated driver, nothing created"
    assert base["dependency"]["enabled"] is False
    assert base["prerun"] is False, "no role links in ~/.ansible/roles, shared by every checkout"
    assert base["verifier"]["name"] == "ansible"
    sequence = base["scenario"]["test_sequence"]
    assert sequence == ["syntax", "converge", "idempotence", "verify"], "no create/destroy: the lab is up"
    args = base["ansible"]["executor"]["args"]["ansible_playbook"]
    assert args == ["--inventory=${MOLECULE_PROJECT_DIRECTORY}/../../inventories/common",
                    "--inventory=${MOLECULE_PROJECT_DIRECTORY}/../../inventories/lab"], "the layered lab inventory"
    assert base["ansible"]["env"] == {"ANSIBLE_CONFIG": "${MOLECULE_PROJECT_DIRECTORY}/../../ansible.cfg"}
    assert "platforms" not in base and "provisioner" not in base


@pytest.mark.parametrize("role", scenario_roles())
def test_a_scenario_keeps_only_its_playbooks(role):
    scenario = ROOT / "roles" / role / "molecule" / "default"
    assert {p.name for p in scenario.iterdir()} == SCENARIO_FILES, sorted(p.name for p in scenario.iterdir())
    config = yaml.safe_load((scenario / "molecule.yml").read_text())
    assert config == {"ansible": {"playbooks": {"converge": "converge.yml", "verify": "verify.yml"}}}, \
        f"roles/{role}: driver, inventory, env and verifier come from {BASE_CONFIG.relative_to(ROOT)}"
    converge = yaml.safe_load((scenario / "converge.yml").read_text())
    assert [r["role"] for play in converge for r in play.get("roles", [])] == [role], "converge applies the role"


def test_no_molecule_file_turns_host_key_checking_off():
    files = [BASE_CONFIG, *sorted((ROOT / "roles").glob("*/molecule/**/*.yml"))]
    offenders = [str(f.relative_to(ROOT)) for f in files if HOST_KEYS_OFF.search(f.read_text())]
    assert not offenders, f"host-key checking switched off in {offenders} (the lab pins its VMs' keys)"
    assert HOST_KEYS_OFF.search('    ANSIBLE_HOST_KEY_CHECKING: "False"')  # the pattern catches the old setting


@pytest.mark.parametrize("role", scenario_roles())
def test_molecule_syntax_of_converge_and_verify(role, tmp_path):
    proc = subprocess.run([str(BIN / "molecule"), "syntax", "--no-command-borders"], cwd=ROOT / "roles" / role,
                          env=molecule_env(tmp_path), capture_output=True, text=True, timeout=300)
    out = ANSI.sub("", proc.stdout + proc.stderr)
    assert proc.returncode == 0, out[-4000:]
    assert f"Found config file {BASE_CONFIG}" in out, out[-4000:]
    assert f"playbook: {ROOT / 'roles' / role / 'molecule' / 'default' / 'converge.yml'}" in out, out[-4000:]
    # molecule's syntax step checks the converge playbook only; the verify playbook the same way molecule runs it
    verify = ROOT / "roles" / role / "molecule" / "default" / "verify.yml"
    proc = subprocess.run([str(BIN / "ansible-playbook"), "--syntax-check", "-i", str(ROOT / "inventories" / "common"),
                           "-i", str(ROOT / "inventories" / "lab"), str(verify)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")))
    assert proc.returncode == 0 and f"playbook: {verify}" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_a_scenario_converge_checks_the_lab_pinned_host_keys(tmp_path):
    """The SSH command molecule's converge builds for dgx01 (-vvv), pointed at a port where nothing listens: host
    keys checked against the known hosts the lab pins, never StrictHostKeyChecking=no (molecule's own ansible.cfg
    would turn checking off; the base config uses the project's ansible.cfg instead)."""
    proc = subprocess.run([str(BIN / "molecule"), "converge", "--no-command-borders", "--",
                           "-e", "ansible_port=9", "--limit", "dgx01", "-vvv"],
                          cwd=ROOT / "roles" / "dgx_nfs", env=molecule_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    out = ANSI.sub("", proc.stdout + proc.stderr)
    assert proc.returncode != 0 and "unreachable=1" in out, out[-4000:]  # nothing listens on port 9
    assert f"Using {ROOT / 'ansible.cfg'} as config file" in out, out[-4000:]
    exec_lines = " ".join(out.split()).split("SSH: EXEC ")[1:]
    assert exec_lines, f"no SSH command in the -vvv output:\n{out[-4000:]}"
    for line in exec_lines:
        command = line[:line.find("127.0.0.1 '")]
        pinned = str(ROOT / "inventories" / "lab" / ".." / ".." / "lab" / ".run" / "ssh" / "known_hosts")
        assert f"UserKnownHostsFile={pinned}" in command and "StrictHostKeyChecking=yes" in command, command
        assert "StrictHostKeyChecking=no" not in command, command
