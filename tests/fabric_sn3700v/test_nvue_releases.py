"""One plan against each NVUE simulator release profile (lab/nvue_sim/releases.py), one switch per release in the
same ansible-playbook runs: converge, re-run at 0 changed, and a switch whose VLANs were typed by `nv set ... vlan
10,20,30` plans no change. Then the refusals that depend on the release: takeover, the 5.6+ password gate, a
release the inventory does not expect."""

from __future__ import annotations

import json
import os
import signal

from .conftest import fabric_vars, run_playbook, write_inventory

RELEASES = {"cl54": "5.4", "cl59": "5.9", "cl515": "5.15"}
VLANS = [{"id": 10, "name": "storage-a", "subnet": "198.51.100.0/26"},
         {"id": 20, "name": "storage-b", "subnet": "198.51.100.64/26"},
         {"id": 30, "name": "storage-c", "subnet": "198.51.100.128/26"}]
CLAG = {"enabled": True, "peerlink": {"bond": "peerlink", "members": ["swp31", "swp32"], "vlan": 4094},
        "sys_mac": "44:38:39:ff:40:94"}


def switch(port: int, **extra) -> dict:
    return {"ansible_host": "127.0.0.1", "storage_fabric_nvue_api_port": port, "sn3700v_clag_role": "primary",
            "sn3700v_clag_priority": 1000, "sn3700v_clag_backup_ip": "192.0.2.32",
            "sn3700v_loopback": "192.0.2.251/32", **extra}


def cables(names) -> dict:
    hosts = {"dgx01": ("198.51.100.11/26", "swp1"), "dgx02": ("198.51.100.75/26", "swp2"),
             "powerscale01": ("198.51.100.140/26", "swp9")}
    return {host: [{"name": "storage0", "address": address, "speed_gbps": 100, "mtu": 9000, "switch": name,
                    "switch_port": port} for name in names] for host, (address, port) in hosts.items()}


def restart_with(start_sim, sim, name: str, state: dict, *extra: str):
    """Stop a simulator, replace its saved state (as `nv set` on the switch would have), start it again."""
    os.killpg(sim.proc.pid, signal.SIGTERM)
    sim.proc.wait(timeout=10)
    (sim.state.parent / f"{name}.port").unlink()
    sim.state.write_text(json.dumps(state))
    return start_sim(name, *extra)


