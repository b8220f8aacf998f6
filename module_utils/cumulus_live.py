"""Compare a switch's live Linux state with the storage-fabric plan (pure functions, no I/O).

Inputs are the JSON outputs of ``ip -d -j link show``, ``ip -j addr show dev lo``, ``bridge -j vlan show``
and ``clagctl -j`` as the switch prints them; the result is a list of mismatches, each a sentence that says
what was expected and what the switch reports. An empty list means the live state matches.
"""

from __future__ import annotations

from typing import Any


def _objects(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _vlan_entries(value: Any) -> bool:
    return _objects(value) and all(isinstance(v.get("vlan"), int) and isinstance(v.get("vlanEnd", 0), int)
                                   and isinstance(v.get("flags", []), list) for v in value)


def shape_problems(ip_link: Any, bridge_vlan: Any, lo_addr: Any, clag: Any = None) -> list[str]:
    """Where the commands' JSON is not the shape iproute2 and clagctl print (each command named), so that a
    garbled answer is reported as such instead of being compared (or crashing the comparison)."""
    out = []
    if not _objects(ip_link):
        out.append(f"`ip -d -j link show` printed {_what(ip_link)}, expected a list of link objects")
    entries = ([{"ifname": k, "vlans": v} for k, v in bridge_vlan.items()] if isinstance(bridge_vlan, dict)
               else bridge_vlan)
    if not _objects(entries) or not all(_vlan_entries(e.get("vlans", [])) for e in entries):
        out.append(f"`bridge -j vlan show` printed {_what(bridge_vlan)}, expected a list of {{ifname, vlans: "
                   "[{vlan: N, flags: [...]}]} (or, from older iproute2, {ifname: [{vlan: N, ...}]})")
    if not _objects(lo_addr) or not all(_objects(e.get("addr_info", [])) for e in lo_addr):
        out.append(f"`ip -j addr show dev lo` printed {_what(lo_addr)}, expected a list of {{ifname, addr_info: [...]}}")
    if clag is not None and (not isinstance(clag, dict) or not isinstance(clag.get("status", {}), dict)):
        out.append(f"`clagctl -j` printed {_what(clag)}, expected an object with a 'status' object")
    return out


def _what(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def links_by_name(ip_link: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {link.get("ifname", ""): link for link in ip_link or []}


def vlans_by_port(bridge_vlan: Any) -> dict[str, dict[int, set[str]]]:
    """``bridge -j vlan show`` in either layout (iproute2 >= 5.x: list of {ifname, vlans}; older: {ifname: [...]})."""
    if isinstance(bridge_vlan, dict):
        entries = [{"ifname": name, "vlans": vlans} for name, vlans in bridge_vlan.items()]
    else:
        entries = bridge_vlan or []
    out: dict[str, dict[int, set[str]]] = {}
    for entry in entries:
        ports = out.setdefault(entry.get("ifname", ""), {})
        for vlan in entry.get("vlans", []) or []:
            start = int(vlan.get("vlan", 0))
            end = int(vlan.get("vlanEnd", start))
            for vid in range(start, end + 1):
                ports[vid] = set(vlan.get("flags", []) or [])
    return out


def _slave_kind(link: dict[str, Any]) -> str | None:
    return (link.get("linkinfo") or {}).get("info_slave_kind")


def _kind(link: dict[str, Any]) -> str | None:
    return (link.get("linkinfo") or {}).get("info_kind")


def _is_up(link: dict[str, Any]) -> bool:
    # operstate UNKNOWN is what virtual links without carrier reporting show while forwarding.
    return link.get("operstate") in ("UP", "UNKNOWN") and "LOWER_UP" in (link.get("flags") or ["LOWER_UP"])


def compare(
    plan: dict[str, Any],
    ip_link: list[dict[str, Any]],
    bridge_vlan: Any,
    lo_addr: list[dict[str, Any]] | None = None,
    clag: dict[str, Any] | None = None,
    require_link_up: bool = True,
) -> list[str]:
    """Every difference between the plan and the live state."""
    links = links_by_name(ip_link)
    vlans = vlans_by_port(bridge_vlan)
    bridge = plan["bridge"]
    mismatches: list[str] = []

    bridge_link = links.get(bridge)
    if bridge_link is None:
        mismatches.append(f"bridge {bridge} does not exist")
    else:
        if _kind(bridge_link) not in (None, "bridge"):
            mismatches.append(f"{bridge} is a {_kind(bridge_link)}, not a bridge")
        vlan_filtering = ((bridge_link.get("linkinfo") or {}).get("info_data") or {}).get("vlan_filtering")
        if vlan_filtering not in (1, True):
            mismatches.append(f"bridge {bridge} is not VLAN-aware (vlan_filtering={vlan_filtering})")

    def check_member(name: str, what: str, mtu: int) -> dict[str, Any] | None:
        link = links.get(name)
        if link is None:
            mismatches.append(f"{what} {name} does not exist on the switch")
            return None
        if link.get("mtu") != mtu:
            mismatches.append(f"{what} {name}: MTU {link.get('mtu')}, expected {mtu}")
        if link.get("master") != bridge:
            mismatches.append(f"{what} {name}: bridge member of {link.get('master')!r}, expected {bridge}")
        if require_link_up and not _is_up(link):
            mismatches.append(f"{what} {name}: link is {link.get('operstate')} (flags {link.get('flags')}), expected up")
        return link

    for port in plan.get("ports", []):
        what = f"fabric port ({port['description']})"
        check_member(port["name"], what, port["mtu"])
        port_vlans = vlans.get(port["name"], {})
        flags = port_vlans.get(port["access_vlan"])
        if flags is None or "PVID" not in flags or not ({"Egress Untagged", "untagged"} & flags):
            mismatches.append(
                f"{what} {port['name']}: access VLAN {port['access_vlan']} is not its untagged PVID "
                f"(bridge vlan shows {sorted(port_vlans)})"
            )
        extra = sorted(set(port_vlans) - {port["access_vlan"]})
        if extra:
            mismatches.append(f"{what} {port['name']}: also carries VLANs {extra}, expected access only")

    for uplink in plan.get("uplinks", []):
        check_member(uplink["name"], "uplink", uplink["mtu"])
        missing = sorted(set(plan.get("vids", [])) - set(vlans.get(uplink["name"], {})))
        if missing:
            mismatches.append(f"uplink {uplink['name']}: does not carry VLANs {missing}")

    peer = plan.get("peerlink")
    if peer:
        bond = check_member(peer["bond"], "peerlink", peer["mtu"])
        if bond is not None and _kind(bond) not in (None, "bond"):
            mismatches.append(f"peerlink {peer['bond']} is a {_kind(bond)}, not a bond")
        for member in peer["members"]:
            link = links.get(member)
            if link is None:
                mismatches.append(f"peerlink member {member} does not exist")
            elif link.get("master") != peer["bond"] or _slave_kind(link) not in (None, "bond"):
                mismatches.append(f"peerlink member {member}: enslaved to {link.get('master')!r}, expected {peer['bond']}")
        status = (clag or {}).get("status") or {}
        if not clag:
            mismatches.append("clagctl reported nothing: clagd is not running")
        else:
            if status.get("peerAlive") is not True:
                mismatches.append(f"CLAG peer is not alive (clagctl status: peerAlive={status.get('peerAlive')})")
            if peer.get("backup_ip") and status.get("backupActive") is not True:
                mismatches.append(
                    f"CLAG backup link to {peer['backup_ip']} is not active (clagctl status: "
                    f"backupActive={status.get('backupActive')}, backupIp={status.get('backupIp')}, "
                    f"backupVrf={status.get('backupVrf')}): the peer's eth0 is in the management VRF by default, so "
                    "the backup IP needs its VRF (sn3700v_clag_backup_vrf: mgmt)")
            role = status.get("ourRole")
            if role and peer.get("role") in ("primary", "secondary") and status.get("peerAlive") is True \
                    and role != peer["role"] and not str(role).startswith(peer["role"]):
                mismatches.append(f"CLAG role is {role}, expected {peer['role']} (check sn3700v_clag_priority)")

    loopback = plan.get("loopback")
    if loopback and lo_addr is not None:
        address, _unused, prefix = loopback.partition("/")
        found = [
            f"{a.get('local')}/{a.get('prefixlen')}"
            for entry in lo_addr
            for a in entry.get("addr_info", [])
        ]
        if f"{address}/{prefix or (32 if ':' not in address else 128)}" not in found:
            mismatches.append(f"loopback address {loopback} is not on lo (lo has {found})")
    return mismatches
