"""Fast tests of the lab's lifecycle logic that need no VM: pid records, host service checks, boot failure reports."""

from __future__ import annotations

import copy
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from lab import lifecycle
from lab.lifecycle import Lab, LabError, LabOptions, ProcRecord, load_process, record_process, stop_process
from lab.topology import DEFAULT_TOPOLOGY, build_topology

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load(DEFAULT_TOPOLOGY.read_text())
INVENTORY = yaml.safe_load((ROOT / "inventories/lab/hosts.yml").read_text())


def make_lab(tmp_path: Path, spec: dict | None = None, **kw) -> Lab:
    topo = build_topology(copy.deepcopy(spec or SPEC), copy.deepcopy(INVENTORY), dgx_count=kw.pop("dgx_count", 1))
    opts = LabOptions(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache", **kw)
    return Lab(topo, opts, log=lambda m: None)


def test_process_records_survive_only_their_own_process(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        rec = record_process(tmp_path, "svc-x", proc.pid, "service")
        assert load_process(tmp_path, "svc-x") == rec and rec.alive()
        # Same pid, other start time: a recycled pid is not ours and is never signalled.
        assert not ProcRecord("svc-x", proc.pid, rec.start + 1, "service").alive()
        assert stop_process(rec, group=True, timeout_s=5)
        proc.wait(timeout=5)
        assert not rec.alive()
        assert not stop_process(rec, group=True)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_missing_host_service_module_is_named(tmp_path):
    spec = copy.deepcopy(SPEC)
    spec["host_services"].append({"name": "fake", "module": "lab.no_such_sim", "argv": ["{python}", "-m", "lab.no_such_sim"], "ports": [19999]})
    lab = make_lab(tmp_path, spec)
    with pytest.raises(LabError, match=r"fake \(module lab.no_such_sim\).*--no-host-services"):
        lab.check_host_service_modules()
    make_lab(tmp_path, spec, host_services=False).check_host_service_modules()


def test_host_service_that_dies_fails_with_its_log(tmp_path):
    spec = copy.deepcopy(SPEC)
    spec["host_services"] = [{"name": "crashy", "argv": ["{python}", "-c", "import sys; print('bad config'); sys.exit(3)"], "ports": [19998]}]
    lab = make_lab(tmp_path, spec)
    (lab.run_dir / "services").mkdir(parents=True)
    with pytest.raises(LabError, match=r"(?s)crashy exited 3.*bad config"):
        lab.start_host_service(lab.topo.host_services[0], timeout_s=10)


def test_vm_that_dies_during_boot_is_reported_with_its_console_tail(tmp_path, monkeypatch):
    lab = make_lab(tmp_path)
    console = lab.run_dir / "console"
    console.mkdir(parents=True)
    (console / "dgx01.log").write_text("Loading, please wait...\n\x1b[0;31mKernel panic - not syncing: VFS: Unable to mount root fs\n")
    monkeypatch.setattr(Lab, "vm_running", lambda self, node: node.name != "dgx01")
    monkeypatch.setattr(Lab, "ssh_ok", lambda self, node, timeout_s=20.0: False)
    with pytest.raises(LabError) as err:
        lab.wait_for_ssh(list(lab.topo.nodes), timeout_s=60, t_start=0)
    text = str(err.value)
    assert "dgx01: its qemu process exited during boot" in text
    assert "Kernel panic - not syncing: VFS: Unable to mount root fs" in text and "\x1b" not in text


def test_boot_timeout_names_every_node_still_waiting(tmp_path, monkeypatch):
    lab = make_lab(tmp_path)
    monkeypatch.setattr(Lab, "vm_running", lambda self, node: True)
    monkeypatch.setattr(Lab, "ssh_ok", lambda self, node, timeout_s=20.0: node.name == "sn3700v01")
    monkeypatch.setattr(lifecycle.time, "sleep", lambda s: None)
    with pytest.raises(LabError) as err:
        lab.wait_for_ssh([], timeout_s=0, t_start=lifecycle.time.monotonic() - 1)
    assert "dgx01: no SSH after 0 s" in str(err.value) and "powerscale01: no SSH" in str(err.value)
    assert "sn3700v01: no SSH" not in str(err.value)


def test_a_running_lab_is_not_reshaped(tmp_path, monkeypatch):
    lab = make_lab(tmp_path, dgx_count=1)
    lab.run_dir.mkdir(parents=True)
    (lab.run_dir / "state.json").write_text(json.dumps({"dgx_count": 2, "port_offset": 0}))
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record_process(lab.run_dir, "vm-dgx02", proc.pid, "vm")
        with pytest.raises(LabError, match=r"(?s)running with 2 DGX.*asks for 1 DGX.*lab down"):
            lab.check_same_shape()
    finally:
        proc.kill()
        proc.wait()
    lab.check_same_shape()  # nothing running any more: a new shape is fine


def test_tail_strips_terminal_escapes(tmp_path):
    log = tmp_path / "c.log"
    log.write_text("a\r\n\x1b[0;32m  OK  \x1b[0m] Started ssh\n")
    assert lifecycle.tail(log) == "a\n  OK  ] Started ssh"
    assert "does not exist" in lifecycle.tail(tmp_path / "nope.log")


def test_cli_status_json_of_a_lab_that_is_not_up(tmp_path, capsys, monkeypatch):
    from lab import cli

    monkeypatch.setenv("LAB_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("LAB_PORT_OFFSET", raising=False)
    monkeypatch.delenv("LAB_DGX_COUNT", raising=False)
    assert cli.main(["status", "--json", "--no-ssh"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [n["name"] for n in status["nodes"]] == ["dgx01", "dgx02", "sn3700v01", "powerscale01"]
    assert all(n["state"] == "stopped" and n["reachable"] is False for n in status["nodes"])
    assert status["all_reachable"] is False
    assert cli.main(["ssh", "nosuch"]) == 1
    assert "no node 'nosuch'" in capsys.readouterr().err
    monkeypatch.setenv("LAB_DGX_COUNT", "9")
    assert cli.main(["status", "--no-ssh"]) == 1
    assert "9 is not an integer in 1..4" in capsys.readouterr().err


def _one_shot_server(answer: bytes | None) -> tuple[socket.socket, threading.Thread]:
    """A listener on 127.0.0.1 that answers its first connection with `answer`, or holds it silent (None)."""
    srv = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            if answer is not None:
                conn.sendall(answer)
            time.sleep(1.5)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return srv, thread


def test_ssh_banner_is_sshd_answering_not_a_port_accepting():
    """qemu's user network accepts a forwarded port before the guest answers: only sshd's banner counts as up."""
    srv, thread = _one_shot_server(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")
    with srv:
        assert lifecycle.ssh_banner(srv.getsockname()[1], 1.0) is True
        thread.join()
    srv, thread = _one_shot_server(None)  # accepted, never answered: a guest whose NIC is not up yet
    with srv:
        started = time.monotonic()
        assert lifecycle.ssh_banner(srv.getsockname()[1], 0.5) is False
        assert time.monotonic() - started < 1.4, "a silent connection is dropped at the banner timeout"
        thread.join()
    srv, thread = _one_shot_server(b"HTTP/1.1 400 Bad Request\r\n")
    with srv:
        assert lifecycle.ssh_banner(srv.getsockname()[1], 1.0) is False
        thread.join()
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    assert lifecycle.ssh_banner(port, 0.5) is False
