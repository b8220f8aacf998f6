"""python -m lab.nvue_sim --listen 127.0.0.1:8765 --cert C --key K --password-file P --state S [...]"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from .model import Switch
from .releases import DEFAULT, PROFILES
from .server import serve


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m lab.nvue_sim", description=__doc__)
    parser.add_argument("--listen", default="127.0.0.1:8765", help="HOST:PORT (port 0 picks a free one)")
    parser.add_argument("--cert", required=True, help="server certificate (PEM)")
    parser.add_argument("--key", required=True, help="server key (PEM)")
    parser.add_argument("--user", default="cumulus")
    parser.add_argument("--password-file", required=True)
    parser.add_argument("--state", required=True, help="JSON file that keeps the switch's state across restarts")
    parser.add_argument("--hostname", default="sn3700v")
    parser.add_argument("--ports", type=int, default=32, help="front-panel ports swp1..swpN")
    parser.add_argument("--down-ports", default="", help="comma-separated ports whose link stays down")
    parser.add_argument("--apply-delay", type=float, default=0.3, help="seconds a revision spends in 'apply'")
    parser.add_argument("--mlag-peer-priority", type=int, default=32768)
    parser.add_argument("--mlag-peer-dead", action="store_true", help="the MLAG peer never answers")
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--release", default=DEFAULT, choices=sorted(PROFILES),
                        help="the Cumulus Linux release to model (lab/nvue_sim/releases.py)")
    parser.add_argument("--files-edited", action="store_true",
                        help="the interfaces/FRR files were changed outside NVUE: the next apply prompts (takeover)")
    parser.add_argument("--default-password", action="store_true",
                        help="the cumulus password was never changed (5.6+ answers 403)")
    return parser.parse_args(argv)


def _stop(*_args: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"refusing to listen on {host}: the simulator serves loopback only", file=sys.stderr)
        return 2
    password = Path(args.password_file).read_text().strip()
    switch = Switch(
        state_path=args.state,
        hostname=args.hostname,
        ports=args.ports,
        down_ports={p for p in args.down_ports.split(",") if p},
        apply_delay=args.apply_delay,
        mlag_peer_alive=not args.mlag_peer_dead,
        mlag_peer_priority=args.mlag_peer_priority,
        user=args.user,
        release=args.release,
        files_edited=args.files_edited,
        default_password=args.default_password,
    )
    server = serve(switch, host, int(port), args.cert, args.key, args.user, password)
    bound = server.server_address[1]
    if args.port_file:
        Path(args.port_file).write_text(f"{bound}\n")
    print(f"nvue-sim {args.hostname} (Cumulus Linux {switch.profile.release}) listening on https://{host}:{bound}/nvue_v1",
          flush=True)
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
