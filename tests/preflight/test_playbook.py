"""Preflight through ansible-playbook: both inventories pass offline; the target phase probes for real
(targets are this machine, connection local) and fails closed; secrets never reach the output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from validation.inventory_layers import inventory_args

from .preflight_sites import action_plugin, load_site

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
LOCAL = "tests/preflight/fixtures/local_targets/hosts.yml"
SECRETS = ("POWERSCALE_API_PASSWORD", "SN3700V_PASSWORD", "QM8700_PASSWORD", "NGC_API_KEY", "NGC_MIRROR_PASSWORD")
# This machine as every Linux target may see it: the release it runs, whatever that is.
OS_RELEASE = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
HERE_OS = [{"distribution": OS_RELEASE["ID"].strip('"'), "versions": [OS_RELEASE.get("VERSION_ID", "").strip('"')]}]
UNREACHABLE = "tests/preflight/fixtures/unreachable_targets/hosts.yml"
# Online runs whose inventory phase must fail: were it to pass wrongly, nothing would leave this machine.
LOCAL_ONLY = ["-e", "ansible_connection=local"]


def play(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, list[str]]:
    environ = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    environ.update({name: "dummy" for name in SECRETS})
    environ.update(env or {})
    proc = subprocess.run([PLAYBOOK, *args], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300,
                          check=False)
    output = proc.stdout + proc.stderr
    return proc.returncode, output, re.findall(r"^PLAY \[(.*?)\]", output, re.M)


@pytest.mark.parametrize("inventory", ["production", "lab"])
def test_offline_preflight_passes(inventory):
    rc, out, plays = play(*inventory_args(f"inventories/{inventory}"), "site.yml", "--tags", "preflight",
                          "-e", "preflight_offline=true")
    assert rc == 0, out[-4000:]
    assert "preflight (inventory): 0 error(s)" in out
    assert plays[:2] == ["Preflight | inventory rules", "Preflight | target checks"]


def test_check_mode_preflight_passes_and_changes_nothing():
    rc, out, _ = play(*inventory_args("inventories/production"), "playbooks/preflight.yml", "--check", "--diff",
                      "-e", "preflight_offline=true")
    assert rc == 0, out[-4000:]
    assert re.search(r"localhost\s+: ok=\d+\s+changed=0", out)


def test_targets_supported_pass():
    extra = json.dumps({"dgx_supported_os": HERE_OS, "preflight_target_os": {"sn3700v": HERE_OS}})
    rc, out, _ = play(*inventory_args("inventories/production"), "-i", LOCAL, "playbooks/preflight.yml", "-e", extra)
    assert rc == 0, out[-4000:]
    assert "preflight (targets: 6 checked): 0 error(s)" in out
    assert "not probed (OneFS nodes, reached only through the Platform API): f800-1, f800-2, f800-3, f800-4" in out


def test_targets_unsupported_os_stops_everything():
    extra = json.dumps({"dgx_supported_os": [{"distribution": "Ubuntu", "versions": ["0.0"]}],
                        "preflight_target_os": {"sn3700v": HERE_OS}})
    rc, out, plays = play(*inventory_args("inventories/production"), "-i", LOCAL, "site.yml", "-e", extra)
    assert rc != 0
    for host in ("dgx01", "dgx02", "dgx03", "dgx04"):
        assert re.search(rf"^\s*{host}\s+\| dgx_supported_os\s+\|.*ERROR: the host runs an OS release", out, re.M)
    assert plays == ["Preflight | inventory rules", "Preflight | target checks"], plays


def test_unreachable_target_is_an_error_row():
    extra = json.dumps({"dgx_supported_os": HERE_OS, "preflight_target_os": {"sn3700v": HERE_OS}})
    rc, out, plays = play(*inventory_args("inventories/production"), "-i", UNREACHABLE, "site.yml", "-e", extra)
    assert rc != 0
    for host, address in (("dgx01", "127.0.0.11"), ("sn3700v02", "127.0.0.22")):
        assert re.search(rf"^\s*{host}\s+\| ansible_host\s+\| {re.escape(address)}\s+\| ERROR: unreachable", out,
                         re.M), out[-3000:]
    assert plays == ["Preflight | inventory rules", "Preflight | target checks"], plays


def test_empty_secret_fails_online_and_no_secret_is_printed():
    rc, out, plays = play(*inventory_args("inventories/production"), "site.yml", *LOCAL_ONLY,
                          env={"POWERSCALE_API_PASSWORD": "", "NGC_API_KEY": "sekrit-value-7f3e9"})
    assert rc != 0
    assert re.search(r"^\s*all\s+\| powerscale_api_password\s+\| <secret>\s+\| ERROR: resolves empty.*"
                     r"POWERSCALE_API_PASSWORD", out, re.M), out[-3000:]
    assert "sekrit-value-7f3e9" not in out
    assert plays == ["Preflight | inventory rules"]


def test_secret_states_from_the_real_inventory(monkeypatch):
    for name in SECRETS:
        monkeypatch.setenv(name, "x")
    monkeypatch.setenv("QM8700_PASSWORD", "")
    states = {s.name: s.state for s in load_site("inventories/production", offline=False).secrets}
    assert states == {"powerscale_api_password": "ok", "storage_fabric_password": "ok", "qm8700_api_password": "empty",
                      "ngc_api_key": "ok", "ngc_mirror_password": "ok"}
    assert load_site("inventories/production", offline=True).secrets == []


def test_clear_text_secret_is_found_by_the_collector():
    states = load_site("inventories/production", "tests/preflight_cases/secret-in-clear-text/hosts.yml").secrets
    assert [(s.name, s.state, s.host) for s in states] == [("ngc_api_key", "clear_text", "all")]


def test_limited_run_still_checks_the_whole_inventory():
    rc, out, plays = play(*inventory_args("inventories/production"), "-i", "tests/preflight_cases/storage-address-duplicate/hosts.yml",
                          "site.yml", "--limit", "dgx01", "-e", "preflight_offline=true")
    assert rc != 0
    assert re.search(r"^\s*dgx04\s+\| storage_nics\[0\]\.address\s+\|.*ERROR: duplicate address", out, re.M)
    assert plays == ["Preflight | inventory rules"]


def test_clear_text_detection():
    plugin = action_plugin()
    assert plugin.is_clear_text("nvapi-123")
    assert not plugin.is_clear_text("{{ vault_ngc_api_key | default('') }}")
    assert not plugin.is_clear_text("")
    assert not plugin.is_clear_text(None)
    encrypted = type("EncryptedString", (), {})()
    assert not plugin.is_clear_text(encrypted)


def slurm_stand_ins(tmp_path: Path, mpi_list: str) -> dict[str, str]:
    """srun/sinfo on PATH answering as a real Slurm does (tests/fixtures/slurm/real), all nodes idle."""
    bindir = tmp_path / "bin"
    bindir.mkdir(parents=True)
    (bindir / "srun").write_text(f"#!/bin/sh\ncat {ROOT / 'tests/fixtures/slurm/real' / mpi_list}\n")
    (bindir / "sinfo").write_text('#!/bin/sh\nprintf "%s idle\\n" "$(hostname -s)"\n')
    for f in bindir.iterdir():
        f.chmod(0o755)
    return {"PATH": f"{bindir}:{os.environ['PATH']}"}


def test_targets_slurm_without_pmix_stops_before_any_measurement(tmp_path):
    """validation_engine auto on DGX nodes whose Slurm offers no pmix (srun --mpi=list of openpmix/prrte#1635):
    preflight names the host and the fix and nothing after it runs; with mpirun as the engine it passes."""
    extra = json.dumps({"dgx_supported_os": HERE_OS, "preflight_target_os": {"sn3700v": HERE_OS}})
    env = slurm_stand_ins(tmp_path, "srun-mpi-list-no-pmix.txt")
    rc, out, plays = play(*inventory_args("inventories/production"), "-i", LOCAL, "site.yml", "-e", extra, env=env)
    assert rc != 0
    assert re.search(r"dgx0\d: Slurm cannot launch the validation \(validation_engine auto, partition the default\): "
                     r"srun --mpi=list offers no pmix \(it offers cray_shasta, none, pmi2\)", out), out[-3000:]
    assert "validation_engine: mpirun" in out
    assert plays == ["Preflight | inventory rules", "Preflight | target checks"], plays
    rc, out, _ = play(*inventory_args("inventories/production"), "-i", LOCAL, "playbooks/preflight.yml", "-e", extra,
                      "-e", "validation_engine=mpirun", env=env)
    assert rc == 0, out[-3000:]
    ok = slurm_stand_ins(tmp_path / "ok", "srun-mpi-list-pmix_v4-24.05.2.txt")
    rc, out, _ = play(*inventory_args("inventories/production"), "-i", LOCAL, "playbooks/preflight.yml", "-e", extra,
                      env=ok)
    assert rc == 0, out[-3000:]
