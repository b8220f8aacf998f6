"""The QM8700's inventory rules have one home (mlnxos_fabric.inventory_problems, sm_pair_problems): the role's
input check and preflight (rule_hca_ports, rule_subnet_manager) call the same functions."""

from __future__ import annotations

import copy
from typing import Any

from ansible.module_utils import mlnxos_fabric as fabric
from ansible.module_utils import preflight_rules as rules

from .conftest import compute_fabric_vars


def declared(**changes: Any) -> dict[str, Any]:
    cf = compute_fabric_vars()
    hostvars = {**{k: v for k, v in cf.items() if k.startswith("qm8700_")}, "qm8700_sm_role": "master",
                "qm8700_sm_priority": 15, **changes}
    return fabric.declared_from_inventory(hostvars, "qm8700-01")


def test_inventory_problems_pass_the_lab_values_and_name_the_inventory_variable():
    assert fabric.inventory_problems("qm8700-01", declared()) == []
    rows = fabric.inventory_problems("qm8700-01", declared(qm8700_partitions=[
        {"name": "a", "pkey": "0x10"}, {"name": "b", "pkey": "0x0010"}]))
    assert [(p.host, p.variable) for p in rows] == [("qm8700-01", "qm8700_partitions[1].pkey")]


def test_sm_pair_distinct_priorities_master_highest():
    assert fabric.sm_pair_problems({"a": {"role": "master", "priority": 15},
                                    "b": {"role": "standby", "priority": 14}}) == []
    # Two standbys with one priority: OpenSM breaks the tie by the lower port GUID (hardware, not the inventory).
    tie = fabric.sm_pair_problems({"a": {"role": "master", "priority": 15}, "b": {"role": "standby", "priority": 14},
                                   "c": {"role": "standby", "priority": 14}})
    assert [(p.host, p.variable) for p in tie] == [("c", "qm8700_sm_priority")]
    low = fabric.sm_pair_problems({"a": {"role": "master", "priority": 10}, "b": {"role": "standby", "priority": 12}})
    assert [(p.host, p.variable) for p in low] == [("a", "qm8700_sm_priority")]
    none = fabric.sm_pair_problems({"a": {"role": "standby", "priority": 10}, "b": {"role": "standby", "priority": 12}})
    assert [(p.host, p.variable) for p in none] == [("qm8700", "qm8700_sm_role")]


def test_preflight_reports_a_duplicate_pkey_through_the_same_function(production):
    site = copy.deepcopy(production)
    assert rules.rule_hca_ports(site) == []
    for host in site.hosts("qm8700"):
        site.hostvars[host]["qm8700_partitions"] = [{"name": "a", "pkey": "0x10"}, {"name": "b", "pkey": "0x10"}]
    found = rules.collapse(rules.rule_hca_ports(site), site.groups)
    assert [(p.host, p.variable) for p in found] == [("qm8700", "qm8700_partitions[1].pkey")]


def test_preflight_reports_one_row_for_a_port_the_schema_does_not_judge(production):
    site = copy.deepcopy(production)
    for host in site.hosts("qm8700"):
        site.hostvars[host]["qm8700_ports"] = [*site.hostvars[host]["qm8700_ports"], {"range": "1/1", "speed": "hdr"}]
    found = rules.collapse(rules.rule_hca_ports(site), site.groups)
    assert any(p.variable.startswith("qm8700_ports[") and "declared twice" in p.problem for p in found), found
