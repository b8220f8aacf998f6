"""The runners of issue #17 on the DGX nodes: paths_runner.py (iperf3 client and server) and util_sampler.py,
against stand-in binaries that print real captures (tests/fixtures/paths/real); the verdict judges what they
recorded."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT

from validation.stages.paths import judge_path_case
from validation.verdict import FAIL, PASS

RUNNERS = ROOT / "validation" / "runners"
REAL = ROOT / "tests" / "fixtures" / "paths" / "real"
# The capture's client was another machine (its uname in system_info); a stand-in iperf3 on this one prints it
# with this machine's host name, as iperf3 here would (the verdict compares it with the host the runner ran on).
HERE = socket.gethostname().split(".")[0]
ONE_STREAM = f"sed 's/iperf3-clients-9j5nd/{HERE}/' {REAL}/iperf3-tcp-1stream-3.9-cloudpilot.json"


def _script(path: Path, body: str) -> Path:
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _runner(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(RUNNERS / "paths_runner.py"), *args], capture_output=True, text=True,
                          timeout=60)


def test_iperf3_client_records_what_was_asked_and_the_verdict_judges_it(tmp_path):
    fake = _script(tmp_path / "iperf3", f"#!/bin/sh\necho \"$@\" >> {tmp_path}/argv\n{ONE_STREAM}\n")
    out = tmp_path / "storage-dgx01"
    p = _runner("--phase", "iperf3", "--case", "storage-dgx01", "--kind", "storage", "--out-dir", str(out),
                "--nodes", "dgx01", "--path", "dgx01 -> f800-1/40gige-1", "--server", "168.1.194.92", "--port", "5201",
                "--streams", "1", "--seconds", "10", "--reverse", "0", "--samples", "2", "--iperf3", str(fake))
    assert p.returncode == 0, p.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["asked"] == {"server": "168.1.194.92", "port": 5201, "streams": 1, "seconds": 10, "reverse": False,
                             "protocol": "TCP", "repeats": 2, "client": HERE, "nodes": ["dgx01"]}
    assert [s["file"] for s in meta["samples"]] == ["r1.json", "r2.json"] and meta["tool"] == "iperf3"
    argv = (tmp_path / "argv").read_text().splitlines()[0].split()
    assert argv[:8] == ["-c", "168.1.194.92", "-p", "5201", "-P", "1", "-t", "10"] and "-J" in argv and "-R" not in argv
    check, values = judge_path_case(out, "storage-dgx01", 2)
    assert check.status == PASS and values == [46234426.367386788 / 8e6] * 2


def test_iperf3_client_asked_for_more_streams_or_failing_is_a_fail(tmp_path):
    fake = _script(tmp_path / "iperf3", f"#!/bin/sh\n{ONE_STREAM}\n")
    out = tmp_path / "a"
    _runner("--phase", "iperf3", "--case", "storage-dgx01", "--out-dir", str(out), "--server", "168.1.194.92",
            "--streams", "4", "--seconds", "10", "--reverse", "1", "--iperf3", str(fake))
    check, _ = judge_path_case(out, "storage-dgx01", 1)
    assert check.status == FAIL and any("streams: asked 4, done 1" in r for r in check.reasons)
    assert any("reverse: asked True, done False" in r for r in check.reasons)
    failing = _script(tmp_path / "iperf3-fails",
                      f"#!/bin/sh\ncat {REAL}/iperf3-error-control-socket-3.6-cloudpilot.json\nexit 1\n")
    out = tmp_path / "b"
    _runner("--phase", "iperf3", "--case", "storage-dgx02", "--out-dir", str(out), "--server", "198.51.100.21",
            "--iperf3", str(failing))
    check, values = judge_path_case(out, "storage-dgx02", 1)
    assert check.status == FAIL and values == [None]
    assert any("exit status 1" in r for r in check.reasons) and any("control socket" in r for r in check.reasons)
    out = tmp_path / "c"
    _runner("--phase", "iperf3", "--case", "storage-dgx03", "--out-dir", str(out), "--server", "198.51.100.21",
            "--iperf3", str(tmp_path / "no-such-iperf3"))
    check, _ = judge_path_case(out, "storage-dgx03", 1)
    assert check.status == FAIL and any("cannot start" in r for r in check.reasons)


def test_a_refused_connection_is_tried_once_more_and_a_server_still_down_fails(tmp_path):
    """A server resetting between tests refuses a client that starts right after the last (the lab's storage-all
    r2, iperf3 3.12): the runner tries once more after a pause and records why; refused twice, the sample fails."""
    refused = REAL / "iperf3-connection-refused-3.12-lab.json"
    flaky = _script(tmp_path / "iperf3-flaky", f"#!/bin/sh\nif [ -e {tmp_path}/once ]; then "
                    f"{ONE_STREAM}; else touch {tmp_path}/once; cat {refused}; fi\n")
    out = tmp_path / "a"
    _runner("--phase", "iperf3", "--case", "storage-dgx01", "--out-dir", str(out), "--server", "168.1.194.92",
            "--streams", "1", "--seconds", "10", "--reverse", "0", "--iperf3", str(flaky))
    sample = json.loads((out / "meta.json").read_text())["samples"][0]
    assert sample["retried_after"] == "unable to connect to server: Connection refused"
    check, values = judge_path_case(out, "storage-dgx01", 1)
    assert check.status == PASS and values == [46234426.367386788 / 8e6]
    down = _script(tmp_path / "iperf3-down", f"#!/bin/sh\ncat {refused}\n")
    out = tmp_path / "b"
    _runner("--phase", "iperf3", "--case", "storage-dgx01", "--out-dir", str(out), "--server", "198.51.100.21",
            "--iperf3", str(down))
    check, values = judge_path_case(out, "storage-dgx01", 1)
    assert check.status == FAIL and values == [None] and any("Connection refused" in r for r in check.reasons)


def test_iperf3_server_start_and_stop_signal_only_the_pid_it_started(tmp_path):
    # a stand-in daemon: the shell running this script is named iperf3 (its comm), as the real server is
    fake = _script(tmp_path / "iperf3", "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -I ] && pidfile=$2; shift; done\n"
                                         "(trap 'exit 0' TERM; while :; do sleep 0.1; done) </dev/null >/dev/null 2>&1 &\n"
                                         "echo $! > \"$pidfile\"\n")
    pidfile = tmp_path / "srv.pid"
    p = _runner("--phase", "iperf3-server-start", "--pidfile", str(pidfile), "--bind", "127.0.0.1", "--port", "5999",
                "--iperf3", str(fake))
    assert p.returncode == 0, p.stderr
    pid = json.loads(p.stdout)["pid"]
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "iperf3"
    again = _runner("--phase", "iperf3-server-start", "--pidfile", str(pidfile), "--port", "5999", "--iperf3", str(fake))
    assert json.loads(again.stdout)["pid"] == pid  # already running: not started twice
    stop = _runner("--phase", "iperf3-server-stop", "--pidfile", str(pidfile))
    assert json.loads(stop.stdout) == {"iperf3_server": "stopped", "pid": pid} and not pidfile.exists()
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the server was not stopped")
    # a pid file naming a process that is not iperf3 is never signalled
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        pidfile.write_text(f"{sleeper.pid}\n")
        stopped = json.loads(_runner("--phase", "iperf3-server-stop", "--pidfile", str(pidfile)).stdout)
        assert stopped["pid"] is None and sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_iperf3_server_stop_when_the_daemon_removes_its_own_pid_file(tmp_path):
    """iperf3 -D -I removes its pid file when SIGTERM ends it: the stop waits for the daemon and does not trip over
    the file being gone (the fresh-clone CI run of 5471648 failed the paths stage on FileNotFoundError)."""
    fake = _script(tmp_path / "iperf3", "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -I ] && pidfile=$2; shift; done\n"
                                         "(trap 'rm -f \"$pidfile\"; sleep 1; exit 0' TERM; while :; do sleep 0.1; done) "
                                         "</dev/null >/dev/null 2>&1 &\necho $! > \"$pidfile\"\n")
    pidfile = tmp_path / "srv.pid"
    p = _runner("--phase", "iperf3-server-start", "--pidfile", str(pidfile), "--port", "5998", "--iperf3", str(fake))
    assert p.returncode == 0, p.stderr
    pid = json.loads(p.stdout)["pid"]
    stop = _runner("--phase", "iperf3-server-stop", "--pidfile", str(pidfile))
    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout) == {"iperf3_server": "stopped", "pid": pid} and not pidfile.exists()
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else "gone"
    assert state in ("gone", "Z"), f"the server still runs after the stop: {state}"


def test_util_sampler_runs_the_command_and_samples_the_cpu(tmp_path):
    out = tmp_path / "util-dgx01.json"
    p = subprocess.run([sys.executable, str(RUNNERS / "util_sampler.py"), "--out", str(out), "--what", "cpu",
                        "--interval", "0.2", "--node", "dgx01", "--", sys.executable, "-c",
                        "import time, sys; time.sleep(1.0); sys.exit(3)"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 3  # the command's exit status
    doc = json.loads(out.read_text())
    assert doc["what"] == "cpu" and doc["command_rc"] == 3 and doc["errors"] == [] and len(doc["samples"]) >= 4
    assert all(s["text"].startswith("cpu ") for s in doc["samples"])


def test_util_sampler_gpu_sampling_failure_is_recorded_and_the_training_runs_on(tmp_path):
    smi = _script(tmp_path / "nvidia-smi", f"#!/bin/sh\ncat {REAL}/nvidia-smi-query-gpu-4gpu.csv\n")
    out = tmp_path / "gpu.json"
    subprocess.run([sys.executable, str(RUNNERS / "util_sampler.py"), "--out", str(out), "--what", "gpu",
                    "--interval", "0.2", "--nvidia-smi", str(smi), "--", sys.executable, "-c",
                    "import time; time.sleep(0.6)"], check=True, timeout=60)
    doc = json.loads(out.read_text())
    assert doc["samples"] and doc["samples"][0]["text"].startswith("index, utilization.gpu [%], memory.used [MiB]")
    broken = _script(tmp_path / "nvidia-smi-broken", "#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    marker = tmp_path / "trained"
    subprocess.run([sys.executable, str(RUNNERS / "util_sampler.py"), "--out", str(out), "--what", "gpu",
                    "--nvidia-smi", str(broken), "--", sys.executable, "-c",
                    f"open({str(marker)!r}, 'w').write('ok')"], check=True, timeout=60, env=dict(os.environ))
    doc = json.loads(out.read_text())
    assert marker.read_text() == "ok" and doc["samples"] == [] and "exited 9" in doc["errors"][0]


def test_one_stop_call_stops_every_server_it_names(tmp_path):
    """The paths stage stops its storage and fabric servers in one remote call (a call costs 1.5-2 s in a TCG VM):
    each --pidfile's server is stopped, one JSON line each; a pid file whose server never started is no error."""
    fake = _script(tmp_path / "iperf3", "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -I ] && pidfile=$2; shift; done\n"
                                         "(trap 'rm -f \"$pidfile\"; exit 0' TERM; while :; do sleep 0.1; done) "
                                         "</dev/null >/dev/null 2>&1 &\necho $! > \"$pidfile\"\n")
    pids = []
    for name, port in (("storage", "5996"), ("fabric", "5997")):
        p = _runner("--phase", "iperf3-server-start", "--pidfile", str(tmp_path / f"{name}.pid"), "--port", port,
                    "--iperf3", str(fake))
        assert p.returncode == 0, p.stderr
        pids.append(json.loads(p.stdout)["pid"])
    stop = _runner("--phase", "iperf3-server-stop", "--pidfile", str(tmp_path / "storage.pid"),
                   "--pidfile", str(tmp_path / "fabric.pid"), "--pidfile", str(tmp_path / "never.pid"))
    assert stop.returncode == 0, stop.stderr
    assert [json.loads(line) for line in stop.stdout.splitlines()] == [
        {"iperf3_server": "stopped", "pid": pids[0]}, {"iperf3_server": "stopped", "pid": pids[1]},
        {"iperf3_server": "stopped", "pid": None}]
    for pid in pids:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() \
            else "gone"
        assert state in ("gone", "Z"), f"server {pid} still runs after the stop: {state}"
    two = _runner("--phase", "iperf3-server-start", "--pidfile", "a", "--pidfile", "b")
    assert two.returncode != 0 and "one --pidfile" in two.stderr
