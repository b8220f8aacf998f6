"""Day 2 scale modes of the OneFS modules, in-process against the simulator: powerscale_nfs_export
client_lists_mode add/remove and powerscale_network_pool ifaces_mode add/remove only add or remove the given
members, send nothing else, change nothing the second time, never create, and refuse exports the project did not
create (docs/scale-out.md)."""

from __future__ import annotations

from typing import Any

import powerscale_network_pool
import powerscale_nfs_export
import pytest
from ansible.module_utils.onefs import OneFSError

from .conftest import make_dir
from .conftest import papi_client as client
from .test_module_functions import FakeModule, pool_params

MARKER = "[managed-by:powerscale-dgx-ra]"
EXPORTS = "/platform/4/protocols/nfs/exports"


def export_params(**kw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {name: None for name in powerscale_nfs_export.argument_spec()}
    params.update({"path": "/ifs/data/training", "zone": "System", "state": "present", "client_lists_mode": "replace"})
    params.update(kw)
    return params


def _export(sim) -> dict[str, Any]:
    (export,) = [e for e in sim.cluster.exports.values() if e["paths"] == ["/ifs/data/training"]]
    return export


def _deployed(sim, pki, clients: list[str], description: str = f"Training {MARKER}") -> Any:
    c = client(sim, pki)
    make_dir(c, "/ifs/data/training")
    c.post(EXPORTS, {"paths": ["/ifs/data/training"], "clients": clients, "root_clients": ["198.51.100.99"],
                     "read_only": False, "description": description}, query={"zone": "System"})
    return c


def _mutations(sim) -> list[Any]:
    return [r for r in sim.requests if r.mutating and "exports" in r.path]


def test_add_grows_the_clients_and_sends_nothing_else(sim, pki):
    c = _deployed(sim, pki, ["198.51.100.11", "10.1.0.0/16"])
    params = export_params(clients=["198.51.100.12"], read_only=True, description="other", client_lists_mode="add")
    result = powerscale_nfs_export.run(FakeModule(params), c)
    assert result["changed"] is True
    assert result["sent"] == {"clients": ["198.51.100.11", "10.1.0.0/16", "198.51.100.12"]}
    export = _export(sim)
    assert sorted(export["clients"]) == ["10.1.0.0/16", "198.51.100.11", "198.51.100.12"]
    assert export["read_only"] is False and export["description"] == f"Training {MARKER}"
    assert export["root_clients"] == ["198.51.100.99"]
    before = _mutations(sim)
    again = powerscale_nfs_export.run(FakeModule(params), c)
    assert again["changed"] is False and _mutations(sim) == before


def test_add_in_check_mode_sends_nothing(sim, pki):
    c = _deployed(sim, pki, ["198.51.100.11"])
    before = _mutations(sim)
    result = powerscale_nfs_export.run(FakeModule(export_params(clients=["198.51.100.12"], client_lists_mode="add"),
                                                  check_mode=True), c)
    assert result["changed"] is True and result["diff"]["after"]["clients"] == ["198.51.100.11", "198.51.100.12"]
    assert _mutations(sim) == before and _export(sim)["clients"] == ["198.51.100.11"]


def test_remove_takes_out_only_the_given_clients(sim, pki):
    c = _deployed(sim, pki, ["198.51.100.11", "198.51.100.12", "10.1.0.0/16"])
    params = export_params(clients=["198.51.100.12"], client_lists_mode="remove", require_marker=MARKER)
    result = powerscale_nfs_export.run(FakeModule(params), c)
    assert result["changed"] is True and result["sent"] == {"clients": ["198.51.100.11", "10.1.0.0/16"]}
    assert sorted(_export(sim)["clients"]) == ["10.1.0.0/16", "198.51.100.11"]
    assert powerscale_nfs_export.run(FakeModule(params), c)["changed"] is False


def test_remove_refuses_an_export_the_project_did_not_create(sim, pki):
    c = _deployed(sim, pki, ["198.51.100.11", "198.51.100.12"], description="made by hand")
    params = export_params(clients=["198.51.100.12"], client_lists_mode="remove", require_marker=MARKER)
    before = _mutations(sim)
    with pytest.raises(OneFSError, match="does not carry the marker"):
        powerscale_nfs_export.run(FakeModule(params), c)
    assert _mutations(sim) == before


@pytest.mark.parametrize("mode", ["add", "remove"])
def test_a_scale_mode_never_creates_an_export(sim, pki, mode):
    c = client(sim, pki)
    make_dir(c, "/ifs/data/training")
    with pytest.raises(OneFSError, match="never creates one"):
        powerscale_nfs_export.run(FakeModule(export_params(clients=["198.51.100.12"], client_lists_mode=mode)), c)
    assert not sim.cluster.exports


def _pool(sim) -> dict[str, Any]:
    return sim.cluster.pools["groupnet0.subnet0.pool-dl"]


def test_pool_add_and_remove_touch_only_the_given_interfaces(sim, pki):
    c = client(sim, pki)
    for lnn in (2, 3):
        sim.cluster.nodes.append({"lnn": lnn, "devid": lnn, "serial": f"SIM000000{lnn}"})
    powerscale_network_pool.run(FakeModule(pool_params(ifaces=[{"iface": "40gige-1", "lnn": 1},
                                                               {"iface": "40gige-1", "lnn": 2}])), c)
    grow = pool_params(ifaces=[{"iface": "40gige-1", "lnn": 3}], sc_connect_policy="conn_count", ifaces_mode="add")
    result = powerscale_network_pool.run(FakeModule(grow), c)
    assert result["changed"] is True and list(result["sent"]) == ["ifaces"]
    assert sorted((i["lnn"], i["iface"]) for i in _pool(sim)["ifaces"]) == [(1, "40gige-1"), (2, "40gige-1"),
                                                                           (3, "40gige-1")]
    assert _pool(sim)["sc_connect_policy"] == "round_robin"
    assert powerscale_network_pool.run(FakeModule(grow), c)["changed"] is False
    shrink = pool_params(ifaces=[{"iface": "40gige-1", "lnn": 2}], ifaces_mode="remove")
    assert powerscale_network_pool.run(FakeModule(shrink), c)["changed"] is True
    assert sorted((i["lnn"], i["iface"]) for i in _pool(sim)["ifaces"]) == [(1, "40gige-1"), (3, "40gige-1")]
    assert powerscale_network_pool.run(FakeModule(shrink), c)["changed"] is False


def test_pool_scale_mode_never_creates_the_pool(sim, pki):
    c = client(sim, pki)
    with pytest.raises(OneFSError, match="never creates one"):
        powerscale_network_pool.run(FakeModule(pool_params(ifaces_mode="add")), c)
    assert "groupnet0.subnet0.pool-dl" not in sim.cluster.pools
