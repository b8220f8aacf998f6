"""The NFS server choice has one home (dgx_nfs.select_server): the role's plan (library/dgx_nfs_plan.py) and
preflight's rule_server_mapping call it for the static and round_robin modes, so a bad static map entry is
refused by both, in the same words. Preflight keeps what spans features (a mapped NIC across the CLAG peerlink,
map entries for hosts that are no DGX) and names a missing entry on the map, as it always has."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from ansible.module_utils import dgx_nfs
from ansible.module_utils import preflight_rules as rules


def _set_everywhere(site: Any, name: str, change: Any) -> None:
    """Change `name` for every host that has it and at group level (as group_vars/all would). Hosts may share one
    value object (preflight resolves a group value once): each object is changed once."""
    seen: set[int] = set()
    for values in [site.allvars, *site.hostvars.values()]:
        if name in values and callable(change):
            if id(values[name]) not in seen:
                seen.add(id(values[name]))
                change(values[name])
        elif name in values:
            values[name] = copy.deepcopy(change)


def _both(site: Any, host: str, mode: str = "static") -> tuple[list[Any], list[Any]]:
    nodes = [(h, [dict(n) for n in site.var(h, "storage_nics")]) for h in site.hosts("powerscale")]
    _, plan = dgx_nfs.select_server(mode, host, site.hosts("dgx"), site.var(host, "nfs_server_map"), nodes, None)
    preflight = [p for p in rules.rule_server_mapping(site) if p.variable.startswith(("nfs_server_map", "nfs_server_mode"))]
    return plan, preflight


@pytest.mark.parametrize(("key", "value"), [("nic", "eth9"), ("node", "f800-9")])
def test_a_bad_map_entry_is_one_rule(production, key, value):
    site = copy.deepcopy(production)
    _set_everywhere(site, "nfs_server_map", lambda v: v["dgx03"].update({key: value}))
    plan, preflight = _both(site, "dgx03")
    assert [p.variable for p in plan] == [f"nfs_server_map.dgx03.{key}"]
    assert [(p.host, p.variable, p.problem, p.fix) for p in preflight] == [("all", p.variable, p.problem, p.fix)
                                                                           for p in plan]


def test_a_missing_entry_is_named_at_the_key_by_the_plan_and_at_the_map_by_preflight(production):
    site = copy.deepcopy(production)
    _set_everywhere(site, "nfs_server_map", lambda v: v.pop("dgx03"))
    plan, preflight = _both(site, "dgx03")
    assert [p.variable for p in plan] == ["nfs_server_map.dgx03"]
    assert [(p.host, p.variable, p.value, p.problem) for p in preflight] == [
        ("all", "nfs_server_map", "dgx03: (not set)", plan[0].problem)]


def test_round_robin_without_a_powerscale_address_is_one_rule(production):
    site = copy.deepcopy(production)
    _set_everywhere(site, "nfs_server_mode", "round_robin")
    assert _both(site, "dgx01", "round_robin") == ([], [])
    for host in site.hosts("powerscale"):
        site.hostvars[host]["storage_nics"] = []
    plan, preflight = _both(site, "dgx01", "round_robin")
    assert [p.variable for p in plan] == ["nfs_server_mode"]
    assert {(p.variable, p.problem) for p in preflight} == {("nfs_server_mode", plan[0].problem)}


def test_a_node_that_is_not_a_name_is_a_row_not_a_crash(production):
    site = copy.deepcopy(production)
    _set_everywhere(site, "nfs_server_map", lambda v: v["dgx02"].update(node=["f800-1"]))
    plan, preflight = _both(site, "dgx02")
    assert [p.variable for p in plan] == ["nfs_server_map.dgx02.node"]
    assert [p.variable for p in preflight] == ["nfs_server_map.dgx02.node"]


def test_preflight_keeps_the_peerlink_warning_and_the_unused_entry(production):
    site = copy.deepcopy(production)
    _set_everywhere(site, "nfs_server_map", lambda v: (v["dgx03"].update(nic="40gige-2"),
                                                       v.update(dgx09={"node": "f800-1", "nic": "40gige-1"})))
    plan, _ = _both(site, "dgx03")
    assert plan == []  # a valid entry for the plan: the peerlink is the storage fabric's, not the NFS client's
    found = {(p.variable, p.severity) for p in rules.rule_server_mapping(site)}
    assert {("nfs_server_map.dgx03.nic", rules.WARNING), ("nfs_server_map.dgx09", rules.WARNING)} <= found
