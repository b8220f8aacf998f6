"""The storage VLAN rules have one home (cumulus_fabric.vlan_problems, reserved_vlan_problems,
port_speed_problem): the role's plan (derive_plan) and preflight (rule_vlans, rule_cumulus_reserved_vlans,
rule_port_speed) call the same functions, so they refuse the same inventory."""

from __future__ import annotations

import copy

import pytest
from ansible.module_utils import cumulus_fabric
from ansible.module_utils import preflight_rules as rules
from ansible.module_utils.cumulus_fabric import derive_plan
from preflight.preflight_sites import load_site

from .inventory_data import settings_for

STORAGE = {"id": 100, "name": "storage", "subnet": "198.51.100.0/24"}


def _plan_rows(**overrides):
    return [(p.variable, p.problem) for p in derive_plan("sn3700v01", settings_for("production", "sn3700v01",
                                                                                  **overrides))[1]]


@pytest.mark.parametrize("vid", [3725, 3800, 3999])
def test_the_plan_refuses_a_cumulus_reserved_vlan(vid):
    rows = _plan_rows(vlans=[STORAGE, {"id": vid, "name": "b"}])
    assert [v for v, problem in rows if "reserved VLAN range 3725-3999" in problem] == ["storage_fabric_vlans[1].id"]


@pytest.mark.parametrize("vid", [3724, 4000])
def test_the_plan_takes_a_vlan_beside_the_reserved_range(vid):
    assert _plan_rows(vlans=[STORAGE, {"id": vid, "name": "b"}]) == []


def test_the_plan_refuses_a_reserved_clag_control_vlan():
    clag = copy.deepcopy(settings_for("production", "sn3700v01")["clag"])
    clag["peerlink"]["vlan"] = 3999
    assert [v for v, _ in _plan_rows(clag=clag)] == ["storage_fabric_clag.peerlink.vlan"]


def test_a_duplicate_vlan_name_is_refused_by_the_plan_and_preflight():
    vlans = [STORAGE, {"id": 200, "name": "storage"}]
    assert [v for v, _ in _plan_rows(vlans=vlans)] == ["storage_fabric_vlans[1].name"]
    site = copy.deepcopy(load_site("inventories/production"))
    for host in site.hosts("sn3700v"):
        site.hostvars[host]["storage_fabric_vlans"] = vlans
    assert [p.variable for p in rules.rule_vlans(site)] == ["storage_fabric_vlans[1].name"]


def test_one_speed_rule_for_the_plan_and_preflight():
    site = copy.deepcopy(load_site("inventories/production"))
    speeds = site.cluster("storage_fabric_speeds_gbps", "sn3700v")[0]
    assert cumulus_fabric.port_speed_problem("dgx01", "storage_nics[0].speed_gbps", 100, speeds) is None
    bad = cumulus_fabric.port_speed_problem("dgx01", "storage_nics[0].speed_gbps", 56, speeds)
    assert bad is not None and bad.severity == rules.ERROR
    site.hostvars["dgx01"]["storage_nics"][0]["speed_gbps"] = 56
    rows = rules.rule_port_speed(site)
    assert [(p.host, p.variable, p.problem) for p in rows] == [(bad.host, bad.variable, bad.problem)]


def test_vlan_1_is_refused_by_the_plan_and_preflight():
    """VLAN 1 is the default VLAN (PVID) of every port of a Cumulus bridge: the plan took it as a storage VLAN
    (1..4094), preflight's schema did not (2..4094); both refuse it now, each with one row."""
    vlans = [{**STORAGE, "id": 1}]
    bridge = {"name": "br_default", "vlan_aware": True, "pvid": 1}
    rows = [(p.variable, p.problem) for p in cumulus_fabric.vlan_problems("sn3700v01", vlans, bridge, {})]
    assert [v for v, _ in rows] == ["storage_fabric_vlans[0].id"] and "default VLAN" in rows[0][1]
    assert cumulus_fabric.vlans_by_id(vlans) == {}
    assert "storage_fabric_vlans[0].id" in [v for v, _ in _plan_rows(vlans=vlans, bridge=bridge)]
    site = copy.deepcopy(load_site("inventories/production"))
    for host in site.hosts("sn3700v"):
        site.hostvars[host]["storage_fabric_vlans"] = vlans
        site.hostvars[host]["storage_fabric_bridge"] = bridge
    found = [(p.variable, p.problem) for p in rules.collapse(rules.evaluate(site), site.groups)
             if p.variable.startswith(("storage_fabric_vlans[0].id", "storage_fabric_bridge.pvid"))]
    assert sorted(v for v, _ in found) == ["storage_fabric_bridge.pvid", "storage_fabric_vlans[0].id"], found
    assert _plan_rows(vlans=[{**STORAGE, "id": 2}], bridge={**bridge, "pvid": 2}) == []
