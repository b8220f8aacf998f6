"""The OneFS API simulator: response shapes match the reference fixtures, OneFS semantics (409, 404, 400,
zones, numeric ids), persistence, and the knfsd backend's rendering and commands (with a fake runner)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from ansible.module_utils.onefs import OneFSError

from lab.onefs_sim.backends import KnfsdBackend, export_options, render_exports
from lab.onefs_sim.model import EXPORT_DEFAULTS, Cluster
from lab.onefs_sim.server import OneFSSimulator

from .conftest import API_PASSWORD, API_USER, make_sim
from .conftest import make_dir as mkdir
from .conftest import papi_client as client

FIXTURES = Path(__file__).parent / "fixtures"
EXPORTS = "/platform/4/protocols/nfs/exports"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def assert_shape(reference: Any, actual: Any, where: str = "$") -> None:
    """Every key of the reference exists in the answer, with the same JSON type (null matches anything)."""
    if reference is None or actual is None:
        return
    if isinstance(reference, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        missing = sorted(set(reference) - set(actual))
        assert not missing, f"{where}: simulator lacks keys {missing}"
        for key, value in reference.items():
            assert_shape(value, actual[key], f"{where}.{key}")
    elif isinstance(reference, list):
        assert isinstance(actual, list), f"{where}: expected a list, got {actual!r}"
        if reference and actual:
            assert_shape(reference[0], actual[0], f"{where}[0]")
    elif isinstance(reference, bool):
        assert isinstance(actual, bool), f"{where}: expected a boolean, got {actual!r}"
    elif isinstance(reference, (int, float)):
        assert isinstance(actual, (int, float)) and not isinstance(actual, bool), f"{where}: expected a number"
    else:
        assert isinstance(actual, type(reference)), f"{where}: expected {type(reference).__name__}, got {actual!r}"


def test_responses_match_the_reference_shapes(sim, pki):
    c = client(sim, pki)
    mkdir(c, "/ifs/data/training")
    mkdir(c, "/ifs/data/scratch")
    created = c.post(EXPORTS, {"paths": ["/ifs/data/training"], "clients": ["198.51.100.11"]},
                     query={"zone": "System"})
    assert_shape(fixture("nfs_export_create.json"), created)
    assert isinstance(created["id"], int)
    assert_shape(fixture("nfs_exports_list.json"), c.get(EXPORTS, query={"zone": "System"}))
    q = c.post("/platform/1/quota/quotas", {"path": "/ifs/data/scratch", "type": "directory",
                                            "include_snapshots": False,
                                            "thresholds": {"hard": 268435456, "soft": 201326592,
                                                           "soft_grace": 3600, "advisory": 134217728}})
    assert_shape(fixture("quota_create.json"), q)
    assert_shape(fixture("quota_list.json"), c.get("/platform/1/quota/quotas"))
    assert_shape(fixture("cluster_config.json"), c.get("/platform/1/cluster/config"))
    assert_shape(fixture("cluster_identity.json"), c.get("/platform/1/cluster/identity"))
    assert_shape(fixture("zones_list.json"), c.get("/platform/1/zones"))
    assert_shape(fixture("platform_latest.json"), c.get("/platform/latest"))
    assert_shape(fixture("namespace_acl.json"), c.get("/namespace/ifs/data/training", query={"acl": True}))
    c.post("/platform/3/network/groupnets/groupnet0/subnets/subnet0/pools",
           {"name": "pool-dl", "ranges": [{"low": "198.51.100.21", "high": "198.51.100.24"}],
            "ifaces": [{"iface": "40gige-1", "lnn": 1}], "sc_dns_zone": "dl.storage.example.com"})
    assert_shape(fixture("network_pools_list.json"), c.get("/platform/3/network/pools"))


def test_export_defaults_cover_the_reference_export():
    reference = fixture("nfs_exports_list.json")["exports"][0]
    assert set(reference) - {"id", "paths", "zone"} <= set(EXPORT_DEFAULTS)


def test_error_bodies_match_the_reference(sim, pki):
    c = client(sim, pki)
    mkdir(c, "/ifs/data/training")
    c.post(EXPORTS, {"paths": ["/ifs/data/training"]}, query={"zone": "System"})
    with pytest.raises(OneFSError) as conflict:
        c.post(EXPORTS, {"paths": ["/ifs/data/training"], "clients": ["198.51.100.12"]}, query={"zone": "System"})
    assert conflict.value.status == 409 and conflict.value.code == fixture("error_conflict.json")["errors"][0]["code"]
    assert "/ifs/data/training" in conflict.value.message
    with pytest.raises(OneFSError) as missing:
        c.get(f"{EXPORTS}/999", query={"zone": "System"})
    assert missing.value.status == 404 and missing.value.code == "AEC_NOT_FOUND"
    with pytest.raises(OneFSError) as text_id:
        c.get(f"{EXPORTS}/abc")
    assert text_id.value.status == 404


@pytest.mark.parametrize("body, field", [
    ({"paths": ["/ifs/data/training"], "bogus": 1}, "bogus"),
    ({"paths": ["/ifs/data/training"], "clients": ["not a host!"]}, "clients"),
    ({"paths": ["/ifs/data/training"], "security_flavors": ["ntlm"]}, "security_flavors"),
    ({"paths": ["/ifs/data/training"], "map_root": {"enabled": "yes"}}, "map_root"),
    ({"paths": ["/ifs/data/nowhere"]}, "paths"),
    ({"paths": ["/etc"]}, "paths"),
    ({"clients": ["198.51.100.11"]}, "paths"),
])
def test_bad_fields_get_400_with_the_papi_error_body(sim, pki, body, field):
    c = client(sim, pki)
    mkdir(c, "/ifs/data/training")
    with pytest.raises(OneFSError) as err:
        c.post(EXPORTS, body, query={"zone": "System"})
    assert err.value.status == 400 and err.value.code == "AEC_BAD_REQUEST"
    assert f"(field {field})" in err.value.message


@pytest.mark.parametrize("low, high", [("198.51.100.24", "198.51.100.21"), ("198.51.100.21", "2001:db8::24"),
                                       ("2001:db8::21", "198.51.100.24"), ("198.51.100.21", "nowhere")])
def test_pool_range_that_is_no_range_gets_400(sim, pki, low, high):
    with pytest.raises(OneFSError) as err:
        client(sim, pki).post("/platform/3/network/groupnets/groupnet0/subnets/subnet0/pools",
                              {"name": "pool-dl", "ranges": [{"low": low, "high": high}]})
    assert err.value.status == 400 and "(field ranges)" in err.value.message


def test_zone_scoping_and_numeric_ids(sim, pki):
    sim.cluster.zones["ai"] = {"path": "/ifs/ai", "zone_id": 2}
    c = client(sim, pki)
    mkdir(c, "/ifs/ai/data")
    mkdir(c, "/ifs/data/training")
    e1 = c.post(EXPORTS, {"paths": ["/ifs/data/training"]}, query={"zone": "System"})["id"]
    e2 = c.post(EXPORTS, {"paths": ["/ifs/ai/data"]}, query={"zone": "ai"})["id"]
    assert (e1, e2) == (1, 2)
    assert [e["id"] for e in c.get(EXPORTS, query={"zone": "ai"})["exports"]] == [2]
    assert [e["id"] for e in c.get(EXPORTS)["exports"]] == [1]  # no zone = System
    with pytest.raises(OneFSError) as err:
        c.get(f"{EXPORTS}/2", query={"zone": "System"})
    assert err.value.status == 404
    with pytest.raises(OneFSError) as outside:
        c.post(EXPORTS, {"paths": ["/ifs/data/training"]}, query={"zone": "ai"})
    assert outside.value.status == 400 and "base directory" in outside.value.message
    with pytest.raises(OneFSError) as nozone:
        c.get(EXPORTS, query={"zone": "nope"})
    assert nozone.value.status == 404


def test_state_is_persisted_and_reloaded(pki, tmp_path):
    state = tmp_path / "state.json"
    sim, port = make_sim(pki, state_path=str(state))
    sim.port = port
    try:
        c = client(sim, pki)
        mkdir(c, "/ifs/data/training")
        c.post(EXPORTS, {"paths": ["/ifs/data/training"], "clients": ["198.51.100.11"]}, query={"zone": "System"})
    finally:
        sim.stop()
    data = json.loads(state.read_text())
    assert data["cluster"]["exports"]["1"]["clients"] == ["198.51.100.11"]
    again = OneFSSimulator(sim.backend.__class__(), API_USER, API_PASSWORD, state_path=str(state))
    assert again.cluster.exports[1]["paths"] == ["/ifs/data/training"]
    assert "/ifs/data/training" in again.backend.dirs


def test_exportfs_rendering_maps_onefs_semantics():
    ids = {"nobody": (65534, 65534), "root": (0, 0), "svc": (1500, 1500)}.__getitem__
    squash = dict(EXPORT_DEFAULTS, paths=["/ifs/data/training"], zone="System",
                  clients=["198.51.100.11", "198.51.100.12"], root_clients=["198.51.100.99"],
                  read_only_clients=["198.51.100.50"])
    text = render_exports({1: squash}, ids)
    line = next(ln for ln in text.splitlines() if ln.startswith("/ifs"))
    assert line.startswith("/ifs/data/training 198.51.100.11(rw,sync,no_subtree_check,root_squash,anonuid=65534,"
                           "anongid=65534,sec=sys)")
    assert "198.51.100.99(rw,sync,no_subtree_check,no_root_squash,sec=sys)" in line
    assert "198.51.100.50(ro," in line
    open_ro = dict(EXPORT_DEFAULTS, paths=["/ifs/x"], zone="System", read_only=True,
                   map_root={"enabled": False}, security_flavors=["krb5", "krb5p"])
    assert export_options(open_ro, "*", ids) == "ro,sync,no_subtree_check,no_root_squash,sec=krb5:krb5p"
    all_squash = dict(EXPORT_DEFAULTS, map_non_root={"enabled": True, "user": {"id": "USER:svc"}})
    assert export_options(all_squash, "*", ids).endswith("root_squash,all_squash,anonuid=1500,anongid=1500,sec=sys")
    assert "\n*(" not in text and render_exports({2: open_ro}, ids).rstrip().endswith(
        "/ifs/x *(ro,sync,no_subtree_check,no_root_squash,sec=krb5:krb5p)")


def test_knfsd_backend_writes_exports_and_xfs_project_quotas(tmp_path):
    ifs = tmp_path / "ifs"
    ifs.mkdir()
    calls: list[list[str]] = []

    def fake_run(argv):
        calls.append(argv)
        if argv[-2:-1] == ["report -p -b -N"]:  # what xfs_quota printed in the lab VM after a refused write
            return ("#0                  0          0          0     00  [0 days]\n"
                    "onefs_q1001     262144     196608     262144     00 [00:59:57]\n")
        return ""

    backend = KnfsdBackend(str(ifs), exports_file=str(tmp_path / "exports.d/onefs-sim.exports"),
                           projects_file=str(tmp_path / "projects"), projid_file=str(tmp_path / "projid"),
                           run=fake_run)
    (tmp_path / "projects").write_text("7:/srv/other\n")  # a foreign project is kept
    backend.make_dir("/ifs/data/scratch", "1777", True, os.getuid(), os.getgid())  # numeric ids, never names
    assert (ifs / "data/scratch").is_dir() and oct((ifs / "data/scratch").stat().st_mode & 0o7777) == "0o1777"
    assert backend.dir_info("/ifs/data/scratch") == {"mode": "1777", "uid": os.getuid(), "gid": os.getgid()}
    cluster = Cluster()
    cluster.create_export({"paths": ["/ifs/data/scratch"], "clients": ["198.51.100.11"]}, None, backend.path_exists)
    backend.apply_exports(cluster.exports)
    assert "/ifs/data/scratch 198.51.100.11(rw,sync,no_subtree_check,root_squash" in \
        (tmp_path / "exports.d/onefs-sim.exports").read_text()
    assert calls[-1] == ["exportfs", "-ra"]
    qid = cluster.create_quota({"path": "/ifs/data/scratch", "type": "directory", "include_snapshots": False,
                                "thresholds": {"hard": 268435456, "soft": 201326592, "soft_grace": 3600}},
                               backend.path_exists)
    calls.clear()
    backend.apply_quota(cluster.quotas[qid])
    assert (tmp_path / "projects").read_text() == f"7:/srv/other\n1001:{ifs}/data/scratch\n"
    assert (tmp_path / "projid").read_text() == "onefs_q1001:1001\n"
    assert calls == [
        ["xfs_quota", "-x", "-c", "project -s onefs_q1001", str(ifs)],
        ["xfs_quota", "-x", "-c", "limit -p bsoft=201326592 bhard=268435456 onefs_q1001", str(ifs)],
        ["xfs_quota", "-x", "-c", "timer -p -b 3600", str(ifs)],
    ]
    assert backend.quota_usage(cluster.quotas[qid])["logical"] == 268435456
    backend.remove_quota(cluster.quotas[qid])
    assert (tmp_path / "projects").read_text() == "7:/srv/other\n"
    assert calls[-1] == ["xfs_quota", "-x", "-c", "project -C onefs_q1001", str(ifs)]
