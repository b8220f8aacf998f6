"""The storage stage on the running lab, end to end (marked `lab`: `pytest -m lab tests/powerscale/test_lab_powerscale.py`).

Needs `python -m lab up` (powerscale01 runs the OneFS API simulator with the knfsd backend, forwarded to
127.0.0.1:18080). The tests run in file order and build on each other:
  storage.yml converges -> `exportfs -v` on powerscale01 shows every declared export with the DGX clients,
  rw and root squash -> a second run and a --check --diff run change nothing -> the scratch quota is a real
  XFS project quota that stops a write at the hard threshold -> the password is in no output and no file.
"""

from __future__ import annotations

import ipaddress
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from validation.inventory_layers import group_vars, inventory_args

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR = ROOT / "lab" / ".run"
VENV_BIN = Path(sys.executable).parent
INVENTORY = ROOT / "inventories" / "lab"
OUTPUTS: list[str] = []


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


HOSTS = _yaml(INVENTORY / "hosts.yml")["all"]["children"]
EXPORTS = group_vars(INVENTORY, "exports")
POWERSCALE_PORT = HOSTS["powerscale"]["hosts"]["powerscale01"]["ansible_port"]
DGX_ADDRESSES = sorted(str(ipaddress.ip_interface(nic["address"]).ip)
                       for host in HOSTS["dgx"]["hosts"].values() for nic in host.get("storage_nics", []))


def ssh(command: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-i", str(RUN_DIR / "ssh" / "id_ed25519"), "-p", str(POWERSCALE_PORT), "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={RUN_DIR / 'ssh' / 'known_hosts'}",
            "-o", "LogLevel=ERROR",
            "root@127.0.0.1", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def storage_stage(*extra: str) -> tuple[int, str, dict[str, dict[str, int]]]:
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), *inventory_args("inventories/lab"), "playbooks/storage.yml",
                           *extra], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    out = proc.stdout + proc.stderr
    OUTPUTS.append(out)
    recap = {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
             for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", out, re.M)}
    return proc.returncode, out, recap


def parse_exportfs_v(text: str) -> dict[str, dict[str, list[str]]]:
    """`exportfs -v` -> {path: {client: [options]}} (long paths wrap the client onto the next line)."""
    out: dict[str, dict[str, list[str]]] = {}
    for m in re.finditer(r"^(/\S+)\s+(\S+?)\(([^)]*)\)", re.sub(r"\n\s+", " ", text), re.M):
        out.setdefault(m.group(1), {})[m.group(2)] = m.group(3).split(",")
    return out


@pytest.fixture(scope="module", autouse=True)
def lab_ready():
    assert (RUN_DIR / "ssh" / "id_ed25519").exists(), "the lab is not up: run `python -m lab up` first"
    probe = ssh("systemctl is-active onefs-sim.service nfs-server.service", timeout=60)
    assert probe.returncode == 0, f"powerscale01: onefs-sim/nfs-server not active: {probe.stdout}{probe.stderr}"


def test_storage_stage_converges():
    rc, out, recap = storage_stage()
    assert rc == 0, out[-8000:]
    assert recap["powerscale01"]["failed"] == 0, recap


def test_exportfs_shows_the_declared_exports_clients_and_root_squash():
    result = ssh("exportfs -v")
    assert result.returncode == 0, result.stderr
    live = parse_exportfs_v(result.stdout)
    for export in EXPORTS["powerscale_exports"]:
        clients = export["clients"] or DGX_ADDRESSES
        assert export["path"] in live, f"{export['path']} is not exported: {result.stdout}"
        assert sorted(live[export["path"]]) == sorted(clients), live[export["path"]]
        for client, options in live[export["path"]].items():
            assert ("ro" if export["read_only"] else "rw") in options, (client, options)
            assert "root_squash" in options and "no_root_squash" not in options, (client, options)
            assert "sec=sys" in options, (client, options)


def test_second_run_and_check_run_change_nothing():
    rc, out, recap = storage_stage()
    assert rc == 0 and recap["powerscale01"]["changed"] == 0, out[-8000:]
    rc, out, recap = storage_stage("--check", "--diff")
    assert rc == 0 and recap["powerscale01"]["changed"] == 0, out[-8000:]


def test_scratch_quota_stops_writes_at_the_hard_threshold():
    (quota,) = [q for q in EXPORTS["powerscale_quotas"] if q["path"] == "/ifs/data/scratch"]
    hard = quota["thresholds"]["hard"]
    probe = "/ifs/data/scratch/.quota-probe"
    mib = hard // (1024 * 1024) + 64
    # As nobody (what a root-squashed DGX writes as), more than the hard threshold: XFS must refuse.
    result = ssh(f"rm -f {probe}; runuser -u nobody -- dd if=/dev/zero of={probe} bs=1M count={mib} "
                 f"conv=fsync status=none; echo rc=$?; stat -c %s {probe}; rm -f {probe}", timeout=600)
    # XFS reports a full project quota as ENOSPC (a OneFS hard threshold gives EDQUOT): either is a refusal
    refused = ("No space left on device", "Disk quota exceeded")
    assert any(r in result.stdout + result.stderr for r in refused), result.stdout + result.stderr
    rc = int(re.search(r"rc=(\d+)", result.stdout).group(1))
    size = int(result.stdout.strip().splitlines()[-1])
    assert rc != 0 and size <= hard, (rc, size, hard)
    report = ssh("xfs_quota -x -c 'report -p -b -N' /ifs")
    assert report.returncode == 0 and str(hard // 1024) in report.stdout, report.stdout


def test_password_is_in_no_output_and_no_file():
    password = (RUN_DIR / "secrets" / "powerscale_api_password").read_text().strip()
    assert len(password) >= 8
    rc, out, _ = storage_stage("-vvv", "--diff")
    assert rc == 0, out[-8000:]
    for text in OUTPUTS:
        assert password not in text
    cache = ROOT / ".cache"
    assert all(password.encode() not in p.read_bytes() for p in cache.rglob("*") if p.is_file())
