"""The storage-fabric plan as an NVUE subtree, and comparisons against NVUE's applied and operational state.

Pure functions: ``desired`` turns the plan (module_utils/cumulus_fabric.py) into the NVUE object tree the role
owns, in the key names and breakout format of the switch's release (module_utils/cumulus_release.py), with the
FEC of every forced speed and the MLAG backup IP's VRF; ``forced_speed_problems`` lists forced speeds without an
FEC; ``normalise_vlans`` rewrites VLAN keys as NVUE keeps them ('10,20,30', '10-20') to one key per VLAN ID;
``differences`` lists where the applied configuration does not yet hold the tree (a subset comparison: NVUE
settings outside the subtree are not the role's and are ignored); ``operational_mismatches`` checks the live
state NVUE reports (MTU, bridge membership, link up, MLAG peer and backup link).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ansible.module_utils.cumulus_release import (
    NvueKeys,
    Release,
    breakout_parts,
    fec_for_forced_speed,
    nvue_keys,
)

# The release whose NVUE keys the plan is rendered with when the caller knows none (the keys before 5.15).
DEFAULT_KEYS = NvueKeys(enable_key="enable", on="on", ip_key="ip")
_VLAN_KEY_RE = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")


def _link(mtu: int, gbps: int | None, fec_by_speed: dict[Any, Any] | None) -> dict[str, Any]:
    link: dict[str, Any] = {"mtu": mtu, "state": {"up": {}}}
    if gbps:
        link["speed"] = f"{gbps}G"
        fec = fec_for_forced_speed(gbps, fec_by_speed)
        if fec:
            link["fec"] = fec
    return link


def forced_speed_problems(plan: dict[str, Any], fec_by_speed: dict[Any, Any] | None,
                          release: Release | None = None, lane_speeds: bool = True) -> list[str]:
    """Ports whose speed the plan forces without an FEC: on Spectrum such a port does not link up."""
    out = []
    forced = [(p["name"], p.get("speed_gbps")) for p in plan.get("ports", [])]
    forced += [(u["name"], u.get("speed_gbps")) for u in plan.get("uplinks", [])]
    for parent, mode in (plan.get("breakouts") or {}).items():
        lane_speed = breakout_parts(release, mode)[1] if release and lane_speeds else None
        if lane_speed:
            forced.append((f"{parent} lanes", int(lane_speed.rstrip("G"))))
    for name, gbps in forced:
        if gbps and fec_for_forced_speed(gbps, fec_by_speed) is None:
            out.append(f"{name}: speed {gbps}G is forced but storage_fabric_port_fec has no FEC for {gbps}; Spectrum "
                       f"does not bring a forced-speed port up with FEC left to auto. Fix: add {gbps}: rs (or baser/off "
                       "as the cable needs) to storage_fabric_port_fec, or set storage_fabric_port_speed_managed: false")
    return out


def desired(plan: dict[str, Any], release: Release | None = None, fec_by_speed: dict[Any, Any] | None = None,
            backup_vrf: str | None = None, lane_speeds: bool = True) -> dict[str, Any]:
    """The NVUE subtree the role owns, in the key names and breakout format of ``release`` (None: before 5.4).

    From 5.4 a breakout is "4x" and the lanes' speed is set on each lane; ``lane_speeds=False`` (speeds left to
    the firmware: storage_fabric_port_speed_managed false) leaves the lanes to auto-negotiation."""
    keys = nvue_keys(release) if release else DEFAULT_KEYS
    bridge = plan["bridge"]
    interfaces: dict[str, Any] = {}
    for port in plan.get("ports", []):
        interfaces[port["name"]] = {
            "type": "swp",
            "description": port["description"],
            "link": _link(port["mtu"], port.get("speed_gbps"), fec_by_speed),
            "bridge": {"domain": {bridge: {"access": port["access_vlan"]}}},
        }
    for uplink in plan.get("uplinks", []):
        interfaces[uplink["name"]] = {
            "type": "swp",
            "description": uplink["description"],
            "link": _link(uplink["mtu"], uplink.get("speed_gbps"), fec_by_speed),
            "bridge": {"domain": {bridge: {}}},
        }
    tree: dict[str, Any] = {
        "bridge": {"domain": {bridge: {
            "type": "vlan-aware",
            "untagged": plan["pvid"],
            "vlan": {str(vid): {} for vid in plan.get("vids", [])},
        }}},
    }
    peer = plan.get("peerlink")
    if peer:
        for member in peer["members"]:
            interfaces[member] = {"type": "swp", "description": f"peerlink member ({peer['bond']})",
                                  "link": {"mtu": peer["mtu"], "state": {"up": {}}}}
        interfaces[peer["bond"]] = {
            "type": "peerlink",
            "bond": {"member": {m: {} for m in peer["members"]}},
            "link": {"mtu": peer["mtu"]},
        }
        tree["mlag"] = {
            **keys.enabled(),
            "mac-address": peer["sys_mac"],
            "peer-ip": "linklocal",
            "priority": peer["priority"],
            "backup": {peer["backup_ip"]: ({"vrf": backup_vrf} if backup_vrf else {})},
        }
    if plan.get("loopback"):
        interfaces["lo"] = {"type": "loopback", keys.ip_key: {"address": {plan["loopback"]: {}}}}
    for parent, mode in (plan.get("breakouts") or {}).items():
        value, lane_speed = breakout_parts(release, mode) if release else (mode, None)
        interfaces.setdefault(parent, {}).setdefault("link", {})["breakout"] = {value: {}}
        if lane_speed and lane_speeds:
            lanes = int(value.rstrip("x"))
            for lane in range(lanes):
                name = f"{parent}s{lane}"
                link = interfaces.setdefault(name, {"type": "swp"}).setdefault("link", {})
                if "speed" not in link:
                    link.update({k: v for k, v in _link(0, int(lane_speed.rstrip("G")), fec_by_speed).items()
                                 if k in ("speed", "fec")})
    roce = plan.get("roce") or {}
    if roce.get("enabled"):
        tree["qos"] = {"roce": {**keys.enabled(), "mode": roce.get("mode", "lossless")}}
    tree["interface"] = interfaces
    return tree


def vlan_ids(keys: Any) -> set[int]:
    """VLAN keys as NVUE keeps them ('10', '10-20', '10,20,30') -> the set of VLAN IDs."""
    vids: set[int] = set()
    for key in keys or {}:
        for part in str(key).split(","):
            low, _unused, high = part.strip().partition("-")
            if low.isdigit() and (not high or high.isdigit()):
                vids |= set(range(int(low), int(high or low) + 1))
    return vids


def normalise_vlans(tree: Any) -> Any:
    """A copy of an NVUE config whose bridge-domain VLAN keys are one key per VLAN ID.

    NVUE keeps VLAN keys as typed (`nv set bridge domain br_default vlan 10,20,30` stores '10,20,30'), so a key by
    key comparison with the plan's '10', '20', '30' would PATCH on every run."""
    out = copy.deepcopy(tree)
    domains = ((out.get("bridge") or {}).get("domain") or {}) if isinstance(out, dict) else {}
    for settings in domains.values():
        vlans = (settings or {}).get("vlan")
        if isinstance(vlans, dict) and any(not str(k).isdigit() and _VLAN_KEY_RE.match(str(k)) for k in vlans):
            expanded: dict[str, Any] = {}
            for key, value in vlans.items():
                for vid in sorted(vlan_ids([key])) if _VLAN_KEY_RE.match(str(key)) else [key]:
                    expanded[str(vid)] = copy.deepcopy(value)
            settings["vlan"] = expanded
    return out


