"""Lab lifecycle: up (idempotent), down (by pid), status; processes, disks and state under the run dir.

Run dir (LAB_RUN_DIR, default lab/.run):
  ssh/ pki/ secrets/           credentials (pki.py), kept across up/down
  disks/<vm>.qcow2             copy-on-write overlay on the role image (+ -config.tar, -data.raw)
  console/<vm>.log .sock       serial console log and socket (python -m lab console VM)
  pids/<name>.json             every process `up` started: pid + kernel start time (guards against pid reuse)
  services/<name>.log          host services' output
  state.json                   what `up` brought up (dgx count, port offset, accel, nodes)
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from lab import ib_standin, images, pki, qemu, vmconfig
from lab.topology import HostService, Node, Topology

ROOT = Path(__file__).resolve().parent.parent
Log = Callable[[str], None]


class LabError(RuntimeError):
    pass


def default_run_dir() -> Path:
    env = os.environ.get("LAB_RUN_DIR")
    return Path(env).expanduser().resolve() if env else ROOT / "lab" / ".run"


# ---------------------------------------------------------------- processes


def _proc_start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name (which may contain spaces): state is field 3, starttime field 22.
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        # A zombie has exited; reap it if it is our child (a service restarted by this same process).
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return None
    return int(fields[19])


@dataclass(frozen=True)
class ProcRecord:
    name: str
    pid: int
    start: int
    kind: str  # vm | service | hub

    def alive(self) -> bool:
        return _proc_start_time(self.pid) == self.start


def _pid_path(run_dir: Path, name: str) -> Path:
    return run_dir / "pids" / f"{name}.json"


def record_process(run_dir: Path, name: str, pid: int, kind: str) -> ProcRecord:
    start = _proc_start_time(pid)
    if start is None:
        raise LabError(f"{name}: process {pid} exited right after it started")
    rec = ProcRecord(name, pid, start, kind)
    path = _pid_path(run_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec.__dict__) + "\n")
    return rec


def load_process(run_dir: Path, name: str) -> ProcRecord | None:
    path = _pid_path(run_dir, name)
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return ProcRecord(data["name"], int(data["pid"]), int(data["start"]), data["kind"])


def stop_process(rec: ProcRecord, *, group: bool, timeout_s: float = 15.0) -> bool:
    """SIGTERM (its process group for host services), then SIGKILL; True if it was running."""
    if not rec.alive():
        return False
    with contextlib.suppress(ProcessLookupError):
        if group:
            os.killpg(rec.pid, signal.SIGTERM)
        else:
            os.kill(rec.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while rec.alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    if rec.alive():
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(rec.pid, signal.SIGKILL)
            else:
                os.kill(rec.pid, signal.SIGKILL)
        while rec.alive() and time.monotonic() < deadline + 5:
            time.sleep(0.1)
    return True


def lab_qemu_pids(run_dir: Path) -> list[int]:
    """qemu processes whose command line points into this run dir (ours, whatever the pid files say)."""
    marker = str(run_dir) + "/"
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"qemu-system-x86_64") and any(marker.encode() in a for a in argv):
            pids.append(int(entry.name))
    return sorted(pids)


def port_free(port: int, udp: bool = False) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
    try:
        if not udp:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def port_open(port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def ssh_banner(port: int, timeout_s: float = 3.0) -> bool:
    """True when 127.0.0.1:port answers with an SSH identification line within timeout_s.

    qemu's user network accepts the host side of a forwarded port at once, whatever the guest does; while the guest's
    NIC is not up yet its SYNs go unanswered and back off, so an ssh started then waits out its whole timeout even
    after sshd listens (the lab's boots lost 20-30 s of every 60-90 to such attempts). A fresh connection every few
    seconds sees sshd's banner as soon as it is there."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as conn:
            conn.settimeout(timeout_s)
            return conn.recv(8).startswith(b"SSH-")
    except OSError:
        return False


def tail(path: Path, lines: int = 30) -> str:
    if not path.is_file():
        return f"({path} does not exist)"
    text = path.read_bytes()[-200_000:].decode(errors="replace").replace("\r", "")
    # Drop terminal escape sequences of systemd's status output so the tail is readable in a report.
    import re

    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)
    return "\n".join(text.splitlines()[-lines:])


