"""Pure functions of module_utils/mlnxos_fabric: validation, parsing of both MLNX-OS table layouts, planning."""

from __future__ import annotations

import pytest
from ansible.module_utils import mlnxos_fabric as fabric

from .conftest import compute_fabric_vars


def desired_from_inventory(**changes):
    cf = compute_fabric_vars()
    params = {"hostname": "qm8700-01", "sm": {"enabled": True, "priority": 15, "role": "master"},
              "ports": cf["qm8700_ports"], "partitions": cf["qm8700_partitions"],
              "ntp_servers": cf["qm8700_ntp_servers"], "syslog_servers": cf["qm8700_syslog_servers"]}
    params.update(changes)
    return fabric.check_desired(params)


def live_state(**changes) -> fabric.LiveState:
    ports = {f"1/{n}": fabric.LivePort(f"1/{n}", True, ["hdr"], "DGX A100 compute HCAs", "qsfp", False, None, None)
             for n in range(1, 41)}
    live = fabric.LiveState(hostname="qm8700-01", version="3.9.0606", sm_enabled=True, sm_priority=15,
                            sm_state="master", sm_running=True, sm_ha_role="master",
                            sm_node_priorities={"qm8700-01": 15}, system_profile="ib", ports=ports,
                            partitions={"Default": fabric.LivePartition("Default", 0x7FFF, True, "4K")},
                            ntp_enabled=True, ntp_servers=["192.0.2.123"], syslog_servers=["192.0.2.124"])
    for key, value in changes.items():
        setattr(live, key, value)
    return live


def test_lab_inventory_is_valid_and_expands_sixteen_hdr_ports():
    desired, errors = desired_from_inventory()
    assert errors == []
    assert [c.cage for c in desired.cages] == [f"1/{n}" for n in range(1, 17)]
    assert {p.speed for c in desired.cages for p in c.ports} == {"hdr"}
    assert desired.partitions == [fabric.PartitionSpec("Default", 0x7FFF, True, "4K")]


@pytest.mark.parametrize(("ports", "option", "needle"), [
    ([{"range": "1/1-1/50"}], "ports[0].range", "1/41"),
    ([{"range": "eth1/1"}], "ports[0].range", "not a port range"),
    ([{"range": "1/4-1/2"}], "ports[0].range", "backwards"),
    ([{"range": "1/1", "speed": "400g"}], "ports[0].speed", "not an InfiniBand speed"),
    ([{"range": "1/1", "split": 4}], "ports[0].split", "split mode"),
    ([{"range": "1/1", "speed": "hdr100"}], "ports[0].speed", "only on a split port"),
    ([{"range": "1/1-1/2"}, {"range": "1/2"}], "ports[1].range", "declared twice"),
])
def test_bad_ports_are_named_with_value_and_fix(ports, option, needle):
    _, errors = desired_from_inventory(ports=ports)
    assert len(errors) == 1, errors
    assert errors[0].option == option and needle in errors[0].problem + errors[0].render()
    rendered = errors[0].render({"ports": "qm8700_ports"})
    assert rendered.startswith("qm8700_" + option) and "Fix:" in rendered


@pytest.mark.parametrize(("partition", "needle"), [
    ({"name": "Default", "pkey": "0x8000"}, "outside 0x0001..0x7fff"),
    ({"name": "Default", "pkey": "0x0002"}, "always has pkey 0x7fff"),
    ({"name": "storage", "pkey": "0x7fff"}, "reserved for the Default"),
    ({"name": "storage", "pkey": "12z"}, "not a hexadecimal"),
    ({"name": "Default", "pkey": "0x7fff", "ipoib_mtu": 9000}, "IPoIB MTU"),
    ({"name": "bad name", "pkey": "0x2"}, "not a partition name"),
])
def test_bad_partitions(partition, needle):
    _, errors = desired_from_inventory(partitions=[partition])
    assert len(errors) == 1 and needle in errors[0].problem, errors


def test_duplicate_pkey_and_every_error_at_once():
    _, errors = desired_from_inventory(
        partitions=[{"name": "a", "pkey": "0x10"}, {"name": "b", "pkey": "0x0010"}],
        ports=[{"range": "1/99"}], ntp_servers=["not-an-ip"], sm={"enabled": True, "priority": 16})
    options = sorted(e.option for e in errors)
    assert options == ["ntp_servers[0]", "partitions[1].pkey", "ports[0].range", "sm.priority"]


