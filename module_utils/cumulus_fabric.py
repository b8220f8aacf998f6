"""Desired state of one SN3700V storage switch, derived from the inventory (pure functions, no I/O).

The inventory never lists switch ports directly: every ``storage_nics`` entry of a dgx/powerscale host names
the switch and the port its cable lands on. ``derive_plan`` turns those cables plus the ``storage_fabric_*``
group_vars into one switch's plan (fabric ports, bridge, VLANs, CLAG peerlink, uplinks, breakouts, RoCE) and
collects every problem it finds, each naming the host, the variable, the value and the fix, so that the role
can refuse bad input before it touches a switch. Both configuration methods (ifupdown2 files and NVUE) render
from the same plan.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ansible.module_utils.cumulus_release import FEC_MODES, fec_for_forced_speed
from ansible.module_utils.inventory_problem import MISSING, Problem, is_int

# Cumulus Linux accepts an interface MTU between 552 and 9216 bytes.
MTU_MIN = 552
MTU_MAX = 9216
# Ethernet header (14) + one 802.1Q tag (4): a switch port must carry a host frame of host MTU + this.
L2_OVERHEAD = 18
# The SN3700V front panel, the one home of the port rule (preflight imports it): 32 QSFP56 200 GbE cages, swp1..swp32;
# each breaks out into 2x or 4x, its lanes named swpNs0..swpNs3 (Cumulus Linux 5.6 user guide, Switch Port
# Attributes, Breakout Ports, "SN3700 and SN3750SX": "All 32x QSFP56 ports can break out into 4xSFP56 or 2x QSFP56").
SN3700V_PORTS = 32
SN3700V_LANES = 4
# The shape of a Cumulus front-panel name (swpN, lane swpNsM); whether it exists is port_problem's question.
PORT_NAME = r"swp([1-9][0-9]?)(?:s([0-9]))?"
PARENT_PORT_NAME = r"swp([1-9][0-9]?)"
PORT_RE = re.compile(rf"^{PORT_NAME}$")
# Breakout modes an SN3700V cage takes: 1x (whole), 2x, 4x at a lane speed, or the port disabled / in loopback.
BREAKOUT_MODE = r"[124]x(?:10|25|40|50|100|200)G|disabled|loopback"
BREAKOUT_RE = re.compile(rf"^(?:{BREAKOUT_MODE})$")
SPEED_RE = re.compile(r"^([0-9]+)G$")
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
BOND_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,14}$")
CLAG_ROLES = ("primary", "secondary", "standalone")
ROCE_MODES = ("lossless", "lossy")


@dataclass
class FabricPort:
    """A switch port that carries one host NIC (an access port in that NIC's storage VLAN)."""

    name: str
    description: str
    mtu: int
    access_vlan: int
    speed_gbps: int | None
    host: str
    nic: str


@dataclass
class Uplink:
    """A port towards the site's core: a trunk that carries every storage VLAN."""

    name: str
    description: str
    mtu: int
    speed_gbps: int | None


@dataclass
class Peerlink:
    """The CLAG/MLAG peerlink bond and its control sub-interface."""

    bond: str
    members: list[str]
    vlan: int
    sys_mac: str
    priority: int
    backup_ip: str
    role: str
    mtu: int


@dataclass
class Plan:
    switch: str
    method: str
    bridge: str
    vlan_aware: bool
    vids: list[int]
    pvid: int
    vlan_names: dict[int, str]
    mtu: int
    ports: list[FabricPort] = field(default_factory=list)
    uplinks: list[Uplink] = field(default_factory=list)
    peerlink: Peerlink | None = None
    loopback: str | None = None
    breakouts: dict[str, str] = field(default_factory=dict)
    roce: dict[str, Any] = field(default_factory=dict)

    def bridge_ports(self) -> list[str]:
        names = [p.name for p in self.ports] + [u.name for u in self.uplinks]
        if self.peerlink:
            names.append(self.peerlink.bond)
        return names

    def owned_interfaces(self) -> list[str]:
        """Every interface whose configuration this plan owns entirely (ifupdown2 stanza or NVUE object)."""
        names = ["lo"] if self.loopback else []
        names += [p.name for p in self.ports] + [u.name for u in self.uplinks]
        if self.peerlink:
            names += [*self.peerlink.members, self.peerlink.bond, f"{self.peerlink.bond}.{self.peerlink.vlan}"]
        names.append(self.bridge)
        return names

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["vlan_names"] = {str(k): v for k, v in self.vlan_names.items()}
        data["bridge_ports"] = self.bridge_ports()
        data["owned_interfaces"] = self.owned_interfaces()
        return data


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _network(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        return None


def _interface(value: Any) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface | None:
    try:
        return ipaddress.ip_interface(str(value))
    except ValueError:
        return None


def port_parts(name: Any) -> tuple[int, int | None] | None:
    """'swp5' -> (5, None), 'swp5s2' -> (5, 2); None when ``name`` is not shaped like a front-panel port."""
    match = PORT_RE.match(name) if isinstance(name, str) else None
    if not match:
        return None
    return int(match.group(1)), (int(match.group(2)) if match.group(2) is not None else None)


def port_problem(name: Any) -> str | None:
    """Why ``name`` is not a port of an SN3700V, or None when it is one (the role, its plan module and preflight)."""
    parts = port_parts(name)
    if parts is None:
        return (f"is not a front-panel port name (swp1..swp{SN3700V_PORTS}, breakout lanes "
                f"swpNs0..swpNs{SN3700V_LANES - 1})")
    if parts[0] > SN3700V_PORTS or (parts[1] is not None and parts[1] >= SN3700V_LANES):
        return (f"does not exist: an SN3700V has swp1..swp{SN3700V_PORTS} (swpNs0..swpNs{SN3700V_LANES - 1} "
                "when broken out)")
    return None


def speed_gbps(value: Any) -> int | None:
    """'100G' or 100 -> 100; anything else -> None."""
    as_int = _as_int(value)
    if as_int is not None:
        return as_int
    match = SPEED_RE.match(str(value).strip()) if value is not None else None
    return int(match.group(1)) if match else None


# Cumulus Linux reserves VLANs 3725-3999 for internal use (switchd.conf resv_vlan_range); ifupdown2 refuses a bridge
# VLAN inside it at ifreload: "reserved vlan 3725 being used (reserved vlan range 3725-3999)" (ifupdown2's
# tests/test_l2.py, test_bridge8_reserved_vlans; tests/fixtures/cumulus/real/SOURCES).
CUMULUS_RESERVED_VLANS = range(3725, 4000)
# VLAN 1 is the default VLAN of a Cumulus VLAN-aware bridge: without a bridge-pvid / bridge-access of its own
# (NVUE: untagged, access) every bridge port carries it untagged (ifupdown2 bridge-pvid and bridge-vids default 1,
# NVUE bridge domain untagged 1). A storage VLAN 1 would take in any port added to the bridge without its own
# VLAN, and the peerlink and uplinks' untagged traffic, so the storage VLANs (and the bridge PVID, one of them)
# are 2..4094, as preflight's schema has it (module_utils/preflight_schema.py).
DEFAULT_VLAN = 1


def vlans_by_id(vlans: Any) -> dict[int, dict[str, Any]]:
    """The storage VLANs the plan configures: each valid ID once (its first entry)."""
    by_id: dict[int, dict[str, Any]] = {}
    for vlan in vlans if isinstance(vlans, list) else []:
        vid = _as_int(vlan.get("id")) if isinstance(vlan, dict) else None
        if vid is not None and DEFAULT_VLAN < vid <= 4094 and vid not in by_id:
            by_id[vid] = vlan
    return by_id


def vlan_problems(host: str, vlans: Any, bridge: Any, clag: Any) -> list[Problem]:
    """The storage VLANs' rules, their one home: a non-empty list of mappings, each VLAN ID 2..4094 (1 is the
    bridge's default VLAN: DEFAULT_VLAN) and each name used once, subnets in CIDR form; the bridge PVID one of
    them; with CLAG on, the peerlink (CLAG control) VLAN a
    VLAN ID 2..4094 that no storage VLAN uses. derive_plan (library/cumulus_fabric_plan.py) and preflight
    (preflight_rules.rule_vlans) both call it."""
    problems: list[Problem] = []
    if not isinstance(vlans, list) or not vlans:
        problems.append(Problem(host, "storage_fabric_vlans", vlans, "must be a non-empty list of VLANs",
                                "list at least the storage VLAN: [{id: 100, name: storage, subnet: ...}]"))
    ids: dict[int, int] = {}
    names: dict[str, int] = {}
    for index, vlan in enumerate(vlans if isinstance(vlans, list) else []):
        var = f"storage_fabric_vlans[{index}]"
        if not isinstance(vlan, dict):
            problems.append(Problem(host, var, vlan, "is not a mapping", "use {id: N, name: X, subnet: CIDR}"))
            continue
        vid = _as_int(vlan.get("id"))
        if vid is None or not 1 <= vid <= 4094:
            problems.append(Problem(host, f"{var}.id", vlan.get("id"), "is not a VLAN ID between 1 and 4094",
                                    "use an 802.1Q VLAN ID 2..4094"))
        elif vid == DEFAULT_VLAN:
            problems.append(Problem(host, f"{var}.id", vlan.get("id"),
                                    "is VLAN 1, the default VLAN of the Cumulus bridge: every bridge port without "
                                    "a VLAN of its own carries it untagged",
                                    "use a VLAN ID 2..4094 of its own for storage (e.g. 100)"))
        elif vid in ids:
            problems.append(Problem(host, f"{var}.id", vid,
                                    f"duplicate VLAN {vid} (storage_fabric_vlans[{ids[vid]}] has it too)",
                                    "give every storage VLAN a distinct ID"))
        else:
            ids[vid] = index
        name = vlan.get("name")
        if isinstance(name, str) and name and name in names:
            problems.append(Problem(host, f"{var}.name", name,
                                    f"duplicate VLAN name (storage_fabric_vlans[{names[name]}] has it too)",
                                    "give every VLAN its own name"))
        elif isinstance(name, str) and name:
            names[name] = index
        if vlan.get("subnet") is not None and _network(vlan.get("subnet")) is None:
            problems.append(Problem(host, f"{var}.subnet", vlan.get("subnet"), "is not a CIDR subnet",
                                    "write it as address/prefix, e.g. 198.51.100.0/24"))
    bridge = bridge if isinstance(bridge, dict) else {}
    pvid = _as_int(bridge.get("pvid"))
    if ids and pvid not in ids:
        problems.append(Problem(host, "storage_fabric_bridge.pvid", bridge.get("pvid"),
                                f"is not one of storage_fabric_vlans ({sorted(ids)})", "use the storage VLAN ID"))
    clag = clag if isinstance(clag, dict) else {}
    if bool(clag.get("enabled", False)):
        peer = clag.get("peerlink") if isinstance(clag.get("peerlink"), dict) else {}
        vlan = _as_int(peer.get("vlan"))
        if vlan is None or not 2 <= vlan <= 4094 or vlan in ids:
            problems.append(Problem(host, "storage_fabric_clag.peerlink.vlan", peer.get("vlan"),
                                    "must be a VLAN ID 2..4094 that is not a storage VLAN: the CLAG control VLAN "
                                    "must be its own", "use 4094 (customary), or any VLAN ID no storage VLAN uses"))
    return problems


def reserved_vlan_problems(host: str, vlans: Any, clag: Any) -> list[Problem]:
    """No storage VLAN and no CLAG control VLAN in Cumulus Linux's reserved range 3725-3999, their one home:
    derive_plan and preflight (preflight_rules.rule_cumulus_reserved_vlans) both call it."""
    low, high = CUMULUS_RESERVED_VLANS[0], CUMULUS_RESERVED_VLANS[-1]
    why = (f"is in Cumulus Linux's reserved VLAN range {low}-{high} (switchd.conf resv_vlan_range): ifupdown2 refuses "
           "it at ifreload and NVUE at apply")
    problems: list[Problem] = []
    for index, vlan in enumerate(vlans if isinstance(vlans, list) else []):
        vid = _as_int(vlan.get("id")) if isinstance(vlan, dict) else None
        if vid is not None and vid in CUMULUS_RESERVED_VLANS:
            problems.append(Problem(host, f"storage_fabric_vlans[{index}].id", vlan["id"], why,
                                    f"use a VLAN id outside {low}-{high} (2-3724 or 4000-4094)"))
    clag = clag if isinstance(clag, dict) else {}
    peer = clag.get("peerlink") if isinstance(clag.get("peerlink"), dict) else {}
    vid = _as_int(peer.get("vlan"))
    if bool(clag.get("enabled", False)) and vid is not None and vid in CUMULUS_RESERVED_VLANS:
        problems.append(Problem(host, "storage_fabric_clag.peerlink.vlan", peer["vlan"], why, "use 4094"))
    return problems


def port_speed_problem(host: str, variable: str, speed: Any, allowed: list[int]) -> Problem | None:
    """A cable's speed_gbps must be one the switch ports are set to (storage_fabric_speeds_gbps, when listed), the
    one home of this rule: derive_plan and preflight (preflight_rules.rule_port_speed) both call it."""
    gbps = _as_int(speed)
    if gbps is None or (allowed and gbps not in allowed):
        return Problem(host, variable, speed, f"is not a port speed the SN3700V sets ({allowed}): the switch port "
                       "cannot be set to this speed", "use the cable's speed in Gb/s, list it in "
                       "storage_fabric_speeds_gbps, or set storage_fabric_port_speed_managed: false")
    return None


def _vlan_for_address(address: Any, vlans: dict[int, dict[str, Any]]) -> int | None:
    iface = _interface(address)
    if iface is None:
        return None
    for vid, vlan in vlans.items():
        net = _network(vlan.get("subnet"))
        if net is not None and iface.ip in net:
            return vid
    return None


def _check_mtu(switch: str, mtu: Any, problems: list[Problem]) -> int:
    value = _as_int(mtu)
    if value is None or not MTU_MIN <= value <= MTU_MAX:
        problems.append(Problem(switch, "storage_fabric_port_mtu", mtu,
                                f"switch-port MTU must be an integer between {MTU_MIN} and {MTU_MAX}",
                                f"use {MTU_MAX} (jumbo frames, the reference value)"))
        return MTU_MAX
    return value


def _fabric_ports(
    switch: str, settings: dict[str, Any], vlans: dict[int, dict[str, Any]], mtu: int, problems: list[Problem]
) -> list[FabricPort]:
    nics_by_host: dict[str, Any] = settings.get("nics_by_host") or {}
    speed_managed = bool(settings.get("port_speed_managed", True))
    allowed_speeds = [s for s in (_as_int(v) for v in settings.get("speeds_gbps") or []) if s is not None]
    pvid = _as_int((settings.get("bridge") or {}).get("pvid"))
    ports: dict[str, FabricPort] = {}
    for host in sorted(nics_by_host):
        nics = nics_by_host[host] or []
        if not isinstance(nics, list):
            problems.append(Problem(host, "storage_nics", nics, "is not a list", "list one entry per cable"))
            continue
        for index, nic in enumerate(nics):
            var = f"storage_nics[{index}]"
            if not isinstance(nic, dict) or nic.get("switch") != switch:
                continue
            name = nic.get("switch_port")
            why = port_problem(name)
            if why or not isinstance(name, str):  # port_problem accepts only a str: `why` is set for the rest
                problems.append(Problem(host, f"{var}.switch_port", name, f"{why} on {switch}",
                                        "name the SN3700V port the cable lands on, e.g. swp1"))
                continue
            if name in ports:
                other = ports[name]
                problems.append(Problem(host, f"{var}.switch_port", name,
                                        f"{switch} port {name} is already cabled to {other.host} {other.nic}",
                                        "every cable needs its own switch port"))
                continue
            host_mtu = _as_int(nic.get("mtu"))
            if host_mtu is not None and host_mtu + L2_OVERHEAD > mtu:
                problems.append(Problem(host, f"{var}.mtu", host_mtu,
                                        f"host MTU + {L2_OVERHEAD} bytes of L2 overhead exceeds the switch-port MTU {mtu}",
                                        f"lower the host MTU to {mtu - L2_OVERHEAD} or raise storage_fabric_port_mtu"))
            vid = _vlan_for_address(nic.get("address"), vlans)
            if vid is None:
                if nic.get("address") is not None and vlans:
                    problems.append(Problem(host, f"{var}.address", nic.get("address"),
                                            "is in none of the storage_fabric_vlans subnets",
                                            "put the address in a storage VLAN subnet or add that VLAN"))
                vid = pvid if pvid in vlans else next(iter(vlans), 1)
            gbps = None
            if speed_managed:
                bad = port_speed_problem(host, f"{var}.speed_gbps", nic.get("speed_gbps"), allowed_speeds)
                problems += [bad] if bad else []
                gbps = None if bad else _as_int(nic.get("speed_gbps"))
            ports[name] = FabricPort(
                name=name,
                description=f"{host} {nic.get('name', '')}".strip(),
                mtu=mtu,
                access_vlan=vid,
                speed_gbps=gbps,
                host=host,
                nic=str(nic.get("name", "")),
            )
    return [ports[n] for n in sorted(ports, key=_port_sort_key)]


def _port_sort_key(name: str) -> tuple[int, int, str]:
    parts = port_parts(name)
    if parts is None:
        return (10_000, 0, name)
    return (parts[0], -1 if parts[1] is None else parts[1], name)


def _peerlink(switch: str, settings: dict[str, Any], vlans: dict[int, Any], mtu: int,
              problems: list[Problem]) -> Peerlink | None:
    clag = settings.get("clag") or {}
    role = settings.get("clag_role", "standalone")
    if role not in CLAG_ROLES:
        problems.append(Problem(switch, "sn3700v_clag_role", role, f"must be one of {list(CLAG_ROLES)}",
                                "primary on one switch of the pair, secondary on the other"))
    if not bool(clag.get("enabled", False)):
        return None
    if role == "standalone":
        problems.append(Problem(switch, "sn3700v_clag_role", role,
                                "storage_fabric_clag.enabled is true but this switch is standalone",
                                "set primary/secondary on the pair, or storage_fabric_clag.enabled: false"))
    peer = clag.get("peerlink") or {}
    bond = peer.get("bond", "peerlink")
    if not isinstance(bond, str) or not BOND_RE.match(bond):
        problems.append(Problem(switch, "storage_fabric_clag.peerlink.bond", bond, "is not a valid bond name",
                                "use peerlink"))
    members = peer.get("members") or []
    if not isinstance(members, list) or not members:
        problems.append(Problem(switch, "storage_fabric_clag.peerlink.members", members,
                                "the peerlink needs at least one member port", "list the ISL ports, e.g. [swp31, swp32]"))
        members = []
    for member in members:
        why = port_problem(member)
        if why:
            problems.append(Problem(switch, "storage_fabric_clag.peerlink.members", member, why,
                                    "list the ISL ports, e.g. [swp31, swp32]"))
    vlan = _as_int(peer.get("vlan"))
    if vlan is None or not 2 <= vlan <= 4094 or vlan in vlans:
        vlan = 4094  # vlan_problems reports it
    sys_mac = str(clag.get("sys_mac", ""))
    if not MAC_RE.match(sys_mac):
        problems.append(Problem(switch, "storage_fabric_clag.sys_mac", clag.get("sys_mac"),
                                "is not a MAC address", "use the same unique 44:38:39:ff:xx:xx MAC on both switches"))
    priority = _as_int(settings.get("clag_priority"))
    if priority is None or not 0 <= priority <= 65535:
        problems.append(Problem(switch, "sn3700v_clag_priority", settings.get("clag_priority"),
                                "must be an integer 0..65535", "lower wins the primary role: e.g. 1000 and 2000"))
        priority = 32768
    backup = settings.get("clag_backup_ip")
    try:
        ipaddress.ip_address(str(backup))
    except ValueError:
        problems.append(Problem(switch, "sn3700v_clag_backup_ip", backup, "is not an IP address",
                                "use the peer switch's management address"))
    return Peerlink(bond=str(bond), members=[str(m) for m in members], vlan=vlan, sys_mac=sys_mac.lower(),
                    priority=priority, backup_ip=str(backup), role=str(role), mtu=mtu)


def _uplinks(switch: str, settings: dict[str, Any], mtu: int, problems: list[Problem]) -> list[Uplink]:
    uplinks = settings.get("uplinks") or []
    out: list[Uplink] = []
    if not isinstance(uplinks, list):
        problems.append(Problem(switch, "storage_fabric_uplinks", uplinks, "is not a list",
                                "use [] or [{name: swp30, speed: 100G, description: to core}]"))
        return out
    for index, uplink in enumerate(uplinks):
        var = f"storage_fabric_uplinks[{index}]"
        name = uplink.get("name") if isinstance(uplink, dict) else uplink
        why = port_problem(name)
        if why:
            problems.append(Problem(switch, f"{var}.name", name, why, "name the uplink port, e.g. swp30"))
            continue
        speed = uplink.get("speed") if isinstance(uplink, dict) else None
        gbps = speed_gbps(speed) if speed is not None else None
        if speed is not None and gbps is None:
            problems.append(Problem(switch, f"{var}.speed", speed, "is not a speed like 100G", "write e.g. 100G"))
        desc = str(uplink.get("description", "uplink")) if isinstance(uplink, dict) else "uplink"
        out.append(Uplink(name=str(name), description=desc, mtu=mtu, speed_gbps=gbps))
    return out


def _breakouts(switch: str, breakouts: Any, problems: list[Problem]) -> dict[str, str]:
    if not breakouts:
        return {}
    if not isinstance(breakouts, dict):
        problems.append(Problem(switch, "storage_fabric_breakouts", breakouts, "is not a mapping",
                                "use {} or {swp29: 4x25G}"))
        return {}
    out = {}
    for port, mode in breakouts.items():
        why = port_problem(port)
        if why or (port_parts(port) or (0, 0))[1] is not None:
            problems.append(Problem(switch, "storage_fabric_breakouts", port, why or "is not a parent port name",
                                    "break out a whole port, e.g. swp29"))
            continue
        if not BREAKOUT_RE.match(str(mode)):
            problems.append(Problem(switch, f"storage_fabric_breakouts.{port}", mode, "is not a breakout mode",
                                    "use 2x100G, 4x50G, 4x25G, 4x10G ... or disabled (an SN3700V cage has 4 lanes)"))
            continue
        out[str(port)] = str(mode)
    return out


def _check_overlaps(switch: str, plan: Plan, problems: list[Problem]) -> None:
    users: dict[str, str] = {}

    def claim(name: str, what: str) -> None:
        if name in users:
            problems.append(Problem(switch, "storage_nics/storage_fabric_uplinks/storage_fabric_clag", name,
                                    f"port is used twice: as {users[name]} and as {what}",
                                    "give each role its own port"))
        else:
            users[name] = what

    for port in plan.ports:
        claim(port.name, f"fabric port of {port.host}")
    for uplink in plan.uplinks:
        claim(uplink.name, "uplink")
    if plan.peerlink:
        for member in plan.peerlink.members:
            claim(member, "peerlink member")
    for parent, mode in plan.breakouts.items():
        if mode not in ("disabled", "loopback") and not mode.startswith("1x") and parent in users:
            problems.append(Problem(switch, "storage_fabric_breakouts", parent,
                                    f"is broken out ({mode}) but used whole as {users[parent]}",
                                    f"use its lanes ({parent}s0, {parent}s1, ...) instead"))


def clag_pair_problems(clag: Any, switches: Mapping[str, Mapping[str, Any]], label: str = "sn3700v") -> list[Problem]:
    """The CLAG pair's rules, their one home (one switch's own CLAG settings are derive_plan's): with CLAG on,
    exactly two switches, one primary and one secondary, distinct priorities with the primary's the lower (Cumulus
    makes the lower priority primary), each switch's backup IP set and not its own address; with CLAG off, every
    switch standalone. switches: {name: {"role", "priority", "backup_ip", "address"}} in inventory order (address:
    its management address, ansible_host); label: where storage_fabric_clag is set. Preflight (rule_clag) calls it
    with the inventory's group. The role's plan does not: it plans one switch, and the role takes a group of more
    than one pair (tests/fabric_sn3700v/test_nvue_role.py configures three switches), where preflight holds the
    reference's one pair."""
    out: list[Problem] = []
    names = list(switches)
    enabled = clag.get("enabled") if isinstance(clag, Mapping) else None
    roles = {s: switches[s].get("role") for s in names}
    if enabled is False:
        for switch, role in roles.items():
            if role in ("primary", "secondary"):
                out.append(Problem(switch, "sn3700v_clag_role", role, "storage_fabric_clag.enabled is false",
                                   "set sn3700v_clag_role: standalone, or enable CLAG"))
        return out
    if enabled is not True:
        return out
    if len(names) != 2:
        out.append(Problem(label, "storage_fabric_clag.enabled", True,
                           f"CLAG pairs exactly two switches; group sn3700v has {len(names)}",
                           "list two SN3700V hosts (or several pairs: each switch's sn3700v_clag_backup_ip the "
                           "address of its peer, whose backup IP is this switch's), or set "
                           "storage_fabric_clag.enabled: false"))
        return out
    for role in ("primary", "secondary"):
        if not [s for s, r in roles.items() if r == role]:
            other = [s for s, r in roles.items() if r != ("secondary" if role == "primary" else "primary")]
            host = other[-1] if other else names[-1]
            out.append(Problem(host, "sn3700v_clag_role", roles.get(host), f"no switch of the CLAG pair is {role}",
                               "set sn3700v_clag_role: primary on one switch and secondary on the other"))
    prios = {s: p if is_int(p := switches[s].get("priority")) else None
             for s in names}
    first, second = names
    if prios[first] is not None and prios[first] == prios[second]:
        out.append(Problem(second, "sn3700v_clag_priority", prios[second], f"equal to {first}'s priority",
                           "give the primary the lower priority (e.g. 1000) and the secondary a higher one (2000)"))
    primary = [s for s, r in roles.items() if r == "primary"]
    secondary = [s for s, r in roles.items() if r == "secondary"]
    if len(primary) == 1 and len(secondary) == 1:
        p, q = primary[0], secondary[0]
        p_prio, q_prio = prios[p], prios[q]
        if p_prio is not None and q_prio is not None and p_prio > q_prio:
            out.append(Problem(p, "sn3700v_clag_priority", p_prio,
                               f"is higher than the secondary {q}'s {q_prio}: Cumulus makes the lower priority "
                               "primary", "give the primary the lower priority"))
    for switch in names:
        peer = second if switch == first else first
        backup = switches[switch].get("backup_ip")
        if backup is None:
            out.append(Problem(switch, "sn3700v_clag_backup_ip", MISSING, "is required with CLAG enabled",
                               f"set it to {peer}'s management address"))
        elif backup == switches[switch].get("address"):
            out.append(Problem(switch, "sn3700v_clag_backup_ip", backup, "points at the switch itself",
                               f"set it to {peer}'s management address ({switches[peer].get('address')})"))
    return out


def derive_plan(switch: str, settings: dict[str, Any]) -> tuple[Plan, list[Problem]]:
    """One switch's desired state from the inventory, and every problem found on the way.

    ``settings`` keys: method, nics_by_host, port_mtu, vlans, bridge, clag, clag_role, clag_priority,
    clag_backup_ip, loopback, uplinks, roce, breakouts, speeds_gbps, port_speed_managed, port_fec.
    """
    problems: list[Problem] = []
    method = settings.get("method", "files")
    if method not in ("files", "nvue"):
        problems.append(Problem(switch, "storage_fabric_method", method, "must be files or nvue",
                                "files for ifupdown2/FRR files (Cumulus 4.x/5.x), nvue for the NVUE API (5.x)"))
    mtu = _check_mtu(switch, settings.get("port_mtu"), problems)
    problems += vlan_problems(switch, settings.get("vlans"), settings.get("bridge"), settings.get("clag"))
    problems += reserved_vlan_problems(switch, settings.get("vlans"), settings.get("clag"))
    vlans = vlans_by_id(settings.get("vlans"))
    bridge = settings.get("bridge") or {}
    bridge_name = bridge.get("name", "br_default")
    if not isinstance(bridge_name, str) or not BOND_RE.match(bridge_name):
        problems.append(Problem(switch, "storage_fabric_bridge.name", bridge_name, "is not a bridge name",
                                "use br_default"))
    if not bool(bridge.get("vlan_aware", True)):
        problems.append(Problem(switch, "storage_fabric_bridge.vlan_aware", bridge.get("vlan_aware"),
                                "the storage fabric uses one VLAN-aware bridge", "set vlan_aware: true"))
    pvid = _as_int(bridge.get("pvid"))
    loopback = settings.get("loopback")
    if loopback not in (None, "") and _interface(loopback) is None:
        problems.append(Problem(switch, "sn3700v_loopback", loopback, "is not an address/prefix",
                                "write it as 192.0.2.251/32"))
        loopback = None
    roce = settings.get("roce") or {}
    roce_enabled = bool(roce.get("enabled", False))
    roce_mode = str(roce.get("mode", "lossless"))
    if roce_enabled and roce_mode not in ROCE_MODES:
        problems.append(Problem(switch, "storage_fabric_roce.mode", roce_mode, f"must be one of {list(ROCE_MODES)}",
                                "use lossless"))
    if roce_enabled and method == "files":
        problems.append(Problem(switch, "storage_fabric_roce.enabled", True,
                                "Cumulus Linux configures RoCE QoS only through NCLU (4.x) or NVUE (5.x), not files",
                                "use storage_fabric_method: nvue, or leave RoCE off (NFS over TCP does not need it)"))
    plan = Plan(
        switch=switch,
        method=str(method),
        bridge=str(bridge_name),
        vlan_aware=True,
        vids=sorted(vlans),
        pvid=pvid if pvid in vlans else (sorted(vlans)[0] if vlans else 1),
        vlan_names={vid: str(v.get("name", f"vlan{vid}")) for vid, v in vlans.items()},
        mtu=mtu,
        loopback=str(loopback) if loopback else None,
        roce={"enabled": roce_enabled, "mode": roce_mode},
    )
    plan.ports = _fabric_ports(switch, settings, vlans, mtu, problems)
    plan.uplinks = _uplinks(switch, settings, mtu, problems)
    plan.peerlink = _peerlink(switch, settings, vlans, mtu, problems)
    plan.breakouts = _breakouts(switch, settings.get("breakouts"), problems)
    _check_overlaps(switch, plan, problems)
    problems += forced_speed_fec_problems(switch, plan, settings.get("port_fec"))
    return plan, problems


def forced_speed_fec_problems(switch: str, plan: Plan, fec_by_speed: Any) -> list[Problem]:
    """A port or uplink whose speed the plan forces needs a valid FEC mode for that speed (fec_for_forced_speed):
    with auto-negotiation off, a Spectrum port left on FEC auto does not link up. One row for the switch."""
    fec = fec_by_speed if isinstance(fec_by_speed, Mapping) else {}
    forced = [(p.name, p.speed_gbps) for p in plan.ports] + [(u.name, u.speed_gbps) for u in plan.uplinks]
    missing = [(name, gbps) for name, gbps in forced if gbps and fec_for_forced_speed(gbps, fec) is None]
    if not missing:
        return []
    speeds = sorted({gbps for _unused, gbps in missing})
    # the map as the inventory writes it: speeds are numbers (module arguments arrive with string keys)
    shown = {int(k) if str(k).isdigit() else k: v for k, v in fec.items()} if fec else MISSING
    return [Problem(switch, "storage_fabric_port_fec", shown,
                    f"has no valid FEC mode ({', '.join(FEC_MODES)}) for the forced port speeds {speeds} Gb/s "
                    f"({', '.join(n for n, _unused in missing[:4])}{' ...' if len(missing) > 4 else ''}): with "
                    "auto-negotiation off, a Spectrum port left on FEC auto does not link up",
                    "add each speed with the FEC the cable and the host NIC use, e.g. {100: rs, 25: rs}, or set "
                    "storage_fabric_port_speed_managed: false to leave speed and FEC to autonegotiation")]