def substitute(argv: tuple[str, ...], *, python: str, run_dir: Path, root: Path) -> list[str]:
    return [a.replace("{python}", python).replace("{run_dir}", str(run_dir)).replace("{root}", str(root)) for a in argv]


# ---------------------------------------------------------------- the lab


@dataclass
class LabOptions:
    run_dir: Path
    cache_dir: Path
    accel: str | None = None
    host_services: bool = True
    boot_timeout_s: float | None = None
    keep_disks: bool = False


class Lab:
    def __init__(self, topo: Topology, opts: LabOptions, log: Log = print, recipe: images.Recipe | None = None):
        self.topo = topo
        self.opts = opts
        self.run_dir = opts.run_dir
        self.log = log
        self.recipe = recipe or images.Recipe()
        self._ib_plan: str | None = None

    # -- helpers
    @property
    def state_path(self) -> Path:
        return self.run_dir / "state.json"

    def state(self) -> dict:
        return json.loads(self.state_path.read_text()) if self.state_path.is_file() else {}

    def creds(self) -> pki.Credentials:
        return pki.ensure_credentials(self.run_dir, [n.name for n in self.topo.nodes])

    def ssh_argv(self, node: Node, *, batch: bool = True, connect_timeout: int = 10) -> list[str]:
        c = pki.Credentials(
            self.run_dir / "ssh/id_ed25519", self.run_dir / "ssh/known_hosts", self.run_dir / "pki/ca.pem",
            self.run_dir / "pki", self.run_dir / "secrets",
        )
        argv = [
            "ssh", "-i", str(c.ssh_key), "-p", str(node.ssh_port),
            "-o", f"UserKnownHostsFile={c.known_hosts}", "-o", "StrictHostKeyChecking=yes",
            "-o", f"ConnectTimeout={connect_timeout}", "-o", "LogLevel=ERROR",
        ]
        if batch:
            argv += ["-o", "BatchMode=yes"]
        return [*argv, "root@127.0.0.1"]

    def ssh_ok(self, node: Node, timeout_s: float = 20.0) -> bool:
        """The node's sshd answers (its banner, within a few seconds) and takes the lab's key within timeout_s."""
        if not ssh_banner(node.ssh_port, min(3.0, timeout_s)):
            return False
        try:
            proc = subprocess.run(
                [*self.ssh_argv(node, connect_timeout=int(timeout_s)), "true"],
                capture_output=True, timeout=timeout_s + 5, stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return False
        return proc.returncode == 0

    def vm_record(self, node: Node) -> ProcRecord | None:
        return load_process(self.run_dir, f"vm-{node.name}")

    def vm_running(self, node: Node) -> bool:
        rec = self.vm_record(node)
        return rec is not None and rec.alive()

    # -- up
    def up(self) -> dict:
        t0 = time.monotonic()
        for d in ("disks", "console", "pids", "monitor", "services", "mlnxos"):
            (self.run_dir / d).mkdir(parents=True, exist_ok=True)
        self.run_dir.chmod(0o700)
        ok, why = qemu.qemu_usable()
        if not ok:
            raise LabError(f"qemu cannot run here: {why}")
        self.check_host_service_modules()
        self.check_same_shape()
        self.log(f"lab: run dir {self.run_dir}; nodes {', '.join(n.name for n in self.topo.nodes)}")
        for note in self.topo.notes:
            self.log(f"lab: note: {note}")
        creds = self.creds()
        ports = {n.name: n.ssh_port for n in self.topo.nodes}
        creds.known_hosts.write_text(pki.known_hosts_lines(creds, ports))

        tb = time.monotonic()
        imgs = images.build_all(self.opts.cache_dir, self.recipe, self.topo.images(), self.log)
        build_s = time.monotonic() - tb
        self.log(f"lab: images ready ({', '.join(f'{k}-{v.key}' for k, v in imgs.items())}) in {build_s:.0f} s")

        probe_img = imgs[self.topo.images()[0]]
        choice = qemu.choose_accel(probe_img.kernel, probe_img.initrd, self.run_dir, self.opts.accel)
        self.log(f"lab: accel {choice.accel}: {choice.reason}")
        boot_timeout = self.opts.boot_timeout_s or (300.0 if choice.accel == "kvm" else 900.0)

        state = self.state()
        if state.get("accel") and state["accel"] != choice.accel and any(self.vm_running(n) for n in self.topo.nodes):
            self.log(f"lab: note: running VMs use {state['accel']}; they keep it until `down`")

        self.start_hub()
        started: list[Node] = []
        restarted_switch = False
        for node in self.topo.start_order():
            if self.vm_running(node):
                if restarted_switch and any(n.kind == "connect" for n in node.nics):
                    self.log(f"lab: {node.name}: its switch restarted, so its cables are dead: restarting it")
                    stop_process(self.vm_record(node), group=False)  # type: ignore[arg-type]
                else:
                    self.log(f"lab: {node.name}: already running (pid {self.vm_record(node).pid})")  # type: ignore[union-attr]
                    continue
            self.start_vm(node, imgs[node.image], choice.accel, creds)
            started.append(node)
            restarted_switch = restarted_switch or node.listens
        self.start_host_services()
        state = {
            "dgx_count": self.topo.dgx_count,
            "port_offset": self.topo.port_offset,
            "miswire": self.topo.miswire,
            "accel": choice.accel,
            "accel_reason": choice.reason,
            "images": {k: str(v.directory) for k, v in imgs.items()},
            "host_services": self.opts.host_services,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self.state_path.write_text(json.dumps(state, indent=2) + "\n")
        t_boot = time.monotonic()
        boot = self.wait_for_ssh(started, boot_timeout, t_start=t_boot)
        state["build_s"] = round(build_s, 1)
        state["boot_s"] = boot
        state["ready_s"], state["degraded"] = self.wait_for_boot_complete(boot_timeout, t_start=t_boot)
        state["up_s"] = round(time.monotonic() - t0, 1)
        self.state_path.write_text(json.dumps(state, indent=2) + "\n")
        self.log(f"lab: up in {state['up_s']:.0f} s ({choice.accel}); `python -m lab status` lists the nodes")
        return state

    def check_same_shape(self) -> None:
        """A running lab is only completed, never reshaped: the switch VM's ports are fixed at its start."""
        names = {n.name for n in self.topo.nodes}
        pid_dir = self.run_dir / "pids"
        running = sorted(
            rec.name.removeprefix("vm-")
            for rec in (load_process(self.run_dir, p.stem) for p in sorted(pid_dir.glob("vm-*.json")))
            if rec is not None and rec.alive()
        ) if pid_dir.is_dir() else []
        extra = [n for n in running if n not in names]
        state = self.state()
        shape = (state.get("dgx_count"), state.get("port_offset"), state.get("miswire", ""))
        if extra or (running and state and shape != (self.topo.dgx_count, self.topo.port_offset, self.topo.miswire)):
            raise LabError(
                f"the lab in {self.run_dir} is running with {state.get('dgx_count')} DGX, port offset "
                f"{state.get('port_offset')} and miswire {state.get('miswire') or 'none'} (VMs: {', '.join(running)}); "
                f"this `up` asks for {self.topo.dgx_count} DGX, offset {self.topo.port_offset}, miswire "
                f"{self.topo.miswire or 'none'}. Run `python -m lab down` first, or use another LAB_RUN_DIR"
            )

    def check_host_service_modules(self) -> None:
        if not self.opts.host_services:
            return
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        missing = []
        for s in self.topo.host_services:
            if s.module and importlib.util.find_spec(s.module) is None:
                missing.append(f"{s.name} (module {s.module})")
        if missing:
            raise LabError(
                "host services declared in lab/topology.yml have no code yet: " + ", ".join(missing)
                + ". Run `python -m lab up --no-host-services` (or LAB_NO_HOST_SERVICES=1) until they exist."
            )

    def _check_ports(self, owner: str, tcp: list[int], udp: list[int] = ()) -> None:  # type: ignore[assignment]
        busy = [f"tcp {p}" for p in tcp if not port_free(p)] + [f"udp {p}" for p in udp if not port_free(p, udp=True)]
        if busy:
            raise LabError(
                f"{owner}: 127.0.0.1 port(s) {', '.join(busy)} already in use by another process; stop it, "
                "or run this lab with another LAB_PORT_OFFSET / LAB_RUN_DIR"
            )

    def start_hub(self) -> None:
        if self.topo.hub_port is None:
            return
        rec = load_process(self.run_dir, "hub")
        if rec is not None and rec.alive():
            return
        members = sorted(n.local_port for node in self.topo.nodes for n in node.nics if n.kind == "hub" and n.local_port)
        self._check_ports("compute-fabric hub", [], [self.topo.hub_port])
        logf = (self.run_dir / "services" / "hub.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "lab.hub", "--listen", f"127.0.0.1:{self.topo.hub_port}", "--members", ",".join(map(str, members))],
            cwd=ROOT, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        record_process(self.run_dir, "hub", proc.pid, "hub")
        self.log(f"lab: compute-fabric hub on udp 127.0.0.1:{self.topo.hub_port} (pid {proc.pid})")

    def ib_plan_json(self) -> str:
        """The compute cables of the lab inventory's design (the plan the cabling stage checks) for the DGX VMs of
        this topology: what the stand-in InfiniBand fabric on the DGX VMs is wired as. Computed once per `up`."""
        if self._ib_plan is None:
            from validation.cabling import plan

            running = {n.name for n in vmconfig.dgx_nodes(self.topo)}
            view = plan.load_view([str(ROOT / "inventories" / "common"), str(ROOT / "inventories" / "lab")])
            cables = [c for c in plan.compute_cables(view) if c.a.node in running]
            self._ib_plan = ib_standin.plan_json(cables)
        return self._ib_plan

    def prepare_disks(self, node: Node, image: images.RoleImage, creds: pki.Credentials) -> qemu.VmFiles:
        files = qemu.vm_files(self.run_dir, node)
        backing_note = files.overlay.with_suffix(".backing")
        if files.overlay.exists() and (not backing_note.is_file() or backing_note.read_text().strip() != str(image.disk)):
            self.log(f"lab: {node.name}: its image changed since its disk was made: new overlay")
            files.overlay.unlink()
        if not files.overlay.exists():
            subprocess.run(
                ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(image.disk), str(files.overlay)],
                check=True,
            )
            backing_note.write_text(str(image.disk) + "\n")
        if files.data_disk is not None and node.data_disk is not None and not files.data_disk.exists():
            tmp = files.data_disk.with_suffix(".tmp")
            with tmp.open("wb") as fh:
                fh.truncate(node.data_disk.size_gb << 30)
            proc = subprocess.run(["mkfs.xfs", "-q", "-f", "-L", node.data_disk.label, str(tmp)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise LabError(f"{node.name}: mkfs.xfs of its data disk failed: {proc.stderr.strip()} (apt-get install xfsprogs)")
            tmp.rename(files.data_disk)
        hk = creds.host_key(node.name)
        extra: dict = {}
        if node.role == "storage":
            pem, key = creds.cert("onefs-sim")
            extra = {
                "onefs_sim_source": ROOT / "lab" / "onefs_sim",
                "onefs_cert": (pem.read_bytes(), key.read_bytes()),
                "onefs_password": creds.secret("powerscale_api_password"),
            }
        authorized = creds.ssh_key.with_suffix(".pub").read_text().strip()
        if node.role == "dgx":
            authorized += "\n" + creds.dgx_key.with_suffix(".pub").read_text().strip()
        files_list = vmconfig.config_files(
            node, self.topo, authorized_key=authorized,
            host_key=hk.read_bytes(), host_key_pub=hk.with_suffix(".pub").read_text(), **extra,
        )
        if node.role == "dgx":
            files_list += vmconfig.ib_standin_files(node, standin_source=(ROOT / "lab" / "ib_standin.py").read_bytes(),
                                                    plan_json=self.ib_plan_json())
        files_list += vmconfig.engine_files(
            node, self.topo, munge_key=creds.munge_key.read_bytes(), dgx_key=creds.dgx_key.read_bytes(),
            host_keys={n.name: creds.host_key(n.name).with_suffix(".pub").read_text() for n in vmconfig.dgx_nodes(self.topo)},
        )
        vmconfig.write_config_disk(files.config, files_list)
        return files

    def start_vm(self, node: Node, image: images.RoleImage, accel: str, creds: pki.Credentials) -> None:
        listen = [n.port for n in node.nics if n.kind == "listen" and n.port]
        self._check_ports(node.name, [node.ssh_port, *(f.host_port for f in node.forwards), *listen])
        hub_members = [n.local_port for n in node.nics if n.kind == "hub" and n.local_port]
        self._check_ports(f"{node.name} cfab", [], hub_members)
        files = self.prepare_disks(node, image, creds)
        relay = None
        if node.role == "dgx" and self.topo.registry is not None:
            relay = f"{sys.executable} {ROOT / 'lab' / 'relay.py'} 127.0.0.1 {self.topo.registry.port}"
            if any(ch.isspace() for ch in f"{sys.executable}{ROOT}"):
                raise LabError(f"the registry relay command {relay!r} has whitespace in a path; move the checkout")
        argv = qemu.qemu_argv(node, self.topo, files, kernel=image.kernel, initrd=image.initrd, accel=accel, relay_cmd=relay)
        files.pidfile.unlink(missing_ok=True)
        files.console_sock.unlink(missing_ok=True)
        files.monitor_sock.unlink(missing_ok=True)
        (files.qemu_log).write_text(" ".join(argv) + "\n")
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        with files.qemu_log.open("a") as fh:
            fh.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise LabError(f"{node.name}: qemu failed to start (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}")
        pid = int(files.pidfile.read_text().strip())
        record_process(self.run_dir, f"vm-{node.name}", pid, "vm")
        self.log(
            f"lab: {node.name}: started ({node.role}, {node.cpus} vCPU, {node.memory_mb} MiB, {accel}, pid {pid}, "
            f"ssh 127.0.0.1:{node.ssh_port}, console {files.console_log})"
        )

    def wait_for_ssh(self, nodes: list[Node], timeout_s: float, t_start: float) -> dict[str, float]:
        """Wait until every node answers SSH, each watched on its own (so each boot time is its own).

        A VM whose qemu exits, or that has no SSH within timeout_s, fails `up`; every such VM is reported with
        the tail of its console log.
        """
        started = {n.name for n in nodes}
        stop = threading.Event()

        def watch(node: Node) -> tuple[float | None, str]:
            while not stop.is_set():
                if not self.vm_running(node):
                    return None, "died"
                # A banner first (ssh_ok): the login then gets the time a TCG guest's first sshd needs.
                if self.ssh_ok(node, 60.0):
                    return round(time.monotonic() - t_start, 1), ""
                if time.monotonic() - t_start > timeout_s:
                    return None, "timeout"
                stop.wait(1)
            return None, "abandoned"

        booted: dict[str, float] = {}
        failures: dict[str, str] = {}
        with ThreadPoolExecutor(max_workers=max(1, len(self.topo.nodes))) as pool:
            futures = {pool.submit(watch, n): n for n in self.topo.nodes}
            waiting = set(futures)
            try:
                while waiting and not failures:
                    done, waiting = wait(waiting, timeout=20, return_when=FIRST_COMPLETED)
                    for fut in done:
                        node = futures[fut]
                        secs, err = fut.result()
                        if secs is not None:
                            booted[node.name] = secs
                            tag = f"booted to SSH in {secs:.0f} s" if node.name in started else "reachable over SSH"
                            self.log(f"lab: {node.name}: {tag}")
                        else:
                            failures[node.name] = err
                    if waiting and not done:
                        pending = ", ".join(futures[f].name for f in waiting)
                        self.log(f"lab: waiting for SSH ({time.monotonic() - t_start:.0f} s): {pending}")
            finally:
                stop.set()
            # After the first failure, let the other watchers finish their current probe, then report them all.
            for fut in waiting:
                secs, err = fut.result()
                if secs is None:
                    failures[futures[fut].name] = err
        if failures:
            msgs = []
            for name, err in sorted(failures.items(), key=lambda kv: kv[1] == "abandoned"):
                files = qemu.vm_files(self.run_dir, self.topo.node(name))
                if err == "died":
                    msgs.append(
                        f"{name}: its qemu process exited during boot. Console tail ({files.console_log}):\n"
                        f"{tail(files.console_log)}\nqemu output:\n{tail(files.qemu_log, 10)}"
                    )
                elif err == "abandoned":
                    msgs.append(f"{name}: no SSH yet when the above failed. Console tail ({files.console_log}):\n{tail(files.console_log, 10)}")
                else:
                    msgs.append(f"{name}: no SSH after {timeout_s:.0f} s. Console tail ({files.console_log}):\n{tail(files.console_log)}")
            raise LabError("\n\n".join(msgs))
        return booted

    def boot_state(self, node: Node) -> tuple[str, str]:
        """(systemd's system state, failed units) of a node; "starting" while boot jobs still run."""
        script = (
            "state=$(timeout 20 systemctl is-system-running --wait); "
            'echo "$state"; [ "$state" = degraded ] && systemctl --failed --no-legend --plain | cut -d" " -f1 | tr "\\n" " "; true'
        )
        try:
            proc = subprocess.run(
                [*self.ssh_argv(node, connect_timeout=20), script], capture_output=True, text=True, timeout=60,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return "starting", ""
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or not lines:
            return "starting", ""
        return lines[0].strip() or "starting", (lines[1].strip() if len(lines) > 1 else "")

    def wait_for_boot_complete(self, timeout_s: float, t_start: float) -> tuple[dict[str, float], dict[str, str]]:
        """After SSH: wait until systemd finished booting every VM (docker, NFS server, FRR, simulators up).

        A `degraded` VM (some unit failed) does not fail `up`, but its failed units are printed and recorded
        in state.json, so a broken service in an image is visible at once.
        """
        pending = {n.name: n for n in self.topo.nodes}
        ready: dict[str, float] = {}
        degraded: dict[str, str] = {}
        with ThreadPoolExecutor(max_workers=max(1, len(pending))) as pool:
            while pending:
                results = dict(zip(pending, pool.map(self.boot_state, pending.values()), strict=True))
                now = time.monotonic()
                for name, (sys_state, failed) in results.items():
                    if sys_state in ("running", "degraded"):
                        ready[name] = round(now - t_start, 1)
                        del pending[name]
                        if sys_state == "degraded":
                            degraded[name] = failed
                            self.log(f"lab: {name}: WARNING: booted degraded, failed units: {failed or '(see systemctl --failed)'}")
                        else:
                            self.log(f"lab: {name}: boot complete in {ready[name]:.0f} s")
                if pending and now - t_start > timeout_s:
                    raise LabError(
                        f"{', '.join(pending)}: SSH answers but systemd has not finished booting after {timeout_s:.0f} s; "
                        "see `python -m lab ssh NODE systemctl list-jobs`"
                    )
        return ready, degraded

    def start_host_services(self) -> None:
        if not self.opts.host_services:
            if self.topo.host_services:
                self.log(f"lab: host services skipped (--no-host-services): {', '.join(s.name for s in self.topo.host_services)}")
            return
        for s in self.topo.host_services:
            self.start_host_service(s)

    def start_host_service(self, s: HostService, timeout_s: float = 60.0) -> None:
        rec = load_process(self.run_dir, f"svc-{s.name}")
        if rec is not None and rec.alive():
            self.log(f"lab: host service {s.name}: already running (pid {rec.pid})")
            return
        self._check_ports(f"host service {s.name}", list(s.ports))
        argv = substitute(s.argv, python=sys.executable, run_dir=self.run_dir, root=ROOT)
        logpath = self.run_dir / "services" / f"{s.name}.log"
        with logpath.open("ab") as logf:
            proc = subprocess.Popen(
                argv, cwd=ROOT, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
            )
        record_process(self.run_dir, f"svc-{s.name}", proc.pid, "service")
        deadline = time.monotonic() + timeout_s
        waiting = list(s.ports)
        while waiting:
            if proc.poll() is not None:
                raise LabError(f"host service {s.name} exited {proc.returncode} while starting. Log tail ({logpath}):\n{tail(logpath, 20)}")
            waiting = [p for p in waiting if not port_open(p)]
            if waiting and time.monotonic() > deadline:
                raise LabError(f"host service {s.name}: port(s) {waiting} not open after {timeout_s:.0f} s. Log tail:\n{tail(logpath, 20)}")
            if waiting:
                time.sleep(0.3)
        self.log(f"lab: host service {s.name}: up (pid {proc.pid}, ports {', '.join(map(str, s.ports))}, log {logpath})")

    # -- restart one piece while developing it
    def restart(self, name: str) -> None:
        """Restart a host service, or push lab/onefs_sim/ into powerscale01 and restart onefs-sim.service."""
        services = {s.name: s for s in self.topo.host_services}
        if name in services:
            rec = load_process(self.run_dir, f"svc-{name}")
            if rec is not None:
                stop_process(rec, group=True)
            self.check_host_service_modules()
            self.start_host_service(services[name])
            return
        if name == "onefs-sim":
            storage = [n for n in self.topo.nodes if n.role == "storage"]
            source = ROOT / "lab" / "onefs_sim"
            if not storage or not (source / "__init__.py").is_file():
                raise LabError(f"onefs-sim: needs a storage node and {source}/__init__.py")
            for node in storage:
                if not self.vm_running(node):
                    raise LabError(f"{node.name} is not running: `python -m lab up` first")
                pack = subprocess.run(
                    ["tar", "-C", str(source.parent), "--exclude=__pycache__", "-cf", "-", source.name],
                    capture_output=True, check=True,
                ).stdout
                script = (
                    "set -e; rm -rf /opt/onefs-sim/onefs_sim.new; mkdir -p /opt/onefs-sim/onefs_sim.new; "
                    "tar -xf - -C /opt/onefs-sim/onefs_sim.new; rm -rf /opt/onefs-sim/onefs_sim; "
                    "mv /opt/onefs-sim/onefs_sim.new/onefs_sim /opt/onefs-sim/onefs_sim; rmdir /opt/onefs-sim/onefs_sim.new; "
                    "systemctl restart onefs-sim.service; systemctl is-active onefs-sim.service"
                )
                proc = subprocess.run([*self.ssh_argv(node), script], input=pack, capture_output=True, timeout=300)
                if proc.returncode != 0:
                    raise LabError(f"{node.name}: onefs-sim restart failed: {proc.stderr.decode(errors='replace')[-800:]}")
                self.log(f"lab: {node.name}: lab/onefs_sim pushed, onefs-sim.service restarted")
            return
        raise LabError(f"nothing named {name!r} to restart: host services {', '.join(services) or '(none)'}, or onefs-sim")

    # -- down
    def down(self) -> list[str]:
        stopped = []
        for rec_path in sorted((self.run_dir / "pids").glob("*.json")) if (self.run_dir / "pids").is_dir() else []:
            rec = load_process(self.run_dir, rec_path.stem)
            if rec is None:
                continue
            if stop_process(rec, group=rec.kind in ("service", "hub")):
                stopped.append(f"{rec.name} (pid {rec.pid})")
                self.log(f"lab: stopped {rec.name} (pid {rec.pid})")
            rec_path.unlink()
        for pid in lab_qemu_pids(self.run_dir):
            # A qemu of this run dir whose pid file was lost (e.g. a crashed `up`): still ours, stop it.
            start = _proc_start_time(pid)
            if start is not None and stop_process(ProcRecord(f"qemu-{pid}", pid, start, "vm"), group=False):
                stopped.append(f"qemu pid {pid} (no pid file)")
                self.log(f"lab: stopped stray qemu pid {pid} of this run dir")
        if not self.opts.keep_disks and (self.run_dir / "disks").is_dir():
            for f in (self.run_dir / "disks").iterdir():
                f.unlink()
            self.log("lab: VM disks removed (the next `up` boots fresh VMs; --keep-disks keeps them)")
        self.state_path.unlink(missing_ok=True)
        remaining = lab_qemu_pids(self.run_dir)
        if remaining:
            raise LabError(f"qemu processes of this lab are still running after down: {remaining}")
        return stopped

    # -- status
    def status(self, check_ssh: bool = True) -> dict:
        state = self.state()
        nodes = []
        checks: dict[str, bool] = {}
        running = {n.name: self.vm_running(n) for n in self.topo.nodes}
        if check_ssh:
            with ThreadPoolExecutor(max_workers=max(1, len(self.topo.nodes))) as pool:
                up_nodes = [n for n in self.topo.nodes if running[n.name]]
                # TCG guests on a loaded host can take several seconds per handshake: one retry before "no".
                checks = dict(
                    zip([n.name for n in up_nodes], pool.map(lambda n: self.ssh_ok(n, 20.0) or self.ssh_ok(n, 30.0), up_nodes), strict=True)
                )
        for n in self.topo.nodes:
            rec = self.vm_record(n)
            if running[n.name]:
                vm_state = "running"
            elif rec is not None:
                vm_state = "exited"
            else:
                vm_state = "stopped"
            nodes.append(
                {
                    "name": n.name,
                    "role": n.role,
                    "state": vm_state,
                    "pid": rec.pid if rec and running[n.name] else None,
                    "ssh_host": "127.0.0.1",
                    "ssh_port": n.ssh_port,
                    "reachable": checks.get(n.name, False),
                    "accel": state.get("accel") if running[n.name] else None,
                    "in_inventory": n.in_inventory,
                    "addresses": {nic.name: nic.address for nic in n.nics if nic.address},
                    "nics": {nic.name: {"mac": nic.mac, "kind": nic.kind, "peer": nic.peer, "mtu": nic.mtu} for nic in n.nics},
                    "forwards": {f"127.0.0.1:{f.host_port}": f.guest_port for f in n.forwards},
                    "console_log": str(qemu.vm_files(self.run_dir, n).console_log),
                }
            )
        services = []
        for s in self.topo.host_services:
            rec = load_process(self.run_dir, f"svc-{s.name}")
            alive = rec is not None and rec.alive()
            services.append(
                {
                    "name": s.name,
                    "state": "running" if alive else ("exited" if rec else "stopped"),
                    "pid": rec.pid if alive and rec else None,
                    "ports": list(s.ports),
                    "listening": alive and all(port_open(p) for p in s.ports),
                    "log": str(self.run_dir / "services" / f"{s.name}.log"),
                }
            )
        hub = load_process(self.run_dir, "hub")
        return {
            "run_dir": str(self.run_dir),
            "accel": state.get("accel"),
            "accel_reason": state.get("accel_reason"),
            "dgx_count": self.topo.dgx_count,
            "port_offset": self.topo.port_offset,
            "nodes": nodes,
            "host_services": services,
            "compute_fabric_hub": {
                "port": self.topo.hub_port,
                "state": "running" if hub and hub.alive() else "stopped",
            },
            "cables": [{"endpoint": c.endpoint, "switch_port": c.switch, "tcp_port": c.port} for c in self.topo.cables],
            "all_reachable": all(n["reachable"] for n in nodes),
        }
