"""The check: each designed cable OK / MISWIRED / MISSING / DEGRADED, observed extras UNEXPECTED, on real dumps
and on the production plan; and `cabling check`'s contract (one entry per cable, a summary, exit 0 only when all
are OK)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from validation.cabling import check, dumps, parse_lldp, plan
from validation.cabling.model import Cable, End, Link

ROOT = Path(__file__).resolve().parents[2]
IB = ROOT / "tests" / "fixtures" / "ib" / "real"
LLDP = ROOT / "tests" / "fixtures" / "lldp" / "real"
SELENE = IB / "ibnetdiscover-selene-dgx-a100-compute.txt"


@pytest.fixture(scope="module")
def selene():
    return dumps.parse_file(SELENE)[1]


def plan_of(links):
    return [Cable(lk.local, lk.remote, lk.speed, lk.width) for lk in links if not lk.internal]


def swapped(cables, i, j):
    out = list(cables)
    out[i] = Cable(cables[i].a, cables[j].b, cables[i].speed, cables[i].width)
    out[j] = Cable(cables[j].a, cables[i].b, cables[j].speed, cables[j].width)
    return out


def test_selene_as_designed_is_all_ok(selene):
    report = check.check(plan_of(selene), selene)
    assert report.passed
    assert report.summary()["OK"] == 12186 and report.summary()["internal"] == 666


def test_selene_two_cables_swapped_are_exactly_the_two_miswired(selene):
    cables = plan_of(selene)
    i = next(k for k, c in enumerate(cables) if c.a.node == "LG28-08" and c.a.port == "1")
    j = next(k for k, c in enumerate(cables) if c.a.node == "LG28-08" and c.a.port == "2")
    report = check.check(swapped(cables, i, j), selene)
    bad = [v for v in report.entries if v.status != check.OK]
    assert [(v.a, v.b, v.status) for v in bad] == [
        (End("LG28-08", "1"), End("luna-0542", "mlx5_9/1"), "MISWIRED"),
        (End("LG28-08", "2"), End("luna-0541", "mlx5_9/1"), "MISWIRED")]
    assert bad[0].reason == "LG28-08 1 goes to luna-0541 mlx5_9/1; luna-0542 mlx5_9/1 goes to LG28-08 2"
    assert not report.passed


def test_cli_check_on_the_largest_dump_with_two_cables_swapped(selene, tmp_path):
    cables = plan_of(selene)
    path = tmp_path / "plan.yml"
    path.write_text(plan.to_yaml(swapped(cables, 100, 5000)))
    out = subprocess.run([sys.executable, "-m", "validation", "cabling", "check", "--plan", str(path),
                          "--observed", str(SELENE)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert len(doc["cables"]) == len(cables)
    assert doc["summary"]["MISWIRED"] == 2 and doc["summary"]["OK"] == len(cables) - 2
    miswired = [c for c in doc["cables"] if c["status"] == "MISWIRED"]
    assert [(c["a"], c["b"]) for c in miswired] == [(cables[100].a.to_dict(), cables[5000].b.to_dict()),
                                                    (cables[5000].a.to_dict(), cables[100].b.to_dict())]


def test_degraded_width_and_speed_and_missing():
    small = dumps.parse_file(IB / "ibnetdiscover-ufm-lab-small.txt")[1]
    cables = plan_of(small)
    # the design wants HDR at 4x on r-dcs96's EDR HCAs, and a cable on an empty port
    cables[1] = Cable(cables[1].a, cables[1].b, "HDR", "4x")
    cables.append(Cable(End("r-ufm-sw95", "30"), End("r-dcs96", "HCA-5/1"), "HDR", "4x"))
    report = check.check(cables, small)
    status = {(v.a.node, v.a.port): (v.status, v.reason) for v in report.entries}
    assert status[("r-ufm-sw95", "23")] == ("DEGRADED", "speed EDR, designed HDR")
    assert status[("r-ufm-sw95", "30")][0] == "MISSING"
    # the self-loops are in the plan here (planned from the dump), so OK; unplanned they are UNEXPECTED
    unplanned = [c for c in plan_of(small) if c.a.node != c.b.node]
    loops = [v for v in check.check(unplanned, small).entries if v.status == "UNEXPECTED"]
    assert [(str(v.a), str(v.b), v.reason) for v in loops] == [
        ("r-ufm-sw226 25", "r-ufm-sw226 26", "a self-loop: both ends on one node"),
        ("r-ufm-sw226 28", "r-ufm-sw226 29", "a self-loop: both ends on one node")]


def test_iblinkinfo_two_x_is_degraded_with_could_be():
    text = (IB / "iblinkinfo-edr-sb7700-2node.txt").read_text().replace(
        '( 4X      25.78125 Gbps Active/  LinkUp)==>       2   17[  ] "MF0;SB7700:MSB7700/U1" ( )',
        '( 2X      25.78125 Gbps Active/  LinkUp)==>       2   17[  ] "MF0;SB7700:MSB7700/U1" ( Could be 4X )')
    links = dumps.parse(text, "iblinkinfo", "x")[1]
    verdict = check.check([Cable(End("n02", "HCA-1/1"), End("SB7700", "17"), "EDR", "4x")], links).verdicts[0]
    assert (verdict.status, verdict.reason) == ("DEGRADED", "width 2x, designed 4x; iblinkinfo: could be 4x")


# ------------------------------------------------------------------------------------------------ Ethernet

def lldp_doc(neighbours: dict[str, list[tuple[str | None, str, str, str]]]) -> str:
    """lldpctl -f json of a switch: port -> [(system name, chassis MAC, port id type, port id)]."""
    items = []
    for port, peers in neighbours.items():
        for name, mac, kind, pid in peers:
            body = {"id": {"type": "mac", "value": mac}}
            items.append({port: {"chassis": {name: body} if name else body,
                                 "port": {"id": {"type": kind, "value": pid}}}})
    return json.dumps({"lldp": {"interface": items}})


@pytest.fixture(scope="module")
def production_plan():
    return plan.design(plan.load_view(["inventories/common", "inventories/production"]))


def storage_only(cables):
    return [c for c in cables if c.b.node.startswith("sn3700v") or c.a.node.startswith("sn3700v")]


def mac(node: str) -> str:
    return f"02:00:00:00:{len(node):02x}:{sum(map(ord, node)) % 256:02x}"


def as_wired(cables, changes=None):
    """The two switches' LLDP dumps for a storage cabling, with `changes` {(switch, port): [neighbours]}."""
    tables: dict[str, dict[str, list]] = {"sn3700v01": {}, "sn3700v02": {}}
    for c in cables:
        if c.a.node.startswith("sn3700v"):    # peerlink: each side sees the other
            tables[c.a.node][c.a.port] = [(c.b.node, "44:38:39:00:00:02", "ifname", c.b.port)]
            tables[c.b.node][c.b.port] = [(c.a.node, "44:38:39:00:00:01", "ifname", c.a.port)]
        else:
            tables[c.b.node][c.b.port] = [(c.a.node, mac(c.a.node), "ifname", c.a.port)]
    for (switch, port), peers in (changes or {}).items():
        tables[switch][port] = peers
    return [lk for s, t in tables.items() for lk in parse_lldp.parse(lldp_doc(t), s, f"{s}.json")]


