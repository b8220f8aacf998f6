"""The lab's host-side plumbing, for real on loopback: the compute-fabric UDP hub and the registry relay."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _udp(port: int = 0) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    s.settimeout(5)
    return s


def _free_udp_port() -> int:
    with _udp() as s:
        return s.getsockname()[1]


def test_hub_repeats_frames_to_the_other_members_only():
    a, b, c, stranger = _udp(), _udp(), _udp(), _udp()
    members = [s.getsockname()[1] for s in (a, b, c)]
    hub_port = _free_udp_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab.hub", "--listen", f"127.0.0.1:{hub_port}", "--members", ",".join(map(str, members))],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert "members" in proc.stdout.readline()
        frame = b"\xff" * 6 + bytes(range(256)) * 35  # a jumbo-sized Ethernet frame
        a.sendto(frame, ("127.0.0.1", hub_port))
        assert b.recvfrom(65535)[0] == frame
        assert c.recvfrom(65535)[0] == frame
        stranger.sendto(b"not a member", ("127.0.0.1", hub_port))
        b.sendto(b"from b", ("127.0.0.1", hub_port))
        assert a.recvfrom(65535)[0] == b"from b"  # the stranger's datagram was dropped, b's came through
        a.settimeout(0.5)
        try:
            extra = a.recvfrom(65535)[0]
        except TimeoutError:
            extra = None
        assert extra is None, "the hub echoed a frame back to its sender or forwarded a non-member"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for s in (a, b, c, stranger):
            s.close()


def test_hub_refuses_a_non_loopback_address():
    proc = subprocess.run(
        [sys.executable, "-m", "lab.hub", "--listen", "0.0.0.0:24999", "--members", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )
    assert proc.returncode != 0 and "127.0.0.1" in proc.stderr


def test_relay_carries_a_connection_both_ways():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            data = b""
            while not data.endswith(b"\n"):
                data += conn.recv(4096)
            conn.sendall(b"echo:" + data)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "lab" / "relay.py"), "127.0.0.1", str(port)],
        input=b"GET /v2/\n", capture_output=True, timeout=30,
    )
    server.close()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"echo:GET /v2/\n"


def test_relay_refuses_other_targets_and_reports_a_closed_port():
    assert subprocess.run([sys.executable, str(ROOT / "lab" / "relay.py"), "10.0.0.1", "80"], capture_output=True).returncode == 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    proc = subprocess.run([sys.executable, str(ROOT / "lab" / "relay.py"), "127.0.0.1", str(closed)], capture_output=True, input=b"")
    assert proc.returncode == 1 and b"relay: 127.0.0.1" in proc.stderr
