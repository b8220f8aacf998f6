"""The production inventory's storage stage (playbooks/storage.yml, preflight included) against the simulator, with
an API user that holds exactly the README's RBAC role: it converges, a second run changes nothing, --check --diff
changes nothing; with a privilege or the SmartConnect Advanced licence removed it stops before any change. Only
the address of the API (the simulator on 127.0.0.1) and its CA come from the command line; everything else is
inventories/production as a site deploys it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from .conftest import API_USER, ROOT, make_sim, run_playbook
from .test_rbac import ROLE

PLAYBOOK = f"- import_playbook: {ROOT / 'playbooks/storage.yml'}\n"
ACCESS_TASK = "Cluster | the API user's privileges and the licences allow this run (read before anything else)"


def production_interfaces() -> list[dict]:
    """The F800 storage NICs of inventories/production, as the cluster's interfaces answer them."""
    hosts = yaml.safe_load((ROOT / "inventories/production/hosts.yml").read_text())
    out = []
    for node in hosts["all"]["children"]["powerscale"]["hosts"].values():
        for nic in node["storage_nics"]:
            out.append({"lnn": node["powerscale_lnn"], "name": nic["name"], "ip_addrs": [nic["address"].split("/")[0]],
                        "status": "up", "mtu": nic["mtu"]})
    return out


def production_sim(pki, privileges: dict[str, str]):
    from lab.onefs_sim.backends import MemoryBackend

    sim, port = make_sim(pki, backend=MemoryBackend(interfaces=production_interfaces()), privileges=privileges)
    sim.port = port
    sim.cluster.nodes = [{"lnn": n, "devid": n, "serial": f"SIM000000{n}"} for n in (1, 2, 3, 4)]
    sim.cluster.subnets["groupnet0.subnet0"]["sc_service_addrs"] = [{"low": "198.51.100.20", "high": "198.51.100.20"}]
    return sim


def run(sim, pki, tmp_path: Path, *args: str):
    extra = tmp_path / "api.yml"
    extra.write_text(yaml.safe_dump({"powerscale_api_host": "127.0.0.1", "powerscale_api_port": sim.port,
                                     "powerscale_api_user": API_USER, "powerscale_ca_path": str(pki.ca),
                                     "powerscale_api_retry_backoff_s": 0.01, "preflight_offline": True}))
    return run_playbook(tmp_path, PLAYBOOK, inventory_path=ROOT / "inventories/production",
                        args=["-e", f"@{extra}", *args])


@pytest.fixture
def least(pki):
    sim = production_sim(pki, dict(ROLE))
    yield sim
    sim.stop()


def test_production_storage_converges_with_the_readme_role(least, pki, tmp_path):
    first = run(least, pki, tmp_path)
    assert first.rc == 0, first.stdout[-6000:] + first.stderr[-2000:]
    assert {d: least.backend.dirs[d] for d in ("/ifs/data/training", "/ifs/data/scratch")} == {
        "/ifs/data/training": {"mode": "0755", "uid": 0, "gid": 0}, "/ifs/data/scratch": {"mode": "1777", "uid": 0,
                                                                                         "gid": 0}}
    (pool,) = least.cluster.pools.values()
    assert pool["alloc_method"] == "dynamic" and pool["sc_subnet"] == "subnet0"
    assert pool["sc_dns_zone"] == "dl.storage.example.com" and len(pool["ifaces"]) == 8
    assert sorted(e["paths"][0] for e in least.cluster.exports.values()) == ["/ifs/data/scratch",
                                                                             "/ifs/data/training"]
    least.requests.clear()
    second = run(least, pki, tmp_path)
    assert second.rc == 0 and second.changed_total == 0, json.dumps(second.data and second.data["stats"])
    check = run(least, pki, tmp_path, "--check", "--diff")
    assert check.rc == 0 and check.changed_total == 0
    assert least.mutating_requests() == []  # no directory ACL, export, quota or pool re-sent


@pytest.mark.parametrize("missing", ["ISI_PRIV_NS_IFS_ACCESS", "licence"])
def test_production_storage_stops_before_any_change_without_a_privilege_or_the_licence(pki, tmp_path, missing):
    sim = production_sim(pki, {k: v for k, v in ROLE.items() if k != missing})
    if missing == "licence":
        sim.cluster.licences["SmartConnect Advanced"] = "Evaluation Expired"
    try:
        run_ = run(sim, pki, tmp_path)
        assert run_.rc != 0
        msg = run_.result(ACCESS_TASK)["msg"]
        if missing == "licence":
            assert "licence SmartConnect Advanced for alloc_method dynamic" in msg and "Evaluation Expired" in msg
        else:
            assert "ISI_PRIV_NS_IFS_ACCESS" in msg and "create the export directories" in msg
        assert sim.mutating_requests() == [] and sim.cluster.pools == {} and sim.cluster.exports == {}
    finally:
        sim.stop()
