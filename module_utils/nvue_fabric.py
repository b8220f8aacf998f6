"""The storage-fabric plan as an NVUE subtree, and comparisons against NVUE's applied and operational state.

Pure functions: ``desired`` turns the plan (module_utils/cumulus_fabric.py) into the NVUE object tree the role
owns; ``differences`` lists where the applied configuration does not yet hold it (a subset comparison: NVUE
settings outside the subtree are not the role's and are ignored); ``operational_mismatches`` checks the live
state NVUE reports (MTU, bridge membership, link up, MLAG peer).
"""

from __future__ import annotations

import copy
from typing import Any


def _speed(gbps: int | None) -> dict[str, Any]:
    return {"speed": f"{gbps}G"} if gbps else {}


def desired(plan: dict[str, Any]) -> dict[str, Any]:
    bridge = plan["bridge"]
    interfaces: dict[str, Any] = {}
    for port in plan.get("ports", []):
        interfaces[port["name"]] = {
            "type": "swp",
            "description": port["description"],
            "link": {"mtu": port["mtu"], "state": {"up": {}}, **_speed(port.get("speed_gbps"))},
            "bridge": {"domain": {bridge: {"access": port["access_vlan"]}}},
        }
    for uplink in plan.get("uplinks", []):
        interfaces[uplink["name"]] = {
            "type": "swp",
            "description": uplink["description"],
            "link": {"mtu": uplink["mtu"], "state": {"up": {}}, **_speed(uplink.get("speed_gbps"))},
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
            "enable": "on",
            "mac-address": peer["sys_mac"],
            "peer-ip": "linklocal",
            "priority": peer["priority"],
            "backup": {peer["backup_ip"]: {}},
        }
    if plan.get("loopback"):
        interfaces["lo"] = {"type": "loopback", "ip": {"address": {plan["loopback"]: {}}}}
    for parent, mode in (plan.get("breakouts") or {}).items():
        interfaces.setdefault(parent, {}).setdefault("link", {})["breakout"] = {mode: {}}
    roce = plan.get("roce") or {}
    if roce.get("enabled"):
        tree["qos"] = {"roce": {"enable": "on", "mode": roce.get("mode", "lossless")}}
    tree["interface"] = interfaces
    return tree


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


def operational_mismatches(plan: dict[str, Any], interfaces: dict[str, Any], mlag: dict[str, Any] | None,
                           require_link_up: bool = True) -> list[str]:
    """Differences between the plan and NVUE's operational view (GET /nvue_v1/interface and /nvue_v1/mlag)."""
    bridge = plan["bridge"]
    out: list[str] = []

    def check(name: str, what: str, mtu: int, access: int | None, in_bridge: bool = True) -> None:
        live = interfaces.get(name)
        if live is None:
            out.append(f"{what} {name}: NVUE reports no such interface")
            return
        link = live.get("link") or {}
        if link.get("mtu") != mtu:
            out.append(f"{what} {name}: operational MTU {link.get('mtu')}, expected {mtu}")
        if require_link_up and link.get("oper-status") != "up":
            out.append(f"{what} {name}: oper-status {link.get('oper-status')!r}, expected 'up'")
        domains = ((live.get("bridge") or {}).get("domain") or {})
        if in_bridge and bridge not in domains:
            out.append(f"{what} {name}: not a member of bridge domain {bridge} (member of {sorted(domains)})")
        elif access is not None and (domains.get(bridge) or {}).get("access") != access:
            out.append(f"{what} {name}: access VLAN {(domains.get(bridge) or {}).get('access')}, expected {access}")

    for port in plan.get("ports", []):
        check(port["name"], f"fabric port ({port['description']})", port["mtu"], port["access_vlan"])
    for uplink in plan.get("uplinks", []):
        check(uplink["name"], "uplink", uplink["mtu"], None)
    peer = plan.get("peerlink")
    if peer:
        check(peer["bond"], "peerlink", peer["mtu"], None, in_bridge=False)
        members = (((interfaces.get(peer["bond"]) or {}).get("bond") or {}).get("member") or {})
        missing = sorted(set(peer["members"]) - set(members))
        if missing:
            out.append(f"peerlink {peer['bond']}: members {missing} are not in the bond")
        if not mlag or mlag.get("peer-alive") is not True:
            out.append(f"MLAG peer is not alive (peer-alive={None if not mlag else mlag.get('peer-alive')!r})")
        elif peer.get("role") in ("primary", "secondary") and mlag.get("local-role") != peer["role"]:
            out.append(f"MLAG local-role is {mlag.get('local-role')!r}, expected {peer['role']!r}")
    return out
