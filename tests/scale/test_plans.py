"""Day 2 scale plans (module_utils/scale_plan.py): the shared objects only grow on a scale-out and lose only the
leaving nodes on a scale-in, on an old and a new inventory; the request, in-use and QM8700 refusals; idempotence."""

from __future__ import annotations

import copy

import pytest
from ansible.module_utils.cumulus_fabric import derive_plan
from ansible.module_utils.scale_plan import (
    ib_commands_problems,
    in_use_problems,
    list_plan,
    node_request_problems,
    switch_plan_growth,
)

from tests.fabric_sn3700v.inventory_data import settings_for

PRODUCTION_GROUPS = {"dgx": ["dgx01", "dgx02", "dgx03", "dgx04"], "powerscale": ["f800-1", "f800-2", "f800-3", "f800-4"],
                     "sn3700v": ["sn3700v01", "sn3700v02"], "qm8700": ["qm8700-01", "qm8700-02"]}


# ---- set-valued lists: export clients, pool interfaces ----

def test_add_only_adds_and_keeps_every_client_already_there():
    plan = list_plan(["198.51.100.11", "10.0.0.0/8"], ["198.51.100.11", "198.51.100.12"], "add")
    assert plan.after == ["198.51.100.11", "10.0.0.0/8", "198.51.100.12"]
    assert plan.added == ["198.51.100.12"] and plan.removed == [] and plan.changed


def test_remove_only_removes_the_given_clients():
    plan = list_plan(["198.51.100.11", "198.51.100.12", "10.0.0.0/8"], ["198.51.100.12", "198.51.100.99"], "remove")
    assert plan.after == ["198.51.100.11", "10.0.0.0/8"] and plan.removed == ["198.51.100.12"]
    assert plan.added == []


@pytest.mark.parametrize("mode", ["add", "remove"])
def test_a_plan_applied_twice_changes_nothing_the_second_time(mode):
    first = list_plan([(1, "40gige-1"), (2, "40gige-1")], [(3, "40gige-1"), (2, "40gige-1")], mode)
    second = list_plan(first.after, [(3, "40gige-1"), (2, "40gige-1")], mode)
    assert first.changed and not second.changed and second.after == first.after


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="replace"):
        list_plan([], [], "replace")


# ---- the request ----

def test_a_known_new_node_is_a_valid_request():
    assert node_request_problems(["dgx04"], "scale_out_nodes", PRODUCTION_GROUPS) == []
    assert node_request_problems(["dgx04", "f800-4"], "scale_out_nodes", PRODUCTION_GROUPS) == []


@pytest.mark.parametrize("names, expected", [
    ([], "names no node"),
    (["dgx09"], "dgx09 | is not a host of group dgx or powerscale"),
    (["sn3700v01"], "sn3700v01 | is not a host of group dgx or powerscale"),
    (["dgx04", "dgx04"], "is named 2 times"),
    (["dgx01", "dgx02", "dgx03", "dgx04"], "none would stay in production"),
])
def test_a_bad_request_is_refused_naming_variable_value_and_fix(names, expected):
    problems = node_request_problems(names, "scale_out_nodes", PRODUCTION_GROUPS)
    assert any(expected in p for p in problems), problems
    assert all(p.startswith("localhost | scale_out_nodes |") for p in problems)
    assert all(len(p.split(" | ")) == 5 for p in problems), "host | variable | value | problem | fix"


# ---- in use, fail closed ----

IDLE = {"mounted": [], "busy": [], "containers": []}


def test_an_idle_node_is_not_in_use():
    assert in_use_problems("dgx04", IDLE) == []


@pytest.mark.parametrize("probe, expected", [
    ({**IDLE, "mounted": ["/mnt/training"]}, "/mnt/training | mounted on the node"),
    ({**IDLE, "busy": [{"pid": 4242, "comm": "python3", "mount_point": "/mnt/training"}]},
     "4242 (python3) on /mnt/training"),
    ({**IDLE, "containers": ["docker:0123abcd"]}, "docker:0123abcd | are running"),
])
def test_a_node_in_use_is_named_with_what_uses_it(probe, expected):
    problems = in_use_problems("dgx04", probe)
    assert len(problems) == 1 and expected in problems[0] and problems[0].startswith("dgx04 |")


@pytest.mark.parametrize("probe", [
    None,
    "",
    {"failed": True, "msg": "cannot read /proc/77/fd: Permission denied"},
    {"unreachable": True, "msg": "ssh: connect to host 192.0.2.14 port 22: No route to host"},
    {"mounted": [], "busy": []},
    {"mounted": [], "busy": None, "containers": []},
])
def test_a_probe_that_did_not_answer_counts_as_in_use(probe):
    assert in_use_problems("dgx04", probe), "a node whose use cannot be checked must be left alone"


# ---- the SN3700V plans, from an old and a new inventory ----

def _without(settings: dict, *hosts: str) -> dict:
    out = copy.deepcopy(settings)
    out["nics_by_host"] = {h: n for h, n in out["nics_by_host"].items() if h not in hosts}
    return out


