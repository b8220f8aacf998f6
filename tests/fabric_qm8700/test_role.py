"""roles/qm8700 through real ansible-playbook runs against two MLNX-OS simulators (one subnet)."""

from __future__ import annotations

import pytest
from ansible.module_utils.mlnxos_client import Endpoint, Switch

from .conftest import PASSWORD, free_port, run_playbook, write_inventory


def _apply(tmp_path, pair, pki, *args, **overrides):
    inventory = write_inventory(tmp_path / "inv", pair, pki, **overrides)
    return run_playbook(inventory, *args)


def test_check_first_apply_noop_and_one_port_changed(tmp_path, pair, pki):
    """The life of a pair: preview, apply, re-run, then a port changed by hand is the only thing sent."""
    one, two = pair["qm8700-01"], pair["qm8700-02"]

    preview = _apply(tmp_path, pair, pki, "--check", "--diff")
    assert preview.returncode == 0, preview.output[-4000:]
    assert preview.counts("qm8700-01")["changed"] == 1
    assert "+sm.priority: 15" in preview.output and "-sm.enabled: False" in preview.output
    assert "+ports.1/1.speed: hdr" in preview.output and "+partitions.Default.mtu: 4K" in preview.output
    for sim in pair.values():
        assert [e for e in sim.log() if e["kind"] == "config"] == [], "check mode sent a configuration command"
        assert "show ib sm" in [e["command"] for e in sim.log()], "check mode must still read the live state"
        assert sim.config("running")["sm"]["enabled"] is False
        sim.clear_log()

    first = run_playbook(tmp_path / "inv")
    assert first.returncode == 0, first.output[-4000:]
    assert first.counts("qm8700-01")["changed"] == 1 and first.counts("qm8700-02")["changed"] == 1
    cfg = one.config("saved")  # configuration write: the saved configuration holds it
    assert cfg["hostname"] == "qm8700-01" and cfg["sm"] == {"enabled": True}
    assert cfg["smnodes"] == {"qm8700-01": {"priority": 15}}
    assert two.config("saved")["sm"] == {"enabled": True}
    assert two.config("saved")["smnodes"] == {"qm8700-02": {"priority": 14}}
    assert all(cfg["ports"][f"1/{n}"]["speeds"] == ["hdr"] for n in range(1, 17))
    assert cfg["ports"]["1/17"]["speeds"] != ["hdr"], "an undeclared port was touched"
    assert cfg["ports"]["1/1"]["description"] == "DGX A100 compute HCAs"
    assert cfg["partitions"]["Default"] == {"pkey": "0x7fff", "ipoib": True, "mtu": "4K", "defmember": "full"}
    assert cfg["ntp"] == {"enabled": True, "servers": ["192.0.2.123"]}
    assert cfg["logging"]["servers"] == {"192.0.2.124": {"trap": "notice"}}
    assert one.config_commands()[-1] == "configuration write"
    requests = [e["command"] for e in one.log() if e["kind"] in ("config", "session")]
    assert "interface ib 1/1" in requests and "no interface ib 1/1 shutdown" not in requests
    assert "SM master (priority 15)" in first.output and "SM standby (priority 14)" in first.output

    one.clear_log()
    two.clear_log()
    second = run_playbook(tmp_path / "inv")
    assert second.returncode == 0, second.output[-4000:]
    assert second.counts("qm8700-01")["changed"] == 0 and second.counts("qm8700-02")["changed"] == 0
    assert one.config_commands() == [] and two.config_commands() == [], "a no-op run sent configuration"
    assert "show ib sm" in [e["command"] for e in one.log()], "the no-op run did not read the live state"

    # Someone lowers port 1/3 to EDR on qm8700-01 by hand over the CLI, and saves.
    switch = Switch(Endpoint("127.0.0.1", "admin", PASSWORD, ssh_port=one.ssh_port, ssh_host_key_checking=False),
                    "cli")
    switch.run(["interface ib 1/3 speed edr force", "configuration write"])
    switch.close()
    one.clear_log()
    third = run_playbook(tmp_path / "inv", "--diff")
    assert third.returncode == 0, third.output[-4000:]
    assert third.counts("qm8700-01")["changed"] == 1 and third.counts("qm8700-02")["changed"] == 0
    assert one.config_commands() == ["speed hdr force", "configuration write"]
    assert [e["command"] for e in one.log() if e["command"].startswith("interface")] == ["interface ib 1/3"]
    assert "-ports.1/3.speed: edr" in third.output and "+ports.1/3.speed: hdr" in third.output


def test_invalid_input_rejected_before_any_change(tmp_path, pair, pki):
    """A port that does not exist and two SM masters: both reported, named, with the fix; no switch contacted."""
    inventory = write_inventory(
        tmp_path / "inv", pair, pki, host_overrides={"qm8700-02": {"qm8700_sm_role": "master"}},
        qm8700_ports=[{"range": "1/1-1/41", "speed": "hdr", "split": "none", "description": "x"}],
        qm8700_partitions=[{"name": "Default", "pkey": "0x8000", "ipoib": True, "ipoib_mtu": 4092}])
    run = run_playbook(inventory)
    assert run.returncode != 0
    assert run.counts("qm8700-01")["failed"] == 1 and run.counts("qm8700-02")["failed"] == 1
    assert "qm8700_ports[0].range = '1/1-1/41': port(s) 1/41 do not exist on a QM8700" in run.output
    assert "qm8700_partitions[0].pkey = '0x8000'" in run.output
    assert "2 switches are 'master' (qm8700-01, qm8700-02)" in run.output and "Fix:" in run.output
    for sim in pair.values():
        assert sim.log() == [], "a switch was contacted despite invalid input"


