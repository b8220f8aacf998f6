"""roles/validate's paths stage through a real ansible-playbook run, every host this machine (local connection) and an
iperf3 stand-in on PATH that prints the real capture (tests/fixtures/paths/real): the server on the storage side
and on each DGX, each path alone (one node at a time) and all at once, the compute-fabric pair, the raw outputs
in the run directory, and every server it started stopped again."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml
from conftest import ROOT

from validation.stages.paths import judge_path_case
from validation.verdict import FAIL

REAL = ROOT / "tests" / "fixtures" / "paths" / "real"
FAKE_IPERF3 = """#!/bin/sh
echo "$$ $(date +%s.%N) $@" >> {log}
case " $* " in
  *" -s "*) while [ $# -gt 0 ]; do [ "$1" = -I ] && pidfile=$2; shift; done
            (trap 'exit 0' TERM; while :; do sleep 0.1; done) </dev/null >/dev/null 2>&1 &
            echo $! > "$pidfile"; exit 0 ;;
esac
sleep {seconds}
cat {capture}
echo "$$ $(date +%s.%N) END $@" >> {log}
"""


def run_paths_stage(tmp_path: Path, dgx: int = 2, seconds: float = 0.2) -> Path:
    """The paths stage on `dgx` stand-in DGX hosts; the iperf3 stand-in's log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "iperf3.log"
    fake = bin_dir / "iperf3"
    fake.write_text(FAKE_IPERF3.format(log=log, seconds=seconds,
                                       capture=REAL / "iperf3-tcp-1stream-3.9-cloudpilot.json"))
    fake.chmod(0o755)
    py = {"executable": sys.executable}
    mounts = lambda addr: [{"mount": "/mnt/scratch", "device": f"{addr}:/ifs/data/scratch", "fstype": "nfs"}]  # noqa: E731
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_python": py}
    inventory = {"all": {"vars": {
        "validation_stages": {"paths": {"enabled": True}},
        "validation_repeats": 2, "validation_timeout_s": 120, "validation_lab_standins": True,
        "validation_scratch_mount": "/mnt/scratch",
        "nfs_mounts": [{"mount_point": "/mnt/scratch", "nconnect": 4}],
        "validation_paths": {"seconds": 1, "storage_streams": "auto", "storage_server": "iperf3",
                             "storage_port_base": 5201, "storage_pidfile_dir": str(tmp_path / "pids"),
                             "fabric_tool": "iperf3", "fabric_streams": 2, "fabric_port": 5301,
                             "ib_port_base": 18515},
        "validation_telemetry": {"enabled": False, "interval_s": 1, "max_gap": 0.35},
        "dgx_models": {"lab-vm": {}}, "dgx_model": "lab-vm",
        # each stand-in host its own directories, as each DGX has (the remote one under a validation directory)
        "validate_runners_dir": str(tmp_path) + "/{{ inventory_hostname }}/runners",
        "validate_remote_dir": str(tmp_path) + "/{{ inventory_hostname }}/validation/20261126T100000Z",
        "paths_test_run": "20261126T100000Z", "paths_test_dir": str(tmp_path), "paths_test_root": str(ROOT)},
        "children": {
            "dgx": {"hosts": {
                f"dgx{i:02d}": {**local, "ansible_mounts": mounts("198.51.100.21"),
                                "ib_ipoib_address": f"203.0.113.{10 + i}/24",
                                "storage_nics": [{"name": "storage0", "address": f"198.51.100.{10 + i}/24"}]}
                for i in range(1, dgx + 1)}},
            "powerscale": {"hosts": {"powerscale01": {
                **local, "storage_nics": [{"name": "storage0", "address": "198.51.100.21/24"}]}}}}}}
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump(inventory))
    (tmp_path / "pids").mkdir()
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
               PATH=f"{bin_dir}:{os.environ['PATH']}", ANSIBLE_FORCE_COLOR="0")
    p = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inv),
                        "tests/validation/playbooks/paths_local.yml"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    (tmp_path / "playbook.log").write_text(p.stdout + p.stderr)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    return log


