"""The bundle as an Ansible collection (scripts/build_collection.py): built, installed offline from its tarball,
and used by a playbook outside the checkout, with nothing of the checkout on Ansible's paths."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_role_input import CASES, EXPECTED, _inventory

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "scripts"))
import build_collection  # noqa: E402


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("collection")
    tarball = build_collection.build(tmp / "dist")
    cols = tmp / "collections"
    # --offline: the install must not need Galaxy (the machines this runs on often cannot reach it)
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", str(tarball), "-p", str(cols)],
                   check=True, capture_output=True, text=True, timeout=120)
    (tmp / "site" / "ansible.cfg").parent.mkdir()
    (tmp / "site" / "ansible.cfg").write_text("[defaults]\n")  # a site's own config: none of the checkout's paths
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_CONFIG": str(tmp / "site" / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(cols),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_CACHE_PLUGIN": "memory"})
    return tmp / "site", env


def test_layout_rewrites_only_our_imports(installed):
    _site, env = installed
    top = Path(env["ANSIBLE_COLLECTIONS_PATH"]) / "ansible_collections" / "powerscale_dgx" / "ra"
    modules = {p.stem for p in (top / "plugins" / "modules").glob("*.py")}
    assert modules == {p.stem for p in (ROOT / "library").glob("*.py")}
    assert {p.name for p in (top / "roles").iterdir()} == {p.name for p in (ROOT / "roles").iterdir()}
    assert (top / "plugins" / "action" / "preflight_inventory.py").is_file()
    assert not list((top / "roles").glob("*/action_plugins")) and not list((top / "roles").glob("*/molecule"))
    for path in (top / "plugins").rglob("*.py"):
        text = path.read_text()
        for name in build_collection.our_names(ROOT / "module_utils"):
            assert not re.search(rf"\bansible\.module_utils\.{name}\b", text), f"{path}: {name} not rewritten"
    # Ansible's own module_utils stay where they are
    assert "from ansible.module_utils.basic import AnsibleModule" in (top / "plugins/modules/dgx_sysctl.py").read_text()


def test_playbook_outside_the_checkout_uses_a_module(installed):
    site, env = installed
    (site / "module.yml").write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"powerscale_dgx.ra.host_state": {"packages": ["bash"], "files": [{"path": str(site), "state": "directory"}]},
         "register": "r"},
        {"ansible.builtin.assert": {"that": ["r.in_sync", "not r.changed"]}}]}]))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "-e",
                           f"ansible_python_interpreter={sys.executable}", "module.yml"],
                          cwd=site, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout


@pytest.mark.parametrize("role", ["dgx_nfs", "ngc"])
def test_playbook_outside_the_checkout_runs_a_role_as_the_bundle_does(installed, role):
    """The role from the collection judges input exactly as the bundle's copy does (tests/dgx/test_role_input):
    its plan module and the module_utils it imports load from the collection."""
    site, env = installed
    (site / f"{role}.hosts.yml").write_text(yaml.safe_dump(_inventory(role)))
    (site / f"{role}.yml").write_text(yaml.safe_dump([{"hosts": "dgx", "gather_facts": False,
                                                       "roles": [{"role": f"powerscale_dgx.ra.{role}"}]}]))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", f"{role}.hosts.yml", f"{role}.yml", "--check"],
                          cwd=site, env=env, capture_output=True, text=True, timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "ansible_collections/powerscale_dgx/ra" in out or "powerscale_dgx.ra" in out
    folded = re.sub(r" +\|", " |", out)
    for host, fragment in EXPECTED[role].items():
        assert host in out and fragment in folded, f"{host}: {fragment!r} not in output:\n{out[-3000:]}"
    for host in CASES[role]:
        line = next(li for li in out[out.index("PLAY RECAP"):].splitlines() if li.startswith(host))
        assert "changed=0" in line and "failed=1" in line, line
