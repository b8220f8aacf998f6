"""cumulus_interfaces on a temporary interfaces file (ansible_connection local): the switch's own checker is
stood in for by small scripts, since ifupdown2 belongs on the switch, not on the control node."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from .conftest import ROOT, VENV_BIN
from .test_files_render import CUMULUS_DEFAULT, render


def run_tasks(tmp_path, tasks: list[dict], env_path: str = f"{VENV_BIN}:/usr/bin:/bin") -> dict:
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"name": "t", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    env = {"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_FACT_CACHING": "memory", "PATH": env_path}
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "-e",
           f"ansible_python_interpreter={sys.executable}", str(playbook), "--diff"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    return {t["task"]["name"]: t["hosts"]["localhost"] for t in data["plays"][0]["tasks"]}


def test_install_noop_check_and_rejections(tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(CUMULUS_DEFAULT)
    (tmp_path / "interfaces.d").mkdir()
    (tmp_path / "interfaces.d" / "site.intf").write_text("auto swp40\niface swp40\n    alias site port\n")
    stanzas = render("interfaces.managed.j2", "production", "sn3700v01")
    owned = ["lo", "swp1", "swp2", "br_default"]
    main = CUMULUS_DEFAULT.replace("source /etc/network/interfaces.d/*.intf", f"source {tmp_path}/interfaces.d/*.intf")
    path.write_text(main)
    common = {"path": str(path), "stanzas": stanzas, "owned": owned, "backup": False}
    ok_check = f"{sys.executable} -c \"import sys; open(sys.argv[1]).read()\" %s"
    reject = "sh -c 'echo \"error: %s: line 12: swp1: unsupported attribute link-sped\" >&2; exit 1'"

    site = tmp_path / "interfaces.d" / "site.intf"
    results = run_tasks(tmp_path, [
        {"name": "check", "cumulus_interfaces": {**common, "validate": ok_check}, "check_mode": True},
        {"name": "untouched", "ansible.builtin.command": f"cat {path}", "changed_when": False},
        {"name": "rejected", "cumulus_interfaces": {**common, "validate": reject}, "ignore_errors": True},
        {"name": "first", "cumulus_interfaces": {**common, "validate": ok_check}},
        {"name": "again", "cumulus_interfaces": {**common, "validate": ok_check}},
        {"name": "written", "ansible.builtin.command": f"cat {path}", "changed_when": False},
        # an interfaces.d file that defines an interface the role owns: refused, nothing written
        {"name": "foreign", "ansible.builtin.copy": {"dest": str(site), "content": "auto swp1\niface swp1\n"}},
        {"name": "conflict", "cumulus_interfaces": {**common, "validate": ok_check}, "ignore_errors": True},
    ])
    check = results["check"]
    assert check["changed"] and "+    bridge-access 100" in _diff_text(check)
    assert results["untouched"]["stdout"] + "\n" == main
    assert results["rejected"]["failed"]
    assert "ifupdown2 rejected the new interfaces file" in results["rejected"]["msg"]
    assert "unsupported attribute link-sped" in results["rejected"]["msg"]
    assert results["first"]["changed"] and results["first"]["adopted"] == ["lo"]
    assert not results["again"]["changed"]
    text = path.read_text()
    assert results["written"]["stdout"] + "\n" == text
    assert "gateway 192.0.2.1" in text and "iface swp1" in text and "vrf-table auto" in text
    assert results["conflict"]["failed"] and "site.intf defines iface swp1" in results["conflict"]["msg"]
    assert path.read_text() == text


def _diff_text(result: dict) -> str:
    diffs = result.get("diff", [])
    diffs = diffs if isinstance(diffs, list) else [diffs]
    before = "".join(d.get("before", "") for d in diffs)
    after = "".join(d.get("after", "") for d in diffs)
    return "\n".join(f"+{line}" for line in after.splitlines() if line not in before.splitlines())
