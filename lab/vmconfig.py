"""Per-VM configuration disk: a tar archive (attached read-only as a raw virtio disk, serial `labcfg`)
that lab-config.service unpacks over / at every boot. See image_files.py for the guest side.

`config_files` is pure (node + inputs -> files), `write_config_disk` writes the archive.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

from lab.topology import Node, Topology

ONEFS_SIM_DIR = "opt/onefs-sim/onefs_sim"


@dataclass(frozen=True)
class GuestFile:
    path: str  # relative to / in the guest
    data: bytes
    mode: int = 0o644


@dataclass(frozen=True)
class GuestDir:
    path: str
    mode: int = 0o755


# qemu user networking (slirp): every VM has its own, with the guest at .15 and the host-side gateway at .2.
USER_NET_GUEST = "10.0.2.15/24"
USER_NET_GATEWAY = "10.0.2.2"

def _link(nic_name: str, mac: str) -> str:
    return f"# lab: name the NIC by its MAC (set by python -m lab)\n[Match]\nMACAddress={mac}\n\n[Link]\nName={nic_name}\n"


def network_units(node: Node) -> dict[str, str]:
    """systemd-networkd .link/.network files for the node's NICs (file name -> content)."""
    files: dict[str, str] = {}
    for nic in node.nics:
        files[f"10-lab-{nic.name}.link"] = _link(nic.name, nic.mac)
        if nic.kind == "user":
            # qemu user networking's fixed guest address, set statically rather than by DHCP: systemd-networkd
            # 252 can fail its DHCPv4 client with EBUSY when udev renames the NIC (eth0 -> mgmt0) while networkd
            # configures it ("Failed to configure DHCPv4 client: Device or resource busy"), which left a TCG VM
            # without its management address and SSH. A static address has no such race.
            files[f"20-lab-{nic.name}.network"] = (
                f"[Match]\nName={nic.name}\n\n[Link]\nRequiredForOnline=yes\n\n"
                f"[Network]\nAddress={USER_NET_GUEST}\nGateway={USER_NET_GATEWAY}\n"
                "LinkLocalAddressing=no\nIPv6AcceptRA=no\n"
            )
        elif nic.kind == "listen":
            # Switch ports: up, no address, no bridge; ifupdown2 (the fabric stage) owns them.
            files[f"20-lab-{nic.name}.network"] = f"[Match]\nName={nic.name}\n\n[Link]\nUnmanaged=yes\n"
        else:
            # A DGX mounts its exports over its storage NICs at boot (fstab, _netdev): network-online.target
            # (systemd-networkd-wait-online, enabled in the DGX image as on DGX OS) waits for them to be routable.
            # Without it a VM powered on again raced its mounts against networkd ("mount.nfs: Network is
            # unreachable") and came up without its shares.
            online = "routable" if node.role == "dgx" and nic.name.startswith("storage") and nic.address else "no"
            lines = [f"[Match]\nName={nic.name}\n", "[Link]", f"RequiredForOnline={online}"]
            if nic.mtu:
                lines.append(f"MTUBytes={nic.mtu}")
            lines += ["", "[Network]", "LinkLocalAddressing=no", "IPv6AcceptRA=no", "ConfigureWithoutCarrier=yes"]
            if nic.address:
                lines.append(f"Address={nic.address}")
            files[f"20-lab-{nic.name}.network"] = "\n".join(lines) + "\n"
    return files


def hosts_file(node: Node, topo: Topology) -> str:
    lines = ["127.0.0.1\tlocalhost", f"127.0.1.1\t{node.name}", "::1\tlocalhost ip6-localhost ip6-loopback"]
    if node.role == "dgx" and topo.registry is not None:
        lines.append(f"{topo.registry.guest_address}\t{topo.registry.hostname}")
    return "\n".join(lines) + "\n"


