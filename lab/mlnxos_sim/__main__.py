"""Entry point: python -m lab.mlnxos_sim (arguments of lab/LAB_CONTRACT: name, ports, state, TLS, password file)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from .api import ApiServer
from .cli import CliServer
from .switch import FACTORY_PROFILE, RELEASES, SPLIT_READY_PROFILE, Switch


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m lab.mlnxos_sim", description=__doc__)
    parser.add_argument("--name", required=True, help="switch name (inventory hostname)")
    parser.add_argument("--listen", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--https-port", type=int, required=True)
    parser.add_argument("--ssh-port", type=int, required=True)
    parser.add_argument("--state", type=Path, required=True, help="JSON state file (created if missing)")
    parser.add_argument("--cert", required=True, help="PEM server certificate (chain)")
    parser.add_argument("--key", required=True, help="PEM private key")
    parser.add_argument("--password-file", type=Path, required=True, help="file holding the admin password")
    parser.add_argument("--user", default="admin", help="management user (default admin)")
    parser.add_argument("--subnet-file", type=Path, help="shared SM election file (default: ib-subnet.json "
                        "next to the state file)")
    parser.add_argument("--faults", type=Path, help="test hooks file (default: STATE with .faults.json)")
    parser.add_argument("--log", type=Path, help="command log, JSON lines (default: STATE with .log)")
    parser.add_argument("--host-key", type=Path, help="SSH host key (default: STATE with .ssh_host_key)")
    parser.add_argument("--release", choices=sorted(RELEASES), default="3.9",
                        help="MLNX-OS release profile to model (default 3.9)")
    parser.add_argument("--system-profile", choices=[FACTORY_PROFILE, SPLIT_READY_PROFILE], default=FACTORY_PROFILE,
                        help="system profile of a factory-new switch (no state file yet); default ib")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    password = args.password_file.read_text().strip("\r\n")
    if not password:
        print(f"mlnxos_sim: {args.password_file} is empty", file=sys.stderr)
        return 2
    switch = Switch(args.name, args.state, args.subnet_file, args.faults, args.log, args.release,
                    args.system_profile)
    api = ApiServer((args.listen, args.https_port), switch, args.user, password, args.cert, args.key)
    cli = CliServer((args.listen, args.ssh_port), switch, args.user, password,
                    args.host_key or args.state.with_suffix(".ssh_host_key"))
    stop = threading.Event()

    def _stop(*_: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    threads = [threading.Thread(target=api.serve_forever, daemon=True),
               threading.Thread(target=cli.serve_forever, daemon=True)]
    for thread in threads:
        thread.start()
    print(f"mlnxos_sim {args.name}: https://{args.listen}:{args.https_port} ssh {args.listen}:{args.ssh_port} "
          f"state {args.state}", flush=True)
    stop.wait()
    # Close the listening sockets and leave: the daemon threads end with the process (a shutdown() of the HTTP
    # server would wait for its poll interval for nothing).
    api.server_close()
    cli.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
