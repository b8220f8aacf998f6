"""module_utils/cumulus_release.py per release, and the NVUE subtree rendered in each release's keys."""

from __future__ import annotations

import pytest
from ansible.module_utils.cumulus_fabric import derive_plan
from ansible.module_utils.cumulus_release import (
    Release,
    ReleaseError,
    breakout_parts,
    breakout_syntax,
    fec_for_forced_speed,
    known,
    nvue_api_default_listen,
    nvue_apply_is_saved,
    nvue_keys,
    nvue_password_gate,
    nvue_reports_oper_status,
    parse_ports_conf,
    parse_release,
    python_version,
    release_from_lsb,
    supported_methods,
    supports_files_method_with_python,
)
from ansible.module_utils.nvue_fabric import (
    desired,
    differences,
    forced_speed_problems,
    normalise_vlans,
    oper_status,
    vlan_ids,
)

from .inventory_data import settings_for

R = parse_release


@pytest.mark.parametrize(("release", "breakout", "python", "agent_ok", "methods", "listen", "gate", "saved", "keys"), [
    ("4.2.1", "speed", (3, 7), False, ("files",), "localhost", False, False, "enable"),
    ("5.3.1", "speed", (3, 7), False, ("files", "nvue"), "localhost", False, False, "enable"),
    ("5.4.0", "lanes", (3, 7), False, ("files", "nvue"), "localhost", False, False, "enable"),
    ("5.6.0", "lanes", (3, 7), False, ("files", "nvue"), "all", True, False, "enable"),
    ("5.8.0", "lanes", (3, 7), False, ("files", "nvue"), "all", True, False, "enable"),
    ("5.9.2", "lanes", (3, 11), True, ("files", "nvue"), "all", True, True, "enable"),
    ("5.15.0", "lanes", (3, 11), True, ("files", "nvue"), "all", True, True, "state"),
])
def test_release_table(release, breakout, python, agent_ok, methods, listen, gate, saved, keys):
    r = R(release)
    assert known(r)
    assert breakout_syntax(r) == breakout
    assert python_version(r) == python
    assert supports_files_method_with_python(r) is agent_ok
    assert supported_methods(r) == methods
    if r.major >= 5:
        assert nvue_api_default_listen(r) == listen
    assert nvue_password_gate(r) is gate
    assert nvue_apply_is_saved(r) is saved
    assert nvue_keys(r).enable_key == keys
    assert nvue_reports_oper_status(r) is (r.line >= (5, 11))


def test_parse_release_and_lsb():
    assert R("Cumulus Linux 5.4.0") == Release(5, 4, 0) and str(R("5.9")) == "5.9.0"
    assert not known(R("3.7.16")) and not known(R("6.0"))
    with pytest.raises(ReleaseError):
        R("latest")
    with pytest.raises(ReleaseError, match="not Cumulus Linux"):
        release_from_lsb('DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=22.04\n')
    with pytest.raises(ReleaseError, match="not PORT=VALUE"):
        parse_ports_conf("1=4x25G\nswp2 disabled\n")


def test_breakout_parts_and_fec():
    assert breakout_parts(R("5.3"), "4x25G") == ("4x25G", None)
    assert breakout_parts(R("5.4"), "4x25G") == ("4x", "25G")
    assert breakout_parts(R("5.4"), "disabled") == ("disabled", None)
    assert fec_for_forced_speed(100, {"100": "rs", 40: "off"}) == "rs"
    assert fec_for_forced_speed(40, {"100": "rs", 40: "off"}) == "off"
    assert fec_for_forced_speed(25, {"100": "rs"}) is None


PROD = derive_plan("sn3700v01", settings_for("production", "sn3700v01", breakouts={"swp29": "4x25G"},
                                             roce={"enabled": True, "mode": "lossless"}))[0].as_dict()
FEC = {100: "rs", 40: "off", 25: "rs"}


def test_desired_in_each_release_keys():
    old = desired(PROD, R("5.3.1"), FEC, "mgmt")
    assert old["mlag"]["enable"] == "on" and old["qos"]["roce"]["enable"] == "on"
    assert old["interface"]["lo"]["ip"]["address"] == {"192.0.2.251/32": {}}
    assert old["interface"]["swp29"]["link"]["breakout"] == {"4x25G": {}} and "swp29s0" not in old["interface"]
    assert old["mlag"]["backup"] == {"192.0.2.32": {"vrf": "mgmt"}}
    assert old["interface"]["swp1"]["link"] == {"mtu": 9216, "state": {"up": {}}, "speed": "100G", "fec": "rs"}
    assert old["interface"]["swp17"]["link"]["fec"] == "off"  # the F800's 40 GbE
    new = desired(PROD, R("5.15.0"), FEC, "mgmt")
    assert new["mlag"]["state"] == "enabled" and "enable" not in new["mlag"]
    assert new["qos"]["roce"]["state"] == "enabled"
    assert new["interface"]["lo"]["ipv4"]["address"] == {"192.0.2.251/32": {}}
    assert new["interface"]["swp29"]["link"]["breakout"] == {"4x": {}}
    assert new["interface"]["swp29s3"]["link"] == {"speed": "25G", "fec": "rs"}
    firmware = desired(PROD, R("5.15.0"), FEC, "mgmt", lane_speeds=False)  # speeds left to auto-negotiation
    assert firmware["interface"]["swp29"]["link"]["breakout"] == {"4x": {}} and "swp29s3" not in firmware["interface"]


def test_forced_speed_without_fec_is_refused():
    assert forced_speed_problems(PROD, FEC, R("5.9")) == []
    problems = forced_speed_problems(PROD, {40: "off"}, R("5.9"))
    assert problems[0].startswith("swp1: speed 100G is forced but storage_fabric_port_fec has no FEC for 100")
    assert any(p.startswith("swp29 lanes: speed 25G") for p in problems)
    assert not any("lanes" in p for p in forced_speed_problems(PROD, {40: "off"}, R("5.9"), lane_speeds=False))
    assert not any("lanes" in p for p in forced_speed_problems(PROD, {40: "off"}, R("5.3")))  # 4x25G in ports.conf


def test_vlan_keys_as_typed_are_compared_as_sets():
    assert vlan_ids(["10,20,30", "40-42"]) == {10, 20, 30, 40, 41, 42}
    want = {"bridge": {"domain": {"br_default": {"untagged": 20, "vlan": {"10": {}, "20": {}, "30": {}}}}}}
    typed = {"bridge": {"domain": {"br_default": {"untagged": 20, "vlan": {"10,20,30": {}}}}}}
    assert differences(want, typed) != []  # key by key: it would PATCH on every run
    assert differences(want, normalise_vlans(typed)) == []
    ranged = {"bridge": {"domain": {"br_default": {"untagged": 20, "vlan": {"10-25": {}}}}}}
    assert differences(want, normalise_vlans(ranged)) == ["/bridge/domain/br_default/vlan/30: absent -> {}"]


def test_oper_status_by_release_shape():
    assert oper_status({"oper-status": "down", "state": {"up": {}}}) == "down"  # 5.11+
    assert oper_status({"state": {"up": {}}}) == "up"  # earlier: the operational link.state
    assert oper_status({"mtu": 9216}) is None  # neither: fail closed
