"""module_utils/mlnxos_client against the simulator, and the simulator's own promises: TLS and login enforcement,
the switch's error text on both transports, CLI text output, persistence across restarts, the SM election."""

from __future__ import annotations

import json
import re
import ssl
import time
import urllib.request

import paramiko
import pytest
from ansible.module_utils import mlnxos_fabric as fabric
from ansible.module_utils.mlnxos_client import (
    CliTransport,
    Endpoint,
    MlnxosAuthError,
    MlnxosCommandError,
    MlnxosError,
    Switch,
    batches,
    check_results,
)

from .conftest import PASSWORD

RELEASES = [{"release": "3.9"}, {"release": "3.10"}]


def endpoint(sim, pki, **changes) -> Endpoint:
    values = {"host": "127.0.0.1", "username": "admin", "password": PASSWORD, "api_port": sim.https_port,
              "ssh_port": sim.ssh_port, "ca_path": str(pki.ca), "timeout": 10, "ssh_host_key_checking": False}
    values.update(changes)
    return Endpoint(**values)


@pytest.mark.parametrize("pair", RELEASES, indirect=True, ids=["3.9", "3.10"])
@pytest.mark.parametrize("transport", ["json", "cli"])
def test_both_transports_read_the_same_state(pair, pki, transport):
    sim = pair["qm8700-01"]
    switch = Switch(endpoint(sim, pki), transport)
    live = fabric.read_live_state(switch.run)
    switch.close()
    assert live.version == {"3.9": "3.9.0606", "3.10": "3.10.4300"}[sim.release]
    assert live.hostname.startswith("switch-") and live.system_profile == "ib"
    assert sorted(live.ports, key=lambda n: int(n.split("/")[1])) == [f"1/{n}" for n in range(1, 41)]
    assert live.partitions["Default"].pkey == 0x7FFF and live.sm_state == "disabled"
    assert {e["transport"] for e in sim.log()} == {"json" if transport == "json" else "cli"}


def test_json_api_error_carries_the_switch_text_and_stops_the_batch(pair, pki):
    sim = pair["qm8700-01"]
    switch = Switch(endpoint(sim, pki), "json")
    with pytest.raises(MlnxosCommandError) as caught:
        switch.run(["ib sm sm-priority 3", "interface ib 1/41 speed hdr force", "ib sm"])
    assert caught.value.switch_message == "Interface ib 1/41 does not exist"
    assert "the switch rejected 'interface ib 1/41 speed hdr force' (json api)" in str(caught.value)
    config = sim.config()
    assert config["sm"] == {"enabled": False}, "the simulator stops at the failing command"
    assert config["smnodes"] == {config["hostname"]: {"priority": 3}}
    with pytest.raises(MlnxosCommandError, match='Unrecognized command "frobnicate"'):
        switch.run(["frobnicate"])
    switch.close()


def test_cli_error_is_the_percent_line(pair, pki):
    switch = Switch(endpoint(pair["qm8700-01"], pki), "cli")
    with pytest.raises(MlnxosCommandError) as caught:
        switch.run(["ib partition Default mtu 8K force"])
    assert caught.value.switch_message.startswith('% Invalid MTU "8K"')
    switch.run(["ib partition Default mtu 4K force"])  # the session is still usable after an error
    switch.close()


def test_check_results_is_strict():
    assert check_results(["a"], {"results": [{"status": "OK", "data": {"x": 1}}]}) == [{"x": 1}]
    with pytest.raises(MlnxosCommandError, match="not executed"):
        check_results(["a", "b"], {"results": [{"status": "OK", "data": ""}]})
    with pytest.raises(MlnxosError, match="no 'results'"):
        check_results(["a"], {"unexpected": True})


def test_closing_a_cli_session_whose_shell_never_opened_closes_the_ssh_client():
    """The login succeeded but opening the shell failed (client set, channel None): close(), in the modules'
    finally, closes the SSH client and raises nothing over the error being reported (found by mypy)."""
    closed = []

    class Client(paramiko.SSHClient):
        def close(self) -> None:
            closed.append(True)
            super().close()

    transport = CliTransport(Endpoint(host="192.0.2.1", username="admin", password="secret"))
    transport.client = Client()
    transport.close()
    assert closed == [True] and transport.client is None and transport.channel is None
    with pytest.raises(MlnxosError, match=r"no CLI session to 192\.0\.2\.1:22 is open"):
        transport._command("show version")