def test_same_plan_on_every_release(start_sim, pki, tmp_path):
    sims = {name: start_sim(name, "--release", release) for name, release in RELEASES.items()}
    group = fabric_vars(storage_fabric_ca_path=str(pki["ca"]), storage_fabric_port_speed_managed=True,
                        storage_fabric_vlans=VLANS, storage_fabric_bridge={"name": "br_default", "vlan_aware": True,
                                                                           "pvid": 10},
                        storage_fabric_clag=CLAG, storage_fabric_breakouts={"swp29": "4x25G"},
                        storage_fabric_roce={"enabled": True, "mode": "lossless"})
    inventory = write_inventory(tmp_path / "hosts.yml", {n: switch(s.port) for n, s in sims.items()},
                                cables(sims), group)

    first = run_playbook(inventory)
    for name in sims:
        assert first.stats(name)["changed"] == 1 and first.stats(name)["failures"] == 0, first.failure(name)
    cl54, cl59, cl515 = (sims[n].data() for n in ("cl54", "cl59", "cl515"))
    # keys by release: 5.15 renamed enable -> state and ip -> ipv4
    assert cl54["applied"]["mlag"]["enable"] == "on" and cl59["applied"]["qos"]["roce"]["enable"] == "on"
    assert cl515["applied"]["mlag"]["state"] == "enabled" and cl515["applied"]["qos"]["roce"]["state"] == "enabled"
    assert cl515["applied"]["interface"]["lo"]["ipv4"]["address"] == {"192.0.2.251/32": {}}
    # breakout from 5.4: "4x" and the speed on each lane
    assert all(s["applied"]["interface"]["swp29"]["link"]["breakout"] == {"4x": {}} for s in (cl54, cl59, cl515))
    assert cl54["applied"]["interface"]["swp29s2"]["link"] == {"speed": "25G", "fec": "rs"}
    # up to 5.8 the role saves (PATCH /revision/applied save): startup holds the plan too
    assert cl54["startup"]["interface"]["swp1"]["description"] == "dgx01 storage0"
    assert any(a["target"] == "/revision/applied save" for a in cl54["audit"])
    assert not any(a["target"] == "/revision/applied save" for a in cl59["audit"])  # 5.9 applies and saves
    assert cl59["applied"]["mlag"]["backup"] == {"192.0.2.32": {"vrf": "mgmt"}}

    mutations = {n: len(s.mutations()) for n, s in sims.items()}
    second = run_playbook(inventory)
    for name, sim in sims.items():
        assert second.stats(name)["changed"] == 0 and second.stats(name)["failures"] == 0, second.failure(name)
        assert len(sim.mutations()) == mutations[name], f"{name}: a converged switch was sent a change"

    # The same VLANs as typed by `nv set bridge domain br_default vlan 10,20,30`: NVUE keeps the key as typed.
    for name, sim in list(sims.items()):
        state = sim.data()
        for config in (state["applied"], state["startup"]):
            config["bridge"]["domain"]["br_default"]["vlan"] = {"10,20,30": {}}
        sims[name] = restart_with(start_sim, sim, name, state, "--release", RELEASES[name])
    inventory = write_inventory(inventory, {n: switch(s.port) for n, s in sims.items()}, cables(sims), group)
    typed = run_playbook(inventory, "--check", "--diff")
    for name, sim in sims.items():
        assert typed.stats(name)["changed"] == 0 and typed.stats(name)["failures"] == 0, typed.failure(name)
        assert sim.data()["applied"]["bridge"]["domain"]["br_default"]["vlan"] == {"10,20,30": {}}


def test_release_dependent_refusals(start_sim, pki, tmp_path):
    owned_by_files = start_sim("takeover", "--release", "5.9", "--files-edited")
    gated = start_sim("gated", "--release", "5.9", "--default-password")
    other = start_sim("other", "--release", "5.15")
    group = fabric_vars(storage_fabric_ca_path=str(pki["ca"]), storage_fabric_port_speed_managed=True)
    base = {"sn3700v_clag_role": "standalone", "ansible_host": "127.0.0.1"}
    switches = {"takeover": {**base, "storage_fabric_nvue_api_port": owned_by_files.port,
                             "sn3700v_nvue_takeover": False},
                "gated": {**base, "storage_fabric_nvue_api_port": gated.port},
                "other": {**base, "storage_fabric_nvue_api_port": other.port, "sn3700v_cumulus_release": "5.9.2"}}
    endpoints = {"dgx01": [{"name": "storage0", "address": "198.51.100.11/24", "speed_gbps": 100, "mtu": 9000,
                            "switch": name, "switch_port": "swp1"} for name in switches]}
    inventory = write_inventory(tmp_path / "hosts.yml", switches, endpoints, group)
    run = run_playbook(inventory)
    assert all(run.stats(n)["failures"] == 1 for n in switches), run.text()[-3000:]

    message = run.failure("takeover")
    for words in ("sn3700v_nvue_takeover=False", "Timeout while waiting for client response",
                  "rewrites /etc/network/interfaces", "Nothing was applied", "Fix: "):
        assert words in message, message
    state = owned_by_files.data()
    assert "swp1" not in state["applied"]["interface"], "a refused takeover must apply nothing"
    assert [r["state"] for r in state["revisions"].values()] == ["ays_fail"]

    message = run.failure("gated")
    assert "HTTP 403" in message and "default password has been changed" in message, message
    assert gated.mutations() == []

    message = run.failure("other")
    assert "sn3700v_cumulus_release='5.9.2' but the switch runs Cumulus Linux 5.15.0" in message, message
    assert other.mutations() == []
