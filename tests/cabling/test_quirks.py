"""The known quirks of the formats, each read as a person reads it, and bad input refused with the file named.

The LLDP quirk documents here are built from the shapes lldpd writes (lldpd src/client/json_writer.c, its
integration test, tests/fixtures/lldp/lldpd-json-shapes/README.md); the InfiniBand lines from the real captures
(tests/fixtures/ib/real/), changed where a quirk needs it and said so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from validation.cabling import dumps, parse_ib, parse_lldp
from validation.cabling.model import CablingError

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "tests" / "fixtures" / "lldp" / "lldpd-json-shapes"
IB = ROOT / "tests" / "fixtures" / "ib" / "real"


def neighbour(name: str | None, chassis: str, port_type: str, port: str, descr: str | None = None) -> dict:
    body: dict = {"id": {"type": "mac", "value": chassis}}
    port_obj: dict = {"id": {"type": port_type, "value": port}}
    if descr:
        port_obj["descr"] = descr
    return {"via": "LLDP", "rid": "1", "chassis": {name: body} if name else body, "port": port_obj}


def ends(links):
    return [(lk.local.node, lk.local.port, lk.remote.node, lk.remote.port) for lk in links]


def test_one_interface_is_an_object():
    _, links = dumps.parse_file(SHAPES / "lldpd-test-neighbors-one-interface.json", None, "ns-1")
    # the port id is a MAC; lldpd on Linux puts the interface name in the description
    assert ends(links) == [("ns-1", "eth0", "ns-2.example.com", "eth1")]
    assert links[0].remote_info["port_subtype"] == "mac" and links[0].remote_info["port_id"] == "00:00:00:00:00:02"


def test_several_interfaces_are_a_list_and_a_port_may_have_two_neighbours():
    doc = {"lldp": {"interface": [
        {"swp1": neighbour("dgx01", "0c:42:a1:00:00:01", "mac", "0c:42:a1:00:00:01", "enp225s0f0")},
        {"swp2": neighbour("dgx03", "0c:42:a1:00:00:03", "ifname", "enp225s0f0")},
        {"swp2": neighbour("dgx04", "0c:42:a1:00:00:04", "ifname", "enp225s0f0")}]}}
    links = parse_lldp.parse(json.dumps(doc), "sn3700v01", "x.json")
    assert ends(links) == [("sn3700v01", "swp1", "dgx01", "enp225s0f0"), ("sn3700v01", "swp2", "dgx03", "enp225s0f0"),
                           ("sn3700v01", "swp2", "dgx04", "enp225s0f0")]


def test_neighbour_without_system_name_is_named_by_its_chassis_id_and_mac_port_without_description():
    doc = {"lldp": {"interface": {"swp17": neighbour(None, "00:60:16:aa:bb:cc", "mac", "00:60:16:aa:bb:cd")}}}
    link = parse_lldp.parse(json.dumps(doc), "sn3700v01")[0]
    assert ends([link]) == [("sn3700v01", "swp17", "00:60:16:aa:bb:cc", "00:60:16:aa:bb:cd")]
    assert link.remote_info["no_system_name"] == "true"


def test_json0_without_neighbours_and_json_without_interface():
    assert parse_lldp.parse('{"lldp": [{}]}', "h") == []
    assert parse_lldp.parse('{"lldp": {}}', "h") == []


def test_mau_speeds():
    assert parse_lldp.speed_of_mau("1000BaseTFD - Four-pair Category 5 UTP, full duplex mode") == "1G"
    assert parse_lldp.speed_of_mau("10GbaseT - Four-pair Category 6A or better, full duplex mode only") == "10G"
    assert parse_lldp.speed_of_mau("100BaseTXFD - 2 pair category 5 UTP, full duplex mode") == "100M"
    assert parse_lldp.speed_of_mau("unknown") is None


def test_node_descriptions():
    assert parse_ib.node_name('MF0;LG28-08:MQM8700/U1') == "LG28-08"
    assert parse_ib.node_name("selene-cache-02 mlx5_1 ") == "selene-cache-02"
    assert parse_ib.node_name("  dgx01   mlx5_3  ") == "dgx01"
    assert parse_ib.port_name("  dgx01   mlx5_3  ", 1, False) == "mlx5_3/1"
    assert parse_ib.node_name("Quantum Mellanox Technologies") == "Quantum Mellanox Technologies"
    assert parse_ib.port_name("Quantum Mellanox Technologies", 7, False) == "7"
    assert parse_ib.node_name("Mellanox Technologies Aggregation Node") == "Mellanox Technologies Aggregation Node"


def test_iblinkinfo_could_be_and_unnamed_quantum():
    # The real EDR capture's line, trained at 2X with the remark rdma-core's get_max_msg() adds (SOURCES).
    text = (IB / "iblinkinfo-edr-sb7700-2node.txt").read_text().splitlines()[:2]
    text[1] = text[1].replace("( 4X ", "( 2X ").replace('"MF0;SB7700:MSB7700/U1" ( )',
                                                          '"Quantum Mellanox Technologies" ( Could be 4X )')
    link = parse_ib.parse_iblinkinfo("\n".join(text) + "\n", "x")[0]
    assert ends([link]) == [("n02", "HCA-1/1", "Quantum Mellanox Technologies", "17")]
    assert (link.width, link.speed, link.could_be) == ("2x", "EDR", {"width": "4x"})
    line = ('0xf452140300f55051 "              ib-test-7 mlx4_0"     37    1[  ] ==( 4X       14.0625 Gbps '
            'Active/  LinkUp)==>  0xf45214030067c630      5   16[  ] "MF0;switch-e1be74:SX6036/U1" '
            '( Could be 53.125 Gbps)')
    link = parse_ib.parse_iblinkinfo(line, "line-mode")[0]
    assert ends([link]) == [("ib-test-7", "mlx4_0/1", "switch-e1be74", "16")]
    assert (link.speed, link.could_be) == ("FDR", {"speed": "HDR"})


# ------------------------------------------------------------------------------------------------ bad input

SMALL = (IB / "ibnetdiscover-ufm-lab-small.txt").read_text()
LEAF = (ROOT / "tests/fixtures/lldp/real/cumulus-4.2.1-leaf01-net-show-lldp.json").read_text()
LINKINFO = (IB / "iblinkinfo-edr-sb7700-2node.txt").read_text()

BAD = {
    "lldp-empty": ("lldp", "", "empty"),
    "lldp-truncated": ("lldp", LEAF[: len(LEAF) // 2], "not complete JSON"),
    "lldp-interleaved": ("lldp", LEAF + LEAF, "not complete JSON"),
    "lldp-two-objects-in-one": ("lldp", '{"lldp": [{}], "lldp": []}', "appears twice"),
    "lldp-garbage": ("lldp", '{"hello": 1}', "without an 'lldp' key"),
    "ib-empty": ("ibnetdiscover", " \n", "empty"),
    "ib-truncated-line": ("ibnetdiscover", SMALL[: SMALL.index("4xFDR10") + 3], "no width and speed"),
    "ib-truncated-blocks": ("ibnetdiscover", SMALL[: SMALL.index("vendid=0x2c9\ndevid=0x1017")], "cut off"),
    "ib-interleaved": ("ibnetdiscover", SMALL + SMALL, "second 'Topology file' header"),
    "ib-garbage": ("ibnetdiscover", SMALL.replace("vendid=0x2c9", "<html>", 1), "not ibnetdiscover output"),
    "iblinkinfo-garbage": ("iblinkinfo", LINKINFO + "Segmentation fault (core dumped)\n", "not iblinkinfo output"),
    "iblinkinfo-cut": ("iblinkinfo", LINKINFO[: LINKINFO.index("==>") + 12], "far end is not understood"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_an_error_naming_the_file(case, tmp_path):
    fmt, text, words = BAD[case]
    path = tmp_path / f"{case}.out"
    path.write_text(text)
    with pytest.raises(CablingError) as err:
        dumps.parse_file(path, fmt, "sn3700v01")
    assert str(path) in str(err.value) and words in str(err.value)


def test_undetectable_and_unknown_files(tmp_path):
    for text, words in (("", "empty file"), ("hello world\n", "not a dump this command reads")):
        path = tmp_path / "x.txt"
        path.write_text(text)
        with pytest.raises(CablingError, match=words):
            dumps.parse_file(path)
    with pytest.raises(CablingError, match="does not name its own host"):
        dumps.parse_file(ROOT / "tests/fixtures/lldp/real/cumulus-4.2.1-leaf01-net-show-lldp.json")
    gz = tmp_path / "cut.gz"
    gz.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(CablingError, match="does not decompress"):
        dumps.parse_file(gz)


def test_cli_parse_bad_input_exits_2_naming_the_file(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(LEAF[:100])
    out = subprocess.run([sys.executable, "-m", "validation", "cabling", "parse", "--local", "leaf01", str(path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert str(path) in json.loads(out.stdout)["errors"][0]