def config_files(
    node: Node,
    topo: Topology,
    *,
    authorized_key: str,
    host_key: bytes,
    host_key_pub: str,
    onefs_sim_source: Path | None = None,
    onefs_cert: tuple[bytes, bytes] | None = None,
    onefs_password: str | None = None,
) -> list[GuestFile | GuestDir]:
    """Everything one VM's config disk carries."""
    out: list[GuestFile | GuestDir] = [
        GuestFile("etc/hostname", f"{node.name}\n".encode()),
        GuestFile("etc/hosts", hosts_file(node, topo).encode()),
        GuestDir("root/.ssh", 0o700),
        GuestFile("root/.ssh/authorized_keys", (authorized_key.strip() + "\n").encode(), 0o600),
        GuestFile("etc/ssh/ssh_host_ed25519_key", host_key, 0o600),
        GuestFile("etc/ssh/ssh_host_ed25519_key.pub", (host_key_pub.strip() + "\n").encode()),
        GuestDir("etc/lab"),
        GuestFile(
            "etc/lab/links-up", "".join(f"{n.name}\n" for n in node.nics if n.kind == "listen").encode()
        ),
        GuestFile(
            "etc/lab/node.env",
            (
                f"LAB_NODE={node.name}\nLAB_ROLE={node.role}\n"
                + "".join(f"LAB_NIC_{n.name.upper()}={n.address or ''}\n" for n in node.nics if n.kind != "user")
            ).encode(),
        ),
    ]
    out += [GuestFile(f"etc/systemd/network/{name}", text.encode()) for name, text in network_units(node).items()]
    if node.role == "storage":
        out.append(GuestDir("etc/onefs-sim", 0o700))
        if onefs_cert is not None:
            out.append(GuestFile("etc/onefs-sim/server.pem", onefs_cert[0]))
            out.append(GuestFile("etc/onefs-sim/server.key", onefs_cert[1], 0o600))
        if onefs_password is not None:
            out.append(GuestFile("etc/onefs-sim/password", (onefs_password.strip() + "\n").encode(), 0o600))
        if onefs_sim_source is not None and (onefs_sim_source / "__init__.py").is_file():
            out.append(GuestDir("opt/onefs-sim"))
            for src in sorted(onefs_sim_source.rglob("*")):
                rel = src.relative_to(onefs_sim_source)
                if "__pycache__" in rel.parts or src.suffix == ".pyc":
                    continue
                dest = f"{ONEFS_SIM_DIR}/{rel.as_posix()}"
                out.append(GuestDir(dest) if src.is_dir() else GuestFile(dest, src.read_bytes()))
    return out


# --- the launch engines: Slurm and Open MPI on the DGX VMs (docs/launch-engines.md) ---------------------------

# Debian 12's Slurm 22.05 (slurm-wlm 22.05.8-4+deb12u3): paths as its packages make them (slurmctld's postinst
# creates /var/lib/slurm/slurmctld and /var/log/slurm owned by slurm; the units' PIDFile is /run/<daemon>.pid).
SLURM_PARTITION = "dgx"
SLURM_CONTROLLER_MARKER = "etc/lab/slurmctld"   # slurmctld.service's ConditionPathExists (lab/image_files.py)


def dgx_nodes(topo: Topology) -> list[Node]:
    return sorted((n for n in topo.nodes if n.role == "dgx"), key=lambda n: n.index)


def fabric_address(node: Node) -> str:
    """The node's compute-fabric (cfab0, the IPoIB stand-in) address without its prefix length."""
    addr = node.nic("cfab0").address
    if not addr:
        raise ValueError(f"{node.name}: cfab0 has no address: Slurm and mpirun reach the nodes over the fabric")
    return addr.split("/")[0]


