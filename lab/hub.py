"""The compute-fabric stand-in's shared L2 segment: a UDP hub on 127.0.0.1.

Each DGX VM's cfab0 is a qemu `-netdev socket,udp=127.0.0.1:HUB,localaddr=127.0.0.1:MEMBER`: qemu sends every
Ethernet frame as one datagram to the hub, and the hub repeats it to every other member. Only the declared
member ports are accepted and served, and only on loopback: nothing leaves the machine.

    python -m lab.hub --listen 127.0.0.1:24200 --members 24201,24202
"""

from __future__ import annotations

import argparse
import socket
import sys

MAX_FRAME = 65535


def forward_targets(source_port: int, members: tuple[int, ...]) -> list[int]:
    """Members a frame from source_port goes to (empty when the source is not a member)."""
    if source_port not in members:
        return []
    return [m for m in members if m != source_port]


def serve(host: str, port: int, members: tuple[int, ...]) -> None:
    if host not in ("127.0.0.1", "localhost"):
        raise SystemExit(f"lab.hub: refusing to listen on {host}: the lab's fabric stays on 127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("127.0.0.1", port))
    print(f"lab.hub: 127.0.0.1:{port} members {','.join(map(str, members))}", flush=True)
    while True:
        data, (addr, src) = sock.recvfrom(MAX_FRAME)
        if addr != "127.0.0.1":
            continue
        for m in forward_targets(src, members):
            try:
                sock.sendto(data, ("127.0.0.1", m))
            except OSError:
                # A member VM that is down drops its frames, like an unplugged port.
                continue


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.hub", description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True, help="127.0.0.1:PORT")
    p.add_argument("--members", required=True, help="comma-separated member UDP ports on 127.0.0.1")
    a = p.parse_args(argv)
    host, _, port = a.listen.rpartition(":")
    serve(host, int(port), tuple(int(m) for m in a.members.split(",") if m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
