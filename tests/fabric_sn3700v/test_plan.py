"""cumulus_fabric: the switch plan derived from the inventories, and the problems it refuses."""

from __future__ import annotations

import copy

import pytest
from ansible.module_utils import preflight_rules as rules
from ansible.module_utils.cumulus_fabric import derive_plan, port_problem
from preflight.preflight_sites import load_site

from .inventory_data import settings_for


def test_production_switch_gets_its_cabled_ports_and_clag():
    plan, problems = derive_plan("sn3700v01", settings_for("production", "sn3700v01"))
    assert problems == []
    assert [(p.name, p.description, p.speed_gbps, p.access_vlan, p.mtu) for p in plan.ports] == [
        ("swp1", "dgx01 enp225s0f0", 100, 100, 9216),
        ("swp2", "dgx03 enp225s0f0", 100, 100, 9216),
        ("swp17", "f800-1 40gige-1", 40, 100, 9216),
        ("swp18", "f800-2 40gige-1", 40, 100, 9216),
        ("swp19", "f800-3 40gige-1", 40, 100, 9216),
        ("swp20", "f800-4 40gige-1", 40, 100, 9216),
    ]
    assert plan.peerlink is not None
    assert plan.peerlink.members == ["swp31", "swp32"] and plan.peerlink.vlan == 4094
    assert plan.peerlink.backup_ip == "192.0.2.32" and plan.peerlink.priority == 1000
    assert plan.bridge_ports()[-1] == "peerlink"
    assert "peerlink.4094" in plan.owned_interfaces() and "eth0" not in plan.owned_interfaces()


def test_other_switch_of_the_pair_gets_only_its_own_cables():
    plan, problems = derive_plan("sn3700v02", settings_for("production", "sn3700v02"))
    assert problems == []
    assert [p.description for p in plan.ports][:2] == ["dgx02 enp225s0f0", "dgx04 enp225s0f0"]
    assert plan.peerlink is not None and plan.peerlink.role == "secondary"


def test_lab_switch_is_standalone_without_speeds():
    plan, problems = derive_plan("sn3700v01", settings_for("lab", "sn3700v01"))
    assert problems == []
    assert [(p.name, p.speed_gbps) for p in plan.ports] == [("swp1", None), ("swp2", None), ("swp9", None)]
    assert plan.peerlink is None and plan.loopback == "192.0.2.251/32"


def _problems(**overrides):
    return [p.line() for p in derive_plan("sn3700v01", settings_for("production", "sn3700v01", **overrides))[1]]


def _with_port(port: str):
    settings = settings_for("production", "sn3700v01")
    nics = copy.deepcopy(settings["nics_by_host"])
    nics["dgx01"][0]["switch_port"] = port
    return nics


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"port_mtu": 9999}, "storage_fabric_port_mtu=9999: switch-port MTU must be an integer between 552 and 9216"),
        ({"port_mtu": 551}, "between 552 and 9216"),
        ({"port_mtu": 9000}, "host MTU + 18 bytes of L2 overhead exceeds the switch-port MTU 9000"),
        ({"vlans": [{"id": 100, "name": "storage", "subnet": "198.51.100.0/24"}, {"id": 100, "name": "b"}]},
         "storage_fabric_vlans[1].id=100: duplicate VLAN 100"),
        ({"vlans": [{"id": 5000, "name": "x", "subnet": "198.51.100.0/24"}]}, "is not a VLAN ID between 1 and 4094"),
        ({"nics_by_host": "BAD_PORT"}, "dgx01: storage_nics[0].switch_port='swp 1': is not a front-panel port name"),
        ({"nics_by_host": "DUP_PORT"}, "dgx03: storage_nics[0].switch_port='swp2': sn3700v01 port swp2 is already cabled to dgx01 enp225s0f0"),
        ({"clag_role": "standalone"}, "storage_fabric_clag.enabled is true but this switch is standalone"),
        ({"clag": {"enabled": True, "peerlink": {"bond": "peerlink", "members": ["swp1"], "vlan": 100},
                   "sys_mac": "nope"}}, "port is used twice: as fabric port of dgx01 and as peerlink member"),
        ({"roce": {"enabled": True}}, "storage_fabric_roce.enabled=True: Cumulus Linux configures RoCE QoS only"),
        ({"breakouts": {"swp1": "4x25G"}}, "is broken out (4x25G) but used whole as fabric port of dgx01"),
        ({"uplinks": [{"name": "swp17", "speed": "100G"}]}, "port is used twice"),
    ],
)
def test_bad_input_is_named_with_host_variable_value_and_fix(overrides, expected):
    if overrides.get("nics_by_host") == "BAD_PORT":
        overrides = {"nics_by_host": _with_port("swp 1")}
    elif overrides.get("nics_by_host") == "DUP_PORT":
        overrides = {"nics_by_host": _with_port("swp2")}
    problems = _problems(**overrides)
    assert any(expected in p for p in problems), problems
    assert all("Fix: " in p for p in problems)


def test_clag_with_bad_mac_and_peer_vlan_lists_each_problem():
    problems = _problems(clag={"enabled": True, "peerlink": {"bond": "peerlink", "members": ["swp31"], "vlan": 100},
                               "sys_mac": "nope"})
    assert any("storage_fabric_clag.sys_mac='nope'" in p for p in problems)
    assert any("storage_fabric_clag.peerlink.vlan=100" in p for p in problems)


def test_speed_not_offered_is_refused_unless_speeds_are_unmanaged():
    assert any("speed_gbps=100: is not a port speed" in p for p in _problems(speeds_gbps=[10, 25]))
    assert _problems(speeds_gbps=[10, 25], port_speed_managed=False) == []


@pytest.mark.parametrize(("port", "exists"), [("swp1", True), ("swp32", True), ("swp32s3", True), ("swp33", False),
                                              ("swp40", False), ("swp49", False), ("swp1s4", False),
                                              ("swp5s7", False)])
def test_one_port_rule_for_the_role_and_preflight(port, exists):
    """An SN3700V has swp1..swp32, lanes s0..s3 (32 QSFP56 cages, 2x or 4x breakout): the plan refuses what
    preflight refuses, with the same words, because both call cumulus_fabric.port_problem."""
    plan_problems = [p for p in _problems(nics_by_host=_with_port(port)) if "switch_port" in p and "does not exist" in p]
    site = copy.deepcopy(load_site("inventories/production"))
    site.hostvars["dgx01"]["storage_nics"][0]["switch_port"] = port
    preflight = [p for p in rules.rule_switch_cabling(site) if p.host == "dgx01" and "does not exist" in p.problem]
    assert bool(plan_problems) is (not exists) and bool(preflight) is (not exists), (plan_problems, preflight)
    if not exists:
        assert port_problem(port) in plan_problems[0] and preflight[0].problem == port_problem(port)


@pytest.mark.parametrize("mode", ["8x25G", "4x400G", "quad"])
def test_breakout_modes_an_sn3700v_cage_does_not_take_are_refused(mode):
    assert any("is not a breakout mode" in p for p in _problems(breakouts={"swp29": mode}))
