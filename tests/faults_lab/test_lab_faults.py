"""Faults on the running lab, one per case, each ending in its bound with a message naming the host, what failed and
what to do, leaving nothing behind, and converging on a re-run once the fault is gone:

- the registry refuses the login (a wrong mirror password given to the containers stage),
- the scratch quota is full when fio lays out its file set,
- the NFS server stops while a fio case runs,
- a DGX VM is powered off in the middle of the compute stage, and in the middle of the validation stage,
- one DGX's storage link is throttled to a fraction of the other's (issue #17's acceptance: the verdict FAILs for
  that node only, and the report's diagnosis names the node and the network path as the limiting layer).

    pytest -m lab_faults tests/faults_lab      (the lab must be up: python -m lab up)

The VM is powered off through its qemu monitor (`quit`: the power cord, no shutdown); `python -m lab up` starts it
again. The validation runs take one sample per case with a short time limit (VALIDATE_FAST), so that a case that
hangs ends in minutes; a re-run once the fault is gone (one sample, 300 s per case: VALIDATE_RERUN) must PASS.
Whatever a case changed is put back in its `finally`, and the module fixture brings every VM up again at the end,
even after a failure.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab.lifecycle import default_run_dir
from validation.inventory_layers import group_vars

pytestmark = pytest.mark.lab_faults

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RUN_DIR = default_run_dir()
# `python -m lab` runs from the checkout the running lab belongs to (its run dir is <checkout>/lab/.run): a VM it
# starts again references that checkout's files (the registry relay), which must outlive this test run.
LAB_ROOT = RUN_DIR.resolve().parents[1] if RUN_DIR.resolve().parent.name == "lab" else ROOT
LAB_PYTHON = next((str(p) for p in [LAB_ROOT / ".venv" / "bin" / "python"] if p.is_file()), sys.executable)
LAB = group_vars(ROOT / "inventories" / "lab")
RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+ok=\d+\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)\s+"
                   r"failed=(?P<failed>\d+)", re.M)
IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"
WRONG_PASSWORD = "not-the-lab-mirror-password-7c1e"
# In a directory of its own: root is squashed to nobody on the export, and the client's fs.protected_regular refuses
# an O_CREAT open of a file nobody owns in the world-writable, sticky export root.
FILL_DIR = "/mnt/scratch/.faults-quota-fill"
FILL = f"{FILL_DIR}/fill"
# One sample per case and a short time limit per case: a hung case ends in minutes, not validation_timeout_s (900 s).
VALIDATE_FAST = ["-e", json.dumps({"validation_repeats": 1, "validation_timeout_s": 90})]  # JSON: integers
# The re-run once the fault is gone proves the lab converges and PASSes again, not the fault's bound: one sample per
# case with room for a node that has just been powered on (cold page cache: torch's first import reads its libraries
# from disk) or a host whose two cores are shared (the 90 s limit killed both DDP trainings of such a re-run).
VALIDATE_RERUN = ["-e", json.dumps({"validation_repeats": 1, "validation_timeout_s": 300})]


def stages(*enabled: str) -> list[str]:
    """-e validation_stages with only these stages enabled, and the path baselines: the lab's fio, NCCL and DDP
    thresholds are fractions of them (without them those thresholds cannot be judged, a FAIL). Every stage the
    inventory declares is named: preflight refuses the thresholds of a stage missing from the mapping."""
    wanted = {"paths", *enabled}
    return ["-e", json.dumps({"validation_stages": {s: {"enabled": s in wanted} for s in LAB["validation_stages"]}})]


# Bounds (seconds) of the faulted run of each case, from the start of ansible-playbook to its end. README's table.
BOUND_S = {
    "registry": 300,        # containers stage: the login fails at once
    "quota": 600,           # fio only: layout and reads fail at once (ENOSPC), plus the stage's own time
    "nfs": 600,             # fio only: two reads hit the 90 s limit, the cleanup's stat gives up after 20 s
    "compute": 300,         # compute stage: the lost node's next task is unreachable at once (its port is closed)
    "validation": 900,      # fio + DDP: DDP on two nodes waits for the lost rank until the 90 s limit
    "throttle": 600,        # paths + fio: the throttled node's 64 MiB reads take about 15 s instead of 2 s
}
# The throttle: a token-bucket shaper on powerscale01's storage NIC for what it sends to dgx02 (NFS reads and the
# storage baseline's iperf3 -R stream), 40 Mbit/s: about a tenth of what a lab storage path carries (33-65 MB/s
# measured, benchmarks/paths_calibration.py), far beyond acceptance_outlier_max_behind_pct (50 %). A shaper queues
# where a policer drops: an ingress policer on dgx02 (24 Mbit/s, drop) stalled every fio read of the run, dgx01's
# alone included (the storage VM's nfsd threads waiting on dgx02's collapsing TCP), and the run missed its bound.
THROTTLED, THROTTLE_ADDR, THROTTLE_RATE = "dgx02", "198.51.100.12", "40mbit"
THROTTLE_HOST, THROTTLE_NIC = "powerscale01", "storage0"
THROTTLE_ON = (f"tc qdisc add dev {THROTTLE_NIC} root handle 1: prio && "
               f"tc qdisc add dev {THROTTLE_NIC} parent 1:3 handle 30: tbf rate {THROTTLE_RATE} burst 64kb latency 200ms && "
               f"tc filter add dev {THROTTLE_NIC} parent 1:0 protocol ip prio 1 u32 match ip dst {THROTTLE_ADDR}/32 "
               "flowid 1:3")
THROTTLE_OFF = (f"tc qdisc del dev {THROTTLE_NIC} root 2>/dev/null; ! tc qdisc show dev {THROTTLE_NIC} | "
                "grep -q 'qdisc prio 1:'")


# ------------------------------------------------------------------------------------------------ the lab
def lab(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LAB_PYTHON, "-m", "lab", *args], cwd=LAB_ROOT, capture_output=True, text=True,
                          timeout=timeout)


def ssh(node: str, script: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return lab("ssh", node, script, timeout=timeout)


def must(node: str, script: str, timeout: int = 120) -> str:
    proc = ssh(node, script, timeout)
    assert proc.returncode == 0, f"{node}: {script}: {proc.stdout[-1000:]} {proc.stderr[-1000:]}"
    return proc.stdout


def node_states() -> dict[str, str]:
    proc = lab("status", "--json", "--no-ssh")
    return {n["name"]: n["state"] for n in json.loads(proc.stdout or "{}").get("nodes", [])}


def power_off(node: str) -> None:
    """Pull the VM's power cord: `quit` on its qemu monitor (the lab's -monitor unix socket)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(RUN_DIR / "monitor" / f"{node}.sock"))
        with contextlib.suppress(TimeoutError):
            sock.recv(4096)  # the monitor's banner
        sock.sendall(b"quit\n")
        # hold the connection until qemu ends it (it exits): closed at once, the monitor can see the hang-up
        # before it reads the command, and the VM runs on
        deadline = time.monotonic() + 20
        with contextlib.suppress(TimeoutError, ConnectionError):
            while time.monotonic() < deadline and sock.recv(4096):
                pass
    deadline = time.monotonic() + 30
    while node_states().get(node) == "running":
        assert time.monotonic() < deadline, f"{node} still runs 30 s after `quit` on its monitor"
        time.sleep(1)


