"""Module logic called in-process against the simulator (fast paths the playbook tests do not cover):
network pool create / no-op / set-compare / update / check mode, quota validation, directory modes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import powerscale_directory
import powerscale_network_pool
import powerscale_nfs_export
import powerscale_quota
import pytest
from ansible.module_utils.onefs import OneFSError

from .conftest import make_dir
from .conftest import papi_client as client


@dataclass
class FakeModule:
    params: dict[str, Any]
    check_mode: bool = False
    warnings: list[str] = field(default_factory=list)


def pool_params(**kw: Any) -> dict[str, Any]:
    params = {"groupnet": "groupnet0", "subnet": "subnet0", "name": "pool-dl", "access_zone": "System",
              "alloc_method": "dynamic", "sc_dns_zone": "dl.storage.example.com", "sc_subnet": "subnet0",
              "sc_connect_policy": "round_robin",
              "description": None,
              "ranges": [{"low": "198.51.100.21", "high": "198.51.100.24"}],
              "ifaces": [{"iface": "40gige-1", "lnn": 1}]}
    params.update(kw)
    return params


def test_network_pool_create_noop_reorder_update_and_check(sim, pki):
    c = client(sim, pki)
    sim.cluster.nodes.append({"lnn": 2, "devid": 2, "serial": "SIM0000002"})
    created = powerscale_network_pool.run(FakeModule(pool_params()), c)
    assert created["changed"] is True and sim.cluster.pools["groupnet0.subnet0.pool-dl"]["sc_dns_zone"]
    assert created["sent"]["sc_subnet"] == "subnet0"  # the subnet whose SmartConnect service answers the zone
    assert powerscale_network_pool.run(FakeModule(pool_params()), c)["changed"] is False
    two = [{"iface": "40gige-1", "lnn": 2}, {"iface": "40gige-1", "lnn": 1}]
    updated = powerscale_network_pool.run(FakeModule(pool_params(ifaces=two)), c)
    assert updated["changed"] is True and updated["sent"] == {"ifaces": two}
    reordered = powerscale_network_pool.run(FakeModule(pool_params(ifaces=list(reversed(two)))), c)
    assert reordered["changed"] is False
    before = [r for r in sim.requests if r.mutating]
    check = powerscale_network_pool.run(FakeModule(pool_params(sc_connect_policy="conn_count", ifaces=two),
                                                   check_mode=True), c)
    assert check["changed"] is True and check["sent"] == {"sc_connect_policy": "conn_count"}
    assert [r for r in sim.requests if r.mutating] == before
    assert sim.cluster.pools["groupnet0.subnet0.pool-dl"]["sc_connect_policy"] == "round_robin"


@pytest.mark.parametrize("thresholds, text", [
    ({"hard": 100, "soft": 200, "soft_grace": 60}, "thresholds.soft=200 is above thresholds.hard=100"),
    ({"hard": 100, "soft": 50}, "needs thresholds.soft_grace"),
    ({"hard": -1}, "thresholds.hard=-1 is below the API's minimum of 1"),
    ({"hard": 0}, "thresholds.hard=0 is below the API's minimum of 1"),
    ({"advisory": 0}, "thresholds.advisory=0 is below the API's minimum of 1"),
])
def test_quota_thresholds_are_checked_before_any_request(thresholds, text):
    with pytest.raises(OneFSError) as err:
        powerscale_quota.desired_thresholds(thresholds, "/ifs/data/scratch")
    assert text in str(err.value) and "/ifs/data/scratch" in str(err.value)


def test_quota_update_sends_the_whole_thresholds_object(sim, pki):
    c = client(sim, pki)
    make_dir(c, "/ifs/data/scratch", "0777")
    params = {"path": "/ifs/data/scratch", "state": "present", "include_snapshots": False, "container": False,
              "thresholds": {"hard": 1000, "soft": None, "soft_grace": None, "advisory": 500}}
    assert powerscale_quota.run(FakeModule(dict(params)), c)["changed"] is True
    assert powerscale_quota.run(FakeModule(dict(params)), c)["changed"] is False
    params["thresholds"] = {"hard": 2000, "soft": None, "soft_grace": None, "advisory": 500}
    result = powerscale_quota.run(FakeModule(dict(params)), c)
    assert result["sent"]["thresholds"] == {"hard": 2000, "soft": None, "advisory": 500, "soft_grace": None}
    assert result["diff"]["before"]["thresholds"]["hard"] == 1000
    params["state"] = "absent"
    assert powerscale_quota.run(FakeModule(dict(params)), c)["changed"] is True
    assert sim.cluster.quotas == {}


def test_directory_modes_are_normalised_and_validated():
    assert powerscale_directory.normal_mode("755") == "0755"
    assert powerscale_directory.normal_mode("1777") == "1777"
    with pytest.raises(OneFSError, match="not an octal mode"):
        powerscale_directory.normal_mode("rwxr-xr-x")


def directory_params(**kw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"path": "/ifs/data/scratch", "owner": "root", "group": "wheel", "mode": "1777",
                              "recursive": True}
    params.update(kw)
    return params


def test_directory_compares_the_personas_the_cluster_resolved(sim, pki):
    c = client(sim, pki)
    made = powerscale_directory.run(FakeModule(directory_params()), c)
    assert made["changed"] is True and made["directory"] == {"path": "/ifs/data/scratch", "owner": "root",
                                                             "group": "wheel", "mode": "1777"}
    assert powerscale_directory.run(FakeModule(directory_params()), c)["changed"] is False
    by_id = powerscale_directory.run(FakeModule(directory_params(owner="UID:0", group="GID:0")), c)
    assert by_id["changed"] is False  # ids compare with the answer's id, names with its name
    before = len(sim.mutating_requests())
    with pytest.raises(OneFSError) as err:  # OneFS has no group root: refused, named, never re-sent in silence
        powerscale_directory.run(FakeModule(directory_params(group="root")), c)
    assert "GROUP:root" in err.value.message and err.value.status == 400
    assert "setting group root" in err.value.message and "GID 0 is the group 'wheel'" in err.value.message
    assert len(sim.mutating_requests()) == before + 1
    assert sim.backend.dirs["/ifs/data/scratch"] == {"mode": "1777", "uid": 0, "gid": 0}


def test_directory_fails_when_the_cluster_keeps_another_persona():
    acl = {"owner": {"id": "UID:0", "name": "root", "type": "user"},
           "group": {"id": "GID:0", "name": "wheel", "type": "group"}, "mode": "0755"}
    assert powerscale_directory.differences({"owner": "root", "group": "wheel", "mode": "0755"}, acl) == {}
    assert powerscale_directory.differences({"group": "root"}, acl) == {"group": "root"}
    assert powerscale_directory.differences({"group": "GID:0", "owner": "uid:0"}, acl) == {}

    class Answers:
        def get(self, path: str, **kw: Any) -> dict[str, Any]:
            return acl

    with pytest.raises(OneFSError) as err:
        powerscale_directory._settled(Answers(), "/namespace/ifs/x", "/ifs/x", {"group": "root"})  # type: ignore[arg-type]
    assert "keeps group wheel (GID:0) after setting group root" in err.value.message
    assert "'wheel', not 'root'" in err.value.message


def export_params(**kw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {name: None for name in powerscale_nfs_export.argument_spec()}
    params.update({"path": "/ifs/data/old", "zone": "System", "state": "present"})
    params.update(kw)
    return params


def test_absent_with_require_marker_refuses_an_export_this_project_did_not_create(sim, pki):
    c = client(sim, pki)
    make_dir(c, "/ifs/data/old")
    c.post("/platform/4/protocols/nfs/exports", {"paths": ["/ifs/data/old"], "description": "made by hand"},
           query={"zone": "System"})
    module = FakeModule(export_params(state="absent", require_marker="[managed-by:powerscale-dgx-ra]"))
    with pytest.raises(OneFSError) as err:
        powerscale_nfs_export.run(module, c)
    assert "does not carry the marker" in str(err.value) and "not deleted" in str(err.value)
    assert len(sim.cluster.exports) == 1
    assert not [r for r in sim.requests if r.method == "DELETE" and "exports" in r.path]
