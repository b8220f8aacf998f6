"""What a real OneFS cluster enforces and the simulator models: built-in identities (GID 0 is wheel), RBAC
privileges (namespace access, owner changes), the SmartConnect Advanced licence, per-node sessions."""

from __future__ import annotations

import pytest
from ansible.module_utils.onefs import OneFSClient, OneFSConnection, OneFSError

from .conftest import API_PASSWORD, API_USER, make_sim

# The README's RBAC role for the API user (roles/powerscale/README.md), as the simulator holds it.
ROLE = {"ISI_PRIV_LOGIN_PAPI": "r", "ISI_PRIV_AUTH": "r", "ISI_PRIV_LICENSE": "r", "ISI_PRIV_NFS": "w",
        "ISI_PRIV_QUOTA": "w", "ISI_PRIV_NETWORK": "w", "ISI_PRIV_NS_TRAVERSE": "r", "ISI_PRIV_NS_IFS_ACCESS": "r",
        "ISI_PRIV_IFS_RESTORE": "r"}
NS = "/namespace/ifs/data/scratch"
CREATE = {"x-isi-ifs-target-type": "container", "x-isi-ifs-access-control": "0755"}


def client(pki, port: int) -> OneFSClient:
    return OneFSClient(OneFSConnection(host="127.0.0.1", port=port, user=API_USER, password=API_PASSWORD,
                                       ca_path=str(pki.ca), retries=0), sleep=lambda s: None)


@pytest.fixture
def limited(pki):
    """A simulator whose API user holds exactly ROLE."""
    sim, port = make_sim(pki, privileges=dict(ROLE))
    sim.port = port
    yield sim
    sim.stop()


def test_auth_id_lists_the_privileges_and_licences_answer_with_onefs_statuses(limited, pki):
    c = client(pki, limited.port)
    token = c.get("/platform/1/auth/id")["ntoken"]
    assert token["uid"] == {"id": "UID:2000", "name": API_USER, "type": "user"}
    assert {p["id"]: p["permission"] for p in token["privilege"]} == ROLE
    licences = {item["name"]: item["status"] for item in c.get("/platform/5/license/licenses")["licenses"]}
    assert licences["SmartConnect Advanced"] == "Licensed"


def test_a_directory_created_through_ran_belongs_to_the_api_user_until_given_away(limited, pki):
    c = client(pki, limited.port)
    c.put(NS, query={"recursive": "true"}, headers=CREATE)
    acl = c.get(NS, query={"acl": True})
    assert acl["owner"] == {"id": "UID:2000", "name": API_USER, "type": "user"}
    c.put(NS, body={"authoritative": "mode", "action": "update", "owner": {"name": "root", "type": "user"},
                    "group": {"name": "wheel", "type": "group"}}, query={"acl": True})
    acl = c.get(NS, query={"acl": True})
    assert acl["owner"]["id"] == "UID:0" and acl["group"] == {"id": "GID:0", "name": "wheel", "type": "group"}


def test_group_root_does_not_resolve_and_ids_do(limited, pki):
    c = client(pki, limited.port)
    c.put(NS, query={"recursive": "true"}, headers=CREATE)
    with pytest.raises(OneFSError) as err:
        c.put(NS, body={"group": {"name": "root", "type": "group"}}, query={"acl": True})
    assert err.value.status == 400 and "GROUP:root" in err.value.message
    c.put(NS, body={"group": {"id": "GID:0", "type": "group"}}, query={"acl": True})
    assert c.get(NS, query={"acl": True})["group"]["name"] == "wheel"


@pytest.mark.parametrize("missing", ["ISI_PRIV_NS_IFS_ACCESS", "ISI_PRIV_NS_TRAVERSE"])
def test_namespace_access_needs_its_privileges(pki, missing):
    sim, port = make_sim(pki, privileges={k: v for k, v in ROLE.items() if k != missing})
    try:
        with pytest.raises(OneFSError) as err:
            client(pki, port).put(NS, query={"recursive": "true"}, headers=CREATE)
        assert err.value.status == 403 and missing in err.value.message
        assert sim.backend.dir_info("/ifs/data") is None
    finally:
        sim.stop()