def test_the_role_measures_each_path_alone_then_all_at_once_and_stops_its_servers(tmp_path):
    log = run_paths_stage(tmp_path)
    raw = tmp_path / "results" / "20261126T100000Z" / "raw" / "paths"
    assert sorted(d.name for d in raw.iterdir() if d.is_dir()) == [
        "fabric-dgx01-dgx02", "storage-all-dgx01", "storage-all-dgx02", "storage-dgx01", "storage-dgx02"]
    meta = json.loads((raw / "storage-dgx02" / "meta.json").read_text())
    assert meta["asked"] == {"server": "198.51.100.21", "port": 5202, "streams": 4, "seconds": 1, "reverse": True,
                             "protocol": "TCP", "repeats": 2, "client": socket.gethostname().split(".")[0],
                             "nodes": ["dgx02"]}
    assert meta["path"] == "dgx02 -> powerscale01 (198.51.100.21)" and len(meta["samples"]) == 2
    fabric = json.loads((raw / "fabric-dgx01-dgx02" / "meta.json").read_text())
    assert fabric["asked"]["server"] == "203.0.113.12" and fabric["asked"]["streams"] == 2
    calls = [c for c in log.read_text().splitlines() if c.split()[2:3] != ["END"]]  # starts only
    servers = [c for c in calls if " -s " in f" {c} "]
    assert any("-B 198.51.100.21 -p 5201" in c for c in servers) and any("-p 5202" in c for c in servers)
    assert any("-p 5301" in c and "-B 203.0.113.11" in c for c in servers)
    clients = [c for c in calls if " -c " in c]
    assert sum(" -R" in c and "-P 4" in c for c in clients) == 2 * 2 + 2 * 2  # alone and at once, 2 samples each
    # every server this stage started was stopped: no pid file left, no stand-in process alive
    assert list((tmp_path / "pids").iterdir()) == []
    assert not list(tmp_path.glob("dgx0*/runners/iperf3-*.pid"))
    def alive() -> list[str]:  # the stand-in daemons (their shell is named iperf3), SIGTERMed by the stage
        ps = subprocess.run(["ps", "-eo", "pid,comm,args"], capture_output=True, text=True).stdout
        return [ln for ln in ps.splitlines()[1:] if ln.split()[1] == "iperf3" and str(tmp_path) in ln]

    for _ in range(30):  # each exits at the end of its current 0.1 s sleep
        if not alive():
            break
        time.sleep(0.1)
    assert alive() == []
    # the capture is a 1-stream test in the other direction: the verdict says so (the role asked for nconnect 4)
    check, _values = judge_path_case(raw / "storage-dgx01", "storage-dgx01", 2)
    assert check.status == FAIL and any("streams: asked 4, done 1" in r for r in check.reasons)


def test_fabric_pairs_run_in_rounds_of_disjoint_pairs(tmp_path):
    """Four DGX: the ring's four fabric pairs in two rounds (validation/localise.py pair_rounds), the two pairs of a
    round at once: each client starts before the other pair of its round has ended, and round 2 starts after round 1
    has ended (start and end times as the stand-in logs them; each sample takes 2 s, longer than the delay between
    two hosts' tasks on a loaded machine)."""
    log = run_paths_stage(tmp_path, dgx=4, seconds=2)
    raw = tmp_path / "results" / "20261126T100000Z" / "raw" / "paths"
    assert sorted(d.name for d in raw.glob("fabric-*")) == [
        "fabric-dgx01-dgx02", "fabric-dgx02-dgx03", "fabric-dgx03-dgx04", "fabric-dgx04-dgx01"]
    starts: dict[str, list[float]] = {}
    ends: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        _pid, when, *args = line.split()
        into = ends if args[:1] == ["END"] else starts
        if "-c" in args and "-R" not in args:
            into.setdefault(args[args.index("-c") + 1], []).append(float(when))
    first = {server: min(times) for server, times in starts.items()}
    end = {server: max(times) for server, times in ends.items()}
    # round 1: dgx01->dgx02 (server .12) and dgx03->dgx04 (.14); round 2: dgx02->dgx03 (.13) and dgx04->dgx01 (.11)
    for one, other in (("12", "14"), ("13", "11")):
        a, b = f"203.0.113.{one}", f"203.0.113.{other}"
        assert first[a] < end[b] and first[b] < end[a], f"the pairs of a round overlap in time: {starts} {ends}"
    round_one_end = max(end["203.0.113.12"], end["203.0.113.14"])
    assert min(first["203.0.113.13"], first["203.0.113.11"]) >= round_one_end, f"round 2 after round 1: {starts} {ends}"
