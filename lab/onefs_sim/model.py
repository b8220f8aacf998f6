"""OneFS semantics of the simulator: validation, ids, zones, conflicts, defaults.

Pure state + rules, no HTTP and no system calls (those are in server.py and backends.py). Every failure is a
:class:`PapiError` carrying the HTTP status and the PAPI error body ``{"errors": [{"code", "message"}]}``.
The response shapes follow the public PAPI documentation; tests/powerscale/fixtures/ holds the reference
shapes the simulator is checked against.
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

ONEFS_RELEASE = "9.5.0.0"
PAPI_LATEST = 17  # OneFS 9.5 serves PAPI versions up to 17

SECURITY_FLAVORS = {"unix", "krb5", "krb5i", "krb5p"}
CONNECT_POLICIES = {"round_robin", "conn_count", "throughput", "cpu_usage"}
ALLOC_METHODS = {"static", "dynamic"}
QUOTA_TYPES = {"directory", "user", "group", "default-user", "default-group"}


# ---- identities (the System zone's local provider) --------------------------------------------------------
# Built-in personas as OneFS resolves them: GID 0 is the group ``wheel`` (a namespace ACL published with a OneFS 8.1
# cluster: {"id": "GID:0", "name": "wheel", "type": "group"}, tests/fixtures/onefs/real/SOURCES); there is no group
# ``root``. ``nobody`` is UID 65534 (the NFS map_root default ``USER:nobody``).
BUILTIN_USERS: dict[str, int] = {"root": 0, "nobody": 65534}
BUILTIN_GROUPS: dict[str, int] = {"wheel": 0}

# RBAC privileges (OneFS ``ISI_PRIV_*``) each part of the API needs, as the simulator enforces them. A privilege
# held read-only ('r' in /auth/id) allows GET; writes need 'w'. Namespace access (RAN) needs ISI_PRIV_NS_IFS_ACCESS
# (and ISI_PRIV_NS_TRAVERSE to walk to the path); giving a directory to another owner needs root or
# ISI_PRIV_IFS_RESTORE (Dell's CSI driver documentation: the privileges of a non-root PowerScale user).
ALL_PRIVILEGES = ("ISI_PRIV_LOGIN_PAPI", "ISI_PRIV_AUTH", "ISI_PRIV_NFS", "ISI_PRIV_QUOTA", "ISI_PRIV_NETWORK",
                  "ISI_PRIV_LICENSE", "ISI_PRIV_NS_TRAVERSE", "ISI_PRIV_NS_IFS_ACCESS", "ISI_PRIV_IFS_RESTORE",
                  "ISI_PRIV_IFS_BACKUP", "ISI_PRIV_CLUSTER", "ISI_PRIV_SNAPSHOT", "ISI_PRIV_STATISTICS")
PRIVILEGE_NAMES = {"ISI_PRIV_LOGIN_PAPI": "Platform API", "ISI_PRIV_AUTH": "Auth", "ISI_PRIV_NFS": "NFS",
                   "ISI_PRIV_QUOTA": "SmartQuotas", "ISI_PRIV_NETWORK": "Network", "ISI_PRIV_LICENSE": "License",
                   "ISI_PRIV_NS_TRAVERSE": "Namespace Traverse", "ISI_PRIV_NS_IFS_ACCESS": "Namespace Access",
                   "ISI_PRIV_IFS_RESTORE": "Restore", "ISI_PRIV_IFS_BACKUP": "Backup", "ISI_PRIV_CLUSTER": "Cluster",
                   "ISI_PRIV_SNAPSHOT": "Snapshot", "ISI_PRIV_STATISTICS": "Statistics"}

# Licences (GET /platform/5/license/licenses; status values of the isilon-sdk v9_5_0 LicenseLicense model).
LICENCE_STATUSES = ("Unlicensed", "Licensed", "Expired", "Evaluation", "Evaluation Expired")
SMARTCONNECT_LICENCE = "SmartConnect Advanced"
DEFAULT_LICENCES = {"SmartConnect Advanced": "Licensed", "SmartQuotas": "Licensed", "SnapshotIQ": "Unlicensed",
                    "SyncIQ": "Unlicensed"}


class PapiError(Exception):
    def __init__(self, status: int, code: str, message: str, field_name: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field_name

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field:
            err["field"] = self.field
        return {"errors": [err]}


def bad_request(message: str, field_name: str | None = None) -> PapiError:
    return PapiError(400, "AEC_BAD_REQUEST", message, field_name)


def not_found(message: str) -> PapiError:
    return PapiError(404, "AEC_NOT_FOUND", message)


def conflict(message: str) -> PapiError:
    return PapiError(409, "AEC_CONFLICT", message)


# ---- export fields -----------------------------------------------------------------------------------

def _mapping_default(user: str, enabled: bool) -> dict[str, Any]:
    return {"enabled": enabled, "primary_group": {}, "secondary_groups": [], "user": {"id": f"USER:{user}"}}


EXPORT_DEFAULTS: dict[str, Any] = {
    "all_dirs": False,
    "block_size": 8192,
    "can_set_time": True,
    "case_insensitive": False,
    "case_preserving": True,
    "chown_restricted": False,
    "clients": [],
    "commit_asynchronous": False,
    "conflicting_paths": [],
    "description": "",
    "directory_transfer_size": 131072,
    "encoding": "DEFAULT",
    "link_max": 32767,
    "map_all": None,
    "map_failure": _mapping_default("nobody", False),
    "map_full": True,
    "map_lookup_uid": False,
    "map_non_root": _mapping_default("nobody", False),
    "map_retry": True,
    "map_root": _mapping_default("nobody", True),
    "max_file_size": 9223372036854775807,
    "name_max_size": 255,
    "no_truncate": False,
    "read_only": False,
    "read_only_clients": [],
    "read_transfer_max_size": 1048576,
    "read_transfer_multiple": 512,
    "read_transfer_size": 131072,
    "read_write_clients": [],
    "readdirplus": True,
    "readdirplus_prefetch": 10,
    "return_32bit_file_ids": False,
    "root_clients": [],
    "security_flavors": ["unix"],
    "setattr_asynchronous": False,
    "snapshot": "-",
    "symlinks": True,
    "time_delta": 1e-09,
    "unresolved_clients": [],
    "write_datasync_action": "DATASYNC",
    "write_datasync_reply": "DATASYNC",
    "write_filesync_action": "FILESYNC",
    "write_filesync_reply": "FILESYNC",
    "write_transfer_max_size": 1048576,
    "write_transfer_multiple": 512,
    "write_transfer_size": 524288,
    "write_unstable_action": "UNSTABLE",
    "write_unstable_reply": "UNSTABLE",
}
# Fields a client may set (everything in the defaults except the computed ones) plus the identifying ones.
EXPORT_WRITABLE = (set(EXPORT_DEFAULTS) - {"conflicting_paths", "unresolved_clients"}) | {"paths", "zone"}
CLIENT_LIST_FIELDS = ("clients", "root_clients", "read_only_clients", "read_write_clients")
MAPPING_FIELDS = ("map_root", "map_non_root", "map_failure", "map_all")

_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9*]([A-Za-z0-9*\-]{0,61}[A-Za-z0-9*])?(\.[A-Za-z0-9*]([A-Za-z0-9*\-]{0,61}[A-Za-z0-9*])?)*$")


def _check_client(value: Any, field_name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise bad_request(f"Field: {field_name} must hold non-empty strings, got {value!r}", field_name)
    text = value.strip()
    if text.startswith("@"):  # netgroup
        return text
    try:
        if "/" in text:
            ipaddress.ip_network(text, strict=False)
        else:
            ipaddress.ip_address(text)
        return text
    except ValueError:
        pass
    if _HOSTNAME.match(text) and not re.match(r"^[0-9.]+$", text):
        return text
    raise bad_request(f"Field: {field_name}: invalid client {value!r} (IP address, CIDR, host name or @netgroup)",
                      field_name)


def _check_mapping(value: Any, field_name: str) -> dict[str, Any] | None:
    if value is None and field_name == "map_all":
        return None
    if not isinstance(value, dict):
        raise bad_request(f"Field: {field_name} must be an object", field_name)
    unknown = set(value) - {"enabled", "user", "primary_group", "secondary_groups"}
    if unknown:
        raise bad_request(f"Field: {field_name}: unknown member(s) {sorted(unknown)}", field_name)
    out = _mapping_default("nobody", True)
    if "enabled" in value:
        if not isinstance(value["enabled"], bool):
            raise bad_request(f"Field: {field_name}.enabled must be a boolean", field_name)
        out["enabled"] = value["enabled"]
    if "user" in value:
        out["user"] = {"id": _persona_id(value["user"], "USER", f"{field_name}.user")}
    if value.get("primary_group"):
        out["primary_group"] = {"id": _persona_id(value["primary_group"], "GROUP", f"{field_name}.primary_group")}
    if "secondary_groups" in value:
        groups = value["secondary_groups"] or []
        if not isinstance(groups, list):
            raise bad_request(f"Field: {field_name}.secondary_groups must be a list", field_name)
        out["secondary_groups"] = [{"id": _persona_id(g, "GROUP", f"{field_name}.secondary_groups")} for g in groups]
    return out


def _persona_id(value: Any, kind: str, field_name: str) -> str:
    if isinstance(value, dict):
        if "id" in value:
            value = value["id"]
        elif "name" in value:
            value = f"{(value.get('type') or kind).upper()}:{value['name']}"
    if not isinstance(value, str) or not value:
        raise bad_request(f"Field: {field_name}: invalid persona {value!r}", field_name)
    prefix = value.split(":", 1)[0].upper()
    if ":" not in value:
        return f"{kind}:{value}"
    if prefix not in ("USER", "GROUP", "UID", "GID", "SID"):
        raise bad_request(f"Field: {field_name}: invalid persona {value!r}", field_name)
    return value


def validate_export_fields(body: Any, *, creating: bool) -> dict[str, Any]:
    """Check a POST/PUT export body the way OneFS does and return the normalised fields."""
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    unknown = set(body) - EXPORT_WRITABLE
    if unknown:
        name = sorted(unknown)[0]
        raise bad_request(f"Field: {name} is not a valid field of an NFS export", name)
    out: dict[str, Any] = {}
    if creating and not body.get("paths"):
        raise bad_request("Field: paths is required and must hold at least one path", "paths")
    if "paths" in body:
        paths = body["paths"]
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise bad_request("Field: paths must be a non-empty list of strings", "paths")
        norm = []
        for p in paths:
            if not p.startswith("/ifs"):
                raise bad_request(f"Field: paths: {p!r} is not under /ifs", "paths")
            norm.append(p.rstrip("/") or "/")
        out["paths"] = norm
    for name in CLIENT_LIST_FIELDS:
        if name in body:
            vals = body[name]
            if not isinstance(vals, list):
                raise bad_request(f"Field: {name} must be a list", name)
            out[name] = [_check_client(v, name) for v in vals]
    for name in MAPPING_FIELDS:
        if name in body:
            out[name] = _check_mapping(body[name], name)
    if "security_flavors" in body:
        flavors = body["security_flavors"]
        if not isinstance(flavors, list) or not flavors or any(f not in SECURITY_FLAVORS for f in flavors):
            raise bad_request(f"Field: security_flavors must be a non-empty list of {sorted(SECURITY_FLAVORS)}",
                              "security_flavors")
        out["security_flavors"] = list(flavors)
    for name in ("all_dirs", "read_only", "map_full", "map_lookup_uid", "map_retry", "readdirplus", "symlinks",
                 "can_set_time", "case_insensitive", "case_preserving", "chown_restricted", "no_truncate",
                 "return_32bit_file_ids", "commit_asynchronous", "setattr_asynchronous"):
        if name in body:
            if not isinstance(body[name], bool):
                raise bad_request(f"Field: {name} must be a boolean", name)
            out[name] = body[name]
    if "description" in body:
        if not isinstance(body["description"], str) or len(body["description"]) > 255:
            raise bad_request("Field: description must be a string of at most 255 characters", "description")
        out["description"] = body["description"]
    if "zone" in body and not isinstance(body["zone"], str):
        raise bad_request("Field: zone must be a string", "zone")
    for name in set(body) - set(out) - {"zone"}:
        out[name] = body[name]  # remaining tunables (transfer sizes ...): stored as given
    return out


# ---- the cluster ---------------------------------------------------------------------------------------

@dataclass
class Session:
    user: str
    csrf: str
    created: float
    last_seen: float
    node: int = 1  # LNN of the node that issued it: OneFS keeps sessions per node
    services: list[str] = field(default_factory=list)  # what the login asked for: platform and/or namespace


@dataclass
class ApiUser:
    """A local user the API knows: its UID, primary GID and privileges (id -> 'r' or 'w'); root holds all."""

    name: str
    uid: int
    gid: int = 0
    privileges: dict[str, str] = field(default_factory=dict)

    @property
    def is_root(self) -> bool:
        return self.uid == 0

    def holds(self, privilege: str, write: bool = False) -> bool:
        if self.is_root:
            return True
        have = self.privileges.get(privilege)
        return have == "w" or (have in ("r", "x") and not write)

    def auth_id(self, zone_id: int = 1) -> dict[str, Any]:
        """GET /platform/1/auth/id (isilon-sdk AuthId/AuthIdNtoken; privilege items id, name, permission)."""
        held = {p: "w" for p in ALL_PRIVILEGES} if self.is_root else self.privileges
        gname = next((n for n, g in BUILTIN_GROUPS.items() if g == self.gid), f"GID:{self.gid}")
        return {"ntoken": {
            "additional_id": [], "gid": {"id": f"GID:{self.gid}", "name": gname, "type": "group"},
            "group_sid": {"id": f"SID:S-1-22-2-{self.gid}", "name": gname, "type": "group"},
            "ifs_restricted": False, "local_address": "", "on_disk_group_id": {"id": f"GID:{self.gid}"},
            "on_disk_user_id": {"id": f"UID:{self.uid}"},
            "privilege": [{"id": p, "name": PRIVILEGE_NAMES.get(p, p), "permission": held[p]} for p in sorted(held)],
            "protocol": 17, "remote_address": "", "uid": {"id": f"UID:{self.uid}", "name": self.name, "type": "user"},
            "user_sid": {"id": f"SID:S-1-22-1-{self.uid}", "name": self.name, "type": "user"},
            "zid": zone_id, "zone_id": "System"}}


def forbidden(privilege: str, what: str) -> PapiError:
    return PapiError(403, "AEC_FORBIDDEN", f"Privilege check failed: {what} needs {privilege}")


def resolve_persona(value: Any, kind: str, users: dict[str, int]) -> tuple[int, str]:
    """A persona (name, 'UID:n'/'GID:n', 'USER:name'/'GROUP:name', or {id|name, type}) -> (numeric id, name).

    Unknown names are refused (400), as OneFS refuses a persona its providers cannot resolve.
    """
    table = users if kind == "user" else BUILTIN_GROUPS
    if isinstance(value, dict):
        value = value.get("id") or value.get("name")
    if not isinstance(value, str) or not value:
        raise bad_request(f"invalid {kind} persona {value!r}")
    prefix, sep, rest = value.partition(":")
    numeric = "UID" if kind == "user" else "GID"
    if sep and prefix.upper() == numeric:
        try:
            num = int(rest)
        except ValueError:
            raise bad_request(f"invalid {kind} persona {value!r}") from None
        return num, next((n for n, i in table.items() if i == num), value)
    name = rest if sep and prefix.upper() in ("USER", "GROUP") else value
    if name not in table:
        raise bad_request(f"Failed to find {kind} for '{('USER' if kind == 'user' else 'GROUP')}:{name}': "
                          f"No such {kind}")
    return table[name], name


def persona_view(num: int, kind: str, users: dict[str, int]) -> dict[str, Any]:
    table = users if kind == "user" else BUILTIN_GROUPS
    pid = f"{'UID' if kind == 'user' else 'GID'}:{num}"
    return {"id": pid, "name": next((n for n, i in table.items() if i == num), pid), "type": kind}


def quota_id() -> str:
    """OneFS quota ids are opaque base64-like strings (e.g. 'igSJAAEAAAAAAAAAAAAAQH0RAAAAAAAA')."""
    return base64.urlsafe_b64encode(secrets.token_bytes(24)).decode().rstrip("=")


@dataclass
class Cluster:
    """Everything the PAPI can see. Persisted as JSON (to_json/from_json) by the server."""

    name: str = "onefs-sim"
    guid: str = field(default_factory=lambda: secrets.token_hex(18))
    nodes: list[dict[str, Any]] = field(default_factory=lambda: [{"lnn": 1, "devid": 1, "serial": "SIM0000001"}])
    zones: dict[str, dict[str, Any]] = field(default_factory=lambda: {"System": {"path": "/ifs", "zone_id": 1}})
    exports: dict[int, dict[str, Any]] = field(default_factory=dict)
    next_export_id: int = 1
    quotas: dict[str, dict[str, Any]] = field(default_factory=dict)
    next_project_id: int = 1001
    subnets: dict[str, dict[str, Any]] = field(default_factory=lambda: {
        "groupnet0.subnet0": {"name": "subnet0", "groupnet": "groupnet0", "mtu": 9000, "prefixlen": 24,
                              "addr_family": "ipv4", "gateway": "", "sc_service_addrs": [],
                              "sc_service_name": "", "description": "Initial subnet"},
    })
    pools: dict[str, dict[str, Any]] = field(default_factory=dict)
    licences: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_LICENCES))

    # ---- persistence ----
    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "guid": self.guid, "nodes": self.nodes, "zones": self.zones,
            "exports": {str(k): v for k, v in self.exports.items()}, "next_export_id": self.next_export_id,
            "quotas": self.quotas, "next_project_id": self.next_project_id, "subnets": self.subnets,
            "pools": self.pools, "licences": self.licences,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cluster:
        c = cls()
        for key in ("name", "guid", "nodes", "zones", "next_export_id", "quotas", "next_project_id", "subnets",
                    "pools", "licences"):
            if key in data:
                setattr(c, key, data[key])
        c.exports = {int(k): v for k, v in data.get("exports", {}).items()}
        return c

    # ---- cluster info ----
    def config(self) -> dict[str, Any]:
        return {
            "description": "",
            "devices": [{"devid": n["devid"], "guid": self.guid[:20] + f"{n['devid']:016x}", "is_up": True,
                         "lnn": n["lnn"]} for n in self.nodes],
            "encoding": "utf-8",
            "guid": self.guid,
            "has_quorum": True,
            "is_compliance": False,
            "is_virtual": True,
            "is_vonefs": False,
            "join_mode": "Manual",
            "local_devid": self.nodes[0]["devid"],
            "local_lnn": self.nodes[0]["lnn"],
            "local_serial": self.nodes[0]["serial"],
            "name": self.name,
            "onefs_version": {
                "build": "B_9_5_0_SIM(RELEASE)",
                "copyright": "Copyright (c) simulator. Not a Dell product.",
                "reldate": 1679961600,
                "release": f"v{ONEFS_RELEASE}",
                "revision": "648060130697560064",
                "type": "Isilon OneFS",
                "version": f"Isilon OneFS v{ONEFS_RELEASE} B_9_5_0_SIM(RELEASE)",
            },
            "timezone": {"abbreviation": "UTC", "custom": "", "name": "Coordinated Universal Time",
                         "path": "UTC"},
            "upgrade_type": None,
        }

    def identity(self) -> dict[str, Any]:
        return {"description": "OneFS API simulator (powerscale-dgx-ra lab)",
                "logon": {"motd": "", "motd_header": ""}, "mttdl_level_msg": "none", "name": self.name}

    def node_list(self) -> dict[str, Any]:
        nodes = [{"id": n["devid"], "lnn": n["lnn"], "internal_ip_address": f"128.221.252.{n['lnn']}",
                  "hardware": {"model": "Simulated F800", "serial_number": n["serial"]},
                  "state": {"readonly": {"allowed": True, "enabled": False, "mode": False, "status": "",
                                         "valid": True, "value": False},
                            "smartfail": {"smartfailed": False}},
                  "status": {"version": {"build": "B_9_5_0_SIM(RELEASE)", "release": f"v{ONEFS_RELEASE}",
                                         "revision": "648060130697560064", "type": "Isilon OneFS",
                                         "version": f"Isilon OneFS v{ONEFS_RELEASE}"}}}
                 for n in self.nodes]
        return {"nodes": nodes, "total": len(nodes)}

    # ---- licences ----
    def licence_list(self) -> dict[str, Any]:
        """GET /platform/5/license/licenses (isilon-sdk v9_5_0 LicenseLicenses)."""
        items: list[dict[str, Any]] = []
        for name, status in sorted(self.licences.items()):
            if status not in LICENCE_STATUSES:
                raise ValueError(f"licence {name}: status {status!r} is not one of {LICENCE_STATUSES}")
            items.append({"days_since_expiry": None, "days_to_expiry": None, "expiration": None,
                          "expired_alert": False, "expiring_alert": False, "id": name, "name": name,
                          "status": status, "tiers": []})
        return {"licenses": items}

    def licensed(self, name: str) -> bool:
        return self.licences.get(name) in ("Licensed", "Evaluation")

    # ---- zones ----
    def zone(self, name: str | None) -> tuple[str, dict[str, Any]]:
        zname = name or "System"
        if zname not in self.zones:
            raise not_found(f"Access Zone '{zname}' not found")
        return zname, self.zones[zname]

    def zone_list(self) -> dict[str, Any]:
        zones = [self.zone_view(n) for n in self.zones]
        return {"zones": zones, "total": len(zones)}

    def zone_view(self, name: str) -> dict[str, Any]:
        z = self.zones[name]
        return {"id": name, "name": name, "path": z["path"], "zone_id": z["zone_id"], "groupnet": "groupnet0",
                "system": name == "System", "auth_providers": ["lsa-local-provider:" + name],
                "alternate_system_provider": "lsa-file-provider:System", "map_untrusted": "",
                "netbios_name": "", "skeleton_directory": "/usr/share/skel", "cache_entry_expiry": 14400,
                "create_path": False, "force_overlap": False, "home_directory_umask": 63,
                "negative_cache_entry_expiry": 60, "user_mapping_rules": [], "ifs_restricted": []}

    # ---- exports ----
    def export_view(self, eid: int) -> dict[str, Any]:
        view = copy.deepcopy(self.exports[eid])
        view["id"] = eid
        return view

    def list_exports(self, zone: str | None, path: str | None = None) -> dict[str, Any]:
        zname, _ = self.zone(zone)
        items = [self.export_view(eid) for eid in sorted(self.exports) if self.exports[eid]["zone"] == zname
                 and (path is None or path.rstrip("/") in self.exports[eid]["paths"])]
        return {"exports": items, "resume": None, "total": len(items)}

    def get_export(self, eid: int, zone: str | None) -> dict[str, Any]:
        zname, _ = self.zone(zone)
        if eid not in self.exports or self.exports[eid]["zone"] != zname:
            raise not_found(f"Export {eid} not found in zone '{zname}'")
        return {"exports": [self.export_view(eid)]}

    def _check_export_paths(self, paths: list[str], zone_path: str, zname: str, path_exists: Any) -> None:
        for p in paths:
            if not (p == zone_path or p.startswith(zone_path.rstrip("/") + "/")):
                raise bad_request(f"Path '{p}' is not within the base directory '{zone_path}' of zone '{zname}'",
                                  "paths")
            if not path_exists(p):
                raise bad_request(f"Path '{p}' does not exist", "paths")

    def _check_conflict(self, candidate: dict[str, Any], zname: str, skip: int | None) -> None:
        """Two exports on the same path in a zone conflict when their client sets overlap (empty = everyone)."""
        mine = _all_clients(candidate)
        for eid, other in self.exports.items():
            if eid == skip or other["zone"] != zname:
                continue
            shared = set(candidate["paths"]) & set(other["paths"])
            if not shared:
                continue
            theirs = _all_clients(other)
            if not mine or not theirs or mine & theirs:
                raise conflict(f"Export rules {eid} and the new rule conflict on path '{sorted(shared)[0]}' "
                               f"in zone '{zname}': an export with that path and overlapping clients exists")

    def create_export(self, body: Any, zone_q: str | None, path_exists: Any) -> int:
        fields = validate_export_fields(body, creating=True)
        zname, z = self.zone(fields.pop("zone", None) or zone_q)
        export = copy.deepcopy(EXPORT_DEFAULTS)
        export.update(fields)
        export["zone"] = zname
        self._check_export_paths(export["paths"], z["path"], zname, path_exists)
        self._check_conflict(export, zname, None)
        eid = self.next_export_id
        self.next_export_id += 1
        self.exports[eid] = export
        return eid

    def update_export(self, eid: int, body: Any, zone_q: str | None, path_exists: Any) -> None:
        zname, z = self.zone(zone_q)
        if eid not in self.exports or self.exports[eid]["zone"] != zname:
            raise not_found(f"Export {eid} not found in zone '{zname}'")
        fields = validate_export_fields(body, creating=False)
        if "zone" in fields and fields["zone"] != zname:
            raise bad_request("Field: zone cannot be changed; delete and recreate the export", "zone")
        fields.pop("zone", None)
        merged = copy.deepcopy(self.exports[eid])
        merged.update(fields)
        self._check_export_paths(merged["paths"], z["path"], zname, path_exists)
        self._check_conflict(merged, zname, eid)
        self.exports[eid] = merged

    def delete_export(self, eid: int, zone_q: str | None) -> None:
        zname, _ = self.zone(zone_q)
        if eid not in self.exports or self.exports[eid]["zone"] != zname:
            raise not_found(f"Export {eid} not found in zone '{zname}'")
        del self.exports[eid]

    # ---- quotas ----
    def quota_view(self, qid: str, usage: dict[str, int | None] | None = None) -> dict[str, Any]:
        q = self.quotas[qid]
        view = {k: copy.deepcopy(v) for k, v in q.items() if not k.startswith("_")}
        view["id"] = qid
        view["usage"] = usage or {"fslogical": 0, "fsphysical": 0, "inodes": 0, "logical": 0,
                                  "physical": 0, "applogical": 0, "shadow_logical": None}
        return view

    def create_quota(self, body: Any, path_exists: Any) -> str:
        if not isinstance(body, dict):
            raise bad_request("Request body must be a JSON object")
        allowed = {"path", "type", "include_snapshots", "thresholds", "thresholds_include_overhead", "enforced",
                   "container", "persona", "force", "zone", "thresholds_on"}
        unknown = set(body) - allowed
        if unknown:
            name = sorted(unknown)[0]
            raise bad_request(f"Field: {name} is not a valid field of a quota", name)
        for name in ("path", "type", "include_snapshots"):
            if name not in body:
                raise bad_request(f"Field: {name} is required", name)
        if body["type"] not in QUOTA_TYPES:
            raise bad_request(f"Field: type must be one of {sorted(QUOTA_TYPES)}", "type")
        if body["type"] != "directory":
            raise bad_request("the simulator implements directory quotas only", "type")
        path = str(body["path"]).rstrip("/")
        if not path.startswith("/ifs/"):
            raise bad_request(f"Field: path {path!r} must be a directory under /ifs", "path")
        if not path_exists(path):
            raise bad_request(f"Path '{path}' does not exist", "path")
        for qid, q in self.quotas.items():
            if q["path"] == path and q["type"] == body["type"] and q["include_snapshots"] == body["include_snapshots"]:
                raise conflict(f"Quota {qid} of type {body['type']} already exists on path '{path}'")
        thresholds = self._thresholds(body.get("thresholds") or {}, None)
        qid = quota_id()
        self.quotas[qid] = {
            "container": bool(body.get("container", False)),
            "description": "",
            "efficiency_ratio": None,
            "enforced": bool(body.get("enforced", any(thresholds[k] is not None for k in ("hard", "soft", "advisory")))),
            "include_snapshots": bool(body["include_snapshots"]),
            "labels": "",
            "linked": False,
            "notifications": "default",
            "path": path,
            "persona": None,
            "ready": True,
            "reduction_ratio": None,
            "thresholds": thresholds,
            "thresholds_on": body.get("thresholds_on", "fslogicalsize"),
            "type": body["type"],
            "_project_id": self.next_project_id,
        }
        self.next_project_id += 1
        return qid

    def update_quota(self, qid: str, body: Any) -> None:
        if qid not in self.quotas:
            raise not_found(f"Quota {qid} not found")
        if not isinstance(body, dict):
            raise bad_request("Request body must be a JSON object")
        allowed = {"thresholds", "thresholds_include_overhead", "enforced", "container", "linked", "force",
                   "thresholds_on"}
        unknown = set(body) - allowed
        if unknown:
            name = sorted(unknown)[0]
            raise bad_request(f"Field: {name} cannot be modified on a quota", name)
        q = self.quotas[qid]
        if "thresholds" in body:
            q["thresholds"] = self._thresholds(body["thresholds"] or {}, q["thresholds"])
        for name in ("enforced", "container"):
            if name in body:
                q[name] = bool(body[name])

    @staticmethod
    def _thresholds(given: Any, current: dict[str, Any] | None) -> dict[str, Any]:
        if not isinstance(given, dict):
            raise bad_request("Field: thresholds must be an object", "thresholds")
        names = {"hard", "soft", "advisory", "soft_grace", "percent_advisory", "percent_soft"}
        unknown = set(given) - names
        if unknown:
            raise bad_request(f"Field: thresholds.{sorted(unknown)[0]} is not a valid threshold", "thresholds")
        out: dict[str, Any] = dict(current) if current else {
            "advisory": None, "advisory_exceeded": False, "advisory_last_exceeded": None, "hard": None,
            "hard_exceeded": False, "hard_last_exceeded": None, "percent_advisory": None, "percent_soft": None,
            "soft": None, "soft_exceeded": False, "soft_grace": None, "soft_last_exceeded": None,
        }
        for name in ("hard", "soft", "advisory", "soft_grace"):
            if name in given:
                val = given[name]
                if val is not None and (isinstance(val, bool) or not isinstance(val, int) or val < 1):
                    raise bad_request(f"Field: thresholds.{name}: minimum value is 1 (got {val!r}); "
                                      "null removes the threshold", "thresholds")
                out[name] = val
        if out["soft"] is not None and out["soft_grace"] is None:
            raise bad_request("Field: thresholds.soft_grace is required with a soft threshold", "thresholds")
        hard = out["hard"]
        for name in ("soft", "advisory"):
            if hard is not None and out[name] is not None and out[name] > hard:
                raise bad_request(f"Field: thresholds.{name} ({out[name]}) must not exceed the hard threshold "
                                  f"({hard})", "thresholds")
        return out

    def delete_quota(self, qid: str) -> dict[str, Any]:
        if qid not in self.quotas:
            raise not_found(f"Quota {qid} not found")
        return self.quotas.pop(qid)

    # ---- network ----
    def pool_list(self) -> dict[str, Any]:
        pools = [copy.deepcopy(p) for _, p in sorted(self.pools.items())]
        return {"pools": pools, "resume": None, "total": len(pools)}

    def subnet(self, groupnet: str, subnet: str) -> dict[str, Any]:
        key = f"{groupnet}.{subnet}"
        if key not in self.subnets:
            raise not_found(f"Subnet '{subnet}' not found in groupnet '{groupnet}'")
        view = copy.deepcopy(self.subnets[key])
        view["id"] = key
        view["pools"] = [p["name"] for p in self.pools.values() if p["groupnet"] == groupnet and p["subnet"] == subnet]
        return view

    def _pool_fields(self, body: Any, creating: bool) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("Request body must be a JSON object")
        allowed = {"name", "description", "access_zone", "alloc_method", "ifaces", "ranges", "sc_connect_policy",
                   "sc_dns_zone", "sc_dns_zone_aliases", "sc_subnet", "sc_ttl", "aggregation_mode",
                   "sc_failover_policy", "rebalance_policy", "static_routes", "sc_auto_unsuspend_delay"}
        unknown = set(body) - allowed
        if unknown:
            name = sorted(unknown)[0]
            raise bad_request(f"Field: {name} is not a valid field of a network pool", name)
        if creating and not body.get("name"):
            raise bad_request("Field: name is required", "name")
        if "access_zone" in body and body["access_zone"] not in self.zones:
            raise bad_request(f"Field: access_zone: zone '{body['access_zone']}' does not exist", "access_zone")
        if "alloc_method" in body and body["alloc_method"] not in ALLOC_METHODS:
            raise bad_request(f"Field: alloc_method must be one of {sorted(ALLOC_METHODS)}", "alloc_method")
        if "sc_connect_policy" in body and body["sc_connect_policy"] not in CONNECT_POLICIES:
            raise bad_request(f"Field: sc_connect_policy must be one of {sorted(CONNECT_POLICIES)}",
                              "sc_connect_policy")
        for r in body.get("ranges", []) or []:
            try:
                low, high = ipaddress.ip_address(r["low"]), ipaddress.ip_address(r["high"])
            except (KeyError, TypeError, ValueError):
                raise bad_request(f"Field: ranges: invalid range {r!r}", "ranges") from None
            if low.version != high.version:  # an IPv4 and an IPv6 end: `low > high` would raise TypeError
                raise bad_request(f"Field: ranges: invalid range {r!r}", "ranges")
            if int(low) > int(high):
                raise bad_request(f"Field: ranges: low {low} is above high {high}", "ranges")
        lnns = {n["lnn"] for n in self.nodes}
        for i in body.get("ifaces", []) or []:
            if not isinstance(i, dict) or i.get("lnn") not in lnns or not i.get("iface"):
                raise bad_request(f"Field: ifaces: invalid interface {i!r} (known LNNs {sorted(lnns)})", "ifaces")
        if body.get("sc_subnet") and not any(s["name"] == body["sc_subnet"] for s in self.subnets.values()):
            raise bad_request(f"Field: sc_subnet: subnet '{body['sc_subnet']}' does not exist", "sc_subnet")
        return dict(body)

    def _need_smartconnect_licence(self, pool: dict[str, Any], others: int) -> None:
        """SmartConnect Basic (unlicensed) allows one pool per subnet with static allocation."""
        if self.licensed(SMARTCONNECT_LICENCE):
            return
        if pool.get("alloc_method") == "dynamic":
            raise PapiError(403, "AEC_FORBIDDEN", "alloc_method dynamic requires a valid SmartConnect Advanced "
                                                  "license")
        if others:
            raise PapiError(403, "AEC_FORBIDDEN", "a second pool in a subnet requires a valid SmartConnect Advanced "
                                                  "license")

    def create_pool(self, groupnet: str, subnet: str, body: Any) -> str:
        self.subnet(groupnet, subnet)
        fields = self._pool_fields(body, creating=True)
        pid = f"{groupnet}.{subnet}.{fields['name']}"
        if pid in self.pools:
            raise conflict(f"Pool '{fields['name']}' already exists in subnet '{subnet}'")
        pool = {"access_zone": "System", "addr_family": "ipv4", "aggregation_mode": "lacp",
                "alloc_method": "static", "description": "", "groupnet": groupnet, "id": pid, "ifaces": [],
                "name": fields["name"], "ranges": [], "rebalance_policy": "auto", "rules": [],
                "sc_auto_unsuspend_delay": 0, "sc_connect_policy": "round_robin", "sc_dns_zone": "",
                "sc_dns_zone_aliases": [], "sc_failover_policy": "round_robin", "sc_subnet": "",
                "sc_suspended_nodes": [], "sc_ttl": 0, "static_routes": [], "subnet": subnet}
        pool.update(fields)
        others = sum(1 for p in self.pools.values() if p["groupnet"] == groupnet and p["subnet"] == subnet)
        self._need_smartconnect_licence(pool, others)
        self.pools[pid] = pool
        return pid

    def update_pool(self, groupnet: str, subnet: str, name: str, body: Any) -> None:
        pid = f"{groupnet}.{subnet}.{name}"
        if pid not in self.pools:
            raise not_found(f"Pool '{name}' not found in subnet '{subnet}'")
        fields = self._pool_fields(body, creating=False)
        if "name" in fields and fields["name"] != name:
            raise bad_request("Field: name: renaming a pool is not supported by the simulator", "name")
        merged = {**self.pools[pid], **fields}
        others = sum(1 for k, p in self.pools.items() if k != pid and p["groupnet"] == groupnet
                     and p["subnet"] == subnet)
        self._need_smartconnect_licence(merged, others)
        self.pools[pid] = merged

    def get_pool(self, groupnet: str, subnet: str, name: str) -> dict[str, Any]:
        pid = f"{groupnet}.{subnet}.{name}"
        if pid not in self.pools:
            raise not_found(f"Pool '{name}' not found in subnet '{subnet}'")
        return {"pools": [copy.deepcopy(self.pools[pid])]}


def _all_clients(export: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for name in CLIENT_LIST_FIELDS:
        out.update(export.get(name) or [])
    return out


def now() -> float:
    return time.monotonic()