def test_production_storage_as_designed(production_plan):
    cables = storage_only(production_plan)
    assert len(cables) == 14     # 4 DGX + 8 F800 NICs + 2 peerlink members
    report = check.check(cables, as_wired(cables))
    assert report.passed, [v.to_dict() for v in report.entries if v.status != "OK"]


def test_two_dgx_storage_cables_swapped_name_designed_and_actual_ports(production_plan):
    cables = storage_only(production_plan)
    links = as_wired(cables, {("sn3700v01", "swp1"): [("dgx03", mac("dgx03"), "ifname", "enp225s0f0")],
                              ("sn3700v01", "swp2"): [("dgx01", mac("dgx01"), "ifname", "enp225s0f0")]})
    report = check.check(cables, links)
    bad = {str(v.a): v.reason for v in report.entries if v.status != "OK"}
    assert bad == {"dgx01 enp225s0f0": "dgx01 enp225s0f0 goes to sn3700v01 swp2; sn3700v01 swp1 goes to dgx03 "
                                       "enp225s0f0",
                   "dgx03 enp225s0f0": "dgx03 enp225s0f0 goes to sn3700v01 swp1; sn3700v01 swp2 goes to dgx01 "
                                       "enp225s0f0"}


def test_dgx_on_the_other_switch_missing_cable_and_unexpected(production_plan):
    cables = storage_only(production_plan)
    # dgx01's cable moved from sn3700v01 swp1 to sn3700v02 swp5 (its traffic would cross the peerlink)
    links = as_wired(cables, {("sn3700v01", "swp1"): [],
                              ("sn3700v02", "swp5"): [("dgx01", mac("dgx01"), "ifname", "enp225s0f0")],
                              ("sn3700v01", "swp18"): [],
                              ("sn3700v02", "swp9"): [("f800-3", mac("f800-3"), "ifname", "40gige-9")]})
    report = check.check(cables, links)
    got = {(str(v.a), v.status) for v in report.entries if v.status != "OK"}
    assert got == {("dgx01 enp225s0f0", "MISWIRED"), ("f800-2 40gige-1", "MISSING"),
                   ("sn3700v02 swp9", "UNEXPECTED")}
    verdict = next(v for v in report.entries if str(v.a) == "dgx01 enp225s0f0")
    assert verdict.reason == "dgx01 enp225s0f0 goes to sn3700v02 swp5; sn3700v01 swp1 goes to nothing"