@pytest.mark.parametrize("inventory, switch, node, port", [
    ("production", "sn3700v02", "dgx04", "swp2"),
    ("production", "sn3700v01", "dgx03", "swp2"),
    ("lab", "sn3700v01", "dgx02", "swp2"),
])
def test_adding_a_node_only_adds_its_port(inventory, switch, node, port):
    new = settings_for(inventory, switch)
    old_plan, old_problems = derive_plan(switch, _without(new, node))
    new_plan, new_problems = derive_plan(switch, new)
    assert old_problems == [] and new_problems == []
    added, problems = switch_plan_growth(switch, old_plan.as_dict(), new_plan.as_dict(), [node])
    assert problems == []
    assert [(p["name"], p["host"]) for p in added] == [(port, node)]
    # every port of the old plan is in the new one, unchanged
    old_ports = {p["name"]: p for p in old_plan.as_dict()["ports"]}
    assert all(new_port == old_ports[name] for name, new_port in
               ((p["name"], p) for p in new_plan.as_dict()["ports"]) if name in old_ports)
    assert set(old_plan.owned_interfaces()) < set(new_plan.owned_interfaces())


def test_a_switch_the_new_node_is_not_cabled_to_gains_nothing():
    new = settings_for("production", "sn3700v01")
    old_plan, _ = derive_plan("sn3700v01", _without(new, "dgx04"))
    new_plan, _ = derive_plan("sn3700v01", new)
    added, problems = switch_plan_growth("sn3700v01", old_plan.as_dict(), new_plan.as_dict(), ["dgx04"])
    assert added == [] and problems == []


def test_the_plan_with_the_node_applied_again_adds_nothing():
    plan, _ = derive_plan("sn3700v02", settings_for("production", "sn3700v02"))
    assert switch_plan_growth("sn3700v02", plan.as_dict(), plan.as_dict(), ["dgx04"]) == ([], [])


def test_an_existing_port_that_would_change_is_refused():
    new = settings_for("production", "sn3700v02")
    new["nics_by_host"] = copy.deepcopy(new["nics_by_host"])
    new["nics_by_host"]["dgx02"][0]["mtu"] = 1500  # an edit of a production node's cable, not an addition
    new["nics_by_host"]["dgx02"][0]["speed_gbps"] = 25
    old_plan, _ = derive_plan("sn3700v02", _without(settings_for("production", "sn3700v02"), "dgx04"))
    new_plan, _ = derive_plan("sn3700v02", new)
    _, problems = switch_plan_growth("sn3700v02", old_plan.as_dict(), new_plan.as_dict(), ["dgx04"])
    assert any("swp1" in p and "an existing port would change" in p for p in problems), problems


def test_a_new_port_of_a_node_outside_the_request_is_refused():
    new = settings_for("production", "sn3700v02")
    old_plan, _ = derive_plan("sn3700v02", _without(new, "dgx04", "dgx02"))
    new_plan, _ = derive_plan("sn3700v02", new)
    added, problems = switch_plan_growth("sn3700v02", old_plan.as_dict(), new_plan.as_dict(), ["dgx04"])
    assert [p["host"] for p in added] == ["dgx04"]
    assert any("dgx02" in p and "not being added or removed" in p for p in problems), problems


def test_a_fabric_setting_that_changes_with_the_request_is_refused():
    old = _without(settings_for("production", "sn3700v02"), "dgx04")
    new = settings_for("production", "sn3700v02", port_mtu=9000)
    old_plan, _ = derive_plan("sn3700v02", old)
    new_plan, _ = derive_plan("sn3700v02", new)
    _, problems = switch_plan_growth("sn3700v02", old_plan.as_dict(), new_plan.as_dict(), ["dgx04"])
    assert any("storage_fabric (mtu)" in p for p in problems), problems


def test_removing_a_node_is_the_mirror_image():
    full = settings_for("production", "sn3700v02")
    with_plan, _ = derive_plan("sn3700v02", full)
    without_plan, _ = derive_plan("sn3700v02", _without(full, "dgx04"))
    removed, problems = switch_plan_growth("sn3700v02", without_plan.as_dict(), with_plan.as_dict(), ["dgx04"])
    assert problems == [] and [p["name"] for p in removed] == ["swp2"]
    assert "swp2" not in without_plan.owned_interfaces() and "swp1" in without_plan.owned_interfaces()


# ---- QM8700: only port additions are sent ----

def test_adding_ports_passes():
    assert ib_commands_problems("qm8700-01", ["interface ib 1/17", "speed hdr force", "description DGX",
                                              "no shutdown", "exit"]) == []


@pytest.mark.parametrize("commands, expected", [
    (["ib sm sm-priority 3"], "ib sm sm-priority 3 | is not a port command"),
    (["ib partition Default member all type full"], "is not a port command"),
    (["interface ib 1/1", "shutdown", "exit"], "interface ib 1/1: shutdown"),
    (["interface ib 1/2", "no description", "exit"], "interface ib 1/2: no description"),
])
def test_anything_but_adding_ports_is_refused(commands, expected):
    problems = ib_commands_problems("qm8700-01", commands)
    assert any(expected in p for p in problems), problems
