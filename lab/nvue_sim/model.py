"""The NVUE simulator's state: configuration revisions, PATCH merge, schema checks, apply, operational view.

Modelled on the Cumulus Linux 5.x NVUE REST API as documented: a changeset revision is created by
POST /nvue_v1/revision (id "changeset/<user>/<YYYY-MM-DD_HH.MM.SS>_<XXXX>", state "pending"); PATCH
/nvue_v1/<path>?rev=ID merges JSON into that revision (null deletes a key); PATCH /nvue_v1/revision/ID with
{"state": "apply"} applies it: the revision goes "apply" -> "applied" (or "invalid" with issues, or "ays_fail"
when a disruptive change is not confirmed with "auto-prompt": {"ays": "ays_yes"}). GET ?rev=applied shows the
applied configuration; GET without rev shows the operational state.

Request-time errors follow the OpenAPI validator's problem+json: {"detail", "status", "title", "type"}.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import os
import random
import re
import string
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .releases import DEFAULT, PROFILES, Profile


class ApiError(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail

    def body(self) -> dict[str, Any]:
        titles = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
                  409: "Conflict"}
        return {"detail": self.detail, "status": self.status, "title": titles.get(self.status, "Error"),
                "type": "about:blank"}


# --- schema: what a PATCH may contain (types, ranges, enums); cross-object rules are checked at apply ---

IFNAME = r"^[a-zA-Z][a-zA-Z0-9_.-]{0,14}$"
ON_OFF = {"type": "string", "enum": ["on", "off"]}
EMPTY = {"type": "object", "properties": {}}
# VLAN keys as NVUE takes them: one VLAN, a range, or a list ("nv set bridge domain br_default vlan 10,20,30").
VLAN_KEYS = r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$"


def build_schema(profile: Profile) -> dict[str, Any]:
    """What a PATCH may contain on this release (types, ranges, enums, key names)."""
    flag = {"type": "string", "enum": [profile.on, profile.off]}
    link = {"type": "object", "properties": {
        "mtu": {"type": "integer", "minimum": 552, "maximum": 9216},
        "speed": {"type": "string", "pattern": r"^(auto|[0-9]+[MG])$"},
        "state": {"type": "object", "properties": {"up": EMPTY, "down": EMPTY}},
        "auto-negotiate": flag,
        "fec": {"type": "string", "enum": ["auto", "baser", "rs", "off"]},
        "breakout": {"type": "object", "keys": profile.breakout_pattern, "values": EMPTY},
    }}
    address = {"type": "object", "properties": {
        "address": {"type": "object", "keys": r"^(dhcp|[0-9a-fA-F:.]+/[0-9]{1,3})$", "values": EMPTY},
        "vrf": {"type": "string"},
    }}
    interface = {"type": "object", "properties": {
        "type": {"type": "string", "enum": ["swp", "bond", "peerlink", "loopback", "eth", "svi", "sub", "bridge"]},
        "description": {"type": "string", "maxLength": 256},
        "link": link,
        "bridge": {"type": "object", "properties": {"domain": {"type": "object", "keys": IFNAME, "values": {
            "type": "object", "properties": {
                "access": {"type": "integer", "minimum": 1, "maximum": 4094},
                "untagged": {"type": ["integer", "string"]},
                "vlan": {"type": "object", "keys": VLAN_KEYS, "values": EMPTY},
                "stp": {"type": "object", "properties": {"admin-edge": flag, "auto-edge": flag, "bpdu-guard": flag}},
            }}}}},
        "bond": {"type": "object", "properties": {
            "member": {"type": "object", "keys": IFNAME, "values": EMPTY},
            "mode": {"type": "string", "enum": ["lacp", "static"]},
            "lacp-bypass": flag,
            "mlag": {"type": "object", "properties": {profile.enable_key: flag, "id": {"type": ["integer", "string"]}}},
        }},
        profile.ip_key: address,
        "vrf": {"type": "string"},
    }}
    return {"type": "object", "properties": {
        "interface": {"type": "object", "keys": IFNAME, "values": interface},
        "bridge": {"type": "object", "properties": {"domain": {"type": "object", "keys": IFNAME, "values": {
            "type": "object", "properties": {
                "type": {"type": "string", "enum": ["vlan-aware"]},
                "untagged": {"type": ["integer", "string"]},
                "vlan": {"type": "object", "keys": VLAN_KEYS, "values": {"type": "object", "properties": {
                    "vni": {"type": "object"}, "ptp": {"type": "object"}, "multicast": {"type": "object"}}}},
                "stp": {"type": "object"},
                "mac-address": {"type": "string"},
                "encap": {"type": "string"},
            }}}}},
        "mlag": {"type": "object", "properties": {
            profile.enable_key: flag,
            "mac-address": {"type": "string", "pattern": r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$|^auto$"},
            "peer-ip": {"type": "string"},
            "priority": {"type": "integer", "minimum": 0, "maximum": 65535},
            "backup": {"type": "object", "keys": r"^[0-9a-fA-F:.]+$", "values": {"type": "object", "properties": {
                "vrf": {"type": "string"}}}},
            "init-delay": {"type": "integer", "minimum": 0, "maximum": 900},
        }},
        "qos": {"type": "object", "properties": {"roce": {"type": "object", "properties": {
            profile.enable_key: flag, "mode": {"type": "string", "enum": ["lossless", "lossy"]}}}}},
        "system": {"type": "object"},
        "service": {"type": "object"},
        "router": {"type": "object"},
        "vrf": {"type": "object"},
        "acl": {"type": "object"},
        "evpn": {"type": "object"},
        "nve": {"type": "object"},
    }}


SCHEMA = build_schema(PROFILES[DEFAULT])

_JSON_TYPES = {"integer": int, "string": str, "object": dict}


def validate(value: Any, schema: dict[str, Any], path: str) -> None:
    """Raise ApiError(400) like NVUE's OpenAPI validator when a PATCH body breaks the schema."""
    if value is None:  # null deletes: allowed anywhere
        return
    types = schema.get("type")
    types = types if isinstance(types, list) else [types] if types else []
    if types and not any(isinstance(value, _JSON_TYPES[t]) and not isinstance(value, bool) for t in types):
        expected = types[0] if len(types) == 1 else types
        raise ApiError(400, f"{json.dumps(value)} is not of type {expected!r} at {path or '/'}")
    if isinstance(value, int):
        if "minimum" in schema and value < schema["minimum"]:
            raise ApiError(400, f"{value} is less than the minimum of {schema['minimum']} at {path}")
        if "maximum" in schema and value > schema["maximum"]:
            raise ApiError(400, f"{value} is greater than the maximum of {schema['maximum']} at {path}")
    if isinstance(value, str):
        if "enum" in schema and value not in schema["enum"]:
            raise ApiError(400, f"{value!r} is not one of {schema['enum']} at {path}")
        if "pattern" in schema and not re.match(schema["pattern"], value):
            raise ApiError(400, f"{value!r} does not match {schema['pattern']!r} at {path}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise ApiError(400, f"{value!r} is too long at {path}")
    if isinstance(value, dict):
        props = schema.get("properties")
        for key, sub in value.items():
            if props is not None:
                if key not in props:
                    raise ApiError(400, f"Additional properties are not allowed ({key!r} was unexpected) at {path or '/'}")
                validate(sub, props[key], f"{path}/{key}")
            elif "keys" in schema:
                if not re.match(schema["keys"], str(key)):
                    raise ApiError(400, f"{key!r} does not match {schema['keys']!r} at {path or '/'}")
                validate(sub, schema.get("values", {}), f"{path}/{key}")


def schema_at(path: list[str], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    node = schema or SCHEMA
    for key in path:
        if "properties" in node:
            if key not in node["properties"]:
                raise ApiError(404, f"The requested URL was not found on the server: /{'/'.join(path)}")
            node = node["properties"][key]
        elif "keys" in node:
            if not re.match(node["keys"], key):
                raise ApiError(400, f"{key!r} does not match {node['keys']!r}")
            node = node.get("values", {})
        else:
            return {}
    return node


def merge(base: Any, patch: Any) -> Any:
    """JSON merge patch (RFC 7386): dicts merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def get_path(tree: Any, path: list[str]) -> Any:
    node = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            raise ApiError(404, f"The requested URL was not found on the server: /{'/'.join(path)}")
        node = node[key]
    return node


def set_path(tree: dict[str, Any], path: list[str], patch: Any) -> dict[str, Any]:
    if not path:
        return merge(tree, patch)
    wrapped: Any = patch
    for key in reversed(path):
        wrapped = {key: wrapped}
    return merge(tree, wrapped)


def _vlan_set(keys: dict[str, Any]) -> set[int]:
    vids: set[int] = set()
    for key in keys:
        for part in str(key).split(","):
            low, _, high = part.partition("-")
            vids |= set(range(int(low), int(high or low) + 1))
    return vids


def mlag_enabled(mlag: dict[str, Any]) -> bool:
    return mlag.get("enable") == "on" or mlag.get("state") == "enabled"


def semantic_issues(config: dict[str, Any], hardware_ports: list[str]) -> list[str]:
    """Cross-object rules NVUE enforces when a revision is applied (each a message in the switch's style)."""
    issues: list[str] = []
    interfaces = config.get("interface") or {}
    domains = (config.get("bridge") or {}).get("domain") or {}
    hw = set(hardware_ports)
    members_of: dict[str, str] = {}
    for name, iface in interfaces.items():
        for member in ((iface.get("bond") or {}).get("member") or {}):
            members_of[member] = name
    for name, iface in sorted(interfaces.items()):
        kind = iface.get("type")
        if name.startswith("swp"):
            parent = re.sub(r"s[0-9]+$", "", name)
            if name not in hw and parent not in hw:
                issues.append(f"Invalid interface {name}: the platform has no such port (valid: swp1-swp{len(hw)})")
            if kind not in (None, "swp"):
                issues.append(f"{name} is a switch port; its type must be swp, not {kind}")
        elif kind is None:
            issues.append(f"Interface {name} needs a type")
        for domain, settings in (((iface.get("bridge") or {}).get("domain")) or {}).items():
            if domain not in domains:
                issues.append(f"{name}: bridge domain {domain} does not exist")
                continue
            access = (settings or {}).get("access")
            vids = _vlan_set((domains[domain] or {}).get("vlan") or {})
            if access is not None and access not in vids:
                issues.append(f"{name}: access VLAN {access} is not a VLAN of bridge domain {domain} "
                              f"(configured: {sorted(vids) or 'none'})")
            if name in members_of:
                issues.append(f"{name} is a member of bond {members_of[name]} and cannot also be a bridge port")
        for member in ((iface.get("bond") or {}).get("member") or {}):
            if member not in hw:
                issues.append(f"{name}: bond member {member} is not a port of this platform")
    for domain, settings in domains.items():
        untagged = (settings or {}).get("untagged")
        vids = _vlan_set((settings or {}).get("vlan") or {})
        if isinstance(untagged, int) and untagged not in vids:
            issues.append(f"bridge domain {domain}: untagged VLAN {untagged} is not one of its VLANs")
        for vid in vids:
            if not 1 <= vid <= 4094:
                issues.append(f"bridge domain {domain}: VLAN {vid} is out of range 1-4094")
    mlag = config.get("mlag") or {}
    if mlag_enabled(mlag):
        if not any((i or {}).get("type") == "peerlink" for i in interfaces.values()):
            issues.append("MLAG is enabled but no interface of type peerlink is configured")
        if mlag.get("mac-address") in (None, "auto"):
            issues.append("MLAG is enabled but mlag mac-address is not set")
        for backup in (mlag.get("backup") or {}):
            try:
                ipaddress.ip_address(backup)
            except ValueError:
                issues.append(f"mlag backup {backup} is not an IP address")
    for parent, iface in interfaces.items():
        if ((iface.get("link") or {}).get("breakout")) and parent not in hw:
            issues.append(f"Breakout on {parent}: the platform has no such port")
    return issues


def disruptive(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Changes NVUE asks 'Are you sure?' about (they restart switchd or flap links)."""
    reasons = []
    if (before.get("mlag") or {}) != (after.get("mlag") or {}):
        reasons.append("the MLAG configuration changes and clagd restarts")
    for name, iface in (after.get("interface") or {}).items():
        old = ((before.get("interface") or {}).get(name) or {}).get("link") or {}
        new = (iface or {}).get("link") or {}
        if old.get("breakout") != new.get("breakout"):
            reasons.append(f"the breakout of {name} changes and switchd restarts")
        elif old.get("speed") != new.get("speed"):
            reasons.append(f"the speed of {name} changes and the link flaps")
    return reasons


def _default_config(hostname: str) -> dict[str, Any]:
    return {
        "system": {"hostname": hostname},
        "interface": {
            "eth0": {"type": "eth", "ip": {"address": {"dhcp": {}}, "vrf": "mgmt"}},
            "lo": {"type": "loopback"},
        },
        "service": {"ntp": {"mgmt": {"server": {"192.0.2.123": {}}}}},
    }


@dataclass
class Switch:
    """One simulated switch: thread-safe, persisted to a JSON file after every change."""

    state_path: str
    hostname: str = "sn3700v"
    ports: int = 32
    down_ports: set[str] = field(default_factory=set)
    apply_delay: float = 0.3
    mlag_peer_alive: bool = True
    mlag_peer_priority: int = 32768
    user: str = "cumulus"
    release: str = DEFAULT
    # The ifupdown2/FRR files were changed outside NVUE (by hand, by the files method): the next apply prompts again.
    files_edited: bool = False
    # The cumulus user still has its default password (5.6+: every request answers 403).
    default_password: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        if self.release not in PROFILES:
            raise ValueError(f"no simulator profile for Cumulus Linux {self.release} (profiles: {sorted(PROFILES)})")
        self.profile: Profile = PROFILES[self.release]
        self.schema = build_schema(self.profile)
        if os.path.exists(self.state_path):
            with open(self.state_path, encoding="utf-8") as handle:
                self.data = json.load(handle)
        if not self.data:
            self.data = {"applied": _default_config(self.hostname), "startup": _default_config(self.hostname),
                         "revisions": {}, "audit": [], "nvue_owned": False, "next_revision": 1}
        if self.files_edited:
            self.data["nvue_owned"] = False
        self.save()

    # persistence
    def save(self) -> None:
        directory = os.path.dirname(os.path.abspath(self.state_path))
        os.makedirs(directory, exist_ok=True)
        tmp = f"{self.state_path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(self.data, handle, indent=1, sort_keys=True)
        os.replace(tmp, self.state_path)

    def audit(self, method: str, target: str) -> None:
        if method != "GET":
            self.data["audit"] = [*self.data.get("audit", [])[-199:], {"method": method, "target": target,
                                                                       "time": time.time()}]

    @property
    def hardware_ports(self) -> list[str]:
        return [f"swp{n}" for n in range(1, self.ports + 1)]

    # revisions
    def _progress(self) -> None:
        """Finish applies whose delay has passed (NVUE applies asynchronously)."""
        now = time.time()
        changed = False
        for rev in self.data["revisions"].values():
            if rev["state"] == "apply" and now >= rev.get("apply_at", 0):
                self.data["applied"] = rev["config"]
                self.data["nvue_owned"] = True  # NVUE has now written the files from its model
                if self.profile.auto_save:
                    self.data["startup"] = copy.deepcopy(rev["config"])
                rev["state"] = "applied"
                rev["transition"] = {"issue": {}, "progress": ""}
                changed = True
        if changed:
            self.save()

    def create_revision(self) -> dict[str, Any]:
        with self.lock:
            self._progress()
            if self.profile.numeric_revisions:
                rev_id = str(self.data.get("next_revision", 1))
                self.data["next_revision"] = int(rev_id) + 1
            else:
                stamp = time.strftime("%Y-%m-%d_%H.%M.%S", time.gmtime())
                suffix = "".join(random.choice(string.ascii_uppercase + string.digits) for _ in range(4))
                rev_id = f"changeset/{self.user}/{stamp}_{suffix}"
            self.data["revisions"][rev_id] = {
                "state": "pending", "transition": {"issue": {}, "progress": ""},
                "config": copy.deepcopy(self.data["applied"]), "created": time.time(),
            }
            self.audit("POST", "/revision")
            self.save()
            return {rev_id: self._public(self.data["revisions"][rev_id])}

    @staticmethod
    def _public(rev: dict[str, Any]) -> dict[str, Any]:
        return {"state": rev["state"], "transition": rev["transition"]}

    def revisions(self) -> dict[str, Any]:
        with self.lock:
            self._progress()
            return {rid: self._public(r) for rid, r in self.data["revisions"].items()}

    def revision(self, rev_id: str) -> dict[str, Any]:
        with self.lock:
            self._progress()
            if rev_id in ("applied", "startup"):
                return {"state": rev_id, "transition": {"issue": {}, "progress": ""}}
            if rev_id not in self.data["revisions"]:
                raise ApiError(404, f"Revision {rev_id} not found")
            public = self._public(self.data["revisions"][rev_id])
            # Every guide that shows a revision stopped at the prompt (4.4, 5.1, 5.4, ...) shows it nested under its id.
            return {rev_id: public} if public["state"] == "ays_fail" else public

    def _pending(self, rev_id: str) -> dict[str, Any]:
        rev = self.data["revisions"].get(rev_id)
        if rev is None:
            raise ApiError(404, f"Revision {rev_id} not found")
        if rev["state"] != "pending":
            raise ApiError(400, f"Revision {rev_id} is {rev['state']}, only a pending revision can be changed")
        return rev

    def config(self, rev: str | None) -> dict[str, Any]:
        with self.lock:
            self._progress()
            if rev in (None, "operational"):
                return self.operational()
            if rev == "applied":
                return copy.deepcopy(self.data["applied"])
            if rev == "startup":
                return copy.deepcopy(self.data["startup"])
            if rev not in self.data["revisions"]:
                raise ApiError(404, f"Revision {rev} not found")
            return copy.deepcopy(self.data["revisions"][rev]["config"])

    def patch(self, rev_id: str, path: list[str], body: Any) -> Any:
        with self.lock:
            self._progress()
            rev = self._pending(rev_id)
            validate(body, schema_at(path, self.schema), ("/" + "/".join(path)) if path else "")
            rev["config"] = set_path(rev["config"], path, body)
            self.audit("PATCH", "/" + "/".join(path) + f"?rev={rev_id}")
            self.save()
            try:
                return copy.deepcopy(get_path(rev["config"], path))
            except ApiError:
                return {}

    def delete(self, rev_id: str, path: list[str]) -> None:
        with self.lock:
            rev = self._pending(rev_id)
            if not path:
                rev["config"] = {}
            else:
                parent = get_path(rev["config"], path[:-1])
                if isinstance(parent, dict):
                    parent.pop(path[-1], None)
            self.audit("DELETE", "/" + "/".join(path) + f"?rev={rev_id}")
            self.save()

    def change_state(self, rev_id: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._progress()
            wanted = body.get("state") if isinstance(body, dict) else None
            ays = ((body or {}).get("auto-prompt") or {}).get("ays")
            if rev_id == "applied" and wanted == "save":
                self.data["startup"] = copy.deepcopy(self.data["applied"])
                self.audit("PATCH", "/revision/applied save")
                self.save()
                return {"state": "save", "transition": {"issue": {}, "progress": ""}}
            if wanted != "apply":
                raise ApiError(400, f"{wanted!r} is not one of ['apply', 'save'] at /state")
            rev = self.data["revisions"].get(rev_id)
            if rev is None:
                raise ApiError(404, f"Revision {rev_id} not found")
            if rev["state"] not in ("pending", "ays_fail"):
                raise ApiError(400, f"Revision {rev_id} is {rev['state']} and cannot be applied again")
            self.audit("PATCH", f"/revision/{rev_id} apply")
            issues = semantic_issues(rev["config"], self.hardware_ports)
            if issues:
                rev["state"] = "invalid"
                rev["transition"] = {"issue": {f"{i:05d}": {"code": "generic", "severity": "error", "message": m,
                                                           "data": {"msg": m}} for i, m in enumerate(issues)},
                                     "progress": "Invalid config"}
            else:
                reasons = disruptive(self.data["applied"], rev["config"])
                if not self.data.get("nvue_owned"):
                    reasons.insert(0, "the first NVUE apply (or files changed outside NVUE) overwrites "
                                      "/etc/network/interfaces and /etc/frr/frr.conf")
                if reasons and ays != "ays_yes":
                    # What the guides show for an apply that needed an answer: the prompt timed out.
                    rev["state"] = "ays_fail"
                    rev["prompts"] = reasons
                    rev["transition"] = {"issue": {"0": {"code": "client_timeout", "data": {},
                                                         "message": "Timeout while waiting for client response",
                                                         "severity": "error"}},
                                         "progress": "Aborted apply after warnings"}
                else:
                    rev["state"] = "apply"
                    rev["apply_at"] = time.time() + self.apply_delay
                    rev["transition"] = {"issue": {}, "progress": "Applying configuration"}
            self.save()
            return self._public(rev)

    # operational view
    def operational(self) -> dict[str, Any]:
        applied = self.data["applied"]
        oper_up: dict[str, bool] = {}
        view = copy.deepcopy(applied)
        interfaces = view.setdefault("interface", {})
        for port in self.hardware_ports:
            interfaces.setdefault(port, {"type": "swp"})
        for name, iface in interfaces.items():
            link = iface.setdefault("link", {})
            link.setdefault("mtu", 9216 if name.startswith(("swp", "peerlink", "bond")) else 1500)
            admin_up = "down" not in (link.get("state") or {})
            configured = name in (applied.get("interface") or {})
            link["admin-status"] = "up" if admin_up else "down"
            if name.startswith("swp"):
                up = admin_up and configured and name not in self.down_ports
            elif iface.get("type") in ("bond", "peerlink"):
                members = ((iface.get("bond") or {}).get("member") or {})
                up = admin_up and any(m not in self.down_ports for m in members)
            else:
                up = admin_up
            oper_up[name] = up
            if self.profile.oper_status:
                link["oper-status"] = "up" if up else "down"
            else:
                link["state"] = {"up": {}} if up else {"down": {}}
        system = view.setdefault("system", {})
        system["build"] = f"Cumulus Linux {self.profile.release}"
        if not self.profile.listens_on_localhost_only:  # 5.6+: the API's own settings are in NVUE's model
            system.setdefault("api", {"certificate": "self-signed", "port": 8765, "state": "enabled"})
        mlag = view.get("mlag")
        if mlag:
            enabled = mlag_enabled(mlag)
            peer = next((n for n, i in interfaces.items() if i.get("type") == "peerlink"), None)
            alive = enabled and peer is not None and oper_up.get(peer, False) \
                and self.mlag_peer_alive
            mlag["peer-alive"] = alive
            mine = int(mlag.get("priority", 32768))
            mlag["local-role"] = "primary" if mine <= self.mlag_peer_priority else "secondary"
            mlag["peer-role"] = "secondary" if mlag["local-role"] == "primary" else "primary"
            mlag["peer-interface"] = f"{peer}.4094" if peer else None
            # The peer's backup address is its eth0, which is in the management VRF: only a backup IP configured
            # with vrf mgmt reaches it.
            mlag["backup-active"] = alive and any((b or {}).get("vrf") == "mgmt"
                                                  for b in (mlag.get("backup") or {}).values())
        return view
