"""An SN3700V refusing an apply, by each method of roles/sn3700v.

- nvue: the switch refuses the revision at apply (state "invalid" with its issues, as NVUE reports a configuration
  it cannot take: tests/fixtures/cumulus/real/nvue-5.1-revision-invalid.json). Here the switch has 8 ports and the
  inventory cables a host to swp9: the role's own check accepts swp1..swp32 (an SN3700V's), only the switch knows
  it has fewer. Nothing may be reported as applied and the applied configuration must read back unchanged.
- files (Cumulus 4.2.1, the reference's release): `ifreload -a` fails after the new interfaces file passed the
  parser's check (ifupdown2 refuses a reserved VLAN only when it applies it: "reserved vlan 3725 being used
  (reserved vlan range 3725-3999)", its own test suite's expectation, tests/fixtures/cumulus/real/SOURCES). The
  previous file must be back and applied.

Each case ends within BOUND_S, names the switch, what failed (the switch's own words) and what to do, and a
re-run converges once the cause is fixed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import yaml
from fabric_sn3700v.conftest import ROOT, VENV_BIN, fabric_vars, run_playbook, write_inventory
from fabric_sn3700v.test_files_render import CUMULUS_DEFAULT, render
from fabric_sn3700v.test_nvue_role import cables, switch_vars

BOUND_S = 120  # one fabric-stage run against a simulator on loopback, fault included (15-40 s measured)
RESERVED_VLAN = "error: br_default: reserved vlan 3725 being used (reserved vlan range 3725-3999)"


def test_nvue_revision_refused_at_apply_nothing_applied_then_fixed_and_converged(start_sim, pki, tmp_path):
    sim = start_sim("swa", "--ports", "8")
    ca = {"storage_fabric_ca_path": str(pki["ca"])}
    endpoints = cables("swa", {"dgx01": "swp1", "dgx02": "swp2", "powerscale01": "swp9"})
    inventory = write_inventory(tmp_path / "hosts.yml", {"swa": switch_vars(sim.port)}, endpoints, fabric_vars(**ca))
    applied_before = sim.data()["applied"]

    start = time.monotonic()
    run = run_playbook(inventory)
    elapsed = time.monotonic() - start
    assert run.rc != 0 and run.stats("swa")["failures"] == 1 and elapsed < BOUND_S, run.text()[-3000:]
    (failed,) = [r for _, r in run.results("swa") if r.get("failed")]
    msg = failed["msg"]
    assert msg.startswith("swa: NVUE revision "), msg
    assert "ended in state 'invalid': Invalid interface swp9: the platform has no such port (valid: swp1-swp8)" in msg
    assert ("Nothing was applied: the switch refused the revision as a whole and its applied configuration is "
            "unchanged (read back)") in msg
    assert "run the fabric stage again" in msg
    assert failed["changed"] is False and failed["state"] == "invalid"
    assert sim.data()["applied"] == applied_before
    assert run.stats("swa")["changed"] == 0, "a refused apply was counted as a change"

    # the cabling fixed in the inventory: the next run applies, the one after changes nothing
    endpoints["powerscale01"][0]["switch_port"] = "swp3"
    write_inventory(inventory, {"swa": switch_vars(sim.port)}, endpoints, fabric_vars(**ca))
    fixed = run_playbook(inventory)
    assert fixed.rc == 0 and fixed.stats("swa")["changed"] == 1, fixed.text()[-3000:]
    assert run_playbook(inventory).stats("swa")["changed"] == 0


# ---- files method: the role's own install step and handlers, over the local connection


FAKE_IFRELOAD = """#!/bin/sh
# ifreload -a as the switch runs it, for this test: applies the file at $FAKE_INTERFACES. It fails, as ifupdown2
# does on a reserved VLAN, while $FAKE_REFUSE exists and the file holds the fabric's stanzas.
echo "ifreload $*" >> "$FAKE_LOG"
if [ -e "$FAKE_REFUSE" ] && grep -q '^iface swp1' "$FAKE_INTERFACES"; then
  echo "{message}" >&2
  exit 1
fi
exit 0
"""


def files_play(path, stanzas: str) -> str:
    """The role's interfaces install step and its handlers, on localhost (a file under tmp_path)."""
    return yaml.safe_dump([{
        "name": "files method, interfaces only", "hosts": "localhost", "gather_facts": False,
        "vars_files": [str(ROOT / "roles/sn3700v/vars/main.yml")],
        "vars": {"sn3700v_interfaces_path": str(path)},
        "tasks": [{"name": "Files | Install the storage-fabric stanzas into the interfaces file",
                   "cumulus_interfaces": {"path": str(path), "stanzas": stanzas,
                                          "owned": ["lo", "swp1", "swp2", "br_default"], "validate": "test -s %s"},
                   "register": "sn3700v_interfaces_result", "notify": "Reload ifupdown2 interfaces"}],
        "handlers": [{"ansible.builtin.import_tasks": str(ROOT / "roles/sn3700v/handlers/main.yml")}],
    }], sort_keys=False)


def run_files(book, env) -> tuple[int, dict]:
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(book)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=BOUND_S)
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    return proc.returncode, data


def host_results(data: dict) -> list[tuple[str, dict]]:
    return [(t["task"]["name"], t["hosts"]["localhost"]) for p in data["plays"] for t in p["tasks"]
            if "localhost" in t["hosts"]]


def test_files_ifreload_failure_puts_the_previous_file_back(tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(CUMULUS_DEFAULT)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ifreload"
    fake.write_text(FAKE_IFRELOAD.replace("{message}", RESERVED_VLAN))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    refuse, log = tmp_path / "refuse", tmp_path / "ifreload.log"
    refuse.touch()
    book = tmp_path / "play.yml"
    book.write_text(files_play(path, render("interfaces.managed.j2", "production", "sn3700v01")))
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", FAKE_INTERFACES=str(path), FAKE_REFUSE=str(refuse),
               FAKE_LOG=str(log), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")

    start = time.monotonic()
    rc, data = run_files(book, env)
    assert rc != 0 and time.monotonic() - start < BOUND_S
    results = dict(host_results(data))
    installed = results["Files | Install the storage-fabric stanzas into the interfaces file"]
    assert installed["changed"] and installed["backup_file"]
    msg = results["Stop this switch when ifreload -a failed"]["msg"]
    assert msg.startswith(f"localhost: `ifreload -a` failed on the switch (rc=1): {RESERVED_VLAN}."), msg
    assert (f"The previous {path} ({installed['backup_file']}) was put back and applied again: the switch runs its "
            "configuration from before this run and nothing of this run's change to that file is live") in msg
    assert "run the fabric stage again" in msg
    # the live file is the previous one, applied: ifreload ran twice (the refused apply, then the previous file)
    assert path.read_text() == CUMULUS_DEFAULT
    assert log.read_text().splitlines() == ["ifreload -a", "ifreload -a"]

    # the cause fixed on the switch: the next run installs and applies, the one after changes nothing
    refuse.unlink()
    rc, data = run_files(book, env)
    assert rc == 0 and "iface swp1" in path.read_text(), data
    rc, data = run_files(book, env)
    assert rc == 0 and not any(r.get("changed") for _, r in host_results(data))
