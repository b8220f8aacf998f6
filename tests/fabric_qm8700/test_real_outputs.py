"""The parsers on every real MLNX-OS output of tests/fixtures/mlnxos/real (byte-exact public captures) and on every
constructed one (tests/fixtures/mlnxos/constructed, formats known from prose), and the simulator held to the same
shapes: a test fails when lab/mlnxos_sim prints something else for the same command.

A set of outputs kept outside the repository (one directory per switch, laid out as constructed/qm8700-declared:
one `<command>.json` per show command, `show ib smnode NODE ...` with NODE for the hostname, and the switch's
declared state in declared.yml) is run the same way with MLNXOS_PRIVATE_CORPUS=/path/to/dir: every switch must
parse and plan no change.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.module_utils import mlnxos_fabric as fabric

from lab.mlnxos_sim.switch import RELEASES, SPLIT_READY_PROFILE, Session, Switch

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/fixtures/mlnxos"
REAL = CORPUS / "real/onyx"
CONSTRUCTED = CORPUS / "constructed"
DECLARED = CONSTRUCTED / "qm8700-declared"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def switch_dirs() -> list[Path]:
    dirs = [DECLARED]
    private = os.environ.get("MLNXOS_PRIVATE_CORPUS")
    if private:
        dirs += sorted(p.parent for p in Path(private).glob("*/declared.yml"))
    return dirs


def corpus_run(directory: Path):
    """A transport's run() answering from a switch directory of the corpus."""
    def run(commands: list[str]) -> list[Any]:
        outputs = []
        for command in commands:
            words = command.split()
            if words[:3] == ["show", "ib", "smnode"]:
                words[3] = "NODE"
            outputs.append(load(directory / ("-".join(words) + ".json")))
        return outputs
    return run


def sim_switch(tmp: Path, release: str = "3.9", profile: str = "ib") -> tuple[Switch, Session]:
    return Switch("qm8700-01", tmp / "qm8700-01.json", release=release, profile=profile), \
        Session("json", "admin", mode="config")