def test_wrong_password_is_refused_without_echoing_it(pair, pki):
    wrong = "Not-The-Password-42"
    for transport in ("json", "cli"):
        switch = Switch(endpoint(pair["qm8700-01"], pki, password=wrong), transport)
        with pytest.raises(MlnxosAuthError) as caught:
            switch.run(["show version"])
        assert wrong not in str(caught.value) and "refused" in str(caught.value)
    assert [e["status"] for e in pair["qm8700-01"].log() if e["command"].startswith("<")] == ["ERROR", "ERROR"]


def test_tls_is_verified_by_default(pair, pki):
    untrusted = Switch(endpoint(pair["qm8700-01"], pki, ca_path=str(pki.other_ca)), "json", cli_fallback=True)
    with pytest.raises(MlnxosError, match=r"TLS verification of 127\.0\.0\.1") as caught:
        untrusted.run(["show version"])
    assert "ca_path" in str(caught.value) and untrusted.warnings == [], "TLS failure must not fall back to SSH"
    opted_out = Switch(endpoint(pair["qm8700-01"], pki, ca_path=None, validate_certs=False), "json")
    assert fabric.parse_version(opted_out.run(["show version"])[0]) == "3.9.0606"


def test_json_api_requires_a_session(pair, pki):
    context = ssl.create_default_context(cafile=str(pki.ca))
    request = urllib.request.Request(f"https://127.0.0.1:{pair['qm8700-01'].https_port}/admin/launch?script=json",
                                     data=json.dumps({"cmd": "show version"}).encode(), method="POST")
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        assert "template=login" in response.geturl() and b"f_password" in response.read()


def test_session_lost_on_restart_is_renewed(pair, pki):
    sim = pair["qm8700-01"]
    switch = Switch(endpoint(sim, pki), "json")
    switch.run(["show version"])
    sim.stop()
    sim.start()
    assert fabric.parse_version(switch.run(["show version"])[0]) == "3.9.0606"
    assert [e["command"] for e in sim.log()].count("<web login>") == 2


def test_saved_configuration_survives_a_restart_unsaved_does_not(pair, pki):
    sim = pair["qm8700-01"]
    switch = Switch(endpoint(sim, pki), "json")
    switch.run(["hostname saved-name", "configuration write", "ib sm sm-priority 9"])
    sim.stop()
    sim.start()
    live = fabric.read_live_state(Switch(endpoint(sim, pki), "json").run)
    assert live.hostname == "saved-name" and live.sm_priority == 0


def test_cli_text_output_prompts_and_modes(pair, pki):
    sim = pair["qm8700-01"]
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect("127.0.0.1", port=sim.ssh_port, username="admin", password=PASSWORD, look_for_keys=False,
                   allow_agent=False)
    shell = client.invoke_shell()

    def send(line: str) -> str:
        shell.send(line + "\n")
        output, deadline = "", time.monotonic() + 10
        # until the echo of this line and the prompt after it have arrived
        while time.monotonic() < deadline and not (line in output and output.rstrip().endswith((">", "#"))):
            time.sleep(0.02)
            while shell.recv_ready():
                output += shell.recv(65536).decode()
        return output

    banner = send("")
    assert "MLNX-OS" in banner and "[standalone: master] >" in banner
    assert '% Unrecognized command "hostname".' in send("hostname x")  # not in user mode
    assert send("enable").rstrip().endswith("#")
    assert send("configure terminal").rstrip().endswith("(config) #")
    assert send("interface ib 1/2").rstrip().endswith("(config interface ib 1/2) #")
    send("speed edr force")
    send("exit")
    detail = send("show interfaces ib 1/2")
    assert "IB1/2:" in detail and "Logical port state" in detail
    assert re.search(r"Supported speeds:\s+sdr, qdr, fdr, edr, hdr\r\n", detail), detail
    assert "Admin state" not in detail and "Configured speeds" not in detail
    assert "##" in send("show running-config") and "interface ib 1/2 speed edr force" in send("show running-config")
    assert re.search(r"\r\nenable\r\n|\r\ndisable\r\n", send("show ib sm")), "show ib sm prints one word"
    client.close()


