"""OneFS API faults during the storage stage (roles/powerscale and its modules, run by ansible-playbook against
the OneFS simulator on 127.0.0.1): 500s that do not stop, a cluster that takes a request and never answers, a
session that expires mid-run (re-login, or a refused re-login), and a fault between two writes of one run.

Every case: the run ends within its bound (BOUND_S, below), the failure names the API endpoint (host and port), the
call and what to do, the cluster holds exactly what the run reported as done, and once the fault is gone a re-run
converges (a second re-run changes nothing).
"""

from __future__ import annotations

import time

from ansible.module_utils.onefs import OneFSClient, OneFSConnection, OneFSError, worst_case_seconds
from powerscale.conftest import API_PASSWORD, API_USER, run_playbook
from powerscale.test_modules_playbook import export_task
from powerscale.test_role import PLAYBOOK, exports_by_path, inventory

from lab.onefs_sim.server import Fault

EXPORTS = "/platform/4/protocols/nfs/exports"
EXPORT_TASK = ("Content | NFS exports (root squash unless map_root says otherwise; clients default to the DGX storage "
               "addresses)")
DIRECTORY_TASK = "Content | export directories with owner, group and mode"
# The bound of one storage-stage run against the simulator with a fault (what the fault costs: the client's retries
# and timeouts, worst_case_seconds per faulted call, plus ansible-playbook's own time, 15-40 s on a 2-core machine).
BOUND_S = 120


def timed_run(tmp_path, inv, *args):
    start = time.monotonic()
    run = run_playbook(tmp_path, PLAYBOOK, inventory=inv, args=list(args))
    return run, time.monotonic() - start


def converges(sim, pki, tmp_path, inv=None) -> None:
    """With the fault gone: a re-run succeeds and changes what was missing, the next one changes nothing."""
    sim.clear_faults()
    inv = inv or inventory(sim, pki)
    again, _ = timed_run(tmp_path, inv)
    assert again.rc == 0, again.stdout[-4000:] + again.stderr[-2000:]
    assert again.changed_total >= 1
    still, _ = timed_run(tmp_path, inv)
    assert still.rc == 0 and still.changed_total == 0, still.stdout[-4000:]
    assert sorted(exports_by_path(sim)) == ["/ifs/data/scratch", "/ifs/data/training"]


def loop_items(run, task: str) -> dict[str, dict]:
    (result,) = run.task_results(task)
    return {r["item"]["path"]: r for r in result["results"]}


def test_500s_between_two_exports_fail_after_bounded_retries_naming_what_was_done(sim, pki, tmp_path):
    # the first export's POST goes through, every later one answers 500
    sim.inject(Fault(status=500, count=None, method="POST", path_prefix=EXPORTS, after=1))
    run, elapsed = timed_run(tmp_path, inventory(sim, pki))
    assert run.rc != 0 and elapsed < BOUND_S, (elapsed, run.stdout[-3000:])
    items = loop_items(run, EXPORT_TASK)
    assert items["/ifs/data/training"]["changed"] is True and not items["/ifs/data/training"].get("failed")
    msg = items["/ifs/data/scratch"]["msg"]
    assert (f"OneFS API POST {EXPORTS} on https://127.0.0.1:{sim.port} failed with HTTP 500 after 3 attempt(s) "
            "(api_retries=2)") in msg, msg
    assert "isi status" in msg and "run the storage stage again" in msg
    assert "This task changed nothing on the cluster" in msg
    assert [r.status for r in sim.requests if r.method == "POST" and r.path == EXPORTS] == [201, 500, 500, 500]
    # the cluster holds what the run reported: the first export, nothing of the second, no quota yet
    assert sorted(exports_by_path(sim)) == ["/ifs/data/training"] and sim.cluster.quotas == {}
    converges(sim, pki, tmp_path)


def test_fault_between_two_writes_of_one_task_reports_the_first(sim, pki, tmp_path):
    # the export directory is created (PUT), then its owner, group and mode cannot be set (500 on the ACL PUT)
    sim.inject(Fault(status=500, count=None, method="PUT", path_prefix="/namespace/ifs/data/training", after=1))
    run, elapsed = timed_run(tmp_path, inventory(sim, pki))
    assert run.rc != 0 and elapsed < BOUND_S
    item = loop_items(run, DIRECTORY_TASK)["/ifs/data/training"]
    msg = item["msg"]
    assert f"OneFS API PUT /namespace/ifs/data/training on https://127.0.0.1:{sim.port} failed with HTTP 500" in msg
    assert ("Before the failure this task had already changed the cluster (PUT /namespace/ifs/data/training); the "
            "next run reads it back and completes what is missing") in msg, msg
    assert item["changed"] is True and item["changes_made"] == ["PUT /namespace/ifs/data/training"]
    assert "/ifs/data/training" in sim.backend.dirs and sim.cluster.exports == {}
    converges(sim, pki, tmp_path)
    assert sim.backend.dirs["/ifs/data/training"]["mode"] == "0755"


