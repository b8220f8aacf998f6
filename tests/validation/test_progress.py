"""Progress from Ansible's events (validation/progress.py) over recorded ansible-runner events, the
ansible-runner path of ``python -m validation run|deploy`` (validation/playbook_run.py) against a small local
site with canary secrets, and the project's stdout callback (plugins/callback/readable.py)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import pytest
from conftest import FIX, ROOT

from tests.validation import progress_demo as demo
from validation import playbook_run, progress
from validation.context import context_from_inventory

EVENTS = json.loads((FIX / "runner_events" / "demo.json").read_text())


def _result(argv, event="runner_on_ok", **data):
    return {"event": event, "created": "2026-11-26T06:00:00+00:00",
            "event_data": {"play": "Validate | x", "host": "n1", "res": {"cmd": argv}, **data}}


def test_recorded_run_folds_into_cases_stages_and_problems():
    p = progress.progress_of(EVENTS, demo.PLANNED)
    assert sorted(p.done) == sorted(c for c in demo.PLANNED if c != "fio node-n2 sample 1")
    assert p.failed == ("ddp n2",) and p.unplanned == ()
    assert len(p.problems) == 1 and p.problems[0].startswith("n1: DDP | training on this many nodes 2: failed")
    assert [name for name, _ in p.stage_seconds] == [
        "Validate", "Validate / validate_nccl", "Validate / validate_fio", "Validate / validate_ddp"]
    times = [datetime.fromisoformat(e["created"]) for e in EVENTS]
    assert p.elapsed_s == pytest.approx((max(times) - min(times)).total_seconds())
    # Every second between the first play's start and the end belongs to one stage (before it: Ansible starting).
    assert sum(s for _, s in p.stage_seconds) == pytest.approx(p.elapsed_s, abs=0.05)
    per_case = (p.last_case_end - p.measure_start).total_seconds() / len(p.done)
    assert p.remaining_s == pytest.approx(per_case * 1)
    assert progress.stage_report(p)[-1] == ("cases: 8 of 9 reported, 1 failed (ddp n2); "
                                            "not run: fio node-n2 sample 1")


def test_polls_skips_and_starts_count_no_case():
    quiet = [e for e in EVENTS if e["event"] in ("runner_on_async_poll", "runner_on_skipped", "runner_on_start",
                                                 "runner_on_async_ok", "playbook_on_task_start")]
    p = progress.progress_of(quiet, demo.PLANNED)
    assert p.done == () and p.remaining_s is None
    assert progress.status_line(p).endswith("case 0 of 9 | elapsed " + progress.duration(p.elapsed_s)
                                            + " | remaining unknown")


@pytest.mark.parametrize(("argv", "key"), [
    (["/usr/bin/python3", "/var/tmp/validation/runners/nccl_runner.py", "--gpus-per-node", "8", "--case", "all"],
     "nccl all"),
    (["python3", "fio_runner.py", "--phase", "read", "--case", "node-dgx01", "--sample", "3"],
     "fio node-dgx01 sample 3"),
    (["python3", "/r/ddp_runner.py", "--case=n4", "--nodes=a,b,c,d"], "ddp n4"),
    (["python3", "/r/common.py", "remove", "--case", "x"], None),
    (["python3", "/r/fio_runner.py", "--phase=server-stop"], None),
    ("python3 nccl_runner.py --case all", None),
])
def test_case_of_reads_the_runner_argv(argv, key):
    assert progress.case_of(_result(argv)) == key


def test_case_of_ignores_censored_and_non_result_events():
    assert progress.case_of({"event": "runner_on_ok", "event_data": {"res": {"censored": "hidden"}}}) is None
    assert progress.case_of(_result(["nccl_runner.py", "--case", "all"], event="runner_on_async_ok")) is None


def test_a_case_outside_the_plan_is_listed_not_counted():
    p = progress.progress_of([_result(["ddp_runner.py", "--case=n3"])], ("ddp n1",))
    assert p.done == () and p.unplanned == ("ddp n3",)


def test_an_unreadable_timestamp_moves_no_clock():
    event = _result(["ddp_runner.py", "--case=n1"])
    event["created"] = "yesterday"
    p = progress.progress_of([event], ("ddp n1",))
    assert p.done == ("ddp n1",) and p.first is None and p.elapsed_s == 0.0


def test_plan_is_what_the_verdict_judges_for_the_lab():
    ctx = context_from_inventory(ROOT / "inventories" / "lab")
    assert progress.planned_cases(ctx) == (
        "nccl single-dgx01", "nccl single-dgx02", "nccl all", "fio layout",
        "fio aggregate sample 1", "fio node-dgx01 sample 1", "fio node-dgx02 sample 1",
        "fio aggregate sample 2", "fio node-dgx01 sample 2", "fio node-dgx02 sample 2", "ddp n1", "ddp n2")
    three = {**ctx, "nodes": ["a", "b", "c"], "validation_repeats": 1,
             "validation_stages": {"nccl": {"enabled": True}, "fio": {"enabled": False}, "ddp": {"enabled": True}}}
    assert progress.planned_cases(three) == (
        "nccl single-a", "nccl single-b", "nccl single-c", "nccl all", "nccl pair-a-b", "nccl pair-b-c",
        "nccl pair-c-a", "ddp n1", "ddp n3")


@pytest.mark.parametrize(("seconds", "text"), [(None, "unknown"), (4.4, "4 s"), (185, "3 min 05 s"),
                                               (3725, "1 h 02 min")])
def test_duration(seconds, text):
    assert progress.duration(seconds) == text


def test_secret_values_and_hidden_extra_vars():
    env = {"POWERSCALE_API_PASSWORD": "pw-env-1", "NGC_API_KEY": "key-env-2", "HOME": "/root", "SN3700V_PASSWORD": ""}
    args = ["-e", "vault_qm8700_api_password=pw-ev-3 validation_repeats=1", "-e",
            json.dumps({"ngc_mirror_password": "pw-json-4", "site": "lab"}), "--extra-vars=@vault.yml"]
    assert set(playbook_run.secret_values(env, args)) == {"pw-env-1", "key-env-2", "pw-ev-3", "pw-json-4"}
    assert playbook_run.hide_extra_vars(["ansible-playbook", *args, "site.yml"]) == [
        "ansible-playbook", "-e", "********", "-e", "********", "--extra-vars=********", "site.yml"]


def _all_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*") if p.is_file())


def test_runner_run_prints_progress_and_keeps_artifacts_without_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("POWERSCALE_API_PASSWORD", demo.ENV_CANARY)
    before = set(Path(tempfile.gettempdir()).glob("validation-runner-*"))
    out = io.StringIO()
    rc = demo.run_demo(tmp_path / "site", tmp_path / "kept", out)
    text = out.getvalue()
    assert rc == 2, text
    assert "== Validate / validate_nccl | case 0 of 9" in text
    assert "   ddp n2: FAILED | Validate / validate_ddp | case 8 of 9" in text
    assert "   ! n1: DDP | training on this many nodes 2: failed: non-zero return code" in text
    assert "cases: 8 of 9 reported, 1 failed (ddp n2); not run: fio node-n2 sample 1" in text
    kept = tmp_path / "kept"
    assert sorted(p.name for p in kept.iterdir()) == ["command", "job_events", "rc", "status", "stderr", "stdout"]
    assert len(list((kept / "job_events").glob("*.json"))) > 40
    assert (kept / "rc").read_text().strip() == "2" and (kept / "status").read_text().strip() == "failed"
    command = json.loads((kept / "command").read_text())
    assert command["env"] == "not kept: the environment can hold secrets" and "********" in command["command"]
    stdout = (kept / "stdout").read_text()
    assert "ASYNC POLL" not in stdout and "STAGE RECAP" in stdout and "TASKS RECAP" in stdout
    assert stdout.count(playbook_run.HIDDEN) >= 2  # the careless debug task's two secrets, scrubbed
    everything = _all_text(kept) + text
    assert demo.ENV_CANARY not in everything and demo.EXTRA_VAR_CANARY not in everything
    assert set(Path(tempfile.gettempdir()).glob("validation-runner-*")) == before, "private dir left behind"


def test_cli_run_keeps_the_runner_artifacts_in_the_run_directory(tmp_path):
    env = {**os.environ, "POWERSCALE_API_PASSWORD": demo.ENV_CANARY}
    proc = subprocess.run([sys.executable, "-m", "validation", "run", "--results", str(tmp_path), "--run-id", "r1",
                           "-i", str(ROOT / "inventories" / "lab"), "--syntax-check",
                           "-e", f"vault_ngc_api_key={demo.EXTRA_VAR_CANARY}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "case count unknown" not in proc.stdout
    assert f"no report in {tmp_path / 'r1'}" in proc.stdout
    kept = tmp_path / "r1" / "ansible-runner"
    command = json.loads((kept / "command").read_text())["command"]
    assert "--syntax-check" in command and str(ROOT / "playbooks" / "validate.yml") in command
    assert demo.ENV_CANARY not in _all_text(kept) + proc.stdout
    assert demo.EXTRA_VAR_CANARY not in _all_text(kept) + proc.stdout


ASYNC_PLAY = """---
- name: Storage | one async task
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Sleep
      ansible.builtin.command: sleep 3
      async: 20
      poll: 1
      changed_when: false
"""


def _plain_run(tmp_path: Path, **env: str) -> str:
    book = tmp_path / "async.yml"
    book.write_text(ASYNC_PLAY)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(book)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "ANSIBLE_NOCOLOR": "1", **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_plain_ansible_playbook_shows_timings_and_no_poll_lines(tmp_path):
    text = _plain_run(tmp_path)
    assert "ASYNC POLL" not in text
    assert "TASKS RECAP" in text and "Sleep ----" in text
    recap = text.split("STAGE RECAP", 1)[1].splitlines()
    assert recap[1].split()[0] == "Storage" and recap[2].split()[0] == "total"
    # The lines are the default callback's: with it, they are there.
    assert "ASYNC POLL on localhost" in _plain_run(tmp_path, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")


def test_a_json_stdout_callback_gets_no_timing_text(tmp_path):
    text = _plain_run(tmp_path, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    assert json.loads(text)["stats"]["localhost"]["ok"] == 1
