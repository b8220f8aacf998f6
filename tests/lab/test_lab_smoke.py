"""Boots a minimal lab (dgx01, powerscale01, sn3700v01) in its own run dir and port range, proves that
storage traffic crosses only once the switch VM is configured, mounts a real knfsd export over it, tears down.

Skipped (with the reason) only where qemu cannot run at all. Images come from the shared cache
(LAB_CACHE_DIR), built on first use. LAB_TEST_PORT_OFFSET (default 3000) keeps it clear of the developers'
lab on the contract ports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import smoke
from lab.lifecycle import lab_qemu_pids
from lab.qemu import qemu_usable

pytestmark = [pytest.mark.lab, pytest.mark.lab_smoke]

ROOT = Path(__file__).resolve().parents[2]
NFS_OPTIONS = "vers=3,nconnect=2,hard"


def _lab(env: dict[str, str], *args: str, timeout: float = 1800, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "lab", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    print(f"$ python -m lab {' '.join(args)}  (exit {proc.returncode})\n{proc.stdout}{proc.stderr}")
    if check:
        assert proc.returncode == 0, f"python -m lab {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def lab_env(tmp_path_factory):
    ok, why = qemu_usable()
    if not ok:
        pytest.skip(f"qemu cannot run here: {why}")
    run_dir = tmp_path_factory.mktemp("labrun")
    env = dict(
        os.environ,
        LAB_RUN_DIR=str(run_dir),
        LAB_PORT_OFFSET=os.environ.get("LAB_TEST_PORT_OFFSET", "3000"),
        LAB_DGX_COUNT="1",
        LAB_NO_HOST_SERVICES="1",
        PYTHONPATH=str(ROOT),
    )
    t0 = time.monotonic()
    try:
        _lab(env, "up")
        print(f"lab up took {time.monotonic() - t0:.0f} s")
        yield env, run_dir
    finally:
        down = _lab(env, "down", check=False)
        leftover = lab_qemu_pids(run_dir)
        assert down.returncode == 0, f"lab down failed: {down.stderr}"
        assert leftover == [], f"qemu processes of the test lab survived `down`: {leftover}"


def _ssh(env: dict[str, str], node: str, script: str, check: bool = True) -> subprocess.CompletedProcess:
    return _lab(env, "ssh", node, script, timeout=300, check=check)


def test_storage_crosses_only_the_configured_switch_and_nfs_mounts(lab_env):
    env, _run_dir = lab_env
    status = json.loads(_lab(env, "status", "--json").stdout)
    nodes = {n["name"]: n for n in status["nodes"]}
    assert set(nodes) == {"dgx01", "powerscale01", "sn3700v01"}
    assert all(n["state"] == "running" and n["reachable"] for n in nodes.values()), status
    assert status["accel"] in ("kvm", "tcg")
    server = nodes["powerscale01"]["addresses"]["storage0"].split("/")[0]
    dgx_addr = nodes["dgx01"]["addresses"]["storage0"]

    # 1. No bridge on the switch yet: dgx01 cannot reach powerscale01's storage address.
    before = _ssh(env, "dgx01", f"ping -c 3 -W 1 {server}", check=False)
    assert before.returncode != 0, "dgx01 reached powerscale01 before the switch was configured"
    assert "0 received" in before.stdout

    # 2. Configure the switch by hand (the README's smoke test), then jumbo frames pass unfragmented.
    ports = sorted(n for n, nic in nodes["sn3700v01"]["nics"].items() if nic["kind"] == "listen")
    assert ports == ["swp1", "swp9"]
    _ssh(env, "sn3700v01", smoke.switch_bridge(ports))
    jumbo = _ssh(env, "dgx01", f"ping -c 3 -W 2 -M do -s 8972 {server}", check=False)
    if jumbo.returncode != 0:  # the bridge may still be learning: one retry after a pause
        time.sleep(3)
        jumbo = _ssh(env, "dgx01", f"ping -c 3 -W 2 -M do -s 8972 {server}")
    assert "8980 bytes from" in jumbo.stdout

    # 3. A real knfsd export on powerscale01's /ifs (XFS, prjquota), mounted on dgx01 over the switch.
    ifs = _ssh(env, "powerscale01", "grep ' /ifs ' /proc/mounts").stdout
    assert " xfs " in ifs and "prjquota" in ifs
    _ssh(env, "powerscale01", smoke.storage_export("/ifs/smoke", dgx_addr.split("/")[0]))
    mounted = _ssh(env, "dgx01", smoke.dgx_mount(server, "/ifs/smoke", "/mnt/smoke", NFS_OPTIONS)).stdout
    line = next(li for li in mounted.splitlines() if " /mnt/smoke " in li)
    source, mount_point, fstype, options = line.split()[:4]
    opts = options.split(",")
    assert (source, mount_point, fstype) == (f"{server}:/ifs/smoke", "/mnt/smoke", "nfs")
    assert {"vers=3", "nconnect=2", "hard"} <= set(opts), opts
    assert f"addr={server}" in opts
    # Data really moves both ways over the mount.
    assert _ssh(env, "dgx01", "cat /mnt/smoke/hello.txt").stdout.strip() == "lab-smoke"
    _ssh(env, "dgx01", "dd if=/dev/urandom of=/mnt/smoke/from-dgx bs=1M count=4 status=none && sync && sha256sum /mnt/smoke/from-dgx")
    sums = [
        _ssh(env, node, f"sha256sum {path} | cut -d' ' -f1").stdout.strip()
        for node, path in (("dgx01", "/mnt/smoke/from-dgx"), ("powerscale01", "/ifs/smoke/from-dgx"))
    ]
    assert sums[0] == sums[1] and len(sums[0]) == 64
    _ssh(env, "dgx01", "umount /mnt/smoke")


def test_up_on_a_running_lab_starts_nothing(lab_env):
    """`up` is idempotent: on a running lab it starts no VM, keeps every qemu process and still succeeds."""
    env, run_dir = lab_env
    before = sorted(lab_qemu_pids(run_dir))
    assert len(before) == 3, f"expected the 3 VMs of the test lab, found qemu pids {before}"
    again = _lab(env, "up", timeout=600)
    assert sorted(lab_qemu_pids(run_dir)) == before, "a second `lab up` replaced or added qemu processes"
    for node in ("dgx01", "powerscale01", "sn3700v01"):
        assert f"lab: {node}: already running" in again.stdout, again.stdout
    assert "started (" not in again.stdout, again.stdout
