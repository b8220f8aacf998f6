"""The files method for real on the lab's sn3700v01 (Debian 12 + ifupdown2 + FRR), end to end.

Marked `lab`: `pytest -m lab tests/fabric_sn3700v/test_lab_fabric.py`, with `python -m lab up` running. The tests
run in file order and build on each other:
  the switch is returned to its unconfigured state (our region removed, ifreload) -> a jumbo ping from dgx01 to
  powerscale01's storage address fails -> fabric.yml configures sn3700v01 -> the same ping succeeds and the
  kernel shows the bridge -> a second run and a --check run report 0 changed -> one port changed by hand is put
  back alone -> a foreign stanza and the management configuration survive -> ifupdown2's own rejection text is
  reported -> an unreachable second switch fails alone -> no secret in any output.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from validation.inventory_layers import inventory_args

from .test_files_render import render

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR = ROOT / "lab" / ".run"
VENV_BIN = Path(sys.executable).parent
HOSTS = yaml.safe_load((ROOT / "inventories/lab/hosts.yml").read_text())["all"]["children"]
PORTS = {name: h["ansible_port"] for group in ("dgx", "powerscale", "sn3700v")
         for name, h in HOSTS[group]["hosts"].items()}
TARGET = HOSTS["powerscale"]["hosts"]["powerscale01"]["storage_nics"][0]["address"].split("/")[0]
JUMBO_PING = f"ping -M do -s 8972 -c 3 -W 2 {TARGET}"
# --limit keeps localhost in: the preflight inventory phase runs there, and the stage's gate needs it.
LIMIT = "sn3700v:localhost"
OUTPUTS: list[str] = []
FOREIGN = "auto site0\niface site0\n    link-type dummy\n    alias site-owned interface, not in the inventory\n"


def ssh(node: str, command: str, timeout: int = 120, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-i", str(RUN_DIR / "ssh" / "id_ed25519"), "-p", str(PORTS[node]), "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={RUN_DIR / 'ssh' / 'known_hosts'}",
            "-o", "LogLevel=ERROR",
            "root@127.0.0.1", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=stdin)


def put_file(node: str, path: str, text: str) -> None:
    """Write a file on a node from here (the switch has no Python to do it with: lab/image_files.py)."""
    done = ssh(node, f"cat > {path}", stdin=text)
    assert done.returncode == 0, done.stderr


def fabric(*extra: str) -> tuple[int, str, dict[str, dict[str, int]]]:
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), *inventory_args("inventories/lab"), "playbooks/fabric.yml",
                           "--limit", LIMIT, *extra], cwd=ROOT, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    OUTPUTS.append(out)
    recap = {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
             for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", out, re.M)}
    return proc.returncode, out, recap


@pytest.fixture(scope="module", autouse=True)
def lab_ready():
    assert (RUN_DIR / "ssh" / "id_ed25519").exists(), "the lab is not up: run `python -m lab up` first"
    for node in ("sn3700v01", "dgx01", "powerscale01"):
        probe = ssh(node, "true", timeout=60)
        assert probe.returncode == 0, f"{node} does not answer over SSH ({probe.stderr.strip()}): is the lab up?"


def test_switch_leaves_ansible_no_python():
    # The lab switch models a Cumulus whose Python Ansible refuses (3.7.3 on 4.0-5.8): no interpreter in PATH
    # (ifupdown2 and frr-reload.py run theirs from /usr/lib/cumulus-python, lab/image_files.py), so a module
    # cannot run there and the role must do everything over plain shell commands.
    found = ssh("sn3700v01", "for p in python3 python3.11 python /usr/bin/python3; do command -v $p; done; exit 0")
    assert found.returncode == 0 and found.stdout.strip() == "", found.stdout
    proc = subprocess.run([str(VENV_BIN / "ansible"), *inventory_args("inventories/lab"), "sn3700v01", "-m", "ansible.builtin.ping"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "python" in (proc.stdout + proc.stderr).lower(), proc.stdout[-2000:]


def test_unconfigured_switch_forwards_nothing():
    # Back to the state `lab up` leaves: the role's region removed, ifupdown2 reloaded.
    # the region holds the adopted loopback stanza: give lo back its plain stanza, as the image has it
    text = ssh("sn3700v01", "cat /etc/network/interfaces").stdout
    text = re.sub(r"# BEGIN sn3700v storage fabric.*?# END sn3700v storage fabric\n?",
                  "auto lo\niface lo inet loopback\n", text, flags=re.S)
    put_file("sn3700v01", "/etc/network/interfaces", text.rstrip() + "\n")
    script = (
        "set -e; ifreload -a\n"
        "if [ -e /sys/class/net/br_default ]; then ip link del br_default; fi\n"
        "for p in $(cat /etc/lab/links-up); do ip link set \"$p\" up; done"
    )
    reset = ssh("sn3700v01", script)
    assert reset.returncode == 0, reset.stderr
    before = ssh("dgx01", JUMBO_PING, timeout=60)
    assert before.returncode != 0, f"dgx01 already reaches {TARGET} before the fabric stage:\n{before.stdout}"


def test_fabric_stage_configures_the_switch():
    rc, out, recap = fabric()
    assert rc == 0, out[-6000:]
    assert recap["sn3700v01"]["failed"] == 0 and recap["sn3700v01"]["changed"] >= 1, recap


def test_jumbo_frames_cross_the_fabric():
    after = ssh("dgx01", JUMBO_PING, timeout=60)
    assert after.returncode == 0, f"{JUMBO_PING} failed after fabric.yml:\n{after.stdout}{after.stderr}"
    assert " 0% packet loss" in after.stdout, after.stdout


def test_kernel_state_matches_the_inventory():
    vlans = json.loads(ssh("sn3700v01", "bridge -j vlan show").stdout)
    by_port = {e["ifname"]: e["vlans"] for e in vlans}
    for port in ("swp1", "swp2", "swp9"):
        assert {"vlan": 100, "flags": ["PVID", "Egress Untagged"]} in by_port[port], by_port.get(port)
    links = {link["ifname"]: link for link in json.loads(ssh("sn3700v01", "ip -d -j link show").stdout)}
    assert links["swp9"]["mtu"] == 9216 and links["swp9"]["master"] == "br_default"
    assert links["br_default"]["linkinfo"]["info_data"]["vlan_filtering"] == 1


def test_second_run_and_check_run_change_nothing():
    rc, out, recap = fabric()
    assert rc == 0 and recap["sn3700v01"]["changed"] == 0, out[-6000:]
    rc, out, recap = fabric("--check", "--diff")
    assert rc == 0 and recap["sn3700v01"]["changed"] == 0, out[-6000:]


def test_one_drifted_port_is_repaired_alone():
    # Someone renames swp2 by hand, in the file and in the kernel (harmless to traffic: the lab stays usable for
    # the other stages); the next run puts back exactly that port.
    drift = ssh("sn3700v01", "sed -i 's/^    alias dgx02 storage0$/    alias changed by hand/' /etc/network/interfaces"
                " && ip link set swp2 alias 'changed by hand'")
    assert drift.returncode == 0, drift.stderr
    rc, out, recap = fabric("--diff")
    assert rc == 0 and recap["sn3700v01"]["changed"] >= 1, out[-6000:]
    removed = [line for line in out.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in out.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert removed == ["-    alias changed by hand"] and added == ["+    alias dgx02 storage0"], (removed, added)
    link = json.loads(ssh("sn3700v01", "ip -j -d link show swp2").stdout)[0]
    assert link.get("ifalias") == "dgx02 storage0", link
    assert ssh("dgx02", JUMBO_PING, timeout=60).returncode == 0


def test_switch_settings_outside_the_inventory_survive():
    # The site adds its own interface next to ours (a dummy: no traffic impact); the stage keeps it, reports nothing.
    original = ssh("sn3700v01", "cat /etc/network/interfaces").stdout
    assert "# BEGIN sn3700v storage fabric" in original, "run the fabric stage first"
    plant = ssh("sn3700v01", f"printf '\\n%s' '{FOREIGN}' >> /etc/network/interfaces && ifreload -a")
    assert plant.returncode == 0, plant.stderr
    try:
        rc, out, recap = fabric()
        assert rc == 0 and recap["sn3700v01"]["changed"] == 0, out[-6000:]
        text = ssh("sn3700v01", "cat /etc/network/interfaces").stdout
        assert FOREIGN in text, text
        assert "source /etc/network/interfaces.d/*" in text
        assert text.count("# BEGIN sn3700v storage fabric") == 1
        assert ssh("sn3700v01", "ip -j link show site0").returncode == 0, "the site's own interface is gone"
    finally:
        text = ssh("sn3700v01", "cat /etc/network/interfaces").stdout.replace(FOREIGN, "")
        put_file("sn3700v01", "/etc/network/interfaces", text.rstrip() + "\n")
        cleanup = ssh("sn3700v01", "ifreload -a")
        assert cleanup.returncode == 0, cleanup.stderr
        assert ssh("sn3700v01", "cat /etc/network/interfaces").stdout == original, "cleanup did not restore the file"


def test_switch_rejection_is_reported_in_its_own_words():
    before = ssh("sn3700v01", "md5sum /etc/network/interfaces").stdout
    # The role's own stanzas with one value only the switch's parser judges (our Python check passes it).
    bad = render("interfaces.managed.j2", "lab", "sn3700v01").replace("bridge-pvid 100", "bridge-pvid abc")
    proc = subprocess.run(
        [str(VENV_BIN / "ansible"), *inventory_args("inventories/lab"), "sn3700v01", "-m", "cumulus_interfaces",
         "-a", json.dumps({"stanzas": bad, "owned": ["lo"]})],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    OUTPUTS.append(proc.stdout + proc.stderr)
    assert proc.returncode != 0
    assert "ifupdown2 rejected the new interfaces file" in proc.stdout, proc.stdout[-3000:]
    assert "bridge-pvid: invalid literal for int()" in proc.stdout, proc.stdout[-3000:]
    assert ssh("sn3700v01", "md5sum /etc/network/interfaces").stdout == before


def test_unreachable_switch_fails_alone(tmp_path):
    extra = tmp_path / "extra.yml"
    extra.write_text(yaml.safe_dump({"all": {"children": {"sn3700v": {"hosts": {"sn3700v99": {
        "ansible_host": "127.0.0.1", "ansible_port": 1, "sn3700v_clag_role": "standalone",
        "sn3700v_clag_priority": 2000}}}}}}))
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), *inventory_args("inventories/lab"), "-i", str(extra),
         "tests/fabric_sn3700v/fabric_role.yml", "--limit", "sn3700v"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    OUTPUTS.append(out)
    recap = {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
             for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", out, re.M)}
    assert recap["sn3700v99"]["unreachable"] == 1, out[-4000:]
    assert recap["sn3700v01"]["failed"] == 0 and recap["sn3700v01"]["unreachable"] == 0, out[-4000:]
    assert recap["sn3700v01"]["changed"] == 0, out[-4000:]


def test_no_secret_in_any_output():
    secrets = [p.read_text().strip() for p in (RUN_DIR / "secrets").glob("*") if p.is_file()]
    for out in OUTPUTS:
        for secret in secrets:
            assert not secret or secret not in out, "a lab secret appeared in ansible-playbook output"
