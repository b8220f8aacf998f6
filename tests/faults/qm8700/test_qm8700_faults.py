"""A QM8700 refusing a configuration command part-way through roles/qm8700's apply, on each transport.

MLNX-OS applies each command as it comes (there is no candidate configuration): the commands it accepted before
the refused one are in its running configuration. The module undoes them (their inverses, from the state it read
before the run), reads the running configuration back and reports nothing as applied only when it reads as before;
nothing is saved (no `configuration write`). The refusal text is the switch's own (lab/mlnxos_sim's command_errors
fault, printed as MLNX-OS prints an error: after '% ' on the CLI, in status_message on the JSON API).

Each case ends within BOUND_S, names the switch, the refused command with the switch's words and what to do, and a
re-run converges once the cause is gone.
"""

from __future__ import annotations

import time

import pytest
from fabric_qm8700.conftest import run_playbook, write_inventory

BOUND_S = 120  # one fabric-stage run of the pair against the simulators, fault included (10-30 s measured)

CASES = {
    # the last command of the plan: everything before it (NTP, syslog, SM, 16 port blocks, IPoIB) is undone
    "json api, last command": ("json", r"ib partition Default mtu 4K force",
                               "the switch rejected 'ib partition Default mtu 4K force' (json api): "),
    # inside an interface block on the CLI (its error line starts with '%'): the session is left in
    # `interface ib 1/1`, and the undo starts from there
    "ssh cli, inside an interface block": ("cli", r'description "DGX A100 compute HCAs"',
                                           "the switch rejected 'description \"DGX A100 compute HCAs\"' (ssh cli): % "),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_refused_command_is_undone_read_back_and_a_rerun_converges(tmp_path, pair, pki, case):
    transport, pattern, said = CASES[case]
    two = pair["qm8700-02"]
    running_before = two.config("running")
    two.set_faults({"command_errors": {pattern: "Resource temporarily unavailable (simulated fault)"}})
    inventory = write_inventory(tmp_path / "inv", pair, pki, qm8700_transport=transport)

    start = time.monotonic()
    run = run_playbook(inventory)
    assert run.returncode != 0 and time.monotonic() - start < BOUND_S, run.output[-4000:]
    assert run.counts("qm8700-02")["failed"] == 1 and run.counts("qm8700-02")["changed"] == 0, run.output[-4000:]
    assert f"qm8700-02 (127.0.0.1): {said}Resource temporarily unavailable (simulated fault)" in run.output
    assert ("command(s) it accepted before were undone and the running configuration reads back as before the run; "
            "nothing was saved. Fix what the switch names and run the fabric stage again") in run.output
    assert "configuration write" not in two.config_commands()
    running, saved = two.config("running"), two.config("saved")
    # the SM priority is back at 0, now written out (`ib sm sm-priority 0`): the same priority
    assert running.pop("smnodes") in ({}, {"qm8700-02": {"priority": 0}})
    running_before.pop("smnodes")
    assert running == running_before and saved["sm"]["enabled"] is False
    # the other switch of the pair was configured and saved
    assert run.counts("qm8700-01")["failed"] == 0 and pair["qm8700-01"].config("saved")["sm"]["enabled"] is True

    two.set_faults({})
    again = run_playbook(inventory)
    assert again.returncode == 0 and again.counts("qm8700-02")["changed"] == 1, again.output[-4000:]
    assert two.config("saved")["partitions"]["Default"]["mtu"] == "4K"
    still = run_playbook(inventory)
    assert still.returncode == 0 and still.counts("qm8700-02")["changed"] == 0, still.output[-4000:]