def test_hung_api_ends_at_the_timeout_and_a_post_is_not_repeated(sim, pki, tmp_path):
    # the cluster takes the second export's POST and never answers (for longer than the test lasts)
    inv = inventory(sim, pki).replace("powerscale_api_timeout_s: 10", "powerscale_api_timeout_s: 2")
    sim.inject(Fault(status=503, count=None, method="POST", path_prefix=EXPORTS, after=1, hang=60))
    run, elapsed = timed_run(tmp_path, inv)
    assert run.rc != 0 and elapsed < BOUND_S, (elapsed, run.stdout[-3000:])
    failed = loop_items(run, EXPORT_TASK)["/ifs/data/scratch"]
    msg = failed["msg"]
    assert (f"OneFS API POST {EXPORTS} on https://127.0.0.1:{sim.port}: no answer within timeout=2s "
            "(powerscale_api_timeout_s), 1 attempt(s)") in msg, msg
    assert "a POST is not repeated: the cluster may have carried it out" in msg and "run the storage stage" in msg
    # sent once, not three times: a repeated POST could create a second export of the same path
    assert [c for c in failed["api_calls"] if c[0] == "POST" and c[1] == EXPORTS] == [["POST", EXPORTS, None]]
    converges(sim, pki, tmp_path, inv)


def test_hung_api_read_is_retried_within_the_bound_then_fails_clearly(sim, pki):
    conn = OneFSConnection(host="127.0.0.1", port=sim.port, user=API_USER, password=API_PASSWORD,
                           ca_path=str(pki.ca), timeout=1, retries=2, retry_backoff=0.1)
    sim.inject(Fault(status=503, count=None, path_prefix="/platform/latest", hang=30))
    client = OneFSClient(conn)
    start = time.monotonic()
    try:
        client.api_version()
    except OneFSError as exc:
        msg = exc.message
    else:
        raise AssertionError("a hung API answered")
    elapsed = time.monotonic() - start
    assert worst_case_seconds(conn) == 3.3 and elapsed < worst_case_seconds(conn) + 2, elapsed
    assert (f"OneFS API GET /platform/latest on https://127.0.0.1:{sim.port}: no answer within timeout=1s "
            "(powerscale_api_timeout_s), 3 attempt(s): the cluster took the request and did not answer "
            "(api_retries=2)") in msg
    assert [c for c in client.calls if c[1] == "/platform/latest"] == [("GET", "/platform/latest", None)] * 3
    assert API_PASSWORD not in msg


def test_session_expiring_mid_run_is_renewed_and_a_refused_relogin_fails_clearly(sim, pki, tmp_path):
    # the session expires just before the first export's POST: the client logs in again, the run goes on
    sim.expire_sessions_at(EXPORTS, method="POST")
    run, elapsed = timed_run(tmp_path, inventory(sim, pki))
    assert run.rc == 0 and elapsed < BOUND_S, run.stdout[-4000:]
    seen = [(r.method, r.path, r.status) for r in sim.requests]
    at = seen.index(("POST", EXPORTS, 401))
    assert seen[at + 1:at + 3] == [("POST", "/session/1/session", 201), ("POST", EXPORTS, 201)]

    # now the session expires and the cluster refuses the new login (the account was locked meanwhile)
    sim.requests.clear()
    sim.expire_sessions_at(EXPORTS)
    sim.inject(Fault(status=401, count=None, method="POST", path_prefix="/session/1/session", after=1,
                     code="AEC_UNAUTHORIZED", message="Username or password is incorrect."))
    book = f"""
- name: one export while the session expires
  hosts: localhost
  gather_facts: false
  tasks:{export_task("export", sim, pki, "      path: /ifs/data/training", "      clients: [198.51.100.11]")}
"""
    one = run_playbook(tmp_path, book)
    assert one.rc != 0
    msg = one.result("export")["msg"]
    assert f"OneFS refused the login of user '{API_USER}' at https://127.0.0.1:{sim.port} (HTTP 401" in msg, msg
    assert "Check powerscale_api_user and powerscale_api_password" in msg
    assert "This task changed nothing on the cluster" in msg and API_PASSWORD not in one.stdout + one.stderr
    assert exports_by_path(sim)["/ifs/data/training"]["clients"] == ["198.51.100.11", "198.51.100.12"]
    sim.clear_faults()
    again = run_playbook(tmp_path, book)
    assert again.rc == 0 and again.result("export")["changed"] is True, again.stdout[-3000:]
    assert run_playbook(tmp_path, book).result("export")["changed"] is False
