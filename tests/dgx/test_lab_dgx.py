"""The DGX stages on the running lab, end to end (marked `lab`: `pytest -m lab tests/dgx/test_lab_dgx.py`).

Needs `python -m lab up` and the storage + fabric stages applied (exports on powerscale01, a bridged
sn3700v01). The tests run in file order and build on each other:
  compute.yml converges with real NFS mounts -> /proc/mounts shows the declared options -> a second run and a
  --check run change nothing -> a changed nconnect reaches /proc/mounts -> containers.yml converges and is
  idempotent -> the handover checks pass -> they fail with a clear message after a mount is removed or an
  image deleted by hand, and the stages repair both -> no secret in any output, fact cache or node file.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dgx_testlib import ROOT, dgx_hosts, load_group_vars

from validation.inventory_layers import inventory_args

pytestmark = pytest.mark.lab

RUN_DIR = ROOT / "lab" / ".run"
VENV_BIN = Path(sys.executable).parent
NODES = dgx_hosts("lab")
NFS = load_group_vars("lab", "nfs_client")
OUTPUTS: list[str] = []  # every playbook/pytest output of this module, scanned for secrets at the end


def ssh(node: str, command: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    port = str(NODES[node]["ansible_port"])
    argv = ["ssh", "-i", str(RUN_DIR / "ssh" / "id_ed25519"), "-p", port, "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={RUN_DIR / 'ssh' / 'known_hosts'}",
            "-o", "LogLevel=ERROR",
            "root@127.0.0.1", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def playbook(name: str, *extra: str, timeout: int = 1500) -> tuple[int, str, dict[str, dict[str, int]]]:
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), *inventory_args("inventories/lab"), f"playbooks/{name}.yml",
                           *extra], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    OUTPUTS.append(out)
    recap = {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
             for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", out, re.M)}
    return proc.returncode, out, recap


def handover(*extra: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/handover", "--hosts=ansible://dgx",
                           "--ansible-inventory=inventories/lab", "-p", "no:cacheprovider", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    OUTPUTS.append(proc.stdout + proc.stderr)
    return proc.returncode, proc.stdout + proc.stderr


def live_mounts(node: str) -> dict[str, dict[str, str | None]]:
    result = ssh(node, "cat /proc/mounts")
    assert result.returncode == 0, result.stderr
    mounts = {}
    for line in result.stdout.splitlines():
        src, path, fstype, opts = line.split()[:4]
        if fstype.startswith("nfs"):
            mounts[path] = {k: (v or None) for k, _, v in (o.partition("=") for o in opts.split(","))}
            mounts[path]["_src"] = src
    return mounts


def changed_on_dgx(recap: dict[str, dict[str, int]]) -> dict[str, int]:
    return {h: r.get("changed", -1) for h, r in recap.items() if h in NODES}


@pytest.fixture(scope="module", autouse=True)
def lab_ready():
    assert (RUN_DIR / "ssh" / "id_ed25519").exists(), "the lab is not up: run `python -m lab up` first"
    for node in NODES:
        probe = ssh(node, "true", timeout=60)
        assert probe.returncode == 0, f"{node} does not answer over SSH ({probe.stderr.strip()}): is the lab up?"
    exports = ssh("dgx01", "timeout 30 showmount -e 198.51.100.21")
    assert exports.returncode == 0 and "/ifs/data/training" in exports.stdout, (
        "dgx01 cannot list powerscale01's exports over the storage fabric "
        f"({(exports.stdout + exports.stderr).strip()}): apply the storage and fabric stages first")


def test_compute_converges_with_real_nfs_mounts():
    rc, out, recap = playbook("compute")
    assert rc == 0, out[-6000:]
    for node in NODES:
        assert recap[node]["failed"] == 0 and recap[node]["unreachable"] == 0, recap


def test_proc_mounts_show_the_declared_options():
    for node in NODES:
        mounts = live_mounts(node)
        for entry in NFS["nfs_mounts"]:
            live = mounts.get(entry["mount_point"])
            assert live, f"{node}: {entry['mount_point']} not in /proc/mounts: {mounts}"
            assert live["_src"] == f"198.51.100.21:{entry['export']}"
            assert (live["vers"], live["proto"], live["nconnect"]) == (entry["vers"], entry["proto"],
                                                                      str(entry["nconnect"]))
            assert (live["timeo"], live["retrans"]) == (str(entry["timeo"]), str(entry["retrans"]))
            assert "hard" in live and "noatime" in live
            # negotiated: never above the request (the roles warn when below)
            assert int(live["rsize"]) <= entry["rsize"] and int(live["wsize"]) <= entry["wsize"]


def test_second_run_and_check_run_change_nothing():
    rc, out, recap = playbook("compute")
    assert rc == 0 and set(changed_on_dgx(recap).values()) == {0}, out[-6000:]
    rc, out, recap = playbook("compute", "--check", "--diff")
    assert rc == 0 and set(changed_on_dgx(recap).values()) == {0}, out[-6000:]


def test_changed_nconnect_is_applied_to_the_mounted_share(tmp_path):
    changed = copy.deepcopy(NFS["nfs_mounts"])
    for mount in changed:  # nconnect is one setting per server (Linux shares the NFS client): change all
        mount["nconnect"] = int(mount["nconnect"]) - 1
    override = tmp_path / "nconnect.yml"
    override.write_text(yaml.safe_dump({"nfs_mounts": changed}))
    try:
        rc, out, recap = playbook("compute", "--check", "--diff", "-e", f"@{override}")
        assert rc == 0 and all(c > 0 for c in changed_on_dgx(recap).values()), out[-6000:]
        assert f"nconnect={changed[0]['nconnect']}" in out  # the diff shows what would change
        for node in NODES:  # and --check changed nothing
            assert live_mounts(node)[changed[0]["mount_point"]]["nconnect"] == str(NFS["nfs_mounts"][0]["nconnect"])
        rc, out, recap = playbook("compute", "-e", f"@{override}")
        assert rc == 0, out[-6000:]
        for node in NODES:
            for mount in changed:
                assert live_mounts(node)[mount["mount_point"]]["nconnect"] == str(mount["nconnect"])
    finally:
        rc, out, _recap = playbook("compute")
    assert rc == 0, out[-6000:]
    for node in NODES:
        assert live_mounts(node)[changed[0]["mount_point"]]["nconnect"] == str(NFS["nfs_mounts"][0]["nconnect"])


def test_containers_converge_and_are_idempotent():
    rc, out, recap = playbook("containers")
    assert rc == 0, out[-6000:]
    rc, out, recap = playbook("containers")
    assert rc == 0 and set(changed_on_dgx(recap).values()) == {0}, out[-6000:]
    rc, out, recap = playbook("containers", "--check")
    assert rc == 0 and set(changed_on_dgx(recap).values()) == {0}, out[-6000:]


def test_handover_checks_pass_on_the_converged_lab():
    rc, out = handover()
    assert rc == 0, out[-6000:]
    assert re.search(r"\b16 passed\b", out), out[-3000:]


def test_handover_fails_clearly_after_a_mount_is_removed():
    assert ssh("dgx02", "umount /mnt/scratch").returncode == 0
    rc, out = handover("-k", "share")
    assert rc == 1, out[-4000:]
    assert "dgx02: /mnt/scratch is NOT mounted" in out, out[-4000:]
    rc, out, _recap = playbook("compute", "--limit", "dgx02")
    assert rc == 0, out[-6000:]
    assert handover("-k", "share")[0] == 0


def test_handover_fails_clearly_after_an_image_is_deleted():
    target = "nvcr.io/nvidia/pytorch:24.05-py3"
    assert ssh("dgx01", f"docker image rm {target}").returncode == 0
    rc, out = handover("-k", "image")
    assert rc == 1, out[-4000:]
    assert f"dgx01: image {target} is NOT present" in out, out[-4000:]
    rc, out, _recap = playbook("containers", "--limit", "dgx01")
    assert rc == 0, out[-6000:]
    assert handover("-k", "image")[0] == 0


def test_no_secret_in_outputs_fact_cache_or_node_files():
    secrets = {name: (RUN_DIR / "secrets" / name).read_text().strip() for name in ("ngc_api_key",
                                                                                 "ngc_mirror_password")}
    assert OUTPUTS, "no run output to scan"
    for name, value in secrets.items():
        assert len(value) >= 8
        for out in OUTPUTS:
            assert value not in out, f"{name} appears in a run's output"
        for cached in (ROOT / ".cache" / "facts").glob("*"):
            assert value not in cached.read_text(errors="replace"), f"{name} is in the fact cache {cached}"
        for node in NODES:
            # docker's own credential store (/root/.docker/config.json) is the one place allowed to hold a login
            found = ssh(node, f"grep -rlsF -D skip --exclude-dir=.docker -e '{value}' /etc /root /var/log /tmp")
            # grep: 1 = no match anywhere, 0 = found (names the files), 2 = could not read something
            assert found.returncode == 1, f"{name} on {node}: rc {found.returncode} {found.stdout.strip()}"
