"""qemu command lines for the lab's VMs (pure) and the KVM/TCG acceleration probe."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from lab.topology import Nic, Node, Topology

QEMU = "qemu-system-x86_64"
KERNEL_CMDLINE = "root=/dev/vda rw console=ttyS0,115200 fsck.mode=skip panic=10 net.ifnames=1"
# Markers that the guest reached userspace: the kernel handing over to the initramfs' /init.
PROBE_MARKERS = ("Run /init as init process", "Loading, please wait")
UNIX_PATH_MAX = 107


@dataclass(frozen=True)
class VmFiles:
    """Where one VM's files live under the run dir."""

    overlay: Path
    config: Path
    data_disk: Path | None
    console_log: Path
    console_sock: Path
    monitor_sock: Path
    pidfile: Path
    qemu_log: Path


def vm_files(run_dir: Path, node: Node) -> VmFiles:
    disks, con, pids = run_dir / "disks", run_dir / "console", run_dir / "pids"
    return VmFiles(
        overlay=disks / f"{node.name}.qcow2",
        config=disks / f"{node.name}-config.tar",
        data_disk=disks / f"{node.name}-data.raw" if node.data_disk else None,
        console_log=con / f"{node.name}.log",
        console_sock=con / f"{node.name}.sock",
        monitor_sock=run_dir / "monitor" / f"{node.name}.sock",
        pidfile=pids / f"{node.name}.pid",
        qemu_log=con / f"{node.name}.qemu.log",
    )


class ArgvError(ValueError):
    pass


def _check_opt_value(what: str, value: str) -> str:
    # qemu splits option strings at commas; paths and commands must not contain any.
    if "," in value:
        raise ArgvError(f"{what} {value!r} contains a comma, which qemu's option parser cannot take; move it")
    return value


def accel_args(accel: str, cpus: int) -> list[str]:
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", "host", "-smp", str(cpus)]
    if accel == "tcg":
        return ["-accel", "tcg,thread=multi,tb-size=256", "-cpu", "max", "-smp", str(cpus)]
    raise ArgvError(f"accel {accel!r} is not kvm or tcg")


def user_netdev(node: Node, nic: Nic, topo: Topology, relay_cmd: str | None) -> str:
    """qemu user networking, isolated (restrict=on): only SSH (+ declared ports) in, only the registry out."""
    parts = [f"user,id={nic.name},restrict=on,hostname={node.name}", f"hostfwd=tcp:127.0.0.1:{node.ssh_port}-:22"]
    parts += [f"hostfwd=tcp:127.0.0.1:{f.host_port}-:{f.guest_port}" for f in node.forwards]
    if node.role == "dgx" and topo.registry is not None and relay_cmd:
        reg = topo.registry
        # cmd: runs the relay once per guest connection, so the registry may start after the VM.
        parts.append(f"guestfwd=tcp:{reg.guest_address}:{reg.port}-cmd:{_check_opt_value('relay command', relay_cmd)}")
    return ",".join(parts)


def data_netdev(nic: Nic) -> str:
    if nic.kind == "listen":
        return f"socket,id={nic.name},listen=127.0.0.1:{nic.port}"
    if nic.kind == "connect":
        return f"socket,id={nic.name},connect=127.0.0.1:{nic.port}"
    if nic.kind == "hub":
        return f"socket,id={nic.name},udp=127.0.0.1:{nic.port},localaddr=127.0.0.1:{nic.local_port}"
    raise ArgvError(f"NIC {nic.name}: kind {nic.kind!r} has no data netdev")


