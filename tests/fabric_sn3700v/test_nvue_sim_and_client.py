"""The NVUE simulator's model (merge, schema, apply states, persistence) and the client's revision workflow."""

from __future__ import annotations

import pytest
from ansible.module_utils.nvue_client import NvueClient, NvueError, error_text

from lab.nvue_sim.model import ApiError, Switch


def test_patch_merges_and_null_deletes(tmp_path):
    sw = Switch(str(tmp_path / "s.json"), apply_delay=0)
    rev = next(iter(sw.create_revision()))
    sw.patch(rev, ["interface"], {"swp1": {"type": "swp", "description": "a", "link": {"mtu": 9216}}})
    sw.patch(rev, [], {"interface": {"swp1": {"description": None, "link": {"mtu": 9000}}}})
    assert sw.config(rev)["interface"]["swp1"] == {"type": "swp", "link": {"mtu": 9000}}
    assert "swp1" not in sw.config("applied")["interface"], "a pending revision is not applied"


@pytest.mark.parametrize(("body", "detail"), [
    ({"interface": {"swp1": {"link": {"mtu": 9217}}}}, "9217 is greater than the maximum of 9216 at /interface/swp1/link/mtu"),
    ({"interface": {"swp1": {"link": {"mtu": 100}}}}, "100 is less than the minimum of 552"),
    ({"interface": {"bad port": {}}}, "'bad port' does not match"),
    ({"vlans": {}}, "Additional properties are not allowed ('vlans' was unexpected)"),
    ({"mlag": {"priority": "high"}}, "\"high\" is not of type 'integer' at /mlag/priority"),
])
def test_schema_rejects_like_the_openapi_validator(tmp_path, body, detail):
    sw = Switch(str(tmp_path / "s.json"))
    rev = next(iter(sw.create_revision()))
    with pytest.raises(ApiError) as err:
        sw.patch(rev, [], body)
    assert err.value.status == 400 and detail in err.value.detail