def slurm_conf(topo: Topology) -> str:
    """slurm.conf for the lab's DGX VMs: the first DGX runs slurmctld, every DGX slurmd, one partition of all,
    every daemon addressed over cfab0 (the VMs' management NIC is qemu's user network, the same 10.0.2.15 on
    every VM and unreachable from the others). Nothing is published on the host: the VMs' user networks forward
    SSH only. RealMemory stays under the VM's memory (a node reporting less than slurm.conf says is drained
    "Low RealMemory"); CPUs is the VM's vCPU count."""
    dgx = dgx_nodes(topo)
    if not dgx:
        raise ValueError("the lab has no DGX node to run Slurm on")
    ctl = dgx[0]
    lines = [
        "# Written by `python -m lab up` (lab/vmconfig.py slurm_conf) for Slurm 22.05 (Debian 12); rewritten at every",
        "# boot from the VM's config disk. A site's Slurm is its own: the validation never writes one.",
        "ClusterName=lab",
        f"SlurmctldHost={ctl.name}({fabric_address(ctl)})",
        "AuthType=auth/munge",
        "SlurmUser=slurm",
        "SlurmctldPort=6817",
        "SlurmdPort=6818",
        "StateSaveLocation=/var/lib/slurm/slurmctld",
        "SlurmdSpoolDir=/var/lib/slurm/slurmd",
        "SlurmctldPidFile=/run/slurmctld.pid",
        "SlurmdPidFile=/run/slurmd.pid",
        "SlurmctldLogFile=/var/log/slurm/slurmctld.log",
        "SlurmdLogFile=/var/log/slurm/slurmd.log",
        # linuxproc: no cgroup setup in the VMs; a step's processes are its tasks' descendants (the stand-ins'
        # ranks do not daemonize)
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/backfill",
        # srun names its MPI plugin (--mpi=pmix), as the validation's command lines do
        "MpiDefault=none",
        # a VM powered off and on again (the fault cases) comes back into service by itself
        "ReturnToService=2",
        "SlurmctldTimeout=120",
        "SlurmdTimeout=300",
        "KillWait=30",
        "InactiveLimit=0",
        "MinJobAge=300",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
    ]
    for n in dgx:
        lines.append(f"NodeName={n.name} NodeAddr={fabric_address(n)} CPUs={n.cpus} "
                     f"RealMemory={max(256, n.memory_mb // 2)} State=UNKNOWN")
    lines.append(f"PartitionName={SLURM_PARTITION} Nodes={','.join(n.name for n in dgx)} Default=YES "
                 "MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


# Open MPI 4.1's out-of-band channel and TCP transport on the fabric only: every VM has 10.0.2.15 on mgmt0, which
# ORTE would otherwise offer its peers (each would reach itself).
OPENMPI_MCA_PARAMS = (
    "# Written by `python -m lab up` (lab/vmconfig.py): the lab's mpirun talks over cfab0 only.\n"
    "oob_tcp_if_include = cfab0\n"
    "btl_tcp_if_include = cfab0\n"
)


def engine_files(node: Node, topo: Topology, *, munge_key: bytes, dgx_key: bytes,
                 host_keys: dict[str, str]) -> list[GuestFile | GuestDir]:
    """What a DGX VM needs for Slurm and mpirun: slurm.conf, the cluster's munge key, the controller marker on
    the first DGX, Open MPI's fabric pinning, and root's key for SSH between the DGX VMs (mpirun starts its
    daemons over SSH) with every DGX's host key pinned for its name and fabric address. [] for other roles."""
    if node.role != "dgx":
        return []
    dgx = dgx_nodes(topo)
    known = []
    for n in dgx:
        key_type, key_b64 = host_keys[n.name].split()[:2]
        known.append(f"{n.name},{fabric_address(n)} {key_type} {key_b64}")
    out: list[GuestFile | GuestDir] = [
        GuestDir("etc/slurm"),
        GuestFile("etc/slurm/slurm.conf", slurm_conf(topo).encode()),
        GuestDir("etc/munge", 0o700),
        GuestFile("etc/munge/munge.key", munge_key, 0o400),
        GuestDir("etc/openmpi"),
        GuestFile("etc/openmpi/openmpi-mca-params.conf", OPENMPI_MCA_PARAMS.encode()),
        GuestFile("root/.ssh/id_ed25519", dgx_key, 0o600),
        GuestFile("etc/ssh/ssh_known_hosts", ("\n".join(known) + "\n").encode()),
    ]
    if node.name == dgx[0].name:
        out.append(GuestFile(SLURM_CONTROLLER_MARKER, b"this VM runs slurmctld (lab/vmconfig.py)\n"))
    return out


# --- the InfiniBand stand-in on the DGX VMs (lab/ib_standin.py; docs/cabling.md#the-lab) ------------------------

IB_STANDIN_DIR = "opt/lab-ib"


def _ib_wrapper(tool: str) -> bytes:
    return (f"#!/bin/sh\n# lab stand-in for {tool} (lab/ib_standin.py): the lab's DGX VMs have no InfiniBand\n"
            f"exec python3 /{IB_STANDIN_DIR}/ib_standin.py {tool} --plan /etc/lab/ib-plan.json "
            f"--faults /etc/lab/ib-faults.json \"$@\"\n").encode()


def ib_standin_files(node: Node, *, standin_source: bytes, plan_json: str) -> list[GuestFile | GuestDir]:
    """The stand-in `ibnetdiscover` and `iblinkinfo` of a DGX VM, and the compute plan they print; [] for other
    roles. Faults come later, from /etc/lab/ib-faults.json (written by a test; absent: as designed)."""
    if node.role != "dgx":
        return []
    return [
        GuestDir(IB_STANDIN_DIR),
        GuestFile(f"{IB_STANDIN_DIR}/ib_standin.py", standin_source),
        GuestFile("etc/lab/ib-plan.json", plan_json.encode()),
        GuestFile("usr/local/sbin/ibnetdiscover", _ib_wrapper("ibnetdiscover"), 0o755),
        GuestFile("usr/local/sbin/iblinkinfo", _ib_wrapper("iblinkinfo"), 0o755),
    ]


def write_config_disk(path: Path, files: list[GuestFile | GuestDir]) -> None:
    """Write the archive atomically (a running VM keeps reading its open copy)."""
    tmp = path.with_suffix(".tmp")
    with tarfile.open(tmp, "w", format=tarfile.GNU_FORMAT) as tar:
        for f in files:
            info = tarfile.TarInfo(f.path)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = f.mode
            info.mtime = 0
            if isinstance(f, GuestDir):
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(f.data)
                tar.addfile(info, io.BytesIO(f.data))
    tmp.replace(path)
