"""The verify step of roles/sn3700v's Molecule scenario (roles/sn3700v/molecule/default/verify.yml, which runs
roles/sn3700v/tasks/verify.yml alone), nvue method, against an NVUE simulator: it passes on the switch the role
converged and sends nothing, and fails naming the switch and what differs once the applied configuration is
changed behind its back (here: every port's MTU applied as 9100 through the API). The files method's verify reads
the switch VM (cumulus_fabric_verify, tested in test_verify_module.py) and runs in the lab flow."""

from __future__ import annotations

from .conftest import ROOT, fabric_vars, run_playbook, write_inventory
from .test_nvue_role import cables, switch_vars

VERIFY = ROOT / "roles/sn3700v/molecule/default/verify.yml"


def test_verify_passes_on_the_converged_switch_then_names_an_mtu_changed_behind_its_back(start_sim, pki, tmp_path):
    sim = start_sim("swa")
    inventory = write_inventory(tmp_path / "hosts.yml", {"swa": switch_vars(sim.port)},
                                cables("swa", {"dgx01": "swp1", "dgx02": "swp2", "powerscale01": "swp9"}),
                                fabric_vars(storage_fabric_ca_path=str(pki["ca"]), storage_fabric_port_speed_managed=True))
    first = run_playbook(inventory)
    assert first.rc == 0 and first.stats("swa")["failures"] == 0, first.text()[-3000:]
    mutations = len(sim.mutations())

    ok = run_playbook(inventory, playbook=VERIFY)
    assert ok.rc == 0 and ok.stats("swa")["changed"] == 0, ok.text()[-3000:]
    assert len(sim.mutations()) == mutations, "verify sent something to the switch"

    drift = run_playbook(inventory, "-e", "storage_fabric_port_mtu=9100")
    assert drift.rc == 0 and drift.stats("swa")["changed"] == 1, drift.text()[-3000:]
    mutations = len(sim.mutations())
    broken = run_playbook(inventory, playbook=VERIFY)
    assert broken.rc != 0 and broken.stats("swa")["failures"] == 1, broken.text()[-3000:]
    failure = broken.failure("swa")
    assert "swa: the applied NVUE configuration differs from the inventory" in failure, failure
    assert "9100" in failure and "9216" in failure, failure
    assert len(sim.mutations()) == mutations, "verify sent something to the switch"
