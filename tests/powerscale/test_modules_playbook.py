"""The powerscale_* modules run for real by ansible-playbook (localhost) against the in-memory simulator."""

from __future__ import annotations

import json
import textwrap

from lab.onefs_sim.server import Fault

from .conftest import api_vars, run_playbook
from .conftest import make_dir as mkdir
from .conftest import papi_client as direct

EXPORTS = "/platform/4/protocols/nfs/exports"
PASSWORD_LOOKUP = "\"{{ lookup('ansible.builtin.env', 'POWERSCALE_API_PASSWORD') }}\""


def api_block(sim, pki, **extra) -> str:
    """Module connection arguments as YAML lines (indented for a task's module block)."""
    lines = [f"      {k}: {json.dumps(v)}" for k, v in api_vars(sim, pki, **extra).items()]
    lines.append(f"      api_password: {PASSWORD_LOOKUP}")
    return "\n".join(lines)


def export_task(name: str, sim, pki, body: str, extra: str = "") -> str:
    return f"""
  - name: {name}
    powerscale_nfs_export:
{api_block(sim, pki)}
{body}
{extra}"""


def test_export_lifecycle_create_noop_update_reorder_absent(sim, pki, tmp_path):
    mkdir(direct(sim, pki), "/ifs/data/training")
    base = """      path: /ifs/data/training
      map_root: {enabled: true, user: nobody}
      security_flavors: [unix]"""
    tasks = "".join([
        export_task("create", sim, pki, base + "\n      clients: [198.51.100.11, 198.51.100.12]\n"
                    "      description: training"),
        export_task("noop", sim, pki, base + "\n      clients: [198.51.100.11, 198.51.100.12]\n"
                    "      description: training"),
        export_task("update", sim, pki, base + "\n      clients: [198.51.100.11, 198.51.100.12]\n"
                    "      description: training data"),
        export_task("reorder", sim, pki, base + "\n      clients: [198.51.100.12, 198.51.100.11, 198.51.100.12]\n"
                    "      description: training data"),
        export_task("absent", sim, pki, "      path: /ifs/data/training\n      state: absent"),
        export_task("absent again", sim, pki, "      path: /ifs/data/training\n      state: absent"),
    ])
    run = run_playbook(tmp_path, f"""
- name: export lifecycle
  hosts: localhost
  gather_facts: false
  tasks:{tasks}
""")
    assert run.rc == 0, run.stdout[-4000:] + run.stderr[-2000:]
    create = run.result("create")
    assert create["changed"] is True and isinstance(create["id"], int)
    assert create["export"]["clients"] == ["198.51.100.11", "198.51.100.12"]
    assert create["export"]["map_root"]["user"]["id"] == "USER:nobody"
    assert run.result("noop")["changed"] is False and run.result("noop")["sent"] == {}
    update = run.result("update")
    assert update["changed"] is True and update["sent"] == {"description": "training data"}
    assert update["diff"]["before"]["description"] == "training"
    assert update["diff"]["after"]["description"] == "training data"
    assert run.result("reorder")["changed"] is False
    assert run.result("absent")["changed"] is True and run.result("absent again")["changed"] is False
    assert sim.cluster.exports == {}
    puts = [r for r in sim.requests if r.method == "PUT" and r.path.startswith(EXPORTS)]
    assert len(puts) == 1  # only the one real change was sent


def test_check_mode_sends_nothing_mutating_and_shows_the_diff(sim, pki, tmp_path):
    c = direct(sim, pki)
    mkdir(c, "/ifs/data/training")
    c.post(EXPORTS, {"paths": ["/ifs/data/training"], "clients": ["198.51.100.11"], "description": "old"},
           query={"zone": "System"})
    before_state = json.dumps(sim.cluster.to_json(), sort_keys=True)
    sim.requests.clear()
    tasks = "".join([
        export_task("change", sim, pki, "      path: /ifs/data/training\n"
                    "      clients: [198.51.100.11, 198.51.100.12]\n      description: new"),
        export_task("create", sim, pki, "      path: /ifs/data/scratch\n      clients: [198.51.100.11]"),
        f"""
  - name: quota
    powerscale_quota:
{api_block(sim, pki)}
      path: /ifs/data/training
      thresholds: {{hard: 1048576}}
  - name: directory
    powerscale_directory:
{api_block(sim, pki)}
      path: /ifs/data/scratch
      mode: "1777"
""",
    ])
    run = run_playbook(tmp_path, f"""
- name: check mode
  hosts: localhost
  gather_facts: false
  tasks:{tasks}
""", args=["--check", "--diff"])
    assert run.rc == 0, run.stdout[-4000:] + run.stderr[-2000:]
    change = run.result("change")
    assert change["changed"] is True
    assert change["diff"]["before"]["clients"] == ["198.51.100.11"]
    assert change["diff"]["after"]["clients"] == ["198.51.100.11", "198.51.100.12"]
    assert change["diff"]["before"]["description"] == "old" and change["diff"]["after"]["description"] == "new"
    assert change["sent"] == {"clients": ["198.51.100.11", "198.51.100.12"], "description": "new"}
    assert run.result("create")["changed"] is True and run.result("create")["diff"]["before"] == {}
    assert run.result("quota")["changed"] is True and run.result("directory")["changed"] is True
    assert sim.requests, "the modules must have read the cluster"
    assert sim.mutating_requests() == [], [(r.method, r.path) for r in sim.mutating_requests()]
    assert json.dumps(sim.cluster.to_json(), sort_keys=True) == before_state


