"""PowerScale's inventory rules, their one home: powerscale_exports, powerscale_quotas, powerscale_smartconnect.

inventory_problems() is the one function: library/powerscale_inventory_check.py (the powerscale role's input
check, roles/powerscale/tasks/check_input.yml) and preflight (preflight_rules.rule_exports, rule_export_exposure,
rule_smartconnect) both call it, each part by name (PARTS). Preflight keeps only what spans features: export
clients against the DGX that mount them, the validation mounts, SmartConnect addresses against storage_subnet,
the storage NICs of the PowerScale and DGX hosts, and the DGX -> PowerScale server mapping.

Quota thresholds are ordered advisory <= soft <= hard, each pair checked (so soft <= hard and advisory <= hard
also hold when the middle value is not set). That is OneFS's SmartQuotas model: the advisory threshold only
sends a notice, below the soft limit; the soft threshold lets writes go on for the grace period
(soft_grace_s, required with it), below the hard limit; the hard threshold refuses writes. An advisory above the
soft limit would warn after writes are already on their grace period. (The role's copy checked only soft <= hard
and advisory <= hard, preflight's copy advisory <= soft <= hard between the values set; both now check the
three pairs.)

Standard library only; Problem rows (module_utils/inventory_problem.py) so that a defect reads the same in the
role's failure and in preflight's table.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ansible.module_utils.inventory_problem import MISSING, Problem, is_int

if TYPE_CHECKING:  # for annotations only: the module may run on a control node python3 older than 3.10
    from typing import TypeAlias

    IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address

EXPORTS = "powerscale_exports"
QUOTAS = "powerscale_quotas"
SMARTCONNECT = "powerscale_smartconnect"
# The parts of inventory_problems, in the order they report. exports: paths, fields, owner group; exposure: who
# may mount (clients, root squash); quotas: paths and thresholds; smartconnect: the pool when it is enabled.
PARTS = ("exports", "exposure", "quotas", "smartconnect")

SECURITY_FLAVORS = ("unix", "krb5", "krb5i", "krb5p")
CLIENT_LISTS = ("clients", "root_clients", "read_only_clients", "read_write_clients")
EXPORT_BOOLEANS = ("read_only", "all_dirs", "open_to_all_clients", "no_root_squash")
WORLD_CLIENTS = frozenset({"*", "0.0.0.0/0", "::/0"})
ROOT_USERS = frozenset({"root", "uid:0", "0"})
THRESHOLDS = ("hard", "soft", "soft_grace_s", "advisory")
# advisory <= soft <= hard: every pair, (lower, higher).
THRESHOLD_ORDER = (("advisory", "soft"), ("soft", "hard"), ("advisory", "hard"))
CONNECT_POLICIES = ("round_robin", "conn_count", "throughput", "cpu_usage")
ALLOC_METHODS = ("dynamic", "static")
OCTAL_MODE_RE = re.compile(r"0?[0-7]{3,4}")
EXPORTS_FILE = "exports.yml"
STORAGE_FILE = "storage.yml"


def address(value: Any) -> IPAddress | None:
    """The IP address a string names, or None (preflight_rules uses it too)."""
    try:
        return ipaddress.ip_address(value) if isinstance(value, str) else None
    except ValueError:
        return None


def ip_between(value: IPAddress, low: IPAddress, high: IPAddress) -> bool:
    """low <= value <= high; an address is never between two of the other IP version."""
    return value.version == low.version == high.version and int(low) <= int(value) <= int(high)


def ifs_path_problem(value: Any) -> str | None:
    """Why `value` is not a directory path under /ifs the OneFS API takes, or None (MISSING: not given)."""
    if value is MISSING:
        return "is required"
    if not isinstance(value, str):
        return "must be a string path under /ifs/"
    if not value.startswith("/ifs/") or len(value.rstrip("/")) <= len("/ifs"):
        return "is not a path under /ifs/"
    if re.search(r"\s", value) or "//" in value or "/../" in value + "/":
        return "must be a plain absolute path (no spaces, // or ..)"
    return None


def _entries(host: str, name: str, value: Any, fix: str) -> tuple[list[tuple[int, Mapping[str, Any]]], list[Problem]]:
    """(position, entry) of each mapping in a list variable, and a row for the list or each entry that is not."""
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [Problem(host, name, value, "must be a list", fix)]
    out: list[tuple[int, Mapping[str, Any]]] = []
    problems: list[Problem] = []
    for pos, entry in enumerate(value):
        if isinstance(entry, Mapping):
            out.append((pos, entry))
        else:
            problems.append(Problem(host, f"{name}[{pos}]", entry, "must be a mapping", fix))
    return out, problems


def export_paths(exports: Any) -> list[str]:
    """The export paths of powerscale_exports that are valid /ifs paths, without trailing slash."""
    paths = [e["path"].rstrip("/") for e in (exports if isinstance(exports, list) else [])
             if isinstance(e, Mapping) and ifs_path_problem(e.get("path")) is None]
    return list(dict.fromkeys(paths))


# ---------------------------------------------------------------------------------------------- exports


def export_problems(host: str, exports: Any) -> list[Problem]:
    """Each export once, on a path under /ifs; its fields of the type the role sends (mode a quoted octal string,
    map_root a user, flavors OneFS knows, client lists of single clients, booleans); no group root (GID 0 is
    the group wheel on OneFS, so a directory asked for group root would never settle)."""
    entries, out = _entries(host, EXPORTS, exports, f"list the exports as in {EXPORTS_FILE}")
    seen: dict[str, int] = {}
    for pos, export in entries:
        var = f"{EXPORTS}[{pos}]"
        path = export.get("path", MISSING)
        bad = ifs_path_problem(path)
        if bad:
            out.append(Problem(host, f"{var}.path", path, bad, "give the exported directory, e.g. /ifs/data/training"))
        elif path.rstrip("/") in seen:
            out.append(Problem(host, f"{var}.path", path,
                               f"duplicate export path ({EXPORTS}[{seen[path.rstrip('/')]}] has it too)",
                               "declare each export once (clients can be a list)"))
        else:
            seen[path.rstrip("/")] = pos
        mode = export.get("mode", MISSING)
        if mode is not MISSING and not (isinstance(mode, str) and OCTAL_MODE_RE.fullmatch(mode)):
            out.append(Problem(host, f"{var}.mode", mode, "is not an octal mode string",
                               'quote it, e.g. "0755" (unquoted, YAML reads 0755 as a number)'))
        for key in ("owner", "group", "map_root", "map_non_root", "description"):
            value = export.get(key, MISSING)
            if value is not MISSING and not isinstance(value, str):
                out.append(Problem(host, f"{var}.{key}", value, "must be a string",
                                   "give a name (or UID:n / GID:n) in quotes" if key != "description" else "quote it"))
        if export.get("group") == "root":
            out.append(Problem(host, f"{var}.group", "root",
                               "names no group on OneFS: GID 0 is the group wheel there, so the directory's group "
                               "would never settle", "set group: wheel (or GID:0)"))
        flavors = export.get("security_flavors", MISSING)
        if flavors is not MISSING:
            if not isinstance(flavors, list) or not flavors:
                out.append(Problem(host, f"{var}.security_flavors", flavors, "must be a non-empty list",
                                   f"list one or more of {', '.join(SECURITY_FLAVORS)} (default [unix])"))
            else:
                for i, flavor in enumerate(flavors):
                    if flavor not in SECURITY_FLAVORS:
                        out.append(Problem(host, f"{var}.security_flavors[{i}]", flavor,
                                           "is not a security flavor of OneFS NFS exports",
                                           f"use one of {', '.join(SECURITY_FLAVORS)}"))
        for key in CLIENT_LISTS:
            clients = export.get(key, MISSING)
            if clients is MISSING:
                continue
            if not isinstance(clients, list):
                out.append(Problem(host, f"{var}.{key}", clients, "must be a list",
                                   "one client per list entry, e.g. [198.51.100.0/24] ([] for none)"))
                continue
            for i, client in enumerate(clients):
                if not isinstance(client, str) or not re.fullmatch(r"[^\s,]+", client):
                    out.append(Problem(host, f"{var}.{key}[{i}]", client,
                                       "is not one client (IP, NETWORK/PREFIX or host name)",
                                       "one client per list entry, without spaces or commas"))
        for key in EXPORT_BOOLEANS:
            value = export.get(key, MISSING)
            if value is not MISSING and not isinstance(value, bool):
                out.append(Problem(host, f"{var}.{key}", value, "must be a boolean", "set true or false (unquoted)"))
    return out


def exposure_problems(host: str, exports: Any, dgx_storage_addresses: Sequence[Any] | None) -> list[Problem]:
    """Exports are client-restricted and root-squashed unless the export says otherwise in so many words: a
    client that is every host needs open_to_all_clients: true, map_root: root needs no_root_squash: true. An
    export that would list no client at all is open to every host on OneFS and is refused: no client in any of
    its four lists and no DGX storage address to derive clients: [] from (the role's default clients).
    dgx_storage_addresses None: not known, that rule is skipped."""
    entries, _unused = _entries(host, EXPORTS, exports, "")
    out: list[Problem] = []
    for pos, export in entries:
        var = f"{EXPORTS}[{pos}]"
        lists = {k: v if isinstance(v := export.get(k), list) else [] for k in CLIENT_LISTS}
        world = [(k, c) for k, cs in lists.items() for c in cs if str(c).strip().lower() in WORLD_CLIENTS]
        if world and export.get("open_to_all_clients") is not True:
            key, client = world[0]
            out.append(Problem(host, f"{var}.{key}", client, "lets every host mount the export",
                               "list the storage subnet or the DGX storage addresses, or set open_to_all_clients: "
                               "true on this export if that is intended"))
        if dgx_storage_addresses is not None and not any(lists.values()) and not dgx_storage_addresses:
            out.append(Problem(host, f"{var}.clients", lists["clients"],
                               "no clients and no DGX storage address to derive them from: OneFS would let every "
                               "host mount the export", "list the clients, or give the dgx hosts storage_nics"))
        root = export.get("map_root")
        if isinstance(root, str) and root.strip().lower() in ROOT_USERS and export.get("no_root_squash") is not True:
            out.append(Problem(host, f"{var}.map_root", root, "maps root to root: no root squash for any client",
                               "keep map_root: nobody (list root_clients for hosts that need root), or set "
                               "no_root_squash: true on this export if that is intended"))
    return out


# ---------------------------------------------------------------------------------------------- quotas


def threshold_order_violations(thresholds: Mapping[str, Any]) -> list[tuple[str, int, str, int]]:
    """(lower, its value, higher, its value) for each pair of advisory <= soft <= hard that is out of order,
    at most one per lower threshold (advisory above soft is not reported again against hard). Thresholds that
    are not integers are skipped (their type is another row). powerscale_quota (the API's names: soft_grace)
    calls it too."""
    out: list[tuple[str, int, str, int]] = []
    for low, high in THRESHOLD_ORDER:
        low_v, high_v = thresholds.get(low), thresholds.get(high)
        if is_int(low_v) and is_int(high_v) and low_v > high_v and all(o[0] != low for o in out):
            out.append((low, low_v, high, high_v))
    return out


def quota_problems(host: str, quotas: Any, exports: Any) -> list[Problem]:
    """Each directory quota on a path under /ifs, inside an export of powerscale_exports (exports None: not
    known, skipped); thresholds in bytes (soft_grace_s in seconds), each an integer >= 1 (the API's minimum) or
    null / absent for none; advisory <= soft <= hard; a soft threshold needs soft_grace_s."""
    entries, out = _entries(host, QUOTAS, quotas, f"list the quotas as in {EXPORTS_FILE}")
    inside = export_paths(exports) if exports is not None else None
    for pos, quota in entries:
        var = f"{QUOTAS}[{pos}]"
        path = quota.get("path", MISSING)
        bad = ifs_path_problem(path)
        if bad:
            out.append(Problem(host, f"{var}.path", path, bad, "give the quota's directory, e.g. /ifs/data/scratch"))
        elif inside is not None and not any(path.rstrip("/") == p or path.startswith(p + "/") for p in inside):
            out.append(Problem(host, f"{var}.path", path, "is not inside any export",
                               f"use a path under one of: {', '.join(inside)}" if inside
                               else f"declare the export in {EXPORTS} first"))
        kind = quota.get("type", "directory")
        if kind != "directory":
            out.append(Problem(host, f"{var}.type", kind, "is not a quota type the role manages",
                               "set type: directory"))
        if "include_snapshots" in quota and not isinstance(quota["include_snapshots"], bool):
            out.append(Problem(host, f"{var}.include_snapshots", quota["include_snapshots"], "must be a boolean",
                               "set true or false (unquoted)"))
        limits = quota.get("thresholds", {})
        if limits is None:
            limits = {}
        if not isinstance(limits, Mapping):
            out.append(Problem(host, f"{var}.thresholds", limits, "must be a mapping",
                               "give hard, soft, soft_grace_s and advisory (null or absent for none)"))
            continue
        where = f"quota {path}" if isinstance(path, str) else "this quota"
        for key in limits:
            if key not in THRESHOLDS:
                out.append(Problem(host, f"{var}.thresholds.{key}", limits[key],
                                   "is not a threshold: it would never be sent",
                                   f"use {', '.join(THRESHOLDS)} (remove it or fix its spelling)"))
        for key in THRESHOLDS:
            value = limits.get(key)
            if value is not None and (not is_int(value) or value < 1):
                out.append(Problem(host, f"{var}.thresholds.{key}", value,
                                   "must be an integer >= 1 (the API's minimum)",
                                   f"give {'seconds' if key == 'soft_grace_s' else 'bytes'} >= 1, or leave it out "
                                   "(or null) for none"))
        for low, low_v, high, high_v in threshold_order_violations(limits):
            out.append(Problem(host, f"{var}.thresholds.{low}", low_v,
                               f"must not exceed {high} ({high_v}) on {where}: OneFS gives an advisory notice below "
                               "the soft limit and the soft limit below the hard one",
                               "order them advisory <= soft <= hard"))
        if limits.get("soft") is not None and limits.get("soft_grace_s") is None:
            out.append(Problem(host, f"{var}.thresholds.soft_grace_s", limits.get("soft_grace_s", MISSING),
                               f"a soft threshold needs a grace period ({where})",
                               "set soft_grace_s (seconds), e.g. 604800 for a week"))
    return out


# ---------------------------------------------------------------------------------------------- SmartConnect


def smartconnect_ranges(smartconnect: Any) -> list[tuple[int, IPAddress, IPAddress]]:
    """(position, low, high) of each well-formed ip_ranges entry (two addresses of one IP version, low <= high)."""
    ranges = smartconnect.get("ip_ranges") if isinstance(smartconnect, Mapping) else None
    out: list[tuple[int, IPAddress, IPAddress]] = []
    for pos, rng in enumerate(ranges if isinstance(ranges, list) else []):
        if not isinstance(rng, Mapping):
            continue
        low, high = address(rng.get("low")), address(rng.get("high"))
        if low is not None and high is not None and low.version == high.version and int(low) <= int(high):
            out.append((pos, low, high))
    return out


def smartconnect_problems(host: str, smartconnect: Any) -> list[Problem]:
    """When SmartConnect is enabled, the pool is complete (subnet, pool, zone, ip_ranges, interfaces, a connect
    policy OneFS knows), its ranges are well formed (two addresses of one version, low <= high, disjoint) and the
    service address, when set, is an address outside them (OneFS would hand it to a node)."""
    if smartconnect is None:
        return []
    if not isinstance(smartconnect, Mapping):
        return [Problem(host, SMARTCONNECT, smartconnect, "must be a mapping", f"see {STORAGE_FILE}")]
    enabled = smartconnect.get("enabled", False)
    if not isinstance(enabled, bool):
        return [Problem(host, f"{SMARTCONNECT}.enabled", enabled, "must be a boolean", "set true or false (unquoted)")]
    if not enabled:
        return []
    out: list[Problem] = []
    for key, what in (("subnet", "the OneFS subnet of the pool, e.g. subnet0"), ("pool", "the pool's name"),
                      ("zone", "the SmartConnect zone name the DGX mount, e.g. dl.storage.example.com")):
        value = smartconnect.get(key, MISSING)
        if not isinstance(value, str) or not value.strip():
            out.append(Problem(host, f"{SMARTCONNECT}.{key}", value, "is required when SmartConnect is enabled",
                               f"set {key}: {what} (or enabled: false)"))
    for key in ("groupnet",):
        value = smartconnect.get(key, MISSING)
        if value is not MISSING and (not isinstance(value, str) or not value.strip()):
            out.append(Problem(host, f"{SMARTCONNECT}.{key}", value, "must be a non-empty string",
                               "e.g. groupnet0 (or leave it out)"))
    for key, choices in (("connect_policy", CONNECT_POLICIES), ("alloc_method", ALLOC_METHODS)):
        value = smartconnect.get(key, MISSING)
        if value is not MISSING and value not in choices:
            out.append(Problem(host, f"{SMARTCONNECT}.{key}", value, "is not a value OneFS takes",
                               f"use one of {', '.join(choices)}"))
    interfaces = smartconnect.get("interfaces", MISSING)
    if not isinstance(interfaces, list) or not interfaces:
        out.append(Problem(host, f"{SMARTCONNECT}.interfaces", interfaces,
                           "must list the pool's member interfaces when SmartConnect is enabled",
                           "list the storage NIC names of the PowerScale nodes, e.g. [40gige-1, 40gige-2]"))
    else:
        for pos, name in enumerate(interfaces):
            if not isinstance(name, str) or not name.strip():
                out.append(Problem(host, f"{SMARTCONNECT}.interfaces[{pos}]", name, "must be an interface name",
                                   "a storage NIC name of the PowerScale nodes"))
    out += _range_problems(host, smartconnect)
    return out


def _range_problems(host: str, smartconnect: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    ranges = smartconnect.get("ip_ranges", MISSING)
    if not isinstance(ranges, list) or not ranges:
        out.append(Problem(host, f"{SMARTCONNECT}.ip_ranges", ranges,
                           "must list the pool's address ranges when SmartConnect is enabled",
                           "list {low, high} ranges of the storage subnet"))
        ranges = []
    kept: list[tuple[int, IPAddress, IPAddress]] = []
    for pos, rng in enumerate(ranges):
        var = f"{SMARTCONNECT}.ip_ranges[{pos}]"
        if not isinstance(rng, Mapping):
            out.append(Problem(host, var, rng, "must be a mapping", "write {low: ADDRESS, high: ADDRESS}"))
            continue
        low, high = address(rng.get("low")), address(rng.get("high"))
        bad = [k for k, a in (("low", low), ("high", high)) if a is None]
        for key in bad:
            out.append(Problem(host, f"{var}.{key}", rng.get(key, MISSING), "is not an IP address",
                               "set an address like 198.51.100.21"))
        if low is None or high is None:
            continue
        if low.version != high.version:
            out.append(Problem(host, var, rng, f"low is an IPv{low.version} and high an IPv{high.version} address",
                               "use two addresses of the storage subnet"))
            continue
        if int(low) > int(high):
            out.append(Problem(host, var, rng, "low is above high", "swap low and high"))
            continue
        for other_pos, olow, ohigh in kept:
            if ip_between(low, olow, ohigh) or ip_between(olow, low, high):
                out.append(Problem(host, var, rng, f"overlaps {SMARTCONNECT}.ip_ranges[{other_pos}]",
                                   "make the ranges disjoint"))
        kept.append((pos, low, high))
    raw = smartconnect.get("service_address", "")
    if raw in ("", None):
        return out
    service = address(raw)
    if service is None:
        out.append(Problem(host, f"{SMARTCONNECT}.service_address", raw, "is not an IP address",
                           "set the SmartConnect service address (an address of the storage subnet), or \"\""))
        return out
    for pos, low, high in kept:
        if ip_between(service, low, high):
            out.append(Problem(host, f"{SMARTCONNECT}.service_address", str(service),
                               f"lies inside {SMARTCONNECT}.ip_ranges[{pos}]: OneFS would hand it to a node",
                               "use an address outside the ranges"))
    return out


# ---------------------------------------------------------------------------------------------- the one function


def inventory_problems(host: str, exports: Any, quotas: Any, smartconnect: Any,
                       dgx_storage_addresses: Sequence[Any] | None, parts: Iterable[str] = PARTS) -> list[Problem]:
    """PowerScale's inventory rules, their one home, as rows on `host` (the role: the host it runs for; preflight
    relabels each row with where the variable is set). exports, quotas, smartconnect: the values of
    powerscale_exports, powerscale_quotas and powerscale_smartconnect (None: not set, nothing to check);
    dgx_storage_addresses: the DGX storage NIC addresses an export with clients: [] gets (None: not known).
    parts: which of PARTS to run (every one by default; the role's tasks and preflight's rules each run theirs).
    """
    wanted = set(parts)
    unknown = wanted - set(PARTS)
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}; known: {', '.join(PARTS)}")
    out: list[Problem] = []
    if "exports" in wanted:
        out += export_problems(host, exports)
    if "exposure" in wanted:
        out += exposure_problems(host, exports, dgx_storage_addresses)
    if "quotas" in wanted:
        out += quota_problems(host, quotas, exports)
    if "smartconnect" in wanted:
        out += smartconnect_problems(host, smartconnect)
    return out