def test_two_neighbours_on_a_port_and_the_default_hostname(production_plan):
    cables = storage_only(production_plan)
    links = as_wired(cables, {
        ("sn3700v01", "swp2"): [("dgx03", mac("dgx03"), "ifname", "enp225s0f0"),
                                ("dgx04", mac("dgx04"), "ifname", "enp225s0f0")]})
    report = check.check(cables, links)
    verdict = next(v for v in report.entries if str(v.a) == "dgx03 enp225s0f0")
    assert verdict.status == "MISWIRED" and "more than one neighbour on one port" in verdict.reason
    # both switches still called "cumulus": the peerlink cannot be told apart, and a warning says so
    peer = [c for c in cables if c.a.node == "sn3700v01"]
    links = [*parse_lldp.parse(lldp_doc({"swp31": [("cumulus", "44:38:39:00:00:02", "ifname", "swp31")],
                                         "swp32": [("cumulus", "44:38:39:00:00:02", "ifname", "swp32")]}),
                               "sn3700v01"),
             *parse_lldp.parse(lldp_doc({"swp31": [("cumulus", "44:38:39:00:00:01", "ifname", "swp31")]}),
                               "sn3700v02")]
    report = check.check(peer, links)
    assert {v.status for v in report.entries} == {"MISWIRED"}
    assert report.warnings == ["system name 'cumulus' is used by 2 chassis (44:38:39:00:00:01, 44:38:39:00:00:02): "
                               "rename them"]


def test_port_by_mac_and_speed_degraded():
    cable = Cable(End("dgx01", "enp225s0f0"), End("sn3700v01", "swp1"), "100G")
    by_mac = Link(End("sn3700v01", "swp1"), End("dgx01", "0c:42:a1:aa:bb:01"), "lldp", "s.json", speed="40G",
                  remote_info={"chassis_id": "0c:42:a1:aa:bb:00", "port_subtype": "mac"})
    verdict = check.check([cable], [by_mac]).verdicts[0]
    assert (verdict.status, verdict.reason) == ("DEGRADED", "speed 40G, designed 100G")
    other_mac = {("dgx01", "enp225s0f0"): "0c:42:a1:aa:bb:02"}
    assert check.check([cable], [by_mac], host_macs=other_mac).verdicts[0].status == "MISWIRED"
    right_mac = {("dgx01", "enp225s0f0"): "0C:42:A1:AA:BB:01"}
    ok = check.check([Cable(cable.a, cable.b, "40G")], [by_mac], host_macs=right_mac).verdicts[0]
    assert (ok.status, ok.reason) == ("OK", "cabled as designed; port 0c:42:a1:aa:bb:01 of dgx01 identified by MAC")