def lab_up() -> None:
    """Start what is not running (`lab up` is idempotent), and wait until every node answers."""
    proc = lab("up", timeout=1500)
    assert proc.returncode == 0, f"python -m lab up failed: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    assert set(node_states().values()) == {"running"}, node_states()


def answers(node: str, path: str) -> bool:
    return ssh(node, f"timeout 20 stat -t {path} >/dev/null", timeout=60).returncode == 0


def wait_until(what: str, check, timeout_s: float, every_s: float = 5) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:.0f} s"
        time.sleep(every_s)


# ------------------------------------------------------------------------------------------------ playbooks
@dataclass
class Playbook:
    """ansible-playbook running in the background, its output in a file."""

    proc: subprocess.Popen
    log: Path
    started: float

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for(self, text: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while text not in self.output():
            assert self.proc.poll() is None, f"the run ended before {text!r}:\n{self.output()[-4000:]}"
            assert time.monotonic() < deadline, f"no {text!r} within {timeout_s:.0f} s:\n{self.output()[-3000:]}"
            time.sleep(0.5)

    def finish(self, bound_s: float) -> tuple[int, str, float]:
        """Wait for the end, at most bound_s from the start (then the run is stopped and the case fails)."""
        try:
            rc = self.proc.wait(timeout=max(1.0, bound_s - (time.monotonic() - self.started)))
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(timeout=60)
            raise AssertionError(f"the run did not end within its bound of {bound_s} s:\n"
                                 f"{self.output()[-4000:]}") from None
        return rc, self.output(), time.monotonic() - self.started


def start(tmp_path: Path, playbook: str, *extra: str) -> Playbook:
    log = tmp_path / f"{Path(playbook).stem}-{time.monotonic_ns()}.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(BIN / "ansible-playbook"), playbook, *extra], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return Playbook(proc, log, time.monotonic())


def run(tmp_path: Path, playbook: str, *extra: str, bound_s: float = 1800) -> tuple[int, str, float]:
    return start(tmp_path, playbook, *extra).finish(bound_s)


def flat(out: str) -> str:
    """The output with every run of whitespace as one space: the callback folds long messages over lines."""
    return " ".join(out.split())


def recap(out: str) -> dict[str, dict[str, int]]:
    tail = out[out.rfind("PLAY RECAP"):]
    found = {m["host"]: {k: int(m[k]) for k in ("changed", "unreachable", "failed")} for m in RECAP.finditer(tail)}
    assert found, f"no PLAY RECAP:\n{out[-3000:]}"
    return found


def report_of(out: str) -> dict:
    """report.json of the validation run whose output this is (its report play prints report.html's path)."""
    found = re.findall(r"(/\S+)/report\.html: (?:PASS|FAIL)", out)
    assert found, f"the run wrote no report:\n{out[-3000:]}"
    return json.loads((Path(found[-1]) / "report.json").read_text())


def converges(tmp_path: Path, playbook: str, *extra: str) -> str:
    """A re-run succeeds on every host."""
    rc, out, _ = run(tmp_path, playbook, *extra)
    assert rc == 0, f"the re-run of {playbook} failed:\n{out[-5000:]}"
    assert not any(h["failed"] or h["unreachable"] for h in recap(out).values()), recap(out)
    return out


def validation_passes(tmp_path: Path, *extra: str) -> None:
    out = converges(tmp_path, "playbooks/validate.yml", *VALIDATE_RERUN, *extra)
    assert report_of(out)["verdict"]["status"] == "PASS"


def no_fio_left() -> bool:
    return all(ssh(n, "! pgrep -x fio", timeout=60).returncode == 0 for n in ("dgx01", "dgx02"))


# ------------------------------------------------------------------------------------------------ fixture
@pytest.fixture(scope="module")
def converged():
    states = node_states()
    if not states or set(states.values()) != {"running"}:
        pytest.fail(f"the lab is not up ({states}): run `python -m lab up` first")
    proc = subprocess.run([str(BIN / "ansible-playbook"), "site.yml", "--skip-tags", "validate"], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"the lab does not converge before the faults:\n{proc.stdout[-4000:]}"
    yield
    # Whatever a case left (it restores its own fault in `finally`; this is the net under it): every VM up, NFS
    # served, the quota filler gone.
    lab_up()
    must("powerscale01", "systemctl start nfs-server && systemctl is-active nfs-server")
    must("dgx01", f"rm -rf {FILL_DIR}")


# ------------------------------------------------------------------------------------------------ cases
def test_registry_refusing_the_login_names_node_registry_and_fix(converged, tmp_path):
    registry, user = LAB["ngc_mirror"]["registry"], LAB["ngc_mirror"]["username"]
    must("dgx01", f"docker rmi {IMAGE}")
    try:
        # the vault's value is wrong (a clear-text -e ngc_mirror_password would be refused by preflight)
        rc, out, elapsed = run(tmp_path, "playbooks/containers.yml", "-e",
                               f"vault_ngc_mirror_password={WRONG_PASSWORD}", bound_s=BOUND_S["registry"])
        hosts = recap(out)
        assert rc != 0 and hosts["dgx01"]["failed"] == 1 and hosts["dgx02"]["failed"] == 0, out[-4000:]
        text = flat(out)
        assert f"dgx01: logging in to the registry {registry} as {user} failed:" in text, out[-4000:]
        assert re.search(r"401|[Uu]nauthori[sz]ed", text), out[-4000:]
        assert "Fix: a refused login" in text and "ngc_mirror_password" in text and "Nothing was pulled" in text
        assert WRONG_PASSWORD not in out
        assert IMAGE not in must("dgx01", "docker images --format '{{.Repository}}:{{.Tag}}'")
        assert elapsed < BOUND_S["registry"]
    finally:
        converges(tmp_path, "playbooks/containers.yml")
    assert IMAGE in must("dgx01", "docker images --format '{{.Repository}}:{{.Tag}}'")
    rc, out, _ = run(tmp_path, "playbooks/containers.yml")
    assert rc == 0 and not any(h["changed"] for h in recap(out).values()), recap(out)


def test_full_scratch_quota_fails_fio_naming_the_quota(converged, tmp_path):
    # fill the scratch export's quota (1 GiB hard, inventories/lab exports.yml) from dgx01: dd stops at the quota
    fill = ssh("dgx01", f"mkdir -p {FILL_DIR} && dd if=/dev/zero of={FILL} bs=1M count=1200 oflag=direct conv=fsync 2>&1",
               timeout=600)
    assert re.search(r"No space left on device|Disk quota exceeded", fill.stdout), fill.stdout[-1000:]
    try:
        rc, out, elapsed = run(tmp_path, "playbooks/validate.yml", *VALIDATE_FAST, *stages("fio"),
                               bound_s=BOUND_S["quota"])
        assert rc != 0 and elapsed < BOUND_S["quota"], out[-4000:]
        verdict = report_of(out)["verdict"]
        assert verdict["status"] == "FAIL"
        reasons = " ".join(r for c in verdict["checks"] if c["stage"] == "fio" for r in c["reasons"])
        assert "the scratch export is full" in reasons and "powerscale_quotas" in reasons, reasons[-3000:]
        assert "fio_layout[layout]" in verdict["failed"], verdict["failed"]
        assert no_fio_left()
    finally:
        must("dgx01", f"rm -rf {FILL_DIR}")
    validation_passes(tmp_path, *stages("fio"))


def test_nfs_server_stopped_during_fio_fails_in_bound_and_leaves_no_hung_mount(converged, tmp_path):
    book = start(tmp_path, "playbooks/validate.yml", *VALIDATE_FAST, *stages("fio"))
    stopped = False
    try:
        book.wait_for("Fio | per-node reads", timeout_s=400)
        must("powerscale01", "systemctl stop nfs-server")
        stopped = True
        rc, out, elapsed = book.finish(BOUND_S["nfs"])
        assert rc != 0 and elapsed < BOUND_S["nfs"], out[-4000:]
        verdict = report_of(out)["verdict"]
        assert verdict["status"] == "FAIL" and "fio_sanity[node-dgx01]" in verdict["failed"], verdict["failed"]
        reasons = " ".join(r for c in verdict["checks"] if c.get("instance") == "node-dgx01" for r in c["reasons"])
        assert "killed after the 90 s limit" in reasons, reasons
        # the cleanup did not hang on the dead mount: it said what it left and why
        assert "was NOT removed" in flat(out) and "did not answer a stat within 20 s" in flat(out), out[-4000:]
    finally:
        if not stopped and book.proc.poll() is None:
            book.proc.terminate()
        must("powerscale01", "systemctl start nfs-server && systemctl is-active nfs-server")
    # nothing hung left behind once the server is back: the mounts answer, no fio process remains
    for node in ("dgx01", "dgx02"):
        wait_until(f"{node}: /mnt/scratch answers again", lambda n=node: answers(n, "/mnt/scratch"), 300)
        assert must(node, "awk '$2 == \"/mnt/scratch\"' /proc/mounts").count("/mnt/scratch") == 1
    wait_until("no fio process left on the DGX nodes", no_fio_left, 120)
    must("dgx01", "rm -rf /mnt/scratch/.validation-scratch")  # what the failure said it left
    validation_passes(tmp_path, *stages("fio"))


def test_dgx_powered_off_mid_compute_stage(converged, tmp_path):
    book = start(tmp_path, "playbooks/compute.yml")
    try:
        book.wait_for("TASK [dgx_nfs", timeout_s=BOUND_S["compute"])
        power_off("dgx02")
        rc, out, elapsed = book.finish(BOUND_S["compute"])
        hosts = recap(out)
        assert rc != 0 and hosts["dgx02"]["unreachable"] >= 1, out[-4000:]
        assert hosts["dgx01"]["failed"] == 0 and hosts["dgx01"]["unreachable"] == 0, hosts
        assert "dgx02: the compute stage did not finish" in flat(out) and "power it on" in flat(out), out[-4000:]
        assert elapsed < BOUND_S["compute"]
    finally:
        if book.proc.poll() is None:
            book.proc.terminate()
        lab_up()
    converges(tmp_path, "playbooks/compute.yml")
    rc, out, _ = run(tmp_path, "playbooks/compute.yml")
    assert rc == 0 and not any(h["changed"] for h in recap(out).values()), recap(out)
    assert answers("dgx02", "/mnt/scratch") and answers("dgx02", "/mnt/training")


def test_dgx_powered_off_mid_validation_stage(converged, tmp_path):
    book = start(tmp_path, "playbooks/validate.yml", *VALIDATE_FAST, *stages("fio", "ddp"))
    try:
        book.wait_for("TASK [validate : DDP |", timeout_s=600)
        power_off("dgx02")
        rc, out, elapsed = book.finish(BOUND_S["validation"])
        hosts = recap(out)
        assert rc != 0 and hosts["dgx02"]["unreachable"] >= 1, out[-4000:]
        assert hosts["dgx01"]["failed"] == 0 and hosts["dgx01"]["unreachable"] == 0, hosts
        verdict = report_of(out)["verdict"]
        assert verdict["status"] == "FAIL" and "node_finished[dgx02]" in verdict["failed"], verdict["failed"]
        (check,) = [c for c in verdict["checks"] if c["label"] == "node_finished[dgx02]"]
        assert check["reasons"][0].startswith("dgx02 was unreachable during the validation stage and still is")
        assert "power it on" in check["reasons"][0]
        assert "node_finished[dgx01]" not in verdict["failed"]
        assert f"Validation FAILED: {verdict['failed'][0]}" in flat(out)
        assert elapsed < BOUND_S["validation"]
    finally:
        if book.proc.poll() is None:
            book.proc.terminate()
        lab_up()
    validation_passes(tmp_path, *stages("fio", "ddp"))


def test_throttled_storage_link_fails_that_node_and_names_the_network_path(converged, tmp_path):
    must(THROTTLE_HOST, THROTTLE_OFF)
    must(THROTTLE_HOST, THROTTLE_ON)
    try:
        assert "tbf" in must(THROTTLE_HOST, f"tc qdisc show dev {THROTTLE_NIC}")
        rc, out, elapsed = run(tmp_path, "playbooks/validate.yml", *VALIDATE_FAST, *stages("fio"),
                               bound_s=BOUND_S["throttle"])
        assert rc != 0 and elapsed < BOUND_S["throttle"], out[-4000:]
        verdict = report_of(out)["verdict"]
        assert verdict["status"] == "FAIL", verdict["failed"]
        failed = [c for c in verdict["checks"] if c["status"] == "FAIL"]
        # that node only: every failed check is one of the throttled node's, none is the other's or the cluster's
        other = "dgx01"
        assert all(THROTTLED in (c.get("instance") or "") or THROTTLED in (c.get("case") or "") for c in failed), (
            [c["label"] for c in failed])
        assert not any(other in (c.get("instance") or "") or other in (c.get("case") or "") for c in failed)
        assert f"path_storage_MBps[{THROTTLED}]" in verdict["failed"], verdict["failed"]
        diagnosis = verdict["limits"]["diagnosis"]
        assert len(diagnosis) == 1 and diagnosis[0].startswith(f"{THROTTLED}: the limit is the network path ("), (
            diagnosis)
        assert f"path_storage_MBps[{THROTTLED}]" in diagnosis[0], diagnosis
    finally:
        must(THROTTLE_HOST, THROTTLE_OFF)
    validation_passes(tmp_path, *stages("fio"))
