"""The verify step of roles/qm8700's Molecule scenario (roles/qm8700/molecule/default/verify.yml, which runs
roles/qm8700/tasks/verify.yml alone) against two MLNX-OS simulators: it passes on the pair the role converged,
sends no configuration, and fails naming the switch and the setting once a port is changed by hand."""

from __future__ import annotations

from ansible.module_utils.mlnxos_client import Endpoint, Switch

from .conftest import PASSWORD, ROOT, run_playbook, write_inventory

VERIFY = ROOT / "roles/qm8700/molecule/default/verify.yml"


def test_verify_passes_on_the_converged_pair_then_names_a_port_changed_by_hand(tmp_path, pair, pki):
    inventory = write_inventory(tmp_path / "inv", pair, pki)
    first = run_playbook(inventory)
    assert first.returncode == 0, first.output[-4000:]
    one, two = pair["qm8700-01"], pair["qm8700-02"]
    one.clear_log()
    two.clear_log()

    ok = run_playbook(inventory, playbook=VERIFY)
    assert ok.returncode == 0, ok.output[-4000:]
    assert all(ok.counts(h)["changed"] == 0 and ok.counts(h)["failed"] == 0 for h in pair), ok.recap
    assert "SM master (priority 15)" in ok.output and "SM standby (priority 14)" in ok.output
    assert one.config_commands() == [] and two.config_commands() == [], "verify sent configuration"

    # Port 1/3 of qm8700-01 lowered to EDR by hand over the CLI.
    switch = Switch(Endpoint("127.0.0.1", "admin", PASSWORD, ssh_port=one.ssh_port, ssh_host_key_checking=False),
                    "cli")
    switch.run(["interface ib 1/3 speed edr force"])
    switch.close()
    one.clear_log()
    broken = run_playbook(inventory, playbook=VERIFY)
    assert broken.returncode != 0, broken.output[-4000:]
    assert broken.counts("qm8700-01")["failed"] == 1 and broken.counts("qm8700-02")["failed"] == 0, broken.recap
    assert "qm8700-01 does not match the inventory" in broken.output and "1/3" in broken.output, broken.output[-4000:]
    assert one.config_commands() == [], "verify repaired the switch: it must only report"