def shape(value: Any) -> Any:
    """Keys and value kinds, not values: what must be the same between the corpus and the simulator."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__


# ---------------------------------------------------------------- real captures


def test_every_real_file_is_listed_in_sources_and_used_here():
    sources = (CORPUS / "real/SOURCES").read_text()
    this = Path(__file__).read_text()
    for path in sorted(REAL.iterdir()):
        assert f"onyx/{path.name}" in sources, f"{path.name} has no source in SOURCES"
        assert f'"{path.name}"' in this, f"{path.name} is not parsed by any test"


def test_real_show_version():
    assert fabric.parse_version(load(REAL / "show-version.json")) == "3.6.5000"


def test_real_show_ntp_configured_without_and_with_servers():
    assert fabric.parse_ntp(load(REAL / "show-ntp-configured-none.json")) == (False, [])
    assert fabric.parse_ntp(load(REAL / "show-ntp-configured-servers.json")) == (True, ["2.2.2.2"])


def test_real_running_config_text_and_json_envelope():
    text = fabric.parse_running_config((REAL / "running-config-include-logging.txt").read_text())
    assert text.syslog_servers == ["10.10.10.10", "10.10.10.12"]
    lines = fabric.config_lines(load(REAL / "running-config-include-bfd.json"))
    assert lines[0] == "protocol bfd" and len(lines) == 10, "three-space indentation is stripped"
    assert fabric.parse_running_config(load(REAL / "running-config-include-bfd.json")).syslog_servers == []


def test_real_show_logging_is_a_list_with_the_servers_in_a_later_element():
    data = load(REAL / "show-logging.json")
    assert isinstance(data, list) and "Remote syslog servers" not in data[0]
    assert data[2]["Remote syslog servers"] == [{"Lines": ["No remote syslog servers configured"]}]


def test_an_ethernet_interface_table_is_not_read_as_infiniband_ports():
    with pytest.raises(fabric.ParseError, match="no InfiniBand port"):
        fabric.parse_ib_interfaces(load(REAL / "show-interfaces-ethernet.json"))


def test_the_simulator_prints_the_real_shapes(tmp_path):
    switch, session = sim_switch(tmp_path)
    version = switch.execute(session, "show version")
    assert shape(version.data) == shape(load(REAL / "show-version.json"))
    real_text = (REAL / "show-version.txt").read_text().splitlines()
    sim_text = version.text.splitlines()
    label = re.compile(r"^([A-Za-z ]+:)( +)")
    assert [(m.group(1), len(m.group(0))) if (m := label.match(x)) else x for x in sim_text] == \
        [(m.group(1), len(m.group(0))) if (m := label.match(x)) else x for x in real_text], \
        "labels, their column and the blank lines between groups must be the real ones"
    assert shape(switch.execute(session, "show ntp configured").data) == \
        shape(load(REAL / "show-ntp-configured-none.json"))
    switch.execute(session, "ntp server 2.2.2.2")
    sim_ntp = switch.execute(session, "show ntp configured").data
    real_ntp = load(REAL / "show-ntp-configured-servers.json")
    assert set(sim_ntp[0]) == set(real_ntp[0]) and set(sim_ntp[1]) == set(real_ntp[2])
    sim_logging = switch.execute(session, "show logging").data
    real_logging = load(REAL / "show-logging.json")
    assert [set(e) for e in sim_logging] == [set(e) for e in real_logging]
    assert sim_logging[2] == real_logging[2]
    running = switch.execute(session, "show running-config").data
    assert set(running) == {"Lines"}
    assert all(line.startswith(("##", "   ")) or line in ("", "no cli default prefix-modes enable")
               for line in running["Lines"])


# ---------------------------------------------------------------- constructed formats, and the simulator


@pytest.mark.parametrize("directory", switch_dirs(), ids=lambda p: p.name)
def test_a_switch_in_its_declared_state_parses_and_plans_no_change(directory):
    live = fabric.read_live_state(corpus_run(directory))
    declared = yaml.safe_load((directory / "declared.yml").read_text())
    desired, errors = fabric.check_desired(declared)
    assert errors == []
    result = fabric.plan(desired, live)
    assert (result.commands, result.problems) == ([], [])
    assert fabric.verify(desired, live, (declared.get("sm") or {}).get("role")) == []


def test_the_constructed_switch_reads_as_documented():
    live = fabric.read_live_state(corpus_run(DECLARED))
    assert (live.hostname, live.sm_enabled, live.sm_priority, live.sm_state) == ("qm8700-01", True, 15, "master")
    assert live.ports["1/1"].admin_enabled and live.ports["1/1"].speeds == ["hdr"] and live.ports["1/1"].oper_up
    assert live.ports["1/17"].speeds == list(fabric.IB_SPEEDS) and not live.ports["1/40"].admin_enabled
    assert live.ports["1/1"].line_rate_gbps == 200.0 and live.ports["1/1"].actual_speed == "hdr"
    assert live.syslog_servers == ["192.0.2.124"] and live.ntp_servers == ["192.0.2.123"]
    assert not fabric.split_ready(live.system_profile)


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_the_simulator_prints_the_constructed_shapes(tmp_path, release):
    switch, session = sim_switch(tmp_path, release)
    for command in ("hostname qm8700-01", "ib sm", "ib sm sm-priority 15", "ntp server 192.0.2.123", "ntp enable"):
        switch.execute(session, command)
    for path in sorted(DECLARED.glob("show-*.json")):
        command = path.stem.replace("-", " ").replace(" NODE ", " qm8700-01 ")
        command = command.replace("running config", "running-config").replace("sm priority", "sm-priority") \
            .replace("sm running", "sm-running").replace("ha role", "ha-role").replace("ha state", "ha-state")
        printed = switch.execute(session, command).data
        expected = load(path)
        assert shape(printed) == shape(expected), command
        if command == "show interfaces ib":
            assert [list(b) for b in printed] == [list(expected[0])] * 40, "labels and their order"
    assert fabric.parse_version(switch.execute(session, "show version").data) == RELEASES[release].release


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_the_simulator_is_read_by_the_parsers_on_each_release(release):
    with tempfile.TemporaryDirectory() as tmp:
        switch, session = sim_switch(Path(tmp), release, SPLIT_READY_PROFILE)
        desired, _ = fabric.check_desired({
            "hostname": "qm8700-01", "sm": {"enabled": True, "priority": 15},
            "ports": [{"range": "1/1-1/2", "speed": "hdr"}, {"range": "1/3", "speed": "hdr100", "split": "2"}]})

        def run(commands: list[str]) -> list[Any]:
            return [switch.execute(session, c).data for c in commands]

        todo = fabric.plan(desired, fabric.read_live_state(run))
        assert todo.problems == [] and todo.commands
        run(todo.commands)
        live = fabric.read_live_state(run)
        assert fabric.plan(desired, live).commands == []
        assert live.version == RELEASES[release].release and live.ports["1/3/2"].speeds == ["hdr"]


def test_old_simulator_state_files_are_read_as_the_same_switch(tmp_path):
    old = {"hostname": "qm8700-01", "sm": {"enabled": True, "priority": 15},
           "cages": {f"1/{n}": "qsfp" for n in range(1, 41)},
           "ports": {f"1/{n}": {"admin": True, "description": "",
                                "speeds": ["sdr", "ddr", "qdr", "fdr10", "fdr", "edr", "hdr"]} for n in range(1, 41)},
           "partitions": {}, "ntp": {"enabled": False, "servers": []}, "logging": {"servers": {}}}
    old["ports"]["1/1"]["speeds"] = ["hdr"]
    state = tmp_path / "qm8700-01.json"
    state.write_text(json.dumps({"name": "qm8700-01", "saved": old, "running": old}))
    switch, session = sim_switch(tmp_path)
    live = fabric.read_live_state(lambda cs: [switch.execute(session, c).data for c in cs])
    assert live.sm_enabled and live.sm_priority == 15 and live.ports["1/1"].speeds == ["hdr"]
    assert live.ports["1/2"].speeds == list(fabric.IB_SPEEDS) and live.system_profile == "ib"
