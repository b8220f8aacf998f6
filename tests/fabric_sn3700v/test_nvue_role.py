"""The sn3700v role, nvue method, against NVUE simulators on loopback (ansible-playbook runs, a few seconds each)."""

from __future__ import annotations

from .conftest import PASSWORD, fabric_vars, free_port, run_playbook, write_inventory


def cables(switch: str, port_of: dict[str, str]) -> dict[str, list[dict]]:
    addresses = {"dgx01": "198.51.100.11/24", "dgx02": "198.51.100.12/24", "powerscale01": "198.51.100.21/24"}
    return {
        host: [{"name": "storage0", "address": addresses[host], "speed_gbps": 100, "mtu": 9000, "switch": switch,
                "switch_port": port}]
        for host, port in port_of.items()
    }


def switch_vars(sim_port: int, **extra) -> dict:
    return {"ansible_host": "127.0.0.1", "storage_fabric_nvue_api_port": sim_port, "sn3700v_clag_role": "standalone",
            "sn3700v_clag_priority": 1000, "sn3700v_loopback": "192.0.2.251/32", **extra}


def test_apply_noop_check_change_and_unreachable(start_sim, pki, tmp_path):
    sim = start_sim("swa")
    dead_port = free_port()
    ca = {"storage_fabric_ca_path": str(pki["ca"]), "storage_fabric_port_speed_managed": True}
    endpoints = cables("swa", {"dgx01": "swp1", "dgx02": "swp2", "powerscale01": "swp9"})
    inventory = write_inventory(tmp_path / "hosts.yml",
                                {"swa": switch_vars(sim.port), "swb": switch_vars(dead_port)},
                                endpoints, fabric_vars(**ca))

    # First apply: swa gets one revision, applied; swb (nothing listens on its port) fails alone.
    first = run_playbook(inventory)
    assert first.stats("swa")["changed"] == 1 and first.stats("swa")["failures"] == 0, first.text()[-3000:]
    assert first.stats("swb")["failures"] == 1, first.text()[-3000:]
    assert f"cannot reach the NVUE API at https://127.0.0.1:{dead_port}" in first.failure("swb")
    assert "Nothing was changed" in first.failure("swb")
    state = sim.data()
    applied = state["applied"]
    assert [r["state"] for r in state["revisions"].values()] == ["applied"]
    swp1 = applied["interface"]["swp1"]
    assert swp1["description"] == "dgx01 storage0"
    assert swp1["link"]["mtu"] == 9216 and swp1["link"]["speed"] == "100G" and swp1["link"]["fec"] == "rs"
    assert swp1["bridge"]["domain"]["br_default"]["access"] == 100
    assert applied["bridge"]["domain"]["br_default"]["vlan"] == {"100": {}}
    assert applied["interface"]["lo"]["ip"]["address"] == {"192.0.2.251/32": {}}
    assert "mlag" not in applied  # CLAG disabled in the lab values
    assert applied["interface"]["eth0"]["ip"]["vrf"] == "mgmt", "settings the inventory does not own are kept"
    assert PASSWORD not in first.text(), "the NVUE password leaked into the output"

    # Second run: nothing to change, no revision created.
    mutations = len(sim.mutations())
    second = run_playbook(inventory, limit="swa")
    assert second.rc == 0 and second.stats("swa")["changed"] == 0, second.text()[-3000:]
    assert len(sim.mutations()) == mutations

    # Check mode with one port changed: the diff shows it, the switch is not touched.
    endpoints["dgx02"][0]["switch_port"] = "swp3"
    write_inventory(inventory, {"swa": switch_vars(sim.port)}, endpoints, fabric_vars(**ca))
    check = run_playbook(inventory, "--check", "--diff")
    assert check.rc == 0 and check.stats("swa")["changed"] == 1, check.text()[-3000:]
    nvue = next(r for name, r in check.results("swa") if "NVUE |" in name)
    assert any("/interface/swp3" in c for c in nvue["changes"]), nvue["changes"]
    assert "dgx02 storage0" in nvue["diff"]["after"] and "swp3" not in nvue["diff"]["before"]
    assert len(sim.mutations()) == mutations and "swp3" not in sim.data()["applied"]["interface"]

    # The change for real: exactly one changed task, one more revision, then a no-op again.
    change = run_playbook(inventory)
    assert change.rc == 0 and change.stats("swa")["changed"] == 1, change.text()[-3000:]
    assert sim.data()["applied"]["interface"]["swp3"]["description"] == "dgx02 storage0"
    assert len(sim.data()["revisions"]) == 2


