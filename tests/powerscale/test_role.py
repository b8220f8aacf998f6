"""roles/powerscale run by ansible-playbook on an inventory shaped like inventories/lab, against the simulator:
first run creates, second run changes nothing, --check --diff sends nothing, unmanaged exports are left alone,
prune removes only marked exports, and the password reaches no output and no file."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import API_PASSWORD, API_USER, make_dir, run_playbook
from .conftest import papi_client as direct

EXPORTS = "/platform/4/protocols/nfs/exports"
MARKER = "[managed-by:powerscale-dgx-ra]"

PLAYBOOK = """
- name: Storage | PowerScale through the OneFS Platform API
  hosts: powerscale
  gather_facts: false
  roles:
    - role: powerscale
"""


def inventory(sim, pki, *, prune: bool = False, extra_exports: str = "", quota_soft: int = 201326592,
              ps_address: str = "198.51.100.21", mtu: int = 9000) -> str:
    return f"""
all:
  vars:
    ansible_connection: local
    powerscale_api_host: 127.0.0.1
    powerscale_api_port: {sim.port}
    powerscale_api_user: {API_USER}
    powerscale_api_password: "{{{{ lookup('ansible.builtin.env', 'POWERSCALE_API_PASSWORD') }}}}"
    powerscale_validate_certs: true
    powerscale_ca_path: {pki.ca}
    powerscale_api_timeout_s: 10
    powerscale_api_retries: 2
    powerscale_api_retry_backoff_s: 0.01
    powerscale_access_zone: System
    powerscale_onefs_min_version: "8.2.1"
    powerscale_pool_mtu: {mtu}
    powerscale_smartconnect:
      enabled: true
      groupnet: groupnet0
      subnet: subnet0
      pool: pool-dl
      zone: dl.storage.example.com
      service_address: ""
      ip_ranges:
        - {{low: 198.51.100.21, high: 198.51.100.21}}
      interfaces: [storage0]
      connect_policy: round_robin
    powerscale_prune: {str(prune).lower()}
    powerscale_managed_marker: "{MARKER}"
    nfs_server_mode: static
    nfs_server_map:
      dgx01: {{node: powerscale01, nic: storage0}}
      dgx02: {{node: powerscale01, nic: storage0}}
      dgx03: {{node: powerscale01, nic: storage0}}
    powerscale_exports:
      - path: /ifs/data/training
        description: Training datasets (read by all DGX)
        purpose: training
        owner: root
        group: wheel
        mode: "0755"
        clients: []
        map_root: nobody
        read_only: false
        security_flavors: [unix]
      - path: /ifs/data/scratch
        description: Scratch space
        purpose: scratch
        owner: root
        group: wheel
        mode: "1777"
        clients: []
        map_root: nobody
        read_only: false
        security_flavors: [unix]
{extra_exports}
    powerscale_quotas:
      - path: /ifs/data/scratch
        type: directory
        include_snapshots: false
        thresholds:
          hard: 268435456
          soft: {quota_soft}
          soft_grace_s: 3600
          advisory: 134217728
  children:
    dgx:
      hosts:
        dgx01:
          storage_nics:
            - {{name: storage0, address: 198.51.100.11/24, mtu: 9000}}
        dgx02:
          storage_nics:
            - {{name: storage0, address: 198.51.100.12/24, mtu: 9000}}
    powerscale:
      hosts:
        powerscale01:
          powerscale_lnn: 1
          storage_nics:
            - {{name: storage0, address: {ps_address}/24, mtu: 9000}}
