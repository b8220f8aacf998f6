"""The simulator's identities, access token and licences against tests/fixtures/onefs/real (see its SOURCES)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import papi_client

REAL = Path(__file__).resolve().parents[1] / "fixtures/onefs/real"


def test_a_directory_of_uid_0_gid_0_answers_with_the_published_owner_and_group(sim, pki):
    published = json.loads((REAL / "namespace-acl-isilon-api-demo.json").read_text())
    sim.backend.dirs["/ifs/data"] = {"mode": "0755", "uid": 0, "gid": 0}
    acl = papi_client(sim, pki).get("/namespace/ifs/data", query={"acl": True})
    assert acl["owner"] == published["owner"] and acl["group"] == published["group"]
    assert set(acl) <= set(published) and acl["authoritative"] in ("mode", "acl")


def test_auth_id_and_licences_carry_the_fields_of_the_onefs_models(sim, pki):
    models = json.loads((REAL / "isilon-sdk-9.5.0-fields.json").read_text())
    c = papi_client(sim, pki)
    token = c.get("/platform/1/auth/id")["ntoken"]
    assert sorted(token) == models["AuthIdNtoken"]
    for item in token["privilege"]:
        assert sorted(item) == models["AuthIdNtokenPrivilegeItem"]
        assert item["permission"] in models["AuthIdNtokenPrivilegeItem.permission"]
    assert sorted(token["uid"]) == models["MemberObject"]
    licences = c.get("/platform/5/license/licenses")["licenses"]
    assert licences and all(sorted(item) == models["LicenseLicense"] for item in licences)
    assert {item["status"] for item in licences} <= set(models["LicenseLicense.status"])