def test_accepted_deviation_passes_and_stays_visible():
    cable = Cable(End("dgx01", "enp225s0f0"), End("sn3700v01", "swp1"))
    accepted = check.accepted_from_data([{"node": "dgx01", "port": "enp225s0f0", "status": "MISSING",
                                          "reason": "cable on order, ticket 42"}], "x")
    report = check.check([cable], [], accepted)
    assert report.passed and report.verdicts[0].status == "MISSING"
    assert report.verdicts[0].accepted == "cable on order, ticket 42"
    with pytest.raises(ValueError, match="entry 1"):
        check.accepted_from_data([{"node": "dgx01", "port": "x", "status": "OK", "reason": "r"}], "x")


def test_uplink_to_any_neighbour():
    cable = Cable(End("sn3700v01", "swp30"), End("*", "*"), "100G")
    assert check.check([cable], []).verdicts[0].status == "MISSING"
    seen = Link(End("sn3700v01", "swp30"), End("core1", "Ethernet1"), "lldp", speed="100G")
    assert check.check([cable], [seen]).verdicts[0].status == "OK"


def test_cli_check_with_real_lldp_and_bad_plan(tmp_path):
    path = tmp_path / "plan.yml"
    path.write_text("- {a: {node: leaf01, port: swp3}, b: {node: leaf02, port: swp3}}\n"
                    "- {a: {node: leaf01, port: swp4}, b: {node: leaf02, port: swp4}}\n")
    leaf = LLDP / "cumulus-4.2.1-leaf01-net-show-lldp.json"
    run = [sys.executable, "-m", "validation", "cabling", "check", "--plan", str(path), "--observed", f"leaf01={leaf}"]
    out = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout
    assert json.loads(out.stdout)["summary"]["OK"] == 2
    path.write_text("- {a: {node: leaf01, port: swp3}, c: {node: leaf02}}\n")
    out = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and str(path) in json.loads(out.stdout)["errors"][0]


def test_fdb_evidence_names_an_end_that_sends_no_lldp():
    fdb = (ROOT / "tests/fixtures/lldp/real/cumulus-4.2.1-leaf02-bridge-fdb-show.txt").read_text()
    links = dumps.parse(fdb, "fdb", "leaf02.fdb", "leaf02")[1]
    assert [(str(lk.local), lk.remote.node) for lk in links] == [("leaf02 bond02", "52:54:00:34:8e:2c"),
                                                                ("leaf02 bond01", "52:54:00:c5:1d:06")]
    plan_ = [Cable(End("server2", "eth1"), End("leaf02", "bond02")), Cable(End("server1", "eth1"), End("leaf02",
                                                                                                      "bond03"))]
    macs = {("server2", "eth1"): "52:54:00:34:8e:2c", ("server1", "eth1"): "52:54:00:c5:1d:06"}
    report = check.check(plan_, links, host_macs=macs)
    assert [(v.status, v.reason) for v in report.verdicts] == [
        ("OK", "cabled as designed"),
        ("MISWIRED", "server1 eth1 goes to leaf02 bond01; leaf02 bond03 goes to nothing")]
    assert report.verdicts[0].evidence == ["fdb leaf02.fdb"]
    # a MAC nobody owns is not judged, and said
    assert check.check(plan_[:1], links).warnings == [
        "2 MAC address(es) the switches learned belong to no host interface given (host MACs): not judged"]