def test_one_invalid_switch_stops_the_pair_before_any_change(tmp_path, pair, pki):
    """Only qm8700-02's input is wrong: qm8700-01 is not contacted either (the pair is configured together)."""
    inventory = write_inventory(tmp_path / "inv", pair, pki, host_overrides={"qm8700-02": {
        "qm8700_ports": [{"range": "1/1-1/16", "speed": "hdr100", "split": "none", "description": "x"}]}})
    run = run_playbook(inventory)
    assert run.returncode != 0
    assert "qm8700-02 (127.0.0.1): invalid input, nothing was sent to the switch: " \
           "qm8700_ports[0].speed = 'hdr100': HDR100 exists only on a split port" in run.output
    assert run.counts("qm8700-02")["failed"] == 1
    assert run.counts("qm8700-01")["changed"] == 0
    for sim in pair.values():
        assert sim.log() == [], "a switch was contacted although the pair's input is invalid"


def test_switch_error_is_surfaced_with_its_own_text_nothing_saved_no_password_in_vvv(tmp_path, pair, pki):
    two = pair["qm8700-02"]
    two.set_faults({"command_errors": {r"interface ib 1/5":
                                       "Port 1/5 is locked by the fabric manager (simulated fault)"}})
    run = _apply(tmp_path, pair, pki, "-vvv", "--diff")
    assert "ESTABLISH LOCAL CONNECTION" in run.output, "not a -vvv run"
    assert PASSWORD not in run.output
    assert all(PASSWORD not in sim.log_path.read_text() for sim in pair.values())
    assert run.returncode != 0
    assert run.counts("qm8700-01")["failed"] == 0 and run.counts("qm8700-01")["changed"] == 1
    assert run.counts("qm8700-02")["failed"] == 1
    assert "the switch rejected 'interface ib 1/5' (json api): Port 1/5 is locked by the fabric " \
           "manager (simulated fault)" in run.output
    # what the switch accepted before the refused command was undone, read back, and nothing was saved
    assert "command(s) it accepted before were undone and the running configuration reads back as before the " \
           "run; nothing was saved" in run.output
    assert "configuration write" not in two.config_commands()
    assert two.config("saved")["sm"]["enabled"] is False
    running, saved = two.config("running"), two.config("saved")
    # the SM priority goes back to its value, 0, now written out (`ib sm sm-priority 0`): the same priority
    assert running.pop("smnodes") == {"qm8700-02": {"priority": 0}} and saved.pop("smnodes") == {}
    assert running == saved


def test_unreachable_switch_fails_that_host_while_the_other_proceeds(tmp_path, pair, pki):
    closed = free_port()
    inventory = write_inventory(tmp_path / "inv", pair, pki, host_overrides={
        "qm8700-02": {"qm8700_api_port": closed, "qm8700_ssh_port": closed}})
    run = run_playbook(inventory)
    assert run.returncode != 0
    assert run.counts("qm8700-02")["failed"] == 1
    assert run.counts("qm8700-01")["failed"] == 0 and run.counts("qm8700-01")["changed"] == 1
    assert f"cannot reach the JSON API at 127.0.0.1:{closed}" in run.output
    assert f"the SSH CLI fallback failed too: cannot reach the SSH CLI at 127.0.0.1:{closed}" in run.output
    assert pair["qm8700-01"].config("saved")["sm"]["enabled"] is True


def test_cli_fallback_when_the_json_api_is_unreachable(tmp_path, pair, pki):
    closed = free_port()
    inventory = write_inventory(tmp_path / "inv", pair, pki, host_overrides={
        "qm8700-01": {"qm8700_api_port": closed}})
    run = run_playbook(inventory)
    assert run.returncode == 0, run.output[-4000:]
    assert "falling back to the SSH CLI" in run.output
    one = pair["qm8700-01"]
    assert {e["transport"] for e in one.log()} == {"cli"}
    assert one.config("saved")["smnodes"] == {"qm8700-01": {"priority": 15}}
    assert {e["transport"] for e in pair["qm8700-02"].log()} == {"json"}


SPLIT_PORTS = [{"range": "1/1-1/16", "speed": "hdr", "split": "none", "description": "DGX A100 compute HCAs"},
               {"range": "1/20", "speed": "hdr100", "split": "2", "description": "split"}]


def test_a_declared_split_without_the_split_ready_profile_fails_before_any_command(tmp_path, pair, pki):
    run = _apply(tmp_path, pair, pki, qm8700_ports=SPLIT_PORTS)
    assert run.returncode != 0
    assert run.counts("qm8700-01")["failed"] == 1 and run.counts("qm8700-02")["failed"] == 1
    assert "not split-ready" in run.output and "system profile ib split-ready" in run.output
    for sim in pair.values():
        assert sim.config_commands() == [], "a command was sent to a switch that cannot take the split"


@pytest.mark.parametrize("pair", [{"system_profile": "ib split-ready", "release": "3.10"}], indirect=True)
def test_a_split_on_a_split_ready_switch_is_applied_once(tmp_path, pair, pki):
    first = _apply(tmp_path, pair, pki, qm8700_ports=SPLIT_PORTS)
    assert first.returncode == 0, first.output[-4000:]
    assert pair["qm8700-01"].config("saved")["cages"]["1/20"] == "qsfp-split-2"
    again = run_playbook(tmp_path / "inv", "--check", "--diff")
    assert again.returncode == 0 and again.counts("qm8700-01")["changed"] == 0, again.output[-4000:]
