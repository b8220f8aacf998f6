"""NFS client model of the DGX nodes: the input check, server selection, option rendering, /proc/mounts drift.

Pure functions shared by library/dgx_nfs_plan.py (controller side: check the inventory and compute what each
DGX mounts), library/dgx_nfs_live.py (target side: compare the live mount with the desired one, remount) and the
testinfra handover checks in tests/handover/. Python 3.8+ (it runs on the DGX nodes too), standard library only.

Why the live comparison exists: ansible.posix.mount with state=mounted rewrites /etc/fstab, but a mounted NFS share
keeps the options it was mounted with (a `mount -o remount` cannot change vers, proto, nconnect, ...). So the
options in /proc/mounts are compared with the inventory's and a share whose options differ is unmounted and
mounted again. rsize/wsize are special: the client asks, the server may grant less; the kernel shows the
negotiated value. A live value below the request is therefore a negotiation (warned, not a drift) unless the
request itself changed since the share was mounted (the previous fstab entry tells).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.inventory_problem import Problem, is_hostname

NFS_VERSIONS = ("3", "4.0", "4.1", "4.2")
PROTOCOLS = ("tcp", "rdma")
PURPOSES = ("training", "scratch", "general")
SERVER_MODES = ("smartconnect", "static", "round_robin")
MAX_IO_SIZE = 1048576
MIN_IO_SIZE = 4096

# Options owned by a typed field of an nfs_mounts entry: they may not appear again in extra_options.
TYPED_OPTIONS = frozenset(
    {"vers", "nfsvers", "minorversion", "proto", "tcp", "udp", "rdma", "nconnect", "rsize", "wsize",
     "hard", "soft", "softerr", "timeo", "retrans", "fsc", "nofsc"}
)
# extra_options the role and preflight accept: Linux mount options (mount(8), nfs(5), systemd.mount(5)). Flags are
# matched exactly, key=value options by their key.
EXTRA_FLAGS = frozenset(
    {"noatime", "nodiratime", "relatime", "strictatime", "atime", "diratime", "ro", "rw", "nosuid", "suid",
     "nodev", "dev", "noexec", "exec", "_netdev", "nofail", "auto", "noauto", "user", "nouser", "sync", "async",
     "ac", "noac", "cto", "nocto", "lock", "nolock", "intr", "nointr", "sharecache", "nosharecache",
     "resvport", "noresvport", "rdirplus", "nordirplus", "acl", "noacl", "lazytime", "bg", "fg",
     "x-systemd.automount", "x-systemd.makefs", "x-systemd.growfs"}
)
EXTRA_KEYED = frozenset(
    {"sec", "actimeo", "acregmin", "acregmax", "acdirmin", "acdirmax", "lookupcache", "local_lock",
     "port", "mountport", "mountproto", "mounthost", "mountvers", "retry", "namlen", "clientaddr", "max_connect",
     "xprtsec",
     "x-systemd.requires", "x-systemd.after", "x-systemd.before", "x-systemd.wants",
     "x-systemd.mount-timeout", "x-systemd.idle-timeout", "x-systemd.device-timeout",
     "x-systemd.requires-mounts-for"}
)
# Flags of extra_options that the kernel shows in /proc/mounts (the others live only in fstab).
KERNEL_VISIBLE_FLAGS = frozenset({"noatime", "nodiratime", "relatime", "ro", "rw", "nosuid", "nodev", "noexec"})
SYSTEM_PATHS = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/mnt", "/opt", "/proc",
                          "/raid", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var"})


@dataclass(frozen=True)
class ServerChoice:
    """Where one DGX mounts from: the address (or SmartConnect name) and why."""

    server: str
    node: str = ""
    nic: str = ""
    reason: str = ""


@dataclass(frozen=True)
class DesiredMount:
    """One share as this DGX must mount it."""

    src: str
    path: str
    fstype: str
    options: tuple[str, ...]
    purpose: str = "general"

    @property
    def opts(self) -> str:
        return ",".join(self.options)


@dataclass(frozen=True)
class MountEntry:
    """One line of /proc/mounts (or /etc/fstab)."""

    src: str
    path: str
    fstype: str
    options: dict[str, str | None]
    raw_options: str


@dataclass
class OptionDiff:
    option: str
    desired: Any
    live: Any
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"option": self.option, "desired": self.desired, "live": self.live, "note": self.note}


@dataclass
class LiveComparison:
    """Desired share vs /proc/mounts. drift: a remount would change it. negotiated: the server granted less."""

    mounted: bool
    foreign: str = ""  # non-empty: the mount point holds something that is not an NFS share of ours
    drift: list[OptionDiff] = field(default_factory=list)
    negotiated: list[OptionDiff] = field(default_factory=list)

    @property
    def in_sync(self) -> bool:
        return self.mounted and not self.foreign and not self.drift


# ---------------------------------------------------------------------------------------------- input check


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def option_key(option: str) -> str:
    return option.split("=", 1)[0].strip()


def extra_option_problem(option: Any) -> tuple[str, str] | None:
    """(problem, fix) for an extra_options entry the Linux NFS client or this role would not take, else None.

    Part of inventory_problems (the role's plan and preflight both call that)."""
    if not isinstance(option, str) or not option.strip():
        return "must be a non-empty string", "remove it"
    if any(c in option for c in " \t,#"):
        return "must be one option (no spaces, commas or #)", "give each option its own list entry"
    key = option_key(option)
    if key == "soft":
        return ("'soft' is a typed field of the mount entry (hard), and soft mounts return I/O errors to applications "
                "when the server is slow", "remove it (hard: true)")
    if key in TYPED_OPTIONS:
        return (f"'{key}' is a typed field of the mount entry; set it there, not in extra_options",
                f"remove it and set {key} in the entry itself")
    if ("=" in option and key in EXTRA_KEYED) or ("=" not in option and option in EXTRA_FLAGS):
        return None
    if "=" not in option and key in EXTRA_KEYED:
        return f"'{key}' needs a value ({key}=...)", f"write {key}=VALUE (nfs(5))"
    return (f"unknown mount option '{key if '=' in option else option}'",
            "remove it or use a Linux NFS mount option of nfs(5) (e.g. noatime, nodiratime, _netdev, nofail, "
            "actimeo=N, lookupcache=MODE, sec=FLAVOR; roles/dgx_nfs/README.md)")


def check_mount(host: str, entry: Any, index: int, export_purposes: dict[str, str] | None = None) -> list[Problem]:
    """Every defect of one nfs_mounts entry. export_purposes maps powerscale_exports paths to their purpose."""
    var = f"nfs_mounts[{index}]"
    if not isinstance(entry, dict):
        return [Problem(host, var, entry, "must be a mapping", "give export, mount_point, vers, proto, ... (nfs_client.yml)")]
    problems: list[Problem] = []
    required = ("export", "mount_point", "vers", "proto", "nconnect", "rsize", "wsize", "hard", "timeo", "retrans")
    for key in required:
        if key not in entry:
            problems.append(Problem(host, f"{var}.{key}", None, "missing", f"set {key} (see nfs_client.yml comments)"))
    known = set(required) | {"purpose", "fsc", "extra_options"}
    for key in sorted(set(entry) - known):
        problems.append(Problem(host, f"{var}.{key}", entry[key], "unknown key",
                                f"remove it; known keys: {', '.join(sorted(known))}"))

    export = entry.get("export")
    if "export" in entry and (not isinstance(export, str) or not export.startswith("/ifs/")):
        problems.append(Problem(host, f"{var}.export", export, "must be an /ifs/... path", "use a path of powerscale_exports"))
    elif isinstance(export, str) and export_purposes is not None and export not in export_purposes:
        problems.append(Problem(host, f"{var}.export", export, "is not an export of powerscale_exports",
                                "add it to exports.yml or mount one of: " + ", ".join(sorted(export_purposes))))
    mount_point = entry.get("mount_point")
    if "mount_point" in entry:
        if not isinstance(mount_point, str) or not mount_point.startswith("/") or " " in mount_point:
            problems.append(Problem(host, f"{var}.mount_point", mount_point, "must be an absolute path without spaces",
                                    "e.g. /mnt/training"))
        elif mount_point.rstrip("/") in SYSTEM_PATHS or mount_point.rstrip("/") == "":
            problems.append(Problem(host, f"{var}.mount_point", mount_point, "is a system directory",
                                    "mount below it, e.g. /mnt/training"))

    vers = entry.get("vers")
    if "vers" in entry and str(vers) not in NFS_VERSIONS:
        problems.append(Problem(host, f"{var}.vers", vers, "unsupported NFS version",
                                f"one of {', '.join(NFS_VERSIONS)} (quoted string)"))
    proto = entry.get("proto")
    if "proto" in entry and proto not in PROTOCOLS:
        problems.append(Problem(host, f"{var}.proto", proto, "unsupported transport: tcp or rdma", "proto: tcp (or rdma with NFSoRDMA)"))
    nconnect = _as_int(entry.get("nconnect"))
    if "nconnect" in entry and (nconnect is None or not 1 <= nconnect <= 16):
        problems.append(Problem(host, f"{var}.nconnect", entry.get("nconnect"), "must be an integer 1..16",
                                "8 lets one DGX fill a 100 GbE link (Linux >= 5.3)"))
    for key in ("rsize", "wsize"):
        size = _as_int(entry.get(key))
        if key in entry and (size is None or not _is_power_of_two(size) or not MIN_IO_SIZE <= size <= MAX_IO_SIZE):
            problems.append(Problem(host, f"{var}.{key}", entry.get(key), "must be a power of two from 4096 to 1048576",
                                    "1048576 (1 MiB, what PowerScale serves best)"))
    hard = entry.get("hard")
    purpose = entry.get("purpose", "general")
    if purpose not in PURPOSES:
        problems.append(Problem(host, f"{var}.purpose", purpose, "unknown purpose", f"one of {', '.join(PURPOSES)}"))
    if "hard" in entry and not isinstance(hard, bool):
        problems.append(Problem(host, f"{var}.hard", hard, "must be true or false", "true (hard mount)"))
    elif hard is False and purpose == "training":
        problems.append(Problem(host, f"{var}.hard", hard, "training data must not be soft-mounted (a soft mount "
                                "returns EIO to the training job when the server is slow)", "set hard: true"))
    if isinstance(export, str) and export_purposes and export in export_purposes and purpose in PURPOSES \
            and "purpose" in entry and purpose != export_purposes[export]:
        problems.append(Problem(host, f"{var}.purpose", purpose, f"differs from the export's purpose {export_purposes[export]}",
                                f"set purpose: {export_purposes[export]}"))
    if isinstance(export, str) and export_purposes and export in export_purposes and hard is False \
            and export_purposes[export] == "training" and purpose != "training":
        problems.append(Problem(host, f"{var}.hard", hard, f"export {export} holds training data: soft is refused",
                                "set hard: true"))
    timeo = _as_int(entry.get("timeo"))
    if "timeo" in entry and (timeo is None or not 1 <= timeo <= 6000):
        problems.append(Problem(host, f"{var}.timeo", entry.get("timeo"), "must be 1..6000 (tenths of a second)", "600"))
    retrans = _as_int(entry.get("retrans"))
    if "retrans" in entry and (retrans is None or not 0 <= retrans <= 10):
        problems.append(Problem(host, f"{var}.retrans", entry.get("retrans"), "must be 0..10", "2"))
    if "fsc" in entry and not isinstance(entry.get("fsc"), bool):
        problems.append(Problem(host, f"{var}.fsc", entry.get("fsc"), "must be true or false", "false unless cachefilesd"))
    extra = entry.get("extra_options", [])
    if not isinstance(extra, list):
        problems.append(Problem(host, f"{var}.extra_options", extra, "must be a list", "e.g. [noatime, _netdev]"))
    else:
        for pos, option in enumerate(extra):
            bad = extra_option_problem(option)
            if bad:
                problems.append(Problem(host, f"{var}.extra_options[{pos}]", option, *bad))
    return problems


def export_purposes(exports: Any) -> dict[str, str]:
    """powerscale_exports path -> purpose (general when an export gives none, as exports.yml documents)."""
    return {e["path"]: str(e.get("purpose", "general")) for e in (exports if isinstance(exports, list) else [])
            if isinstance(e, dict) and isinstance(e.get("path"), str)}


def inventory_problems(host: str, nfs_mounts: Any, purposes: dict[str, str] | None = None) -> list[Problem]:
    """The DGX NFS client's inventory rules, their one home: every nfs_mounts entry well formed (keys, types,
    ranges, power-of-two I/O sizes, known extra options), on an export of powerscale_exports with that export's
    purpose, hard-mounted for training data, each on its own mount point, and one nconnect per shared client.

    library/dgx_nfs_plan.py and preflight (preflight_rules.rule_nfs_mounts) both call it; preflight adds only what
    spans features (nconnect against dgx_min_kernel). purposes: export path -> purpose (export_purposes());
    None skips the export cross-check (the role run without a powerscale group)."""
    return check_mounts(host, nfs_mounts, purposes)


def check_mounts(host: str, mounts: Any, export_purposes: dict[str, str] | None = None) -> list[Problem]:
    if not isinstance(mounts, list):
        return [Problem(host, "nfs_mounts", mounts, "must be a list of mounts", "see nfs_client.yml")]
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(mounts):
        problems.extend(check_mount(host, entry, index, export_purposes))
        if isinstance(entry, dict) and isinstance(entry.get("mount_point"), str):
            point = entry["mount_point"].rstrip("/")
            if point in seen:
                problems.append(Problem(host, f"nfs_mounts[{index}].mount_point", entry["mount_point"],
                                        f"same mount point as nfs_mounts[{seen[point]}]", "use distinct paths"))
            seen[point] = index
    problems.extend(shared_client_problems(host, mounts))
    return problems


# ---------------------------------------------------------------------------------------------- servers


def nic_address(nic: dict[str, Any]) -> str:
    return str(nic.get("address", "")).split("/", 1)[0]


def powerscale_addresses(nodes: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> list[tuple[str, str, str]]:
    """(node, nic, address) of every PowerScale storage NIC with an address, spread over the nodes first.

    Inventory order, interleaved by NIC position: the first NIC of every node, then the second NIC of every
    node, ... so that consecutive DGX nodes land on different PowerScale nodes before any node serves two.
    """
    width = max((len(nics) for _node, nics in nodes), default=0)
    return [(node, str(nics[i].get("name", "")), nic_address(nics[i]))
            for i in range(width) for node, nics in nodes if i < len(nics) and nic_address(nics[i])]


def select_server(
    mode: str,
    host: str,
    dgx_hosts: Sequence[str],
    server_map: dict[str, Any] | None,
    nodes: Sequence[tuple[str, Sequence[dict[str, Any]]]],
    smartconnect: dict[str, Any] | None,
) -> tuple[ServerChoice | None, list[Problem]]:
    """The NFS server `host` mounts from, by nfs_server_mode. nodes: (powerscale host, its storage_nics)."""
    if mode == "smartconnect":
        zone = (smartconnect or {}).get("zone", "")
        problems = []
        if (smartconnect or {}).get("enabled") is not True:
            problems.append(Problem(host, "nfs_server_mode", mode,
                                    "needs powerscale_smartconnect.enabled: true; SmartConnect is disabled",
                                    "enable SmartConnect, or use nfs_server_mode: static or round_robin"))
        if not (isinstance(zone, str) and "." in zone and is_hostname(zone)):
            problems.append(Problem(host, "powerscale_smartconnect.zone", zone,
                                    "nfs_server_mode smartconnect mounts <zone>:<export>; this is not a DNS name",
                                    "set the SmartConnect zone name, e.g. dl.storage.example.com"))
        if problems:
            return None, problems
        return ServerChoice(server=str(zone), reason=f"SmartConnect zone {zone}"), []
    if mode == "static":
        entry = (server_map or {}).get(host)
        if not isinstance(entry, dict):
            return None, [Problem(host, f"nfs_server_map.{host}", entry, "no entry for this DGX",
                                  f"add {host}: {{node: <powerscale host>, nic: <its storage NIC>}}")]
        node_name, nic_name = entry.get("node"), entry.get("nic")
        by_node = dict(nodes)
        if not isinstance(node_name, str) or node_name not in by_node:
            return None, [Problem(host, f"nfs_server_map.{host}.node", node_name, "is not a host of the powerscale group",
                                  "use one of: " + ", ".join(by_node) if by_node else "add the PowerScale nodes")]
        for nic in by_node[node_name]:
            if nic.get("name") == nic_name and nic_address(nic):
                return ServerChoice(server=nic_address(nic), node=str(node_name), nic=str(nic_name),
                                    reason=f"static map: {node_name} {nic_name}"), []
        names = [str(n.get("name")) for n in by_node[node_name]]
        return None, [Problem(host, f"nfs_server_map.{host}.nic", nic_name, f"is not a storage NIC of {node_name}",
                              "use one of: " + ", ".join(names))]
    if mode == "round_robin":
        addresses = powerscale_addresses(nodes)
        if not addresses:
            return None, [Problem(host, "nfs_server_mode", mode, "no PowerScale storage NIC address in the inventory",
                                  "give the powerscale hosts storage_nics with addresses")]
        if host not in dgx_hosts:
            return None, [Problem(host, "nfs_server_mode", mode, f"{host} is not in the dgx group", "add it to dgx")]
        node, node_nic, address = addresses[list(dgx_hosts).index(host) % len(addresses)]
        return ServerChoice(server=address, node=node, nic=node_nic,
                            reason=f"round robin: DGX #{list(dgx_hosts).index(host) + 1} -> {node} {node_nic}"), []
    return None, [Problem(host, "nfs_server_mode", mode, "unknown mode", "one of: " + ", ".join(SERVER_MODES))]


# ---------------------------------------------------------------------------------------------- options


def render_options(entry: dict[str, Any]) -> tuple[str, ...]:
    """fstab/mount options of a checked nfs_mounts entry, typed fields first, in a stable order."""
    options = [
        f"vers={entry['vers']}",
        f"proto={entry['proto']}",
        f"nconnect={int(entry['nconnect'])}",
        f"rsize={int(entry['rsize'])}",
        f"wsize={int(entry['wsize'])}",
        "hard" if entry["hard"] else "soft",
        f"timeo={int(entry['timeo'])}",
        f"retrans={int(entry['retrans'])}",
    ]
    if entry.get("fsc", False):
        options.append("fsc")
    options.extend(str(o) for o in entry.get("extra_options", []))
    return tuple(options)


def desired_mount(entry: dict[str, Any], server: str) -> DesiredMount:
    return DesiredMount(src=f"{server}:{entry['export']}", path=str(entry["mount_point"]).rstrip("/") or "/",
                        fstype="nfs", options=render_options(entry), purpose=str(entry.get("purpose", "general")))


def parse_options(raw: str) -> dict[str, str | None]:
    options: dict[str, str | None] = {}
    for item in raw.split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        options[key] = value if sep else None
    return options


def _unescape(field_text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_text)


def parse_mounts_table(text: str) -> list[MountEntry]:
    """Entries of /proc/mounts or /etc/fstab (comments and blank lines skipped; octal escapes decoded)."""
    entries: list[MountEntry] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) < 4:
            continue
        entries.append(MountEntry(src=_unescape(fields[0]), path=_unescape(fields[1]), fstype=fields[2],
                                  options=parse_options(fields[3]), raw_options=fields[3]))
    return entries


def _fstab_escape(value: str) -> str:
    return value.replace(" ", "\\040")


def fstab_in_sync(fstab_text: str, desired: DesiredMount) -> bool:
    """True when ansible.posix.mount (state present/mounted) would leave /etc/fstab unchanged for this share.

    Its rule (ansible.posix 1.x/2.x, set_mount on Linux): every line whose second field is the mount point
    (spaces escaped as \\040) must carry the same source, type and options and the dump and pass fields
    written as ``0``; a line without them, or no line at all, is rewritten. The role skips that module call for
    a mounted share whose line already holds, which is what makes a converged node's re-run cheap."""
    name = _fstab_escape(desired.path)
    want = [_fstab_escape(desired.src), desired.fstype, _fstab_escape(desired.opts), "0", "0"]
    found = False
    for line in fstab_text.splitlines():
        if not line.strip() or line.strip().startswith("#"):
            continue
        fields = line.split("#")[0].split()
        if len(fields) not in (4, 5, 6) or fields[1] != name:
            continue
        found = True
        if len(fields) != 6 or [fields[0], fields[2], fields[3], fields[4], fields[5]] != want:
            return False
    return found


def find_mount(entries: Sequence[MountEntry], path: str) -> MountEntry | None:
    """The entry mounted last on `path` (the one visible there), or None."""
    path = path.rstrip("/") or "/"
    found = None
    for entry in entries:
        if (entry.path.rstrip("/") or "/") == path:
            found = entry
    return found


def _live_version(live: MountEntry) -> str:
    vers = live.options.get("vers") or ("4.0" if live.fstype == "nfs4" else "")
    return "4.0" if vers == "4" else str(vers)


def compare_live(desired: DesiredMount, live: MountEntry | None,
                 previous: MountEntry | None = None) -> LiveComparison:
    """Compare /proc/mounts with the desired share. previous: the fstab entry as it was before this run."""
    if live is None:
        return LiveComparison(mounted=False)
    if live.fstype not in ("nfs", "nfs4"):
        return LiveComparison(mounted=True, foreign=f"{live.fstype} {live.src}")
    want = parse_options(desired.opts)
    result = LiveComparison(mounted=True)

    def drift(option: str, desired_value: Any, live_value: Any, note: str = "") -> None:
        result.drift.append(OptionDiff(option, desired_value, live_value, note))

    if live.src.rstrip("/") != desired.src.rstrip("/"):
        drift("source", desired.src, live.src, "mounted from another server or export")
    if _live_version(live) != want.get("vers"):
        drift("vers", want.get("vers"), _live_version(live))
    if live.options.get("proto") != want.get("proto"):
        drift("proto", want.get("proto"), live.options.get("proto"))
    live_nconnect = live.options.get("nconnect") or "1"  # the kernel omits nconnect when it was not given
    if live_nconnect != want.get("nconnect"):
        drift("nconnect", int(want["nconnect"] or 1), int(live_nconnect))
    want_hard = "soft" not in want
    live_hard = "soft" not in live.options and "softerr" not in live.options
    if want_hard != live_hard:
        drift("hard", want_hard, live_hard)
    for key in ("timeo", "retrans"):
        if live.options.get(key) != want.get(key):
            drift(key, int(want[key] or 0), None if live.options.get(key) is None else int(live.options[key] or 0))
    if ("fsc" in want) != ("fsc" in live.options):
        drift("fsc", "fsc" in want, "fsc" in live.options)
    for flag in sorted(KERNEL_VISIBLE_FLAGS & set(want)):
        if flag not in live.options:
            drift(flag, True, False)
    if "ro" in live.options and "ro" not in want:
        drift("ro", False, True, "mounted read-only")
    for flag in ("noatime", "nodiratime", "nosuid", "nodev", "noexec"):
        if flag in live.options and flag not in want:
            drift(flag, False, True)

    previous_options = parse_options(previous.raw_options) if previous is not None else {}
    for key in ("rsize", "wsize"):
        requested = int(want[key] or 0)
        granted = int(live.options.get(key) or 0)
        if granted == requested:
            continue
        if granted > requested:
            drift(key, requested, granted, "the live share uses larger I/O than requested")
        elif previous_options.get(key) not in (None, str(requested)):
            drift(key, requested, granted, f"request changed from {previous_options.get(key)} since the mount")
        else:
            result.negotiated.append(OptionDiff(key, requested, granted, "the server negotiated less than requested"))
    return result


def describe(comparison: LiveComparison) -> str:
    """One line for a human: what differs."""
    if not comparison.mounted:
        return "not mounted"
    if comparison.foreign:
        return f"mount point holds {comparison.foreign}, not an NFS share of this inventory"
    parts = [f"{d.option}: live {d.live}, desired {d.desired}" + (f" ({d.note})" if d.note else "")
             for d in comparison.drift]
    return "; ".join(parts) if parts else "in sync"


def server_of(src: str) -> str:
    """'198.51.100.21' from '198.51.100.21:/ifs/data' (and '[fd00::1]' from '[fd00::1]:/ifs')."""
    return src.rsplit(":", 1)[0] if ":" in src else src


def plan_cycles(wanted: Sequence[DesiredMount], before: dict[str, LiveComparison],
                live_table: Sequence[MountEntry]) -> list[tuple[list[DesiredMount], str]]:
    """Which shares must be unmounted and mounted again, together, and why a needed cycle is blocked.

    Linux keeps one NFS client per server (and version, transport): its TCP connections, hence nconnect, are
    shared by every mount of that server, and a share mounted again joins the client that is still there.
    A changed nconnect therefore takes every share of that server down and up together; other drifts
    (timeo, rsize, flags, ...) are per mount and only the drifted shares are cycled. When a mount that is not
    in `wanted` also uses the server and nconnect must change, nothing is done: (group, reason) is returned.
    """
    drifted = [w for w in wanted if before[w.path].mounted and not before[w.path].foreign and before[w.path].drift]
    if not drifted:
        return []
    options = {d.option for w in drifted for d in before[w.path].drift}
    if "nconnect" not in options:
        return [(drifted, "")]
    live_by_path = {w.path: find_mount(live_table, w.path) for w in wanted}
    servers = {server_of(w.src) for w in drifted} | {server_of(live.src) for w in drifted
                                                     if (live := live_by_path[w.path]) is not None}
    group = [w for w in wanted if before[w.path].mounted and not before[w.path].foreign
             and (live := live_by_path[w.path]) is not None and server_of(live.src) in servers]
    ours = {w.path for w in wanted}
    others = sorted({e.path for e in live_table if e.fstype in ("nfs", "nfs4") and server_of(e.src) in servers
                     and (e.path.rstrip("/") or "/") not in ours})
    if others:
        return [(group, f"{', '.join(others)} also mount from {', '.join(sorted(servers))} and are not in the "
                        "inventory; Linux shares one NFS client (and its nconnect connections) per server, so "
                        "nconnect cannot change while they stay mounted: unmount them, or keep nconnect")]
    return [(group, "")]


def shared_client_problems(host: str, mounts: Sequence[Any]) -> list[Problem]:
    """Mounts of one server with the same vers and proto share one client: their nconnect must agree. An nconnect
    out of 1..16 is judged by check_mount alone (one row for that defect)."""
    problems: list[Problem] = []
    first: dict[tuple[str, str], tuple[int, Any]] = {}
    for index, entry in enumerate(mounts):
        if not isinstance(entry, dict) or not 1 <= (_as_int(entry.get("nconnect")) or 0) <= 16:
            continue
        key = (str(entry.get("vers")), str(entry.get("proto")))
        if key not in first:
            first[key] = (index, entry["nconnect"])
        elif _as_int(entry["nconnect"]) != _as_int(first[key][1]):
            problems.append(Problem(
                host, f"nfs_mounts[{index}].nconnect", entry["nconnect"],
                f"differs from nfs_mounts[{first[key][0]}].nconnect={first[key][1]}: both mount from the same "
                f"server with vers={key[0]} proto={key[1]}, and Linux shares one NFS client (and its TCP "
                "connections) per server, so the first mount's nconnect would apply to both",
                f"set nconnect: {first[key][1]} on both"))
    return problems