def test_a_question_is_declined_at_once_never_waited_on(pair, pki):
    sim = pair["qm8700-01"]
    switch = Switch(endpoint(sim, pki, timeout=20), "cli")
    switch.run(["ib partition storage pkey 0x0002 force"])
    started = time.monotonic()
    with pytest.raises(MlnxosCommandError, match="asked for confirmation") as caught:
        switch.run(["no ib partition storage"])
    assert time.monotonic() - started < 10 and "Type 'yes' to continue" in str(caught.value)
    assert "storage" in sim.config()["partitions"], "declined: the partition stays"
    switch.run(["show version"])  # the session is usable afterwards
    switch.close()


def test_json_gateway_off_falls_back_to_the_cli_naming_the_prerequisite(pair, pki):
    sim = pair["qm8700-01"]
    Switch(endpoint(sim, pki), "cli").run(["no json-gw enable"])
    switch = Switch(endpoint(sim, pki), "json", cli_fallback=True)
    assert fabric.parse_version(switch.run(["show version"])[0]).startswith("3.")
    assert switch.transport_name == "ssh cli" and "json-gw enable" in switch.warnings[0]
    with pytest.raises(MlnxosError, match="json-gw enable"):
        Switch(endpoint(sim, pki), "json").run(["show version"])


def test_the_switch_refuses_what_a_real_one_refuses(pair, pki):
    switch = Switch(endpoint(pair["qm8700-01"], pki), "json")
    for command, needle in (("ib sm priority 15", 'Unrecognized command "priority"'),
                            ("interface ib 1/1 speed ddr force", 'Unrecognized keyword "ddr"'),
                            ("interface ib 1/1 speed fdr10 force", 'Unrecognized keyword "fdr10"'),
                            ("no interface ib 1/1 shutdown", 'Unrecognized command "interface"'),
                            ("interface ib 1/30 module-type qsfp-split-2 force", "split-ready")):
        with pytest.raises(MlnxosCommandError, match=re.escape(needle)):
            switch.run([command])


def test_batches_are_never_cut_inside_an_interface_block():
    commands = ["ib sm", *fabric.interface_block("1/1", ["speed hdr force", "no shutdown"]), "ntp enable"]
    assert batches(commands, 2) == [(0, ["ib sm"]), (1, commands[1:5]), (5, ["ntp enable"])]
    assert [c for _, chunk in batches(commands, 32) for c in chunk] == commands


@pytest.mark.parametrize("pair", [{"system_profile": "ib split-ready"}], indirect=True)
def test_split_port_lifecycle_on_the_simulator(pair, pki):
    switch = Switch(endpoint(pair["qm8700-01"], pki), "json")
    with pytest.raises(MlnxosCommandError, match="must be administratively disabled"):
        switch.run(["interface ib 1/30 module-type qsfp-split-2 force"])
    desired, errors = fabric.check_desired({"ports": [{"range": "1/30", "speed": "hdr", "split": "2"}]})
    assert errors == []
    live = fabric.read_live_state(switch.run)
    assert live.system_profile == "ib split-ready"
    switch.run(fabric.plan(desired, live).commands)
    live = fabric.read_live_state(switch.run)
    assert "1/30" not in live.ports and live.ports["1/30/1"].speeds == ["hdr"] and live.ports["1/30/2"].admin_enabled
    assert fabric.plan(desired, live).commands == []


def test_links_come_up_at_the_best_common_speed_and_split_ports_at_half_rate(pair, pki):
    sim = pair["qm8700-01"]
    sim.set_faults({"links": {"1/1": "hdr", "1/2": "edr"}})
    switch = Switch(endpoint(sim, pki), "json")
    switch.run(["interface ib 1/1 speed hdr force"])
    ports = fabric.parse_ib_interfaces(switch.run(["show interfaces ib"])[0])
    assert (ports["1/1"].oper_up, ports["1/1"].speed, ports["1/1"].line_rate_gbps) == (True, "hdr", 200.0)
    assert (ports["1/2"].speed, ports["1/2"].line_rate_gbps) == ("edr", 100.0)
    assert not ports["1/3"].oper_up


