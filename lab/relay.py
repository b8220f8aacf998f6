"""qemu guestfwd helper: relays one guest connection (stdin/stdout) to a TCP port on 127.0.0.1.

qemu runs it per connection (`guestfwd=tcp:10.0.2.100:15000-cmd:python3 relay.py 127.0.0.1 15000`), so the
VMs reach the host's registry as registry.lab:15000 without any route off the machine. Standalone on
purpose (stdlib only, no package import): qemu -daemonize runs it from /.
"""

from __future__ import annotations

import os
import selectors
import socket
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("127.0.0.1", "localhost"):
        print("usage: relay.py 127.0.0.1 PORT (loopback targets only)", file=sys.stderr)
        return 2
    try:
        conn = socket.create_connection(("127.0.0.1", int(argv[2])), timeout=10)
    except OSError as exc:
        print(f"relay: 127.0.0.1:{argv[2]}: {exc}", file=sys.stderr)
        return 1
    conn.settimeout(None)
    sel = selectors.DefaultSelector()
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    sel.register(stdin, selectors.EVENT_READ, "in")
    sel.register(conn, selectors.EVENT_READ, "sock")
    open_ends = 2
    while open_ends:
        for key, _ in sel.select():
            if key.data == "in":
                data = os.read(stdin, 65536)
                if not data:
                    sel.unregister(stdin)
                    conn.shutdown(socket.SHUT_WR)
                    open_ends -= 1
                else:
                    conn.sendall(data)
            else:
                data = conn.recv(65536)
                if not data:
                    sel.unregister(conn)
                    open_ends -= 1
                    os.close(stdout)
                    return 0
                view = memoryview(data)
                while view:
                    view = view[os.write(stdout, view):]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
