"""`cabling parse` reads every real capture (tests/fixtures/{lldp,ib}/real/, SOURCES) to what a person reads in it."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from validation.cabling import dumps

ROOT = Path(__file__).resolve().parents[2]
LLDP = ROOT / "tests" / "fixtures" / "lldp" / "real"
IB = ROOT / "tests" / "fixtures" / "ib" / "real"
SELENE = IB / "ibnetdiscover-selene-dgx-a100-compute.txt"


def rows(path: Path, local: str | None = None) -> list[tuple[str, str, str, str]]:
    _, links = dumps.parse_file(path, None, local)
    return [(link.local.node, link.local.port, link.remote.node, link.remote.port) for link in links]


def test_every_real_fixture_has_an_expectation():
    real = {p.name for p in [*LLDP.iterdir(), *IB.iterdir()] if p.name != "SOURCES" and "fdb" not in p.name}
    assert real == set(LLDP_EXPECTED) | set(IB_EXPECTED) | {SELENE.name}


LLDP_EXPECTED = {
    "cumulus-4.2.1-spine01-net-show-lldp.json": [
        ("spine01", "swp1", "leaf01", "swp1"), ("spine01", "swp2", "leaf02", "swp1"),
        ("spine01", "swp3", "leaf03", "swp1"), ("spine01", "swp4", "leaf04", "swp1"),
        ("spine01", "swp5", "exit02", "swp1"), ("spine01", "swp6", "exit01", "swp1")],
    "cumulus-4.2.1-leaf01-net-show-lldp.json": [
        ("leaf01", "swp1", "spine01", "swp1"), ("leaf01", "swp2", "spine02", "swp1"),
        ("leaf01", "swp3", "leaf02", "swp3"), ("leaf01", "swp4", "leaf02", "swp4")],
    "cumulus-4.3.0-leaf01-net-show-lldp.json": [
        ("leaf01", "swp1", "spine01", "swp1"), ("leaf01", "swp2", "spine02", "swp1"),
        ("leaf01", "swp3", "leaf02", "swp3"), ("leaf01", "swp4", "leaf02", "swp4")],
    "cumulus-3.7.9-exit01-net-show-lldp.json": [
        ("exit01", "swp1", "spine01", "swp6"), ("exit01", "swp2", "spine02", "swp6"),
        ("exit01", "swp5", "edge01", "eth1"), ("exit01", "swp6", "internet", "swp1")],
    "cumulus-4.3.0-internet-net-show-lldp-none.json": [],
    # lldpd 1.0.16 on the lab's Debian 12 VMs (SOURCES): several interfaces as a list, Linux hosts' port id a MAC
    # with the interface name as description; one interface as an object; the same table as json0
    "lldpd-1.0.16-sn3700v01-lldpctl-json.json": [
        ("sn3700v01", "swp1", "dgx01", "storage0"), ("sn3700v01", "swp2", "dgx02", "storage0"),
        ("sn3700v01", "swp9", "powerscale01", "storage0")],
    "lldpd-1.0.16-dgx01-lldpctl-json.json": [("dgx01", "storage0", "sn3700v01", "swp1")],
    "lldpd-1.0.16-dgx01-lldpcli-json0.json": [("dgx01", "storage0", "sn3700v01", "swp1")],
}


@pytest.mark.parametrize("name", sorted(LLDP_EXPECTED))
def test_cumulus_net_show_lldp_json(name):
    local = name.split("-")[2]
    assert rows(LLDP / name, local) == LLDP_EXPECTED[name]


def test_lldp_remote_details_and_speed():
    _, links = dumps.parse_file(LLDP / "cumulus-4.2.1-leaf01-net-show-lldp.json", None, "leaf01")
    peer = links[2]
    assert peer.remote_info == {"chassis_id": "52:54:00:f5:60:b5", "chassis_subtype": "mac", "port_subtype": "ifname",
                                "port_id": "swp3", "port_descr": "swp3"}
    assert peer.speed == "1G"   # "1000BaseTFD - Four-pair Category 5 UTP, full duplex mode"
    _, exit01 = dumps.parse_file(LLDP / "cumulus-3.7.9-exit01-net-show-lldp.json", None, "exit01")
    assert exit01[2].remote.node == "edge01" and exit01[2].speed is None   # an Ubuntu host: no MAU sent


IB_EXPECTED = {
    "ibnetdiscover-ufm-lab-small.txt": [
        ("r-ufm-sw95", "3", "r-ufm-sw226", "1", "4x", "FDR"),
        ("r-ufm-sw95", "23", "r-dcs96", "HCA-1/1", "4x", "EDR"),
        ("r-ufm-sw95", "24", "r-dcs96", "HCA-2/1", "4x", "EDR"),
        ("r-ufm-sw95", "41", "Mellanox Technologies Aggregation Node", "1", "4x", "HDR"),
        ("r-ufm-sw226", "3", "r-dmz-ufm128", "HCA-1/1", "4x", "FDR"),
        ("r-ufm-sw226", "5", "r-dmz-ufm128", "HCA-2/1", "4x", "FDR"),
        ("r-ufm-sw226", "8", "r-dmz-ufm134", "HCA-1/1", "4x", "FDR"),
        ("r-ufm-sw226", "9", "r-dmz-ufm134", "HCA-2/1", "4x", "FDR"),
        ("r-ufm-sw226", "19", "r-dcs96", "HCA-3/1", "4x", "FDR"),
        ("r-ufm-sw226", "20", "r-dcs96", "HCA-4/1", "4x", "FDR"),
        ("r-ufm-sw226", "25", "r-ufm-sw226", "26", "4x", "FDR10"),
        ("r-ufm-sw226", "28", "r-ufm-sw226", "29", "4x", "FDR"),
        ("r-ufm-sw226", "30", "r-dmz-ufm137", "HCA-2/1", "4x", "FDR"),
        ("r-ufm-sw226", "31", "r-dmz-ufm137", "HCA-1/1", "4x", "FDR"),
        ("r-ufm-sw226", "33", "r-dmz-ufm131", "HCA-1/1", "4x", "FDR"),
        ("r-ufm-sw226", "34", "r-dmz-ufm131", "HCA-2/1", "4x", "FDR")],
    "iblinkinfo-edr-sb7700-2node.txt": [
        ("n02", "HCA-1/1", "SB7700", "17", "4x", "EDR"),
        ("mgt", "mlx5_0/1", "SB7700", "36", "4x", "EDR"),
        ("SB7700", "18", "n01", "HCA-1/1", "4x", "EDR")],
    "iblinkinfo-qdr-unnamed-switch.txt": [
        ("centos-data-200", "HCA-1/1", "Infiniscale-IV Mellanox Technologies", "3", "4x", "QDR"),
        ("centos-data-201", "HCA-1/1", "Infiniscale-IV Mellanox Technologies", "2", "4x", "QDR"),
        ("centos-data-202", "HCA-1/1", "Infiniscale-IV Mellanox Technologies", "1", "4x", "QDR"),
        ("kube-node-100", "HCA-1/1", "Infiniscale-IV Mellanox Technologies", "4", "4x", "QDR")],
}


@pytest.mark.parametrize("name", sorted(IB_EXPECTED))
def test_infiniband_dumps(name):
    _, links = dumps.parse_file(IB / name)
    got = [(lk.local.node, lk.local.port, lk.remote.node, lk.remote.port, lk.width, lk.speed) for lk in links]
    assert got == IB_EXPECTED[name]


def test_small_fabric_marks_the_aggregation_node_internal_only():
    _, links = dumps.parse_file(IB / "ibnetdiscover-ufm-lab-small.txt")
    assert [lk.local.port for lk in links if lk.internal] == ["41"]


def test_selene_dgx_a100_compute_fabric():
    fmt, links = dumps.parse_file(SELENE)
    assert fmt == "ibnetdiscover"
    assert len(links) == 12852
    assert sum(lk.internal for lk in links) == 666          # one SHARP aggregation node per QM8700, port 41
    assert Counter((lk.width, lk.speed) for lk in links) == {("4x", "HDR"): 12852}
    switches = {e.node for lk in links for e in (lk.local, lk.remote) if not ("/" in e.port or lk.internal)}
    assert len(switches) == 666 and {"MLG01-02", "LG28-08", "CSPINE4-71"} <= switches
    # each link once: no (node, port) appears on two links
    ends = Counter((e.node, e.port) for lk in links if not lk.internal for e in (lk.local, lk.remote))
    assert max(ends.values()) == 1
    # what the dump's first CA lines say: luna-0541 mlx5_9 on LG28-08 port 1; a trailing space trimmed
    as_set = {(lk.local.node, lk.local.port, lk.remote.node, lk.remote.port) for lk in links}
    assert ("LG28-08", "1", "luna-0541", "mlx5_9/1") in as_set
    assert ("MLG01-02", "2", "selene-cache-02", "mlx5_1/1") in as_set
    assert ("MLG01-02", "1", "selene-swift-01", "HCA-2/1") in as_set
    # 458 DGX A100 compute nodes (luna-NNNN), each with its 8 compute HCAs (mlx5_0-3, 6-9) cabled once
    luna = Counter(e.node for lk in links for e in (lk.local, lk.remote) if e.node.startswith("luna-"))
    hcas = {e.port for lk in links for e in (lk.local, lk.remote) if e.node.startswith("luna-")}
    assert hcas == {f"mlx5_{i}/1" for i in (0, 1, 2, 3, 6, 7, 8, 9)}
    assert set(luna.values()) == {8} and len(luna) == 458


def test_gzip_is_read_the_same(tmp_path):
    src = IB / "ibnetdiscover-ufm-lab-small.txt"
    gz = tmp_path / "small.txt.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    assert rows(gz) == rows(src)


def test_cli_parse_contract():
    out = subprocess.run([sys.executable, "-m", "validation", "cabling", "parse", str(IB / IB_NAME)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["format"] == "iblinkinfo"
    assert doc["links"][0] == {"local": {"node": "n02", "port": "HCA-1/1"},
                               "remote": {"node": "SB7700", "port": "17", "description": "MF0;SB7700:MSB7700/U1"},
                               "width": "4x", "speed": "EDR"}
    out = subprocess.run([sys.executable, "-m", "validation", "cabling", "parse", "--local", "leaf01",
                          str(LLDP / "cumulus-4.2.1-leaf01-net-show-lldp.json")], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    doc = json.loads(out.stdout)
    assert doc["format"] == "lldp"
    assert doc["links"][0]["remote"] == {"node": "spine01", "port": "swp1", "chassis_id": "52:54:00:27:7b:e2",
                                         "chassis_subtype": "mac", "port_subtype": "ifname", "port_id": "swp1",
                                         "port_descr": "swp1"}


IB_NAME = "iblinkinfo-edr-sb7700-2node.txt"