def test_sm_election_through_the_shared_subnet_file(pair, pki):
    one, two = (Switch(endpoint(pair[n], pki), "json") for n in ("qm8700-01", "qm8700-02"))

    def state(switch) -> str:
        return fabric.read_live_state(switch.run).sm_state

    one.run(["ib sm sm-priority 14", "ib sm"])
    two.run(["ib sm sm-priority 14", "ib sm"])
    assert sorted([state(one), state(two)]) == ["master", "standby"], "equal priorities still elect one master"
    two.run(["ib sm sm-priority 15"])
    assert (state(one), state(two)) == ("standby", "master")
    pair["qm8700-02"].stop()  # the master goes away: the standby takes over
    assert state(one) == "master"


def test_json_api_http_error_is_reported_not_routed_around(pair, pki):
    sim = pair["qm8700-01"]
    sim.set_faults({"json_api_http_status": 503})
    switch = Switch(endpoint(sim, pki), "json", cli_fallback=True)
    with pytest.raises(MlnxosError, match="answered HTTP 503"):
        switch.run(["show version"])
    assert switch.warnings == [] and {e["transport"] for e in sim.log()} == {"json"}


def test_json_login_endpoint_of_newer_releases(pair, pki):
    context = ssl.create_default_context(cafile=str(pki.ca))
    url = f"https://127.0.0.1:{pair['qm8700-01'].https_port}/admin/launch?script=rh&template=json-request&action=json-login"
    for password, status in ((PASSWORD, "OK"), ("wrong", "ERROR")):
        request = urllib.request.Request(url, data=json.dumps({"username": "admin", "password": password}).encode(),
                                         method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            assert json.loads(response.read())["status"] == status
            assert ("session=" in (response.headers.get("Set-Cookie") or "")) == (status == "OK")


def test_ssh_host_key_is_checked_by_default(pair, pki, tmp_path):
    sim = pair["qm8700-01"]
    strict = Endpoint("127.0.0.1", "admin", PASSWORD, ssh_port=sim.ssh_port, timeout=10)
    assert strict.ssh_host_key_checking is True
    with pytest.raises(MlnxosError, match="not in the known hosts, so the password is not sent"):
        Switch(strict, "cli").run(["show version"])
    assert not any(e["command"] == "<ssh login>" for e in sim.log()), "the password was sent to an unknown host"
    key = paramiko.RSAKey.from_private_key_file(str(sim.state.with_suffix(".ssh_host_key")))
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{sim.ssh_port} {key.get_name()} {key.get_base64()}\n")
    strict.ssh_known_hosts = str(known_hosts)
    switch = Switch(strict, "cli")
    assert fabric.parse_version(switch.run(["show version"])[0]) == "3.9.0606"
    switch.close()


def test_long_batches_are_split_and_the_failing_index_counts_from_the_first_command(pair, pki):
    sim = pair["qm8700-01"]
    switch = Switch(endpoint(sim, pki), "json")
    commands = [f"interface ib 1/{n} description \"batch {n}\"" for n in range(1, 41)]
    assert len(switch.run(commands)) == 40
    posts = [e for e in sim.log() if e["command"].startswith("interface ib")]
    assert len(posts) == 40 and sim.config()["ports"]["1/40"]["description"] == "batch 40"
    with pytest.raises(MlnxosCommandError) as caught:
        switch.run([*commands[:35], "interface ib 1/99 speed hdr force", "ib sm"])
    assert caught.value.index == 35 and sim.config()["sm"]["enabled"] is False


def test_a_rename_while_the_sm_runs_moves_the_priority_to_the_new_node_name(pair, pki):
    sim = pair["qm8700-01"]
    switch = Switch(endpoint(sim, pki), "json")
    switch.run(["hostname qm8700-01", "ib sm sm-priority 15", "ib sm"])
    desired, _ = fabric.check_desired({"hostname": "qm8700-a", "sm": {"enabled": True, "priority": 15}})
    todo = fabric.plan(desired, fabric.read_live_state(switch.run))
    assert todo.commands == ["hostname qm8700-a", "ib sm sm-priority 15"]
    switch.run(todo.commands)
    live = fabric.read_live_state(switch.run)
    assert (live.hostname, live.sm_priority, live.sm_state) == ("qm8700-a", 15, "master")
    again = fabric.plan(desired, live)
    assert again.commands == [] and again.unmanaged == {"sm_nodes": ["qm8700-01"]}
    switch.close()