def test_each_switch_fails_alone_with_its_own_reason(start_sim, pki, tmp_path):
    """One run, six switches, six failures: three inventories refused before any request, the switch's own
    rejection text, TLS verification, a port that stays down."""
    refused = start_sim("refused")
    small = start_sim("small", "--ports", "16")
    untrusted = start_sim("untrusted")
    downport = start_sim("downport", "--down-ports", "swp2")
    endpoints = {
        **cables("bad_port", {"dgx01": "eth-1"}),
        **cables("bad_mtu", {"dgx02": "swp2"}),
        **cables("dup_vlan", {"powerscale01": "swp9"}),
    }
    # swp20 exists on an SN3700V (the inventory check passes it) but not on the 16-port simulated platform
    endpoints["dgx01"] += cables("small", {"dgx01": "swp20"})["dgx01"]
    endpoints["dgx01"] += cables("untrusted", {"dgx01": "swp1"})["dgx01"]
    endpoints["dgx02"] += cables("downport", {"dgx02": "swp2"})["dgx02"]
    endpoints["powerscale01"] += cables("downport", {"powerscale01": "swp9"})["powerscale01"]
    vlans = [{"id": 100, "name": "storage", "subnet": "198.51.100.0/24"}, {"id": 100, "name": "again"}]
    inventory = write_inventory(tmp_path / "hosts.yml", {
        "bad_port": switch_vars(refused.port),
        "bad_mtu": switch_vars(refused.port, storage_fabric_port_mtu=9999),
        "dup_vlan": switch_vars(refused.port, storage_fabric_vlans=vlans),
        "small": switch_vars(small.port),
        "untrusted": switch_vars(untrusted.port, storage_fabric_ca_path=""),
        "downport": switch_vars(downport.port),
    }, endpoints, fabric_vars(storage_fabric_ca_path=str(pki["ca"])))
    run = run_playbook(inventory)
    hosts = ("bad_port", "bad_mtu", "dup_vlan", "small", "untrusted", "downport")
    assert all(run.stats(h)["failures"] == 1 for h in hosts), run.text()[-3000:]

    for host, words in {
        "bad_port": ["dgx01", "storage_nics[0].switch_port", "'eth-1'", "not a front-panel port name", "Fix:"],
        "bad_mtu": ["storage_fabric_port_mtu", "9999", "between 552 and 9216", "Fix:"],
        "dup_vlan": ["storage_fabric_vlans[1].id", "duplicate VLAN 100", "Fix:"],
    }.items():
        message = run.failure(host)
        for word in words:
            assert word in message, f"{host}: {word!r} not in {message!r}"
        assert "nothing was changed" in message
    assert refused.mutations() == [], "a refused inventory must not reach the switch"

    message = run.failure("small")
    assert "ended in state 'invalid'" in message
    assert "Invalid interface swp20: the platform has no such port (valid: swp1-swp16)" in message
    assert "swp20" not in small.data()["applied"]["interface"], "an invalid revision must not be applied"

    message = run.failure("untrusted")
    assert "CERTIFICATE_VERIFY_FAILED" in message or "certificate verify failed" in message, message
    assert untrusted.mutations() == []

    message = run.failure("downport")
    assert "fabric port (dgx02 storage0) swp2: oper-status 'down', expected 'up'" in message, message
    assert "swp9" not in message
    assert downport.data()["applied"]["interface"]["swp2"]["bridge"]  # applied, then found down by the check


def test_mlag_pair_with_roce_and_breakout(start_sim, pki, tmp_path):
    """The production shape: a CLAG pair (primary/secondary), RoCE lossless, a breakout; and a pair member whose
    MLAG peer never answers fails with that reason."""
    primary = start_sim("sw1")
    secondary = start_sim("sw2", "--mlag-peer-priority", "1000")
    lonely = start_sim("sw3", "--mlag-peer-dead")
    endpoints = cables("sw1", {"dgx01": "swp1", "powerscale01": "swp9"})
    endpoints["dgx02"] = cables("sw2", {"dgx02": "swp1"})["dgx02"]
    endpoints["powerscale01"] += cables("sw2", {"powerscale01": "swp9"})["powerscale01"]
    endpoints["dgx02"] += cables("sw3", {"dgx02": "swp1"})["dgx02"]
    clag = {"enabled": True, "peerlink": {"bond": "peerlink", "members": ["swp31", "swp32"], "vlan": 4094},
            "sys_mac": "44:38:39:ff:40:94"}
    pair = {"sw1": ("primary", 1000, "192.0.2.32"), "sw2": ("secondary", 2000, "192.0.2.31"),
            "sw3": ("primary", 1000, "192.0.2.34")}
    sims = {"sw1": primary, "sw2": secondary, "sw3": lonely}
    switches = {name: switch_vars(sims[name].port, sn3700v_clag_role=role, sn3700v_clag_priority=prio,
                                  sn3700v_clag_backup_ip=backup)
                for name, (role, prio, backup) in pair.items()}
    inventory = write_inventory(tmp_path / "hosts.yml", switches, endpoints, fabric_vars(
        storage_fabric_ca_path=str(pki["ca"]), storage_fabric_clag=clag, storage_fabric_breakouts={"swp29": "4x25G"},
        storage_fabric_roce={"enabled": True, "mode": "lossless"}))
    run = run_playbook(inventory)
    assert run.stats("sw1")["failures"] == 0 and run.stats("sw2")["failures"] == 0, run.text()[-3000:]
    applied = primary.data()["applied"]
    assert applied["mlag"] == {"enable": "on", "mac-address": "44:38:39:ff:40:94", "peer-ip": "linklocal",
                               "priority": 1000, "backup": {"192.0.2.32": {"vrf": "mgmt"}}}
    assert applied["interface"]["peerlink"]["bond"]["member"] == {"swp31": {}, "swp32": {}}
    assert applied["interface"]["peerlink"]["type"] == "peerlink"
    assert applied["qos"]["roce"] == {"enable": "on", "mode": "lossless"}
    # the default profile is 5.9: "4x" on the parent; the lab values leave speeds to the firmware, so the lanes
    # get no forced speed (test_nvue_releases forces them)
    assert applied["interface"]["swp29"]["link"]["breakout"] == {"4x": {}}
    assert "swp29s0" not in applied["interface"]
    assert secondary.data()["applied"]["mlag"]["priority"] == 2000
    assert run.stats("sw3")["failures"] == 1
    assert "MLAG peer is not alive (peer-alive=False)" in run.failure("sw3")