def test_apply_states_and_persistence(tmp_path):
    path = str(tmp_path / "s.json")
    sw = Switch(path, apply_delay=0, ports=8)
    bad = next(iter(sw.create_revision()))
    sw.patch(bad, [], {"interface": {"swp1": {"type": "swp", "bridge": {"domain": {"br_default": {"access": 100}}}}},
                       "bridge": {"domain": {"br_default": {"type": "vlan-aware", "vlan": {"200": {}}}}}})
    state = sw.change_state(bad, {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    assert state["state"] == "invalid"
    assert "swp1: access VLAN 100 is not a VLAN of bridge domain br_default (configured: [200])" in error_text(state)

    rev = next(iter(sw.create_revision()))
    sw.patch(rev, [], {"mlag": {"enable": "off"}, "interface": {"swp2": {"type": "swp", "link": {"speed": "100G"}}}})
    assert sw.change_state(rev, {"state": "apply"})["state"] == "ays_fail"  # disruptive, not confirmed
    assert sw.change_state(rev, {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})["state"] == "apply"
    assert sw.revision(rev)["state"] == "applied"
    reopened = Switch(path, ports=8)  # a restart keeps the state
    assert reopened.config("applied")["interface"]["swp2"]["link"]["speed"] == "100G"
    assert reopened.revision(bad)["state"] == "invalid"
    # 5.9 (the default profile) reports the operational state as link.state; link.oper-status comes with 5.11
    assert reopened.operational()["interface"]["swp2"]["link"]["state"] == {"up": {}}
    assert reopened.operational()["interface"]["swp3"]["link"]["state"] == {"down": {}}  # not configured
    assert "oper-status" not in reopened.operational()["interface"]["swp2"]["link"]


class FakeSwitch:
    """Answers the client like the HTTP layer would, from a simulator model in-process."""

    def __init__(self, sw: Switch):
        self.sw = sw
        self.calls: list[tuple[str, str]] = []

    def fetch(self, method, url, body):
        import urllib.parse
        self.calls.append((method, url))
        split = urllib.parse.urlsplit(url)
        rest = split.path[len("/nvue_v1"):].strip("/")
        query = dict(urllib.parse.parse_qsl(split.query))
        try:
            if rest == "revision" and method == "POST":
                return 200, self.sw.create_revision()
            if rest.startswith("revision/"):
                rev = urllib.parse.unquote(rest[len("revision/"):])
                return 200, (self.sw.change_state(rev, body) if method == "PATCH" else self.sw.revision(rev))
            path = [p for p in rest.split("/") if p]
            if method == "PATCH":
                return 200, self.sw.patch(query["rev"], path, body)
            return 200, self.sw.config(query.get("rev"))
        except ApiError as exc:
            return exc.status, exc.body()


def test_client_applies_one_revision_and_reports_issues(tmp_path):
    fake = FakeSwitch(Switch(str(tmp_path / "s.json"), apply_delay=0, ports=4))
    client = NvueClient("https://127.0.0.1:1", fake.fetch)
    rev = client.create_revision()
    client.patch(rev, {"interface": {"swp1": {"type": "swp", "link": {"mtu": 9216}}}})
    assert client.apply(rev, timeout=5, sleep=lambda _: None) == "applied"
    assert client.get("/", rev="applied")["interface"]["swp1"]["link"]["mtu"] == 9216

    rev = client.create_revision()
    with pytest.raises(NvueError, match="9999 is greater than the maximum of 9216"):
        client.patch(rev, {"interface": {"swp1": {"link": {"mtu": 9999}}}})
    client.patch(rev, {"interface": {"swp7": {"type": "swp"}}})
    with pytest.raises(NvueError, match=r"ended in state 'invalid': Invalid interface swp7: the platform has no such"):
        client.apply(rev, timeout=5, sleep=lambda _: None)


def test_client_wait_is_bounded():
    ticks = iter(range(100))

    def fetch(method, url, body):
        return 200, {"state": "apply", "transition": {"issue": {}, "progress": "Applying"}}

    client = NvueClient("https://127.0.0.1:1", fetch)
    with pytest.raises(NvueError, match=r"still in state 'apply' after 3s"):
        client.apply("changeset/x/1", timeout=3, sleep=lambda _: None, clock=lambda: float(next(ticks)))


@pytest.mark.parametrize(("release", "body", "detail"), [
    ("5.4", {"interface": {"swp49": {"link": {"breakout": {"4x25G": {}}}}}}, "'4x25G' does not match"),
    ("5.15", {"mlag": {"enable": "on"}}, "Additional properties are not allowed ('enable' was unexpected)"),
    ("5.15", {"interface": {"lo": {"ip": {"address": {"10.0.0.1/32": {}}}}}}, "('ip' was unexpected)"),
    ("5.9", {"mlag": {"state": "enabled"}}, "Additional properties are not allowed ('state' was unexpected)"),
])
def test_release_profiles_reject_the_other_releases_keys(tmp_path, release, body, detail):
    sw = Switch(str(tmp_path / "s.json"), release=release)
    rev = next(iter(sw.create_revision()))
    with pytest.raises(ApiError) as err:
        sw.patch(rev, [], body)
    assert detail in err.value.detail


def test_release_profiles_save_ids_and_prompt(tmp_path):
    old = Switch(str(tmp_path / "53.json"), release="5.3", apply_delay=0)
    rev = next(iter(old.create_revision()))
    assert rev.startswith("changeset/cumulus/")
    old.patch(rev, [], {"interface": {"swp1": {"type": "swp", "link": {"breakout": {"4x25G": {}}}}}})
    assert old.change_state(rev, {"state": "apply"})["state"] == "ays_fail"  # the first NVUE apply prompts
    assert old.revision(rev) == {rev: {"state": "ays_fail", "transition": {
        "issue": {"0": {"code": "client_timeout", "data": {}, "message": "Timeout while waiting for client response",
                        "severity": "error"}}, "progress": "Aborted apply after warnings"}}}
    old.change_state(rev, {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    assert old.revision(rev)["state"] == "applied"
    assert "swp1" not in old.config("startup")["interface"], "up to 5.8 an apply is not saved"
    old.change_state("applied", {"state": "save"})
    assert "swp1" in old.config("startup")["interface"]
    new = Switch(str(tmp_path / "59.json"), release="5.9", apply_delay=0)
    assert next(iter(new.create_revision())) == "1"
    assert new.operational()["system"]["build"] == "Cumulus Linux 5.9.2"
