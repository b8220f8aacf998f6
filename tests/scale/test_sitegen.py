"""validation/sitegen.py: generated sites pass preflight's inventory rules at every size, and a generated site
with one injected defect fails them, naming the host and variable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ansible.module_utils import preflight_rules as rules
from ansible.module_utils.inventory_problem import ERROR

from tests.preflight.preflight_sites import load_site
from validation import cli, sitegen


def errors(site: Any) -> list[Any]:
    return [p for p in rules.evaluate(site) if p.severity == ERROR]


@pytest.mark.parametrize("dgx", [4, 16, 64, 140])
def test_generated_site_passes_preflight(dgx: int, tmp_path: Path) -> None:
    site = sitegen.generate(dgx, sitegen.default_f800(dgx))
    sitegen.write(site, tmp_path)
    loaded = load_site(str(tmp_path))
    assert len(loaded.hosts("dgx")) == dgx
    assert not errors(loaded)


def test_layout_grows_switches_with_the_site() -> None:
    small, large = sitegen.layout(4, 4), sitegen.layout(140, 140)
    assert small.sn3700v == ("sn3700v01", "sn3700v02") and small.qm8700 == ("qm8700-01", "qm8700-02")
    assert len(large.pairs) > 1 and len(large.leaves) == 56 and len(large.spines) == 28
    # every port of the storage map used once, within the pattern's host ports
    cables = sitegen.storage_cables(large)
    ports = [(c.switch, c.port) for c in cables]
    assert len(ports) == len(set(ports)) == 140 + 2 * 140
    limit = sitegen.host_ports(len(large.pairs))
    assert all(int(port.removeprefix("swp")) <= limit for _, port in ports)


def test_compute_cable_map_pattern() -> None:
    for dgx in (4, 10, 20, 140):
        shape = sitegen.layout(dgx, sitegen.default_f800(dgx))
        cables = sitegen.compute_cable_map(shape)
        assert len(cables) == 8 * dgx
        assert len({(c.switch, c.port) for c in cables}) == len(cables), "one HCA per switch port"
        assert {c.switch for c in cables} <= set(shape.qm8700)
    shape = sitegen.layout(140, 140)
    rails = {c.switch: set() for c in sitegen.compute_cable_map(shape)}
    for c in sitegen.compute_cable_map(shape):
        rails[c.switch].add(c.rail)
    assert all(len(r) == 1 for r in rails.values()), "rail-optimised: a leaf holds one rail"
    links = sitegen.spine_links(shape)
    assert len({(s, p) for _, _, s, p in links}) == len(links) == 56 * 20
    assert max(int(p.split("/")[1]) for _, _, _, p in links) == 40


def test_sizes_the_pattern_cannot_hold_are_refused() -> None:
    with pytest.raises(sitegen.LayoutError, match="252"):
        sitegen.layout(140, 300)
    with pytest.raises(sitegen.LayoutError, match="2000"):
        sitegen.layout(0, 4)


def test_cli_writes_a_site(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["site", "generate", "--dgx", "6", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "hosts.yml").is_file() and (tmp_path / "group_vars/all/secrets.yml").is_file()
    assert '"dgx": 6' in capsys.readouterr().out
    assert cli.main(["site", "generate", "--dgx", "6", "--f800", "2", "--out", str(tmp_path)]) == 2


def hosts(files: dict[str, Any], group: str) -> dict[str, Any]:
    return files["hosts.yml"]["all"]["children"][group]["hosts"]


def same_port(files: dict[str, Any]) -> None:
    dgx = hosts(files, "dgx")
    dgx["dgx03"]["storage_nics"][0]["switch_port"] = dgx["dgx01"]["storage_nics"][0]["switch_port"]


def same_address(files: dict[str, Any]) -> None:
    dgx = hosts(files, "dgx")
    dgx["dgx05"]["storage_nics"][0]["address"] = dgx["dgx04"]["storage_nics"][0]["address"]


def two_masters(files: dict[str, Any]) -> None:
    hosts(files, "qm8700")["qm8700-leaf-003"]["qm8700_sm_role"] = "master"


def mount_missing_node(files: dict[str, Any]) -> None:
    files["group_vars/all/nfs_client.yml"]["nfs_server_map"]["dgx07"] = {"node": "f800-99", "nic": "40gige-1"}


def ipoib_duplicate(files: dict[str, Any]) -> None:
    dgx = hosts(files, "dgx")
    dgx["dgx11"]["ib_ipoib_address"] = dgx["dgx10"]["ib_ipoib_address"]


def pair_same_sys_mac(files: dict[str, Any]) -> None:
    switches = hosts(files, "sn3700v")
    mac = switches["sn3700v-01"]["storage_fabric_clag"]["sys_mac"]
    for name in ("sn3700v-03", "sn3700v-04"):  # the second pair takes the first pair's MAC
        switches[name]["storage_fabric_clag"]["sys_mac"] = mac


def peer_missing(files: dict[str, Any]) -> None:
    hosts(files, "sn3700v")["sn3700v-04"]["sn3700v_clag_backup_ip"] = "10.0.99.99"


def too_few_ib_ports(files: dict[str, Any]) -> None:
    hosts(files, "qm8700")["qm8700-01"]["qm8700_ports"][0]["range"] = "1/1-1/20"  # 60 ports for 80 HCAs


# (defect, dgx, f800, host, variable) : each a site that passes without the defect (the parametrised test above
# covers the sizes; 11 DGX are past the two-switch IB pattern, and with 32 F800 need two storage pairs)
DEFECTS: dict[str, tuple[Callable[[dict[str, Any]], None], int, int, str, str]] = {
    "storage-port-twice": (same_port, 11, 12, "dgx03", "storage_nics[0].switch_port"),
    "storage-address-twice": (same_address, 11, 12, "dgx05", "storage_nics[0].address"),
    "sm-two-masters": (two_masters, 11, 12, "qm8700-leaf-003", "qm8700_sm_role"),
    "mount-unknown-node": (mount_missing_node, 11, 12, "all", "nfs_server_map.dgx07"),
    "ipoib-address-twice": (ipoib_duplicate, 11, 12, "dgx11", "ib_ipoib_address"),
    "clag-pairs-share-sys-mac": (pair_same_sys_mac, 11, 32, "sn3700v-03", "storage_fabric_clag.sys_mac"),
    "clag-peer-missing": (peer_missing, 11, 32, "sn3700v-01", "storage_fabric_clag.enabled"),
    "ib-ports-short": (too_few_ib_ports, 10, 12, "qm8700-01", "qm8700_ports"),
}


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_generated_site_with_one_defect_fails(name: str, tmp_path: Path) -> None:
    mutate, dgx, f800, host, variable = DEFECTS[name]
    site = sitegen.generate(dgx, f800)
    sitegen.write(site, tmp_path, mutate)
    found = errors(load_site(str(tmp_path)))
    assert found, f"{name}: preflight passed a site with the defect"
    rows = [(p.host, p.variable) for p in found]
    assert any(h == host and v.startswith(variable) for h, v in rows), f"{name}: expected {host} {variable}, got {rows}"


def test_sm_role_none_runs_no_sm_and_stays_out_of_the_election() -> None:
    from ansible.module_utils import mlnxos_fabric

    switches = {"a": {"role": "master", "priority": 15}, "b": {"role": "standby", "priority": 14},
                "c": {"role": "none", "priority": 0}, "d": {"role": "none", "priority": 0}}
    assert mlnxos_fabric.sm_pair_problems(switches) == []
    assert mlnxos_fabric.declared_from_inventory({"qm8700_sm_role": "none"}, "c")["sm"]["enabled"] is False
    _, errors = mlnxos_fabric.check_desired({"sm": {"enabled": True, "role": "none"}})
    assert [e.option for e in errors] == ["sm.enabled"]
    only_none = {"c": {"role": "none", "priority": 0}}
    assert [p.variable for p in mlnxos_fabric.sm_pair_problems(only_none)] == ["qm8700_sm_role"], "no master"


def test_clag_pairs_by_backup_ip() -> None:
    switches = {s: {"address": a, "backup_ip": b} for s, a, b in
                (("s1", "10.0.0.1", "10.0.0.2"), ("s2", "10.0.0.2", "10.0.0.1"),
                 ("s3", "10.0.0.3", "10.0.0.4"), ("s4", "10.0.0.4", "10.0.0.3"))}
    assert rules.clag_pairs(switches) == [("s1", "s2"), ("s3", "s4")]
    switches["s4"]["backup_ip"] = "10.0.0.1"
    assert rules.clag_pairs(switches) is None


def test_a_port_used_whole_and_broken_out_is_found_through_its_cage(production: Any) -> None:
    """rule_switch_cabling indexes cables by front-panel port (linear at scale); the mix is still refused."""
    import copy

    site = copy.deepcopy(production)
    site.hostvars["dgx03"]["storage_nics"][0].update(switch="sn3700v01", switch_port="swp1s0")
    rows = [(p.host, p.problem) for p in rules.rule_switch_cabling(site)]
    assert any(h == "dgx03" and "used both whole and broken out" in why and "dgx01" in why for h, why in rows), rows