def differences(want: Any, have: Any, path: str = "") -> list[str]:
    """Paths where ``have`` does not hold ``want`` (dicts compared as subsets, leaves by value)."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return [f"{path or '/'}: {_short(have)} -> {_short(want)}"]
        out: list[str] = []
        for key, value in want.items():
            sub = f"{path}/{key}"
            if key not in have:
                out.append(f"{sub}: absent -> {_short(value)}")
            else:
                out.extend(differences(value, have[key], sub))
        return out
    if _norm(want) != _norm(have):
        return [f"{path}: {_short(have)} -> {_short(want)}"]
    return []


def _norm(value: Any) -> Any:
    return str(value).lower() if isinstance(value, (int, float, str, bool)) else value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def projection(want: Any, have: Any) -> Any:
    """``have`` restricted to the keys of ``want`` (what the diff's "before" side shows)."""
    if isinstance(want, dict) and isinstance(have, dict):
        return {k: projection(v, have[k]) for k, v in want.items() if k in have}
    return copy.deepcopy(have)


def operational_mismatches(plan: dict[str, Any], interfaces: dict[str, Any], mlag: Any,
                           require_link_up: bool = True) -> list[str]:
    """Differences between the plan and NVUE's operational view (GET /nvue_v1/interface and /nvue_v1/mlag)."""
    bridge = plan["bridge"]
    out: list[str] = []

    def check(name: str, what: str, mtu: int, access: int | None, in_bridge: bool = True) -> None:
        live = interfaces.get(name)
        if live is None:
            out.append(f"{what} {name}: NVUE reports no such interface")
            return
        link = live.get("link") if isinstance(live, dict) else None
        if not isinstance(link, dict):
            out.append(f"{what} {name}: NVUE reports {_short(live)} for it, expected an object with a 'link' object")
            return
        if link.get("mtu") != mtu:
            out.append(f"{what} {name}: operational MTU {link.get('mtu')!r}, expected {mtu}")
        if require_link_up and oper_status(link) != "up":
            out.append(f"{what} {name}: oper-status {oper_status(link)!r}, expected 'up'")
        domains = _dict(_dict(live.get("bridge")).get("domain"))
        if in_bridge and bridge not in domains:
            out.append(f"{what} {name}: not a member of bridge domain {bridge} (member of {sorted(domains)})")
        elif access is not None and _dict(domains.get(bridge)).get("access") != access:
            out.append(f"{what} {name}: access VLAN {_dict(domains.get(bridge)).get('access')}, expected {access}")

    for port in plan.get("ports", []):
        check(port["name"], f"fabric port ({port['description']})", port["mtu"], port["access_vlan"])
    for uplink in plan.get("uplinks", []):
        check(uplink["name"], "uplink", uplink["mtu"], None)
    peer = plan.get("peerlink")
    if peer:
        check(peer["bond"], "peerlink", peer["mtu"], None, in_bridge=False)
        members = _dict(_dict(_dict(interfaces.get(peer["bond"])).get("bond")).get("member"))
        missing = sorted(set(peer["members"]) - set(members))
        if missing:
            out.append(f"peerlink {peer['bond']}: members {missing} are not in the bond")
        if mlag is not None and not isinstance(mlag, dict):
            out.append(f"MLAG state is {_short(mlag)}, expected an object with peer-alive")
            mlag = None
        if not mlag or mlag.get("peer-alive") is not True:
            out.append(f"MLAG peer is not alive (peer-alive={None if not mlag else mlag.get('peer-alive')!r})")
        elif peer.get("role") in ("primary", "secondary") and mlag.get("local-role") != peer["role"]:
            out.append(f"MLAG local-role is {mlag.get('local-role')!r}, expected {peer['role']!r}")
        if peer.get("backup_ip") and (mlag or {}).get("backup-active") is not True:
            out.append(f"MLAG backup link to {peer['backup_ip']} is not active (backup-active="
                       f"{(mlag or {}).get('backup-active')!r}): the peer's eth0 is in the management VRF by default, "
                       "so the backup IP needs its VRF (sn3700v_clag_backup_vrf: mgmt)")
    return out


def _dict(value: Any) -> dict[str, Any]:
    """An NVUE subtree read for membership: a value that is not an object counts as empty (so it is reported)."""
    return value if isinstance(value, dict) else {}


def oper_status(link: dict[str, Any]) -> str | None:
    """A port's operational state: link.oper-status (documented from 5.11), else the operational link.state
    ({"up": {}} / {"down": {}}) that earlier releases report; None when NVUE reports neither (fail closed)."""
    if link.get("oper-status") is not None:
        return str(link["oper-status"])
    state = link.get("state")
    if isinstance(state, dict) and len(state) == 1:
        return str(next(iter(state)))
    return None
