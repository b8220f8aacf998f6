"""The CLAG pair's rules live with the SN3700V feature (cumulus_fabric.clag_pair_problems); preflight's rule_clag
gives it the inventory's group. (The role's plan sees one switch and takes groups of more than one pair, so it
checks only each switch's own CLAG settings: derive_plan.)"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from ansible.module_utils import cumulus_fabric
from ansible.module_utils import preflight_rules as rules


def pair(site: Any) -> dict[str, dict[str, Any]]:
    return {s: {"role": site.var(s, "sn3700v_clag_role"), "priority": site.var(s, "sn3700v_clag_priority"),
                "backup_ip": site.var(s, "sn3700v_clag_backup_ip"), "address": site.var(s, "ansible_host")}
            for s in site.hosts("sn3700v")}


def test_the_production_pair_passes(production):
    assert rules.rule_clag(production) == []
    assert cumulus_fabric.clag_pair_problems(production.cluster("storage_fabric_clag", "sn3700v")[0],
                                             pair(production)) == []


@pytest.mark.parametrize(("var", "value", "problem"), [
    ("sn3700v_clag_priority", 1000, "equal to sn3700v01's priority"),
    ("sn3700v_clag_role", "primary", "no switch of the CLAG pair is secondary"),
    ("sn3700v_clag_backup_ip", "192.0.2.32", "points at the switch itself"),
])
def test_a_wrong_pair_is_one_row_on_the_switch_that_is_wrong(production, var, value, problem):
    site = copy.deepcopy(production)
    site.hostvars["sn3700v02"][var] = value
    rows = [(p.host, p.variable, p.problem) for p in rules.rule_clag(site)]
    assert rows == [("sn3700v02", var, problem)]
    clag = site.cluster("storage_fabric_clag", "sn3700v")[0]
    assert [(p.host, p.variable, p.problem) for p in cumulus_fabric.clag_pair_problems(clag, pair(site))] == rows


def test_clag_off_wants_every_switch_standalone(production):
    clag = {**production.cluster("storage_fabric_clag", "sn3700v")[0], "enabled": False}
    rows = cumulus_fabric.clag_pair_problems(clag, pair(production))
    assert [(p.host, p.variable) for p in rows] == [("sn3700v01", "sn3700v_clag_role"), ("sn3700v02", "sn3700v_clag_role")]
