"""A small site on this machine for the ansible-runner path: two hosts over the local connection, plays and a
role named as the real ones (roles/validate, its stage files nccl.yml, fio.yml, ddp.yml) whose async tasks start stand-in
runner scripts with the real runners' names and arguments (``nccl_runner.py --case all``, ``fio_runner.py
--case aggregate --sample 1``, ``ddp_runner.py --case=n2``); ``ddp n2`` fails, ``fio node-n2 sample 1`` is
planned but never runs, and a debug task prints the canary secrets (so a scrub has something to find).

``python -m tests.validation.progress_demo OUT.json`` runs it and records its events (trimmed to the keys
validation/progress.py reads) as the fixture tests/validation/fixtures/runner_events/demo.json.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

ENV_CANARY = "canary-env-5f1e2d"
EXTRA_VAR_CANARY = "canary-ev-9a8b7c"
PLANNED = ("nccl single-n1", "nccl single-n2", "nccl all", "fio layout", "fio aggregate sample 1",
           "fio node-n1 sample 1", "fio node-n2 sample 1", "ddp n1", "ddp n2")
RUNNER = """import sys, time
time.sleep(0.3)
print("measured", " ".join(sys.argv[1:]))
sys.exit(3 if "--case=n2" in sys.argv else 0)
"""


def _async(name: str, argv: str, when: str | None = None) -> str:
    cond = f"\n  when: {when}" if when else ""
    return (f"- name: {name}\n  ansible.builtin.command:\n    argv: \"{argv}\"\n  async: 30\n  poll: 1\n"
            f"  changed_when: false{cond}\n")


def write_site(root: Path) -> tuple[Path, Path]:
    """The demo playbook and inventory under root; returns (playbook, inventory)."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("nccl_runner.py", "fio_runner.py", "ddp_runner.py"):
        (bin_dir / name).write_text(RUNNER)

    def run(script: str, extra: str) -> str:
        return "{{ [ansible_playbook_python, '" + f"{bin_dir}/{script}" + "'] + " + extra + " }}"

    stages = {
        "nccl": _async("NCCL | single-node all-reduce on every DGX",
                                run("nccl_runner.py", "['--case', 'single-' ~ inventory_hostname]"))
        + _async("NCCL | all", run("nccl_runner.py", "['--case', 'all']")),
        "fio": _async("Fio | lay out the file set", run("fio_runner.py", "['--case', 'layout']"),
                               "inventory_hostname == 'n1'")
        + _async("Fio | aggregate read, sample 1",
                 run("fio_runner.py", "['--case', 'aggregate', '--sample', '1']"), "inventory_hostname == 'n1'")
        + _async("Fio | read from one node alone, n1 sample 1",
                 run("fio_runner.py", "['--case', 'node-n1', '--sample', '1']"), "inventory_hostname == 'n1'"),
        "ddp": _async("DDP | training on this many nodes 1", run("ddp_runner.py", "['--case=n1']"),
                               "inventory_hostname == 'n1'")
        + _async("DDP | training on this many nodes 2", run("ddp_runner.py", "['--case=n2']"),
                 "inventory_hostname == 'n1'"),
    }
    (root / "roles" / "validate" / "tasks").mkdir(parents=True)
    for stage, tasks in stages.items():
        (root / "roles" / "validate" / "tasks" / f"{stage}.yml").write_text("---\n" + tasks)
    playbook = root / "demo.yml"
    playbook.write_text("""---
- name: Validate | run directory and context
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Report | print what a careless task would
      ansible.builtin.debug:
        msg: "{{ lookup('ansible.builtin.env', 'POWERSCALE_API_PASSWORD') }} {{ vault_powerscale_api_password }}"

- name: Validate | measurements on the DGX nodes
  hosts: dgx
  gather_facts: false
  tasks:
    - name: NCCL
      ansible.builtin.import_role: {name: validate, tasks_from: nccl}
    - name: Fio
      ansible.builtin.import_role: {name: validate, tasks_from: fio}
    - name: DDP
      ansible.builtin.import_role: {name: validate, tasks_from: ddp}
""")
    inventory = root / "hosts.yml"
    hosts = {h: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
             for h in ("n1", "n2")}
    inventory.write_text(json.dumps({"all": {
        "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
        "children": {"dgx": {"hosts": hosts}}}}))
    return playbook, inventory


def trim(event: dict[str, Any]) -> dict[str, Any]:
    """The keys validation/progress.py reads, as ansible-runner wrote them."""
    data = event.get("event_data") or {}
    res = data.get("res") if isinstance(data.get("res"), dict) else None
    kept = {k: data[k] for k in ("play", "role", "task", "host", "ignore_errors") if k in data}
    if "/roles/" in str(data.get("task_path")):  # a role's task file, without this machine's directories
        kept["task_path"] = "roles/" + str(data["task_path"]).split("/roles/", 1)[1]
    if res is not None:
        kept["res"] = {k: res[k] for k in ("cmd", "msg", "rc", "finished", "censored") if k in res}
    return {"event": event.get("event"), "counter": event.get("counter"), "created": event.get("created"),
            "event_data": kept}


def run_demo(root: Path, artifacts: Path, out: io.StringIO | Any) -> int:
    """Run the demo site through validation/playbook_run.py (POWERSCALE_API_PASSWORD set by the caller)."""
    from validation import playbook_run

    playbook, inventory = write_site(root)
    launch = playbook_run.Launch(playbook=playbook, inventory=str(inventory),
                                 args=("-e", f"vault_powerscale_api_password={EXTRA_VAR_CANARY}"),
                                 artifacts=artifacts)
    return playbook_run.run(launch, PLANNED, out=out)


def main(argv: list[str]) -> int:
    import os
    import tempfile

    os.environ["POWERSCALE_API_PASSWORD"] = ENV_CANARY
    with tempfile.TemporaryDirectory() as tmp:
        artifacts = Path(tmp) / "artifacts"
        run_demo(Path(tmp) / "site", artifacts, sys.stdout)
        events = [json.loads(p.read_text()) for p in (artifacts / "job_events").glob("*.json")]
    events.sort(key=lambda e: e["counter"])
    Path(argv[0]).write_text(json.dumps([trim(e) for e in events], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
