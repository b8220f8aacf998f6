"""python -m lab up | down | status [--json] | ssh NODE [CMD...] | console NODE | restart NAME | build

Environment (each also a flag where it makes sense):
  LAB_RUN_DIR        run dir (default lab/.run): keys, pki, secrets, disks, consoles, pids, state
  LAB_CACHE_DIR      image cache (default ~/.cache/powerscale-dgx-ra/lab)
  LAB_PORT_OFFSET    added to every 127.0.0.1 port the VMs use (SSH, forwards, cables, hub), for a second lab
  LAB_DGX_COUNT      DGX VMs (1..4), overrides dgx.count of lab/topology.yml
  LAB_ACCEL          kvm | tcg; unset: a KVM probe boot decides
  LAB_NO_HOST_SERVICES=1   do not start the host services of topology.yml (while they are developed)
  LAB_BOOT_TIMEOUT   seconds to wait for SSH (default 900 under TCG, 300 under KVM)
  LAB_MISWIRE=dgx01,dgx02  `up` cables those two DGX VMs' storage NICs to each other's switch port, on purpose:
                     the inventory keeps its design and the cabling stage must stop the run (docs/cabling.md)
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import sys
import termios
import time
import tty
from pathlib import Path

from lab import images
from lab.lifecycle import Lab, LabError, LabOptions, default_run_dir, tail
from lab.qemu import vm_files
from lab.topology import DEFAULT_TOPOLOGY, TopologyError, load_topology


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"lab: {name}={value!r} is not an integer") from None


def make_lab(args: argparse.Namespace, *, for_up: bool = False) -> Lab:
    run_dir = Path(args.run_dir).resolve() if args.run_dir else default_run_dir()
    state_path = run_dir / "state.json"
    state = json.loads(state_path.read_text()) if state_path.is_file() else {}
    dgx = getattr(args, "dgx", None)
    if dgx is None:
        dgx = _env_int("LAB_DGX_COUNT")
    if dgx is None and not for_up:
        dgx = state.get("dgx_count")
    offset = _env_int("LAB_PORT_OFFSET")
    if offset is None:
        offset = state.get("port_offset", 0) if not for_up or state else 0
    miswire_text = os.environ.get("LAB_MISWIRE", "") if for_up else state.get("miswire", "")
    miswire = tuple(m.strip() for m in miswire_text.split(",")) if miswire_text else None
    if miswire is not None and len(miswire) != 2:
        raise SystemExit(f"lab: LAB_MISWIRE={miswire_text!r}: name two DGX VMs, e.g. LAB_MISWIRE=dgx01,dgx02")
    topo = load_topology(Path(args.topology), dgx_count=dgx, port_offset=offset,
                         miswire=(miswire[0], miswire[1]) if miswire else None)
    no_services = getattr(args, "no_host_services", False) or os.environ.get("LAB_NO_HOST_SERVICES", "") not in ("", "0")
    timeout = getattr(args, "timeout", None) or _env_int("LAB_BOOT_TIMEOUT")
    opts = LabOptions(
        run_dir=run_dir,
        cache_dir=images.default_cache_dir(),
        accel=getattr(args, "accel", None) or os.environ.get("LAB_ACCEL") or None,
        host_services=not no_services,
        boot_timeout_s=float(timeout) if timeout else None,
        keep_disks=getattr(args, "keep_disks", False),
    )
    return Lab(topo, opts, log=lambda m: print(m, flush=True))


def print_status(status: dict) -> None:
    print(f"run dir {status['run_dir']}  accel {status['accel'] or '-'}  dgx {status['dgx_count']}  port offset {status['port_offset']}")
    print(f"{'node':14} {'role':8} {'state':8} {'ssh':16} {'reachable':9} addresses")
    for n in status["nodes"]:
        addrs = " ".join(f"{k}={v}" for k, v in n["addresses"].items())
        print(f"{n['name']:14} {n['role']:8} {n['state']:8} 127.0.0.1:{n['ssh_port']:<6} {('yes' if n['reachable'] else 'no'):9} {addrs}")
    for s in status["host_services"]:
        print(f"service {s['name']:14} {s['state']:8} ports {','.join(map(str, s['ports']))} listening={'yes' if s['listening'] else 'no'}")
    hub = status["compute_fabric_hub"]
    if hub["port"]:
        print(f"compute-fabric hub udp 127.0.0.1:{hub['port']} {hub['state']}")


def attach_console(sock_path: Path, log_path: Path) -> int:
    """Interactive serial console over the VM's console socket; Ctrl-] leaves."""
    if not sys.stdin.isatty():
        print(tail(log_path, 100))
        return 0
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(sock_path))
    except OSError as exc:
        raise LabError(f"console socket {sock_path}: {exc} (is the VM running?)") from exc
    print(f"connected to {sock_path}; Ctrl-] leaves (press Enter for a prompt)", flush=True)
    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        while True:
            ready, _, _ = select.select([fd, s], [], [])
            if fd in ready:
                data = os.read(fd, 1024)
                if not data or b"\x1d" in data:
                    break
                s.sendall(data)
            if s in ready:
                data = s.recv(4096)
                if not data:
                    break
                os.write(sys.stdout.fileno(), data)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)
        s.close()
    print()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab", description="The local lab: qemu VMs + host-side simulators.",
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--topology", default=str(DEFAULT_TOPOLOGY), help="topology file (default lab/topology.yml)")
    p.add_argument("--run-dir", help="run dir (default $LAB_RUN_DIR or lab/.run)")
    sub = p.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="build images if needed, start VMs and host services, wait for SSH (idempotent)")
    up.add_argument("--dgx", type=int, help="number of DGX VMs (1..4), overrides topology.yml for this run")
    up.add_argument("--accel", choices=("kvm", "tcg"), help="skip the KVM probe")
    up.add_argument("--no-host-services", action="store_true", help="do not start the host services")
    up.add_argument("--timeout", type=int, help="seconds to wait for SSH")
    down = sub.add_parser("down", help="stop every VM and host service this lab started (by pid); keeps the image cache")
    down.add_argument("--keep-disks", action="store_true", help="keep the VMs' overlay disks for the next up")
    st = sub.add_parser("status", help="nodes, state, SSH port, addresses, accel, reachability")
    st.add_argument("--json", action="store_true")
    st.add_argument("--no-ssh", action="store_true", help="skip the SSH reachability check")
    ssh = sub.add_parser("ssh", help="SSH to a node as root (extra arguments: a command)")
    ssh.add_argument("node")
    ssh.add_argument("command", nargs=argparse.REMAINDER)
    con = sub.add_parser("console", help="attach to a node's serial console (Ctrl-] leaves); --log prints the log")
    con.add_argument("node")
    con.add_argument("--log", action="store_true", help="print the console log's tail instead of attaching")
    rs = sub.add_parser("restart", help="restart a host service, or push lab/onefs_sim into powerscale01 (onefs-sim)")
    rs.add_argument("name")
    bd = sub.add_parser("build", help="build (or verify the cache of) the images and print the time it took")
    bd.add_argument("--prune", action="store_true", help="also remove cached images the current recipe does not use")
    args = p.parse_args(argv)

    try:
        if args.cmd == "build":
            topo = load_topology(Path(args.topology))
            t0 = time.monotonic()
            built = images.build_all(images.default_cache_dir(), images.Recipe(), topo.images(), lambda m: print(m, flush=True))
            for role, img in built.items():
                print(f"{role}: {img.directory}")
            print(f"images ready in {time.monotonic() - t0:.1f} s")
            if args.prune:
                images.prune(images.default_cache_dir(), images.Recipe(), lambda m: print(m, flush=True))
            return 0
        lab = make_lab(args, for_up=args.cmd == "up")
        if args.cmd == "up":
            lab.up()
            print_status(lab.status())
            return 0
        if args.cmd == "down":
            lab.down()
            print("lab: down")
            return 0
        if args.cmd == "status":
            status = lab.status(check_ssh=not args.no_ssh)
            if args.json:
                print(json.dumps(status, indent=2))
            else:
                print_status(status)
            return 0
        if args.cmd == "restart":
            lab.restart(args.name)
            return 0
        if args.cmd == "ssh":
            node = lab.topo.node(args.node)
            cmd = [*lab.ssh_argv(node, batch=False), *args.command]
            os.execvp(cmd[0], cmd)
        if args.cmd == "console":
            node = lab.topo.node(args.node)
            files = vm_files(lab.run_dir, node)
            if args.log:
                print(tail(files.console_log, 200))
                return 0
            return attach_console(files.console_sock, files.console_log)
    except KeyError as exc:
        print(f"lab: error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 1
    except (LabError, TopologyError, images.BuildError) as exc:
        print(f"lab: error: {exc}", file=sys.stderr)
        return 1
    return 0