def test_sm_pair_rules():
    assert fabric.check_sm_pair({"a": {"role": "master", "priority": 15}, "b": {"role": "standby", "priority": 14}}) == []
    two = fabric.check_sm_pair({"a": {"role": "master", "priority": 15}, "b": {"role": "master", "priority": 14}})
    assert len(two) == 1 and "2 switches are 'master' (a, b)" in two[0] and "Fix:" in two[0]
    outranked = fabric.check_sm_pair({"a": {"role": "master", "priority": 10}, "b": {"role": "standby", "priority": 12}})
    assert len(outranked) == 1 and "not below the master a's 10" in outranked[0]
    peers = fabric.peers_from_param([["a", "master", "15"], ["b", "standby", 14]])
    assert peers == {"a": {"role": "master", "priority": 15}, "b": {"role": "standby", "priority": 14}}


def test_no_op_plan_is_empty():
    desired, _ = desired_from_inventory()
    assert fabric.plan(desired, live_state()).commands == []


def test_plan_sends_only_the_difference_priority_before_enable():
    desired, _ = desired_from_inventory()
    live = live_state(sm_enabled=False, sm_priority=0, ntp_enabled=False)
    live.ports["1/3"] = fabric.LivePort("1/3", True, ["edr"], "DGX A100 compute HCAs", "qsfp", False, None, None)
    assert fabric.plan(desired, live).commands == [
        "ntp enable", "ib sm sm-priority 15", "ib sm", "interface ib 1/3", "speed hdr force", "exit"]


def test_plan_split_shuts_ports_before_module_type_and_configures_subports():
    desired, errors = desired_from_inventory(
        ports=[{"range": "1/20", "speed": "hdr100", "split": "2", "description": "x"}])
    assert errors == []
    commands = fabric.plan(desired, live_state(system_profile="ib split-ready")).commands
    assert commands == [
        "interface ib 1/20", "shutdown", "exit", "interface ib 1/20 module-type qsfp-split-2 force",
        "interface ib 1/20/1", "speed hdr force", 'description "x"', "no shutdown", "exit",
        "interface ib 1/20/2", "speed hdr force", 'description "x"', "no shutdown", "exit"]


def test_a_split_subport_the_switch_does_not_list_is_configured_not_a_crash():
    """Only 1/20/1 of the split 1/20 is listed: 1/20/2 is set as declared (AttributeError before; found by mypy)."""
    desired, errors = desired_from_inventory(
        ports=[{"range": "1/20", "speed": "hdr100", "split": "2", "description": "x"}])
    assert errors == []
    live = live_state(system_profile="ib split-ready")
    del live.ports["1/20"]
    live.ports["1/20/1"] = fabric.LivePort("1/20/1", True, ["hdr"], "x", "qsfp-split-2", False, None, None)
    commands = fabric.plan(desired, live).commands
    assert commands == ["interface ib 1/20/2", "speed hdr force", 'description "x"', "no shutdown", "exit"]


def test_a_split_without_the_split_ready_profile_is_a_problem_naming_the_prerequisite():
    desired, _ = desired_from_inventory(ports=[{"range": "1/20", "speed": "hdr100", "split": "2"}])
    result = fabric.plan(desired, live_state(system_profile="ib"))
    assert result.commands == [] and len(result.problems) == 1
    assert "not split-ready" in result.problems[0] and "system profile ib split-ready" in result.problems[0]
    assert "reboots the switch" in result.problems[0]


def test_a_rename_sets_the_sm_priority_again_under_the_new_node_name():
    desired, _ = desired_from_inventory(hostname="qm8700-a")
    result = fabric.plan(desired, live_state())
    assert result.commands == ["hostname qm8700-a", "ib sm sm-priority 15"]
    renamed = live_state(hostname="qm8700-a", sm_node_priorities={"qm8700-01": 15, "qm8700-a": 15})
    again = fabric.plan(desired, renamed)
    assert again.commands == [] and again.unmanaged == {"sm_nodes": ["qm8700-01"]}


@pytest.mark.parametrize("speed", ["ddr", "fdr10", "DDR"])
def test_speeds_a_qm8700_does_not_support_are_refused_with_the_supported_list(speed):
    _, errors = desired_from_inventory(ports=[{"range": "1/1", "speed": speed}])
    assert len(errors) == 1 and errors[0].option == "ports[0].speed"
    assert "not a speed a QM8700 port supports" in errors[0].problem and "sdr, qdr, fdr, edr, hdr" in errors[0].fix


def test_unmanaged_partitions_and_servers_are_kept_unless_purge():
    desired, _ = desired_from_inventory()
    live = live_state(ntp_servers=["192.0.2.123", "192.0.2.200"])
    live.partitions["storage"] = fabric.LivePartition("storage", 0x10, False, "2K")
    result = fabric.plan(desired, live)
    assert result.commands == []
    assert result.unmanaged == {"ntp_servers": ["192.0.2.200"], "partitions": ["storage"]}
    desired.purge = True
    assert fabric.plan(desired, live).commands == ["no ntp server 192.0.2.200"]