"""


def exports_by_path(sim) -> dict[str, dict]:
    return {e["paths"][0]: e for e in sim.cluster.exports.values()}


def test_first_run_configures_second_changes_nothing_and_no_password_leaks(sim, pki, tmp_path):
    inv = inventory(sim, pki)
    # The first run is the most talkative one (creations, diffs): run it at -vvv and search it for the password.
    first = run_playbook(tmp_path, PLAYBOOK, inventory=inv, args=["-vvv", "--diff"], json_output=False)
    assert first.rc == 0, first.stdout[-5000:] + first.stderr[-2000:]
    assert "powerscale_nfs_export" in first.stdout and "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in first.stdout
    assert API_PASSWORD not in first.stdout and API_PASSWORD not in first.stderr
    assert "changed=4" in first.stdout  # pool, directories, exports, quota (the recap counts tasks)
    exports = exports_by_path(sim)
    assert sorted(exports) == ["/ifs/data/scratch", "/ifs/data/training"]
    training = exports["/ifs/data/training"]
    assert training["clients"] == ["198.51.100.11", "198.51.100.12"]  # derived from the dgx storage_nics
    assert training["map_root"]["enabled"] is True and training["map_root"]["user"]["id"] == "USER:nobody"
    assert training["description"] == f"Training datasets (read by all DGX) {MARKER}"
    assert sim.backend.dirs["/ifs/data/scratch"] == {"mode": "1777", "uid": 0, "gid": 0}  # root, wheel
    (quota,) = sim.cluster.quotas.values()
    assert quota["path"] == "/ifs/data/scratch" and quota["thresholds"]["hard"] == 268435456
    assert quota["thresholds"]["soft_grace"] == 3600 and quota["enforced"] is True
    (pool,) = sim.cluster.pools.values()
    assert pool["sc_dns_zone"] == "dl.storage.example.com" and pool["ifaces"] == [{"iface": "storage0", "lnn": 1}]
    assert pool["sc_subnet"] == "subnet0"

    sim.requests.clear()
    second = run_playbook(tmp_path, PLAYBOOK, inventory=inv)
    assert second.rc == 0, second.stdout[-5000:] + second.stderr[-2000:]
    assert second.changed_total == 0, json.dumps(second.data["stats"])
    assert sim.mutating_requests() == []

    # No file the runs wrote (fact cache, ansible temp dirs, ...) holds the password.
    written = [p for p in Path(tmp_path).rglob("*") if p.is_file()]
    assert any("ansible-local" in str(p) for p in Path(tmp_path).rglob("*")), "the runs' temp dir was used"
    assert [str(p) for p in written if API_PASSWORD.encode() in p.read_bytes()] == []
    repo_cache = Path(__file__).resolve().parents[2] / ".cache"
    assert all(API_PASSWORD.encode() not in p.read_bytes() for p in repo_cache.rglob("*") if p.is_file())


def test_check_diff_on_a_fresh_cluster_sends_nothing(sim, pki, tmp_path):
    run = run_playbook(tmp_path, PLAYBOOK, inventory=inventory(sim, pki), args=["--check", "--diff"])
    assert run.rc == 0, run.stdout[-5000:] + run.stderr[-2000:]
    assert run.changed_total == 4
    exports = run.task_results("Content | NFS exports (root squash unless map_root says otherwise; clients default "
                               "to the DGX storage addresses)")[0]["results"]
    assert exports[0]["diff"]["after"]["clients"] == ["198.51.100.11", "198.51.100.12"]
    assert exports[0]["diff"]["after"]["map_root"] == {"enabled": True, "user": "nobody", "primary_group": None}
    assert sim.mutating_requests() == []
    assert sim.cluster.exports == {} and sim.cluster.quotas == {} and sim.cluster.pools == {}


def test_unmanaged_exports_are_never_touched_and_prune_removes_only_marked_ones(sim, pki, tmp_path):
    c = direct(sim, pki)
    for p in ("/ifs/home", "/ifs/data/old", "/ifs/data/legacy"):
        make_dir(c, p)
    home = c.post(EXPORTS, {"paths": ["/ifs/home"], "clients": ["192.0.2.50"], "description": "user homes"},
                  query={"zone": "System"})["id"]
    old = c.post(EXPORTS, {"paths": ["/ifs/data/old"], "description": f"old data {MARKER}"},
                 query={"zone": "System"})["id"]
    legacy = c.post(EXPORTS, {"paths": ["/ifs/data/legacy"], "description": "legacy, by hand"},
                    query={"zone": "System"})["id"]
    untouched = {home: json.dumps(sim.cluster.exports[home], sort_keys=True),
                 legacy: json.dumps(sim.cluster.exports[legacy], sort_keys=True)}

    run = run_playbook(tmp_path, PLAYBOOK, inventory=inventory(sim, pki))
    assert run.rc == 0, run.stdout[-5000:] + run.stderr[-2000:]
    assert old in sim.cluster.exports, "without powerscale_prune nothing is removed"

    run = run_playbook(tmp_path, PLAYBOOK, inventory=inventory(sim, pki, prune=True))
    assert run.rc == 0, run.stdout[-5000:] + run.stderr[-2000:]
    assert old not in sim.cluster.exports, "a marked export the inventory no longer lists is pruned"
    for eid, before in untouched.items():
        assert json.dumps(sim.cluster.exports[eid], sort_keys=True) == before
    touched = {r.path for r in sim.mutating_requests() if r.path.startswith(EXPORTS + "/")}
    assert f"{EXPORTS}/{home}" not in touched and f"{EXPORTS}/{legacy}" not in touched


def test_bad_quota_stops_before_any_request(sim, pki, tmp_path):
    run = run_playbook(tmp_path, PLAYBOOK, inventory=inventory(sim, pki, quota_soft=999999999999))
    assert run.rc != 0
    failed = run.result("Check | quota thresholds")
    text = json.dumps(failed)
    assert "/ifs/data/scratch" in text and "must not exceed hard" in text
    assert sim.requests == []


def test_role_alone_runs_preflights_rules_for_the_endpoint_and_its_password(sim, pki, tmp_path):
    """Run on its own (no preflight in the play), the role's input check is preflight's own rules for its
    variables (schema, secrets: roles/preflight/tasks/rules.yml): an empty password and a port out of range stop it
    before any request, in the one table, without the password's value."""
    bad_port = inventory(sim, pki).replace(f"powerscale_api_port: {sim.port}", "powerscale_api_port: 70000")
    run = run_playbook(tmp_path, PLAYBOOK, inventory=bad_port, env={"POWERSCALE_API_PASSWORD": ""})
    assert run.rc != 0
    msg = run.result("preflight : Preflight | stop before any change when these variables have errors")["msg"]
    assert "powerscale_api_password" in msg and "resolves empty" in msg, msg
    assert "powerscale_api_port" in msg and "70000" in msg, msg
    assert sim.requests == []


