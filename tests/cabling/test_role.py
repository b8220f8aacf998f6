"""The cabling stage's judge in Ansible (roles/cabling/tasks/judge.yml, plugins/action/cabling_check.py) on the
production inventory: the switches' dumps are given (tests/cabling/judge_play.yml), the rest is the real role."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cabling.test_check import as_wired, lldp_doc, storage_only
from validation.cabling import plan

ROOT = Path(__file__).resolve().parents[2]


def dumps_for(tables: dict[str, dict[str, list]]) -> dict[str, list[dict]]:
    return {s: [{"node": s, "command": "lldpctl -f json", "format": "lldp", "text": lldp_doc(t), "rc": 0,
                 "stderr": ""}] for s, t in tables.items()}


def tables(cables, changes=None) -> dict[str, dict[str, list]]:
    out: dict[str, dict[str, list]] = {"sn3700v01": {}, "sn3700v02": {}}
    for link in as_wired(cables, changes):
        peers = out[link.local.node].setdefault(link.local.port, [])
        peers.append((link.remote.node, link.remote_info["chassis_id"], "ifname", link.remote.port))
    return out


def run(tmp_path: Path, dumps: dict, *extra: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "dumps.json"
    path.write_text(json.dumps({"test_dumps": dumps}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": "default",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_DISPLAY_ARGS_TO_STDOUT": "0"}
    return subprocess.run([str(ROOT / ".venv/bin/ansible-playbook"), "-i", "inventories/common", "-i",
                           "inventories/production", "tests/cabling/judge_play.yml", "-e", f"@{path}", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_swapped_storage_cables_stop_the_run_naming_both_ports(tmp_path):
    cables = storage_only(plan.design(plan.load_view(["inventories/common", "inventories/production"])))
    changes = {("sn3700v01", "swp1"): [("dgx03", "02:00:00:00:05:67", "ifname", "enp225s0f0")],
               ("sn3700v01", "swp2"): [("dgx01", "02:00:00:00:05:65", "ifname", "enp225s0f0")]}
    out = run(tmp_path, dumps_for(tables(cables, changes)))
    assert out.returncode != 0, out.stdout
    assert "MISWIRED   | dgx01 enp225s0f0" in out.stdout
    assert "dgx01 enp225s0f0 goes to sn3700v01 swp2; sn3700v01 swp1 goes to dgx03 enp225s0f0" in out.stdout
    assert "nothing was changed" in out.stdout
    # the compute fabric was not read (no DGX in this play): said, not judged
    assert "the compute fabric was not read" in out.stdout
    # as designed: passes; a listed deviation is accepted; --check runs it too
    out = run(tmp_path, dumps_for(tables(cables)), "--check")
    assert out.returncode == 0, out.stdout
    assert "cabling: 14 of 14 cables as designed" in out.stdout


def test_a_failed_read_is_a_fail_with_its_reason(tmp_path):
    dumps = {"sn3700v01": [{"node": "sn3700v01", "command": "lldpctl -f json", "format": "lldp", "text": "",
                            "rc": 127, "stderr": "lldpctl: command not found"}]}
    out = run(tmp_path, dumps)
    assert out.returncode != 0
    assert "ERROR      | sn3700v01: lldpctl -f json failed (rc 127): lldpctl: command not found" in out.stdout
    out = run(tmp_path, dumps, "-e", "cabling_enforce=false")
    assert out.returncode == 0 and "(not enforced: cabling_enforce is false)" in out.stdout


def test_fdb_and_host_macs_judge_an_end_without_lldp(tmp_path):
    ip_link = json.dumps([{"ifindex": 1, "ifname": "lo", "link_type": "loopback", "address": "00:00:00:00:00:00"},
                          {"ifindex": 2, "ifname": "enp225s0f0", "link_type": "ether",
                           "address": "0c:42:a1:12:34:56"}])
    dumps = {"sn3700v01": [{"node": "sn3700v01", "command": "bridge fdb show", "format": "fdb", "rc": 0,
                            "stderr": "", "text": "0c:42:a1:12:34:56 dev swp1 vlan 100 master br_default \n"}],
             "dgx01": [{"node": "dgx01", "command": "ip -j link show", "format": "iplink", "rc": 0, "stderr": "",
                        "text": ip_link}]}
    out = run(tmp_path, dumps)
    assert out.returncode != 0
    assert "14 cables: 1 OK, 0 MISWIRED, 13 MISSING" in out.stdout
    assert "MISSING    | dgx01 enp225s0f0" not in out.stdout


def test_a_mac_the_inventory_gives_names_an_f800_port(tmp_path):
    dumps = {"sn3700v01": [{"node": "sn3700v01", "command": "bridge fdb show", "format": "fdb", "rc": 0,
                            "stderr": "", "text": "00:60:16:9f:00:01 dev swp17 vlan 100 master br_default \n"}]}
    nic = {"name": "40gige-1", "address": "198.51.100.21/24", "speed_gbps": 40, "mtu": 9000, "switch": "sn3700v01",
           "switch_port": "swp17", "mac": "00:60:16:9F:00:01"}
    overlay = tmp_path / "hosts.yml"      # an inventory overlay, as tests/preflight_cases use them
    f800 = {"f800-1": {"storage_nics": [nic]}}
    overlay.write_text(json.dumps({"all": {"children": {"powerscale": {"hosts": f800}}}}))
    out = run(tmp_path, dumps, "-i", str(overlay))
    assert "13 cables: 1 OK" in out.stdout, out.stdout[-3000:]   # f800-1 has one NIC in the overlay
    assert "MISSING    | f800-1 40gige-1" not in out.stdout