def test_pkey_change_of_a_live_partition_is_refused():
    desired, _ = desired_from_inventory(partitions=[{"name": "storage", "pkey": "0x20"}])
    live = live_state()
    live.partitions["storage"] = fabric.LivePartition("storage", 0x10, False, "2K")
    result = fabric.plan(desired, live)
    assert result.problems and "not 0x0020" in result.problems[0]


def test_parse_both_table_layouts_and_the_one_line_sm_output():
    block = {"Logical port state": "Active", "Physical port state": "LinkUp", "Speed": "HDR",
             "Current line rate": "200.0 Gbps", "Description": "N\\A"}
    dict_layout = {"IB1/1": [block]}
    list_layout = [{"header": "IB1/1", **block}]
    assert fabric.parse_ib_interfaces(dict_layout) == fabric.parse_ib_interfaces(list_layout)
    port = fabric.parse_ib_interfaces(dict_layout)["1/1"]
    assert port.oper_up and port.speed == "hdr" and port.line_rate_gbps == 200.0
    assert fabric.parse_sm("enable") is True and fabric.parse_sm({"value": ["disable"]}) is False
    for bad in ({"SM Status": "enable", "SM Priority": "15"}, {"value": ["maybe"]}, {"value": ["a", "b"]}):
        with pytest.raises(fabric.ParseError):
            fabric.parse_sm(bad)
    with pytest.raises(fabric.ParseError):
        fabric.parse_ib_interfaces({})
    with pytest.raises(fabric.ParseError, match="Logical port state"):
        fabric.parse_ib_interfaces([{"header": "IB1/1", "Admin state": "Enabled", "Operational state": "Up"}])


def test_verify_flags_a_link_below_the_declared_speed_and_the_wrong_sm_state():
    desired, _ = desired_from_inventory()
    live = live_state(sm_state="standby")
    live.ports["1/2"] = fabric.LivePort("1/2", True, ["hdr"], "DGX A100 compute HCAs", "qsfp", True, "hdr", 100.0)
    mismatches = fabric.verify(desired, live, "master")
    assert any("line rate 100 Gb/s, expected 200 Gb/s" in m for m in mismatches)
    assert any("is 'standby'" in m and "designed 'master'" in m for m in mismatches)
    assert fabric.verify(desired, live_state(), "master") == []


def test_new_partition_is_created_with_only_what_differs_from_its_defaults():
    desired, errors = desired_from_inventory(partitions=[
        {"name": "Default", "pkey": "0x7fff", "ipoib": True, "ipoib_mtu": 4092},
        {"name": "storage", "pkey": "0x0010", "ipoib": False},
        {"name": "ipoib2", "pkey": "0x0011", "ipoib": True, "ipoib_mtu": 2044}])
    assert errors == []
    assert fabric.plan(desired, live_state()).commands == [
        "ib partition storage pkey 0x0010 force",
        "ib partition ipoib2 pkey 0x0011 force", "ib partition ipoib2 ipoib force", "ib partition ipoib2 mtu 2K force"]


def test_undo_puts_back_each_accepted_command_from_the_state_read_before():
    live = live_state(ports={"1/1": fabric.LivePort("1/1", False, ["sdr", "qdr", "fdr", "edr", "hdr"], "", "qsfp",
                                                    False, None, None)},
                      sm_enabled=False, sm_priority=0, ntp_enabled=False, ntp_servers=[], syslog_servers=["192.0.2.9"])
    accepted = ["hostname qm8700-02", "ntp server 192.0.2.123", "no logging 192.0.2.9", "ntp enable",
                "ib sm sm-priority 14", "ib sm", "interface ib 1/1", "speed hdr force",
                'description "DGX A100 compute HCAs"', "no shutdown", "exit",
                "ib partition storage pkey 0x0002 force", "ib partition storage ipoib force",
                "ib partition Default mtu 2K force", "interface ib 1/2"]
    undo = fabric.undo_commands(accepted, live)
    assert undo.not_undoable == [] and undo.left_in_interface
    # the refusal came inside `interface ib 1/2` (nothing in it accepted): no block for it, the flag says so
    assert undo.commands == [
        "ib partition Default mtu 4K force", "no ib partition storage force",
        "interface ib 1/1", "shutdown", "no description", "speed sdr qdr fdr edr hdr force", "exit",
        "no ib sm", "ib sm sm-priority 0", "no ntp enable", "logging 192.0.2.9", "no ntp server 192.0.2.123",
        "hostname qm8700-01"]


def test_undo_reports_what_has_no_inverse():
    undo = fabric.undo_commands(["interface ib 1/20 module-type qsfp-split-2 force", "ib sm sm-priority 14"],
                                live_state(sm_priority=None))
    assert undo.not_undoable == ["interface ib 1/20 module-type qsfp-split-2 force", "ib sm sm-priority 14"]
    assert undo.commands == []
