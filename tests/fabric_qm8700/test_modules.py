"""The modules in-process (AnsibleModule with patched arguments): the input check before any connection, check mode."""

from __future__ import annotations

import json

import mlnxos_fabric
import mlnxos_facts
import pytest
from ansible.module_utils.testing import patch_module_args

from .conftest import PASSWORD


def run_module(module, args: dict, capsys) -> dict:
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def connection(sim, pki) -> dict:
    return {"api_host": "127.0.0.1", "api_port": sim.https_port, "ssh_port": sim.ssh_port, "username": "admin",
            "password": PASSWORD, "ca_path": str(pki.ca), "name": sim.name}


@pytest.mark.parametrize("option", ["check_only", "validate_only"])  # validate_only: the old name, an alias
def test_check_only_reports_every_problem_without_connecting(capsys, option):
    result = run_module(mlnxos_fabric, {
        "api_host": "192.0.2.1", "username": "admin", "password": "", option: True, "name": "qm8700-02",
        "ports": [{"range": "1/0"}], "partitions": [{"name": "Default", "pkey": "0x7ffe"}],
        "sm_peers": [["qm8700-01", "master", 15], ["qm8700-02", "master", 14]],
        "input_names": {"ports": "qm8700_ports", "partitions": "qm8700_partitions", "api_password": "qm8700_api_password"},
    }, capsys)
    assert result["failed"] and result["msg"].startswith("qm8700-02 (192.0.2.1): invalid input, nothing was sent")
    assert [e.split(" ")[0] for e in result["errors"]] == [
        "qm8700_ports[0].range", "qm8700_partitions[0].pkey", "qm8700_sm_role:", "qm8700_api_password"]


def test_check_mode_reads_and_diffs_but_sends_no_configuration(pair, pki, capsys):
    sim = pair["qm8700-01"]
    args = {**connection(sim, pki), "_ansible_check_mode": True, "_ansible_diff": True,
            "sm": {"enabled": True, "priority": 15}, "hostname": "qm8700-01"}
    result = run_module(mlnxos_fabric, args, capsys)
    assert result["changed"] and result["commands"] == ["hostname qm8700-01", "ib sm sm-priority 15", "ib sm"]
    assert not result["saved"] and "+" not in result["diff"]["before"]
    assert "sm.priority: 15" in result["diff"]["after"] and "sm.priority: 0" in result["diff"]["before"]
    assert [e for e in sim.log() if e["kind"] == "config"] == []
    facts = run_module(mlnxos_facts, {**connection(sim, pki), "verify": {"sm": {"enabled": True, "priority": 15,
                                                                                 "role": "master"}}}, capsys)
    assert facts["facts"]["sm_state"] == "disabled"
    assert "not in place: ib sm" in facts["mismatches"]
    assert any("subnet manager on node" in m and "is 'disabled'" in m and "designed 'master'" in m
               for m in facts["mismatches"])


def test_a_declared_split_without_the_split_ready_profile_fails_before_any_command(pair, pki, capsys):
    sim = pair["qm8700-01"]
    result = run_module(mlnxos_fabric, {**connection(sim, pki), "hostname": "qm8700-01",
                                        "ports": [{"range": "1/5", "speed": "hdr100", "split": "2"}]}, capsys)
    assert result["failed"] and "nothing was changed" in result["msg"]
    assert "system profile ib split-ready" in result["msg"] and "reboots the switch" in result["msg"]
    assert [e for e in sim.log() if e["kind"] == "config"] == [], "a command was sent"
