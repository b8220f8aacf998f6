"""The project's Cumulus/NVUE parsers on real outputs (tests/fixtures/cumulus/real/, sources in SOURCES there).

Every file of the corpus is read by the parser the role uses for that output, and must come out right: the
release from lsb-release and NVUE /system, the revision state (flat or nested under the revision id) and the
switch's own issue text, revision ids, breakout values per release syntax, and clagctl's CLAG status (peer alive,
role, backup link) judged by the same compare() the files method's verify uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.module_utils.cumulus_fabric import derive_plan
from ansible.module_utils.cumulus_live import compare, vlans_by_port
from ansible.module_utils.cumulus_release import (
    Release,
    breakout_syntax,
    breakout_value_syntax,
    parse_ports_conf,
    ports_conf_value,
    release_from_lsb,
    release_from_nvue_system,
)
from ansible.module_utils.nvue_client import NvueClient, error_text, revision_state

REAL = Path(__file__).resolve().parents[1] / "fixtures/cumulus/real"


def text(name: str) -> str:
    return (REAL / name).read_text()


def test_every_file_is_described_in_sources_and_parsed_here():
    sources = text("SOURCES")
    files = sorted(p.name for p in REAL.iterdir() if p.name != "SOURCES")
    assert files, "empty corpus"
    assert [f for f in files if f not in sources] == []
    assert [f for f in files if f not in PARSED] == [], "a corpus file no test reads"


@pytest.mark.parametrize(("name", "release"), [("lsb-release-4.2.0.txt", Release(4, 2, 0)),
                                               ("net-show-version-4.4.0.txt", Release(4, 4, 0))])
def test_release_from_lsb_release(name, release):
    assert release_from_lsb(text(name)) == release


def test_release_from_nvue_system():
    assert release_from_nvue_system(json.loads(text("nvue-5.9-get-system.json"))) == Release(5, 4, 0)
    api = json.loads(text("nvue-5.9-get-system-api.json"))
    assert api["port"] == 8888 and "localhost" in api["listening-address"]


@pytest.mark.parametrize(("name", "revision", "state"), [
    ("nvue-5.1-revision-apply.json", "x", "apply"),
    ("nvue-5.1-revision-applied.json", "x", "applied"),
    ("nvue-5.1-revision-invalid.json", "x", "invalid"),
    ("nvue-5.1-revision-ays-fail-nested.json", "changeset/cumulus/2021-11-02_16.09.18_5Z1K", "ays_fail"),
    ("nvue-5.9-revision-apply.json", "1", "apply"),
    ("nvue-5.9-revision-applied.json", "1", "applied"),
])
def test_revision_states_flat_and_nested(name, revision, state):
    info = revision_state(revision, json.loads(text(name)))
    assert info["state"] == state
    if state == "invalid":
        assert error_text(info) == ("Config invalid at router.bgp.enable: BGP requires router-id to be set globally "
                                    "or in the VRF.\n")
    if state == "ays_fail":
        assert error_text(info) == "Timeout while waiting for client response"
        assert info["transition"]["progress"] == "Aborted apply after warnings"


@pytest.mark.parametrize(("name", "revision"), [("nvue-5.1-post-revision.json",
                                                 "changeset/cumulus/2021-11-02_16.09.18_5Z1K"),
                                                ("nvue-5.9-post-revision.json", "1")])
def test_revision_ids_from_post(name, revision):
    client = NvueClient("https://192.0.2.1:8765", lambda method, url, body: (200, json.loads(text(name))))
    assert client.create_revision() == revision


def test_loopback_addresses_answer():
    assert "99.99.99.99/32" in json.loads(text("nvue-5.1-get-lo-ip-address.json"))


@pytest.mark.parametrize(("name", "release"), [("ports.conf-4.2-breakout.txt", Release(4, 2, 1)),
                                               ("ports.conf-5.4-breakout.txt", Release(5, 4, 0))])
def test_ports_conf_breakouts_in_the_release_syntax(name, release):
    ports = parse_ports_conf(text(name))
    assert ports["swp2"] == "disabled"
    assert breakout_value_syntax(ports["swp1"]) == breakout_syntax(release)
    assert ports["swp1"] == ports_conf_value(release, "4x25G")  # what the role writes for a 4x25G breakout


@pytest.mark.parametrize(("name", "role", "backup"), [("clag-json-4.2.1-leaf01-suzieq.json", "primary", "10.0.0.12"),
                                                      ("clag-json-4.2.1-leaf02-suzieq.json", "secondary", "10.0.0.11")])
def test_clag_status_of_a_real_pair(name, role, backup):
    clag = json.loads(text(name))
    plan = derive_plan("leaf", {
        "method": "files", "nics_by_host": {}, "port_mtu": 9216, "vlans": [{"id": 13, "name": "v13"}],
        "bridge": {"name": "bridge", "vlan_aware": True, "pvid": 13}, "clag_role": role, "clag_priority": 100,
        "clag_backup_ip": backup, "clag": {"enabled": True, "sys_mac": "44:39:39:ff:40:94",
                                           "peerlink": {"bond": "peerlink", "members": ["swp49"], "vlan": 4094}},
    })[0].as_dict()
    mismatches = compare(plan, [], [], None, clag, require_link_up=False)
    assert not [m for m in mismatches if "CLAG" in m or "clagctl" in m], mismatches
    clag["status"]["backupActive"] = False
    assert any("CLAG backup link" in m for m in compare(plan, [], [], None, clag, require_link_up=False))


def test_bridge_vlan_json_of_ifupdown2_switch_tests():
    trunk = vlans_by_port(json.loads(text("bridge-vlan-show-j-ifupdown2-bridge1.json")))
    assert set(trunk) == {"swp_AA_", "swp_BB_", "bridge"}
    assert sorted(trunk["swp_AA_"]) == list(range(1, 21)) and trunk["swp_AA_"][1] == {"PVID", "Egress Untagged"}
    assert trunk["swp_BB_"][20] == set()
    access = vlans_by_port(json.loads(text("bridge-vlan-show-j-ifupdown2-bridge_access.json")))
    assert access["vxlan500"] == {500: {"PVID", "Egress Untagged"}} and access["br0"] == {1: {"PVID", "Egress Untagged"}}


PARSED = {
    "bridge-vlan-show-j-ifupdown2-bridge1.json", "bridge-vlan-show-j-ifupdown2-bridge_access.json",
    "clag-json-4.2.1-leaf01-suzieq.json", "clag-json-4.2.1-leaf02-suzieq.json", "lsb-release-4.2.0.txt",
    "net-show-version-4.4.0.txt", "ports.conf-4.2-breakout.txt", "ports.conf-5.4-breakout.txt",
    "nvue-5.1-post-revision.json", "nvue-5.1-revision-apply.json", "nvue-5.1-revision-applied.json",
    "nvue-5.1-get-lo-ip-address.json", "nvue-5.1-revision-invalid.json", "nvue-5.1-revision-ays-fail-nested.json",
    "nvue-5.9-post-revision.json", "nvue-5.9-revision-apply.json", "nvue-5.9-revision-applied.json",
    "nvue-5.9-get-system.json", "nvue-5.9-get-system-api.json",
}