def test_two_exports_on_the_path_or_a_conflict_give_clear_errors(sim, pki, tmp_path):
    c = direct(sim, pki)
    for p in ("/ifs/data/training", "/ifs/data/shared", "/ifs/data/other"):
        mkdir(c, p)
    c.post(EXPORTS, {"paths": ["/ifs/data/training"], "clients": ["198.51.100.11"]}, query={"zone": "System"})
    c.post(EXPORTS, {"paths": ["/ifs/data/training"], "clients": ["198.51.100.12"]}, query={"zone": "System"})
    c.post(EXPORTS, {"paths": ["/ifs/data/shared", "/ifs/data/other"]}, query={"zone": "System"})
    run = run_playbook(tmp_path, f"""
- name: duplicates
  hosts: localhost
  gather_facts: false
  tasks:
  - name: ambiguous
    block:
{textwrap.indent(export_task("training", sim, pki, "      path: /ifs/data/training"), "    ")}
    rescue:
      - name: record the first failure
        ansible.builtin.set_fact:
          first_error: "{{{{ ansible_failed_result.msg }}}}"
{export_task("shared", sim, pki, "      path: /ifs/data/shared")}
""")
    assert run.rc != 0
    assert "2 exports serve /ifs/data/training in zone System (ids 1, 2)" in run.result("training")["msg"]
    shared = run.result("shared")
    assert shared["failed"] is True
    assert "HTTP 409" in shared["msg"] and "AEC_CONFLICT" in shared["msg"] and "/ifs/data/shared" in shared["msg"]
    assert len(sim.cluster.exports) == 3  # nothing was changed


def test_retries_and_session_expiry_through_the_module(sim, pki, tmp_path):
    mkdir(direct(sim, pki), "/ifs/data/training")
    sim.requests.clear()
    sim.inject(Fault(status=500, count=2, method="POST", path_prefix=EXPORTS))
    sim.expire_sessions_at("/platform/1/cluster/config")
    run = run_playbook(tmp_path, f"""
- name: resilience
  hosts: localhost
  gather_facts: false
  tasks:
  - name: info across an expired session
    powerscale_info:
{api_block(sim, pki)}
      gather_subset: [cluster]
{export_task("create through two 500s", sim, pki, "      path: /ifs/data/training")}
""")
    assert run.rc == 0, run.stdout[-4000:] + run.stderr[-2000:]
    info = run.result("info across an expired session")
    assert info["cluster"]["onefs_release"] == "9.5.0.0"
    assert ["GET", "/platform/1/cluster/config", 401] in info["api_calls"]
    assert info["api_calls"].count(["POST", "/session/1/session", 201]) == 2
    created = run.result("create through two 500s")
    assert created["changed"] is True
    assert [c[2] for c in created["api_calls"] if c[0] == "POST" and c[1] == EXPORTS] == [500, 500, 201]


def test_500_forever_fails_after_the_configured_tries(sim, pki, tmp_path):
    sim.inject(Fault(status=500, count=None, path_prefix="/platform/latest"))
    run = run_playbook(tmp_path, f"""
- name: broken cluster
  hosts: localhost
  gather_facts: false
  tasks:
  - name: info
    powerscale_info:
{api_block(sim, pki, api_retries=2)}
""")
    assert run.rc != 0
    msg = run.result("info")["msg"]
    assert "HTTP 500 after 3 attempt(s) (api_retries=2)" in msg and "/platform/latest" in msg
    assert [r.status for r in sim.requests if r.path == "/platform/latest"] == [500, 500, 500]


def test_tls_through_the_module_needs_a_ca_or_an_explicit_opt_out(sim, pki, tmp_path):
    run = run_playbook(tmp_path, f"""
- name: tls
  hosts: localhost
  gather_facts: false
  tasks:
  - name: explicitly unverified
    powerscale_info:
{api_block(sim, pki, ca_path=None, validate_certs=False)}
      gather_subset: [cluster]
  - name: verified with the CA
    powerscale_info:
{api_block(sim, pki)}
      gather_subset: [cluster]
  - name: system store only
    powerscale_info:
{api_block(sim, pki, ca_path=None)}
      gather_subset: [cluster]
""")
    assert run.rc != 0
    assert run.result("explicitly unverified")["cluster"]["name"] == "onefs-sim"
    assert run.result("verified with the CA")["cluster"]["name"] == "onefs-sim"
    failed = run.result("system store only")
    assert failed["failed"] is True and "could not be verified" in failed["msg"]
