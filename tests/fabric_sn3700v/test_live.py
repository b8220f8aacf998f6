"""cumulus_live.compare and nvue_fabric.operational_mismatches on the switch's own JSON outputs."""

from __future__ import annotations

import copy

from ansible.module_utils.cumulus_fabric import derive_plan
from ansible.module_utils.cumulus_live import compare
from ansible.module_utils.nvue_fabric import desired, differences, operational_mismatches

from .inventory_data import settings_for

LAB_PLAN = derive_plan("sn3700v01", settings_for("lab", "sn3700v01"))[0].as_dict()
PROD_PLAN = derive_plan("sn3700v01", settings_for("production", "sn3700v01"))[0].as_dict()


def port(name, master="br_default", mtu=9216, state="UP"):
    return {"ifname": name, "mtu": mtu, "operstate": state, "master": master,
            "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"] if state == "UP" else ["BROADCAST", "UP"],
            "linkinfo": {"info_slave_kind": "bridge"}}


def lab_live():
    links = [port("swp1"), port("swp2"), port("swp9"), {"ifname": "mgmt0", "mtu": 1500, "operstate": "UP"},
             {"ifname": "br_default", "mtu": 9216, "operstate": "UP",
              "linkinfo": {"info_kind": "bridge", "info_data": {"vlan_filtering": 1}}}]
    # iproute2 6.x (Debian 12) layout
    vlans = [{"ifname": p, "vlans": [{"vlan": 100, "flags": ["PVID", "Egress Untagged"]}]} for p in ("swp1", "swp2", "swp9")]
    vlans.append({"ifname": "br_default", "vlans": [{"vlan": 1, "flags": ["PVID", "Egress Untagged"]}, {"vlan": 100}]})
    lo = [{"ifname": "lo", "addr_info": [{"local": "127.0.0.1", "prefixlen": 8}, {"local": "192.0.2.251", "prefixlen": 32}]}]
    return links, vlans, lo


def test_matching_lab_state_has_no_mismatch():
    links, vlans, lo = lab_live()
    assert compare(LAB_PLAN, links, vlans, lo) == []


def test_old_iproute2_layout_is_understood():
    links, vlans, lo = lab_live()
    old = {entry["ifname"]: entry["vlans"] for entry in vlans}
    assert compare(LAB_PLAN, links, old, lo) == []


def test_each_live_difference_is_reported():
    links, vlans, _ = lab_live()
    links[0]["mtu"] = 1500
    links[1]["master"] = None
    links[2] = port("swp9", state="DOWN")
    links[4]["linkinfo"]["info_data"]["vlan_filtering"] = 0
    vlans[0]["vlans"] = [{"vlan": 1, "flags": ["PVID", "Egress Untagged"]}]
    problems = compare(LAB_PLAN, links, vlans, [{"ifname": "lo", "addr_info": []}])
    assert "fabric port (dgx01 storage0) swp1: MTU 1500, expected 9216" in problems
    assert "fabric port (dgx02 storage0) swp2: bridge member of None, expected br_default" in problems
    assert any(p.startswith("fabric port (powerscale01 storage0) swp9: link is DOWN") for p in problems)
    assert "bridge br_default is not VLAN-aware (vlan_filtering=0)" in problems
    assert any("swp1: access VLAN 100 is not its untagged PVID" in p for p in problems)
    assert any(p.startswith("loopback address 192.0.2.251/32 is not on lo") for p in problems)


def test_clag_peer_must_be_alive_in_its_role():
    links = [port(p["name"]) for p in PROD_PLAN["ports"]]
    links += [{"ifname": "br_default", "linkinfo": {"info_kind": "bridge", "info_data": {"vlan_filtering": 1}}},
              {**port("peerlink"), "linkinfo": {"info_kind": "bond", "info_slave_kind": "bridge"}},
              {**port("swp31", master="peerlink"), "linkinfo": {"info_slave_kind": "bond"}},
              {**port("swp32", master="peerlink"), "linkinfo": {"info_slave_kind": "bond"}}]
    vlans = [{"ifname": p["name"], "vlans": [{"vlan": 100, "flags": ["PVID", "Egress Untagged"]}]}
             for p in PROD_PLAN["ports"]]
    alive = {"status": {"peerAlive": True, "ourRole": "primary", "peerRole": "secondary", "backupActive": True}}
    assert compare(PROD_PLAN, links, vlans, None, alive) == []
    no_backup = {"status": {**alive["status"], "backupActive": False, "backupIp": "192.0.2.32", "backupVrf": None}}
    assert compare(PROD_PLAN, links, vlans, None, no_backup) == [
        "CLAG backup link to 192.0.2.32 is not active (clagctl status: backupActive=False, backupIp=192.0.2.32, "
        "backupVrf=None): the peer's eth0 is in the management VRF by default, so the backup IP needs its VRF "
        "(sn3700v_clag_backup_vrf: mgmt)"]
    missing = {"status": {k: v for k, v in alive["status"].items() if k != "backupActive"}}
    assert any("backupActive=None" in m for m in compare(PROD_PLAN, links, vlans, None, missing))
    dead = {"status": {"peerAlive": False, "ourRole": "primary"}}
    assert "CLAG peer is not alive (clagctl status: peerAlive=False)" in compare(PROD_PLAN, links, vlans, None, dead)
    assert "clagctl reported nothing: clagd is not running" in compare(PROD_PLAN, links, vlans, None, None)


def test_nvue_subset_diff_ignores_settings_outside_the_subtree():
    want = desired(PROD_PLAN)
    applied = copy.deepcopy(want)
    applied["interface"]["eth0"] = {"type": "eth"}
    applied["system"] = {"hostname": "x"}
    assert differences(want, applied) == []
    applied["interface"]["swp1"]["link"]["mtu"] = 1500
    del applied["mlag"]["backup"]
    assert sorted(differences(want, applied)) == ["/interface/swp1/link/mtu: 1500 -> 9216",
                                                  "/mlag/backup: absent -> {'192.0.2.32': {}}"]
    assert want["mlag"]["peer-ip"] == "linklocal" and want["interface"]["peerlink"]["type"] == "peerlink"


def test_nvue_operational_check():
    interfaces = {p["name"]: {"link": {"mtu": 9216, "oper-status": "up"},
                              "bridge": {"domain": {"br_default": {"access": 100}}}} for p in LAB_PLAN["ports"]}
    assert operational_mismatches(LAB_PLAN, interfaces, None) == []
    interfaces["swp2"]["link"]["oper-status"] = "down"
    interfaces["swp9"]["bridge"]["domain"]["br_default"]["access"] = 200
    problems = operational_mismatches(LAB_PLAN, interfaces, None)
    assert problems == ["fabric port (dgx02 storage0) swp2: oper-status 'down', expected 'up'",
                        "fabric port (powerscale01 storage0) swp9: access VLAN 200, expected 100"]
