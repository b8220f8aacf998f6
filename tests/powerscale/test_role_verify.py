"""The verify step of roles/powerscale's Molecule scenario (roles/powerscale/molecule/default/verify.yml, which
runs roles/powerscale/tasks/verify.yml alone) against the simulator: it passes on the cluster the role converged
and fails, naming the path and what differs, once an export, a quota or an export directory is changed behind
the role's back; it changes nothing itself."""

from __future__ import annotations

from .conftest import ROOT, papi_client, run_playbook
from .test_role import PLAYBOOK, inventory

VERIFY = (ROOT / "roles/powerscale/molecule/default/verify.yml").read_text()


def _converged(sim, pki, tmp_path) -> str:
    inv = inventory(sim, pki)
    first = run_playbook(tmp_path, PLAYBOOK, inventory=inv)
    assert first.rc == 0, first.stdout[-5000:] + first.stderr[-2000:]
    return inv


def test_verify_passes_on_the_converged_cluster_and_sends_no_change(sim, pki, tmp_path):
    inv = _converged(sim, pki, tmp_path)
    sim.requests.clear()
    run = run_playbook(tmp_path, VERIFY, inventory=inv, json_output=False)
    assert run.rc == 0, run.stdout[-5000:] + run.stderr[-2000:]
    assert "changed=0" in run.stdout and "failed=0" in run.stdout
    assert sim.mutating_requests() == []


def test_verify_names_each_export_quota_and_directory_changed_by_hand(sim, pki, tmp_path):
    inv = _converged(sim, pki, tmp_path)
    client = papi_client(sim, pki)
    ids = {e["paths"][0]: eid for eid, e in sim.cluster.exports.items()}
    client.delete(f"/platform/4/protocols/nfs/exports/{ids['/ifs/data/scratch']}")
    training = sim.cluster.exports[ids["/ifs/data/training"]]
    client.put(f"/platform/4/protocols/nfs/exports/{ids['/ifs/data/training']}",
               {"clients": [*training["clients"], "198.51.100.99"]})
    (quota_id,) = sim.cluster.quotas
    client.put(f"/platform/1/quota/quotas/{quota_id}", {"thresholds": {"advisory": 1000}})
    sim.backend.dirs["/ifs/data/training"]["mode"] = "0700"
    sim.requests.clear()

    run = run_playbook(tmp_path, VERIFY, inventory=inv, json_output=False)
    out = " ".join((run.stdout + run.stderr).split())  # the YAML result format wraps long messages
    assert run.rc != 0, out[-5000:]
    assert "4 difference(s) between the cluster and the inventory" in out, out[-6000:]
    assert "export /ifs/data/scratch (zone System): 0 exports of the path on the cluster, expected 1" in out, out[-6000:]
    assert "export /ifs/data/training (zone System): clients" in out and "198.51.100.99" in out, out[-6000:]
    assert "directory quota /ifs/data/scratch: thresholds.advisory 1000, expected 134217728" in out, out[-6000:]
    assert "directory /ifs/data/training:" in out and "0700" in out, out[-6000:]
    assert sim.mutating_requests() == []