def test_old_onefs_release_is_refused_before_any_change(sim, pki, tmp_path, monkeypatch):
    import lab.onefs_sim.model as model

    monkeypatch.setattr(model, "ONEFS_RELEASE", "8.1.2.0")
    run = run_playbook(tmp_path, PLAYBOOK, inventory=inventory(sim, pki))
    assert run.rc != 0
    msg = run.result("Cluster | OneFS release is at least powerscale_onefs_min_version")["msg"]
    assert "OneFS 8.1.2.0" in msg and "powerscale_onefs_min_version=8.2.1" in msg
    assert sim.mutating_requests() == []


def test_static_mapping_and_subnet_mtu_are_checked_against_the_cluster(sim, pki, tmp_path):
    run = run_playbook(tmp_path, PLAYBOOK, inventory=inventory(sim, pki, ps_address="198.51.100.99", mtu=1500))
    assert run.rc != 0
    mtu = run.result("Cluster | SmartConnect subnet MTU matches the DGX storage NICs")
    assert mtu["failed"] is True and "MTU 9000" in mtu["msg"] and "MTU\n1500" not in mtu["msg"]
    assert "powerscale_pool_mtu" in mtu["msg"]
    assert sim.mutating_requests() == []
    run = run_playbook(tmp_path, PLAYBOOK, inventory=inventory(sim, pki, ps_address="198.51.100.99"))
    assert run.rc != 0
    static = run.result("Cluster | static mapping - each DGX's PowerScale address is up on the mapped node interface")
    messages = " ".join(r.get("msg", "") for r in static["results"])
    assert "nfs_server_map[dgx01]" in messages and "no interface storage0 of LNN 1 holds 198.51.100.99" in messages
    # the pool is the one change allowed before this check (the node addresses come from it); nothing else
    assert [(r.method, r.path) for r in sim.mutating_requests()] == [
        ("POST", "/platform/3/network/groupnets/groupnet0/subnets/subnet0/pools")]