def test_an_owner_change_needs_restore_and_writes_need_the_privilege_read_write(pki):
    sim, port = make_sim(pki, privileges={**{k: v for k, v in ROLE.items() if k != "ISI_PRIV_IFS_RESTORE"},
                                          "ISI_PRIV_NFS": "r"})
    try:
        c = client(pki, port)
        c.put(NS, query={"recursive": "true"}, headers=CREATE)
        with pytest.raises(OneFSError) as err:
            c.put(NS, body={"owner": {"name": "root", "type": "user"}}, query={"acl": True})
        assert err.value.status == 403 and "ISI_PRIV_IFS_RESTORE" in err.value.message
        assert sim.backend.dir_info("/ifs/data/scratch")["uid"] == 2000
        assert c.get("/platform/4/protocols/nfs/exports", query={"zone": "System"})["exports"] == []
        with pytest.raises(OneFSError) as err:
            c.post("/platform/4/protocols/nfs/exports", {"paths": ["/ifs/data/scratch"]}, query={"zone": "System"})
        assert err.value.status == 403 and "ISI_PRIV_NFS (read-write)" in err.value.message
        assert sim.cluster.exports == {}
    finally:
        sim.stop()


def test_login_needs_the_papi_privilege(pki):
    sim, port = make_sim(pki, privileges={"ISI_PRIV_NFS": "w"})
    try:
        with pytest.raises(OneFSError) as err:
            client(pki, port).get("/platform/1/auth/id")
        assert err.value.status == 401 and "ISI_PRIV_LOGIN_PAPI" in err.value.message
    finally:
        sim.stop()


def test_dynamic_allocation_and_a_second_pool_need_smartconnect_advanced(limited, pki):
    c = client(pki, limited.port)
    pools = "/platform/3/network/groupnets/groupnet0/subnets/subnet0/pools"
    limited.cluster.licences["SmartConnect Advanced"] = "Expired"
    with pytest.raises(OneFSError) as err:
        c.post(pools, {"name": "pool-dl", "alloc_method": "dynamic"})
    assert err.value.status == 403 and "SmartConnect Advanced" in err.value.message
    c.post(pools, {"name": "pool-dl", "alloc_method": "static", "sc_subnet": "subnet0"})
    with pytest.raises(OneFSError) as err:
        c.post(pools, {"name": "pool-two", "alloc_method": "static"})
    assert "second pool" in err.value.message and len(limited.cluster.pools) == 1
    with pytest.raises(OneFSError) as err:
        c.put(f"{pools}/pool-dl", {"sc_subnet": "subnet9"})
    assert err.value.status == 400 and "sc_subnet" in err.value.message
    limited.cluster.licences["SmartConnect Advanced"] = "Evaluation"
    c.post(pools, {"name": "pool-two", "alloc_method": "dynamic"})


def test_a_session_is_known_only_to_the_node_that_issued_it(limited, pki):
    port2 = limited.start("127.0.0.1", 0, str(pki.cert), str(pki.key), node=2)
    one, two = client(pki, limited.port), client(pki, port2)
    one.login()
    two._session_id, two._csrf = one._session_id, one._csrf  # the cookie of node 1, sent to node 2
    two.get("/platform/1/zones")  # 401 once, then a login on node 2 and the call again
    assert [c[2] for c in two.calls] == [401, 201, 200]
    assert limited.sessions[two._session_id].node == 2 and limited.sessions[one._session_id].node == 1


def test_the_command_line_sets_the_role_and_the_licences(tmp_path):
    import json

    from lab.onefs_sim.__main__ import load_privileges, parse_licences

    role = tmp_path / "role.json"
    role.write_text(json.dumps(ROLE))
    assert load_privileges(str(role)) == ROLE and load_privileges(None) is None
    role.write_text(json.dumps({"ISI_PRIV_NFS": "rw"}))
    with pytest.raises(SystemExit, match="ISI_PRIV_NFS"):
        load_privileges(str(role))
    assert parse_licences(["SmartConnect Advanced=Unlicensed"]) == {"SmartConnect Advanced": "Unlicensed"}
    with pytest.raises(SystemExit, match="NAME=STATUS"):
        parse_licences(["SmartConnect Advanced=off"])


def test_an_export_mapping_to_an_unknown_user_is_refused(limited, pki):
    c = client(pki, limited.port)
    c.put(NS, query={"recursive": "true"}, headers=CREATE)
    exports = "/platform/4/protocols/nfs/exports"
    with pytest.raises(OneFSError) as err:
        c.post(exports, {"paths": ["/ifs/data/scratch"], "map_root": {"enabled": True, "user": {"id": "USER:nobdy"}}},
               query={"zone": "System"})
    assert err.value.status == 400 and "USER:nobdy" in err.value.message and limited.cluster.exports == {}
    c.post(exports, {"paths": ["/ifs/data/scratch"], "map_root": {"enabled": True, "user": {"id": "USER:nobody"}}},
           query={"zone": "System"})