def qemu_argv(
    node: Node,
    topo: Topology,
    files: VmFiles,
    *,
    kernel: Path,
    initrd: Path,
    accel: str,
    relay_cmd: str | None = None,
    qemu: str = QEMU,
    daemonize: bool = True,
) -> list[str]:
    """The full qemu command line for one VM (every path absolute: -daemonize changes directory to /)."""
    for what, p in (("console socket", files.console_sock), ("monitor socket", files.monitor_sock)):
        if len(str(p)) > UNIX_PATH_MAX:
            raise ArgvError(f"{what} path {p} is longer than {UNIX_PATH_MAX} bytes; use a shorter LAB_RUN_DIR")
    for what, p in (("overlay", files.overlay), ("config disk", files.config), ("kernel", kernel), ("initrd", initrd)):
        if not p.is_absolute():
            raise ArgvError(f"{what} path {p} must be absolute")
        _check_opt_value(what, str(p))
    argv = [
        qemu,
        "-name", f"{node.name},process=lab-{node.name}"[:64],
        "-machine", "pc",
        *accel_args(accel, node.cpus),
        "-m", str(node.memory_mb),
        "-nodefaults", "-no-user-config", "-display", "none", "-vga", "none",
        "-kernel", str(kernel), "-initrd", str(initrd), "-append", KERNEL_CMDLINE,
        # Fixed PCI slots: the root disk must probe first to be /dev/vda; NICs follow from slot 0x10.
        "-drive", f"file={files.overlay},if=none,id=root,format=qcow2,cache=unsafe,discard=unmap",
        "-device", "virtio-blk-pci,drive=root,addr=0x3",
        "-drive", f"file={files.config},if=none,id=labcfg,format=raw,readonly=on",
        "-device", "virtio-blk-pci,drive=labcfg,serial=labcfg,addr=0x4",
    ]
    if files.data_disk is not None:
        _check_opt_value("data disk", str(files.data_disk))
        argv += [
            "-drive", f"file={files.data_disk},if=none,id=data,format=raw,cache=writeback,discard=unmap",
            "-device", "virtio-blk-pci,drive=data,serial=data,addr=0x5",
        ]
    for slot, nic in enumerate(node.nics, start=0x10):
        netdev = user_netdev(node, nic, topo, relay_cmd) if nic.kind == "user" else data_netdev(nic)
        argv += ["-netdev", netdev, "-device", f"virtio-net-pci,netdev={nic.name},mac={nic.mac},addr={slot:#x}"]
    argv += [
        "-chardev", f"socket,id=console,path={files.console_sock},server=on,wait=off,logfile={files.console_log},logappend=on",
        "-serial", "chardev:console",
        "-monitor", f"unix:{files.monitor_sock},server=on,wait=off",
        "-pidfile", str(files.pidfile),
    ]
    if daemonize:
        argv.append("-daemonize")
    return argv


# ---------------------------------------------------------------- acceleration


@dataclass(frozen=True)
class AccelChoice:
    accel: str
    reason: str


def probe_kvm(kernel: Path, initrd: Path, work: Path, timeout_s: float = 25.0, qemu: str = QEMU) -> tuple[bool, str]:
    """Boot the lab kernel under KVM with no root disk: True once its console shows userspace starting."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm is missing or not accessible"
    work.mkdir(parents=True, exist_ok=True)
    log = work / "kvm-probe.log"
    log.unlink(missing_ok=True)
    argv = [
        qemu, "-accel", "kvm", "-cpu", "host", "-m", "256", "-nodefaults", "-no-user-config", "-display", "none",
        "-kernel", str(kernel), "-initrd", str(initrd), "-append", "console=ttyS0 panic=-1 root=/dev/lab-probe",
        "-serial", f"file:{log}", "-no-reboot",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace") if log.exists() else ""
            if any(m in text for m in PROBE_MARKERS):
                return True, f"a KVM probe boot reached userspace in {timeout_s - (deadline - time.monotonic()):.1f} s"
            if proc.poll() is not None:
                err = " ".join((proc.stderr.read() if proc.stderr else "").split())
                return False, f"the KVM probe qemu exited {proc.returncode}: {err[-300:] or 'no output'}"
            time.sleep(0.25)
        return False, f"a KVM probe boot did not reach userspace within {timeout_s:.0f} s (nested KVM hangs here)"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def choose_accel(
    kernel: Path, initrd: Path, run_dir: Path, override: str | None = None, qemu: str = QEMU
) -> AccelChoice:
    """LAB_ACCEL wins; otherwise a KVM probe boot decides, cached per host boot in the run dir."""
    if override:
        if override not in ("kvm", "tcg"):
            raise ArgvError(f"LAB_ACCEL={override!r}: use kvm or tcg (or leave it unset to probe)")
        return AccelChoice(override, "LAB_ACCEL / --accel")
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    cache = run_dir / "accel.json"
    if cache.is_file():
        data = json.loads(cache.read_text())
        if data.get("boot_id") == boot_id and data.get("kernel") == str(kernel):
            return AccelChoice(data["accel"], data["reason"] + " (probed earlier this host boot)")
    ok, why = probe_kvm(kernel, initrd, run_dir / "probe", qemu=qemu)
    choice = AccelChoice("kvm", why) if ok else AccelChoice("tcg", f"TCG: {why}")
    cache.write_text(json.dumps({"boot_id": boot_id, "kernel": str(kernel), "accel": choice.accel, "reason": choice.reason}))
    return choice


def qemu_usable(qemu: str = QEMU) -> tuple[bool, str]:
    """Whether qemu can run at all here (the lab test is skipped only when it cannot)."""
    path = shutil.which(qemu)
    if path is None:
        return False, f"{qemu} is not installed (apt-get install qemu-system-x86)"
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except OSError as exc:
        return False, f"{path} cannot be executed: {exc}"
    if proc.returncode != 0:
        return False, f"{path} --version failed: {proc.stderr.strip()[-200:]}"
    return True, proc.stdout.splitlines()[0] if proc.stdout else path
