"""The lab's smoke test steps as shell snippets: docs/lab.md shows them, tests/lab runs exactly these.

They configure sn3700v01 by hand (a plain Linux bridge over its swp ports, jumbo MTU), export a directory of
powerscale01's /ifs with knfsd and mount it on a DGX with the project's NFS options.
"""

from __future__ import annotations

import shlex


def switch_bridge(ports: list[str], mtu: int = 9000) -> str:
    """Bridge the switch VM's ports (what the fabric stage does properly with ifupdown2)."""
    plist = " ".join(shlex.quote(p) for p in ports)
    return (
        "set -e; ip link add br0 type bridge; "
        f"for p in {plist}; do ip link set \"$p\" mtu {mtu}; ip link set \"$p\" master br0; ip link set \"$p\" up; done; "
        "ip link set br0 up; bridge link show"
    )


def storage_export(path: str, clients: str) -> str:
    """Export a directory of /ifs with the kernel NFS server (what the storage stage does through the OneFS API)."""
    q = shlex.quote(path)
    return (
        f"set -e; mkdir -p {q}; echo lab-smoke > {q}/hello.txt; mkdir -p /etc/exports.d; "
        f"echo {shlex.quote(f'{path} {clients}(rw,sync,no_subtree_check,no_root_squash)')} > /etc/exports.d/lab-smoke.exports; "
        "exportfs -ra; exportfs -v"
    )


def dgx_mount(server: str, path: str, mount_point: str, options: str) -> str:
    mp = shlex.quote(mount_point)
    return (
        f"set -e; mkdir -p {mp}; mount -t nfs -o {shlex.quote(options)} {shlex.quote(f'{server}:{path}')} {mp}; "
        f"grep ' {mount_point} ' /proc/mounts"
    )
