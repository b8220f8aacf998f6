"""Preflight rules: the schema of every consumed variable, then the cross-field rules of the design.

Input is a `Site`: the variables of every host of the groups dgx, powerscale, sn3700v and qm8700 as Ansible
resolved them, the group-level view (`all`), and the state of each secret (never its value). Output is a
list of `Problem`s, one per row of the preflight table: host | variable | value | problem | fix.

Every rule is a pure function `rule_x(site) -> list[Problem]`, unit-tested with a failing and a passing
case in tests/preflight/. `evaluate(site)` runs them all; module_utils/inventory_problem.py holds the row
(`Problem`) and the one table (`render_table`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from ansible.module_utils import cumulus_fabric, dgx_nfs, dgx_ngc, mlnxos_fabric, powerscale_inventory
from ansible.module_utils.cabling_design import declared_ports, expand
from ansible.module_utils.cabling_design import problems as compute_map_problems
from ansible.module_utils.cumulus_fabric import port_parts, port_problem
from ansible.module_utils.cumulus_release import (
    NEWEST,
    OLDEST,
    Release,
    ReleaseError,
    breakout_parts,
    breakout_syntax,
    fec_for_forced_speed,
    known,
    nvue_api_default_listen,
    parse_release,
    supported_methods,
)
from ansible.module_utils.inventory_problem import ERROR, WARNING, Problem, is_int, show
from ansible.module_utils.ngc_driver_support import judge as judge_ngc_driver
from ansible.module_utils.powerscale_inventory import address, ip_between
from ansible.module_utils.preflight_schema import (
    MISSING,
    VARIABLES,
)

GROUPS = ("dgx", "powerscale", "sn3700v", "qm8700")
SECRET_SHOWN = "<secret>"


@dataclass(frozen=True)
class Secret:
    """Where one secret comes from, and which hosts consume it."""

    name: str
    vault: str
    env: str
    group: str


# Same order and names as inventories/*/group_vars/all/secrets.yml and docs/vault.example.yml.
SECRETS: tuple[Secret, ...] = (
    Secret("powerscale_api_password", "vault_powerscale_api_password", "POWERSCALE_API_PASSWORD", "powerscale"),
    Secret("storage_fabric_password", "vault_storage_fabric_password", "SN3700V_PASSWORD", "sn3700v"),
    Secret("qm8700_api_password", "vault_qm8700_api_password", "QM8700_PASSWORD", "qm8700"),
    Secret("ngc_api_key", "vault_ngc_api_key", "NGC_API_KEY", "dgx"),
    Secret("ngc_mirror_password", "vault_ngc_mirror_password", "NGC_MIRROR_PASSWORD", "dgx"),
)
SECRET_NAMES = frozenset(s.name for s in SECRETS)


@dataclass(frozen=True)
class SecretState:
    """What the controller found for one secret. `state`: ok | empty | clear_text | error | unchecked."""

    name: str
    state: str
    host: str = "all"
    detail: str = ""


@dataclass(frozen=True)
class Settings:
    """The role's own knobs (roles/preflight/defaults/main.yml)."""

    l2_overhead_bytes: int = 18
    sizing_gpus_per_f800_node: int = 8


@dataclass
class Site:
    """Everything the rules see. `hostvars[host]` holds only the variables that resolved for that host;
    `unresolved[host][var]` says why a variable could not be templated ("all" is the group-level view).
    A value the hosts share in the inventory (group_vars, no template) is one object in every host's `hostvars`
    (resolved once: plugins/action/preflight_inventory.py `resolved`), so a rule reads values and never changes them."""

    groups: dict[str, list[str]]
    hostvars: dict[str, dict[str, Any]]
    allvars: dict[str, Any]
    unresolved: dict[str, dict[str, str]] = field(default_factory=dict)
    secrets: list[SecretState] = field(default_factory=list)
    offline: bool = True
    settings: Settings = field(default_factory=Settings)
    # The validation's metric definitions (validation/metrics.yml: name -> stage, unit, threshold), or None where
    # the project's validation package is not installed beside the plugins.
    metrics: dict[str, dict[str, Any]] | None = None

    def hosts(self, group: str) -> list[str]:
        return list(self.groups.get(group, []))

    def var(self, host: str | None, name: str, default: Any = None) -> Any:
        if host is None:
            return self.allvars.get(name, default)
        return self.hostvars.get(host, {}).get(name, default)

    def label(self, host: str, name: str) -> str:
        """`all` when the host sees the group-level value (so the fix goes to group_vars/all), else the host."""
        if name in self.allvars and self.hostvars.get(host, {}).get(name, MISSING) == self.allvars[name]:
            return "all"
        return host

    def cluster(self, name: str, group: str) -> tuple[Any, str]:
        """A cluster-wide variable as the stage that consumes it sees it (its group's first host)."""
        hosts = self.hosts(group)
        if hosts:
            return self.var(hosts[0], name), self.label(hosts[0], name)
        return self.allvars.get(name), "all"


# ---------------------------------------------------------------------------------------------- helpers


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def interface(value: Any) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface | None:
    try:
        return ipaddress.ip_interface(value) if isinstance(value, str) and "/" in value else None
    except ValueError:
        return None


def network(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(value, strict=True) if isinstance(value, str) else None
    except ValueError:
        return None


IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address


def version_tuple(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)*", value):
        return tuple(int(p) for p in value.split("."))
    return None


def nics(site: Site, host: str) -> list[tuple[int, Mapping[str, Any]]]:
    return [(i, n) for i, n in enumerate(as_list(site.var(host, "storage_nics"))) if isinstance(n, Mapping)]


def mounts(site: Site, host: str) -> list[tuple[int, Mapping[str, Any]]]:
    return [(i, m) for i, m in enumerate(as_list(site.var(host, "nfs_mounts"))) if isinstance(m, Mapping)]


def exports(site: Site) -> tuple[list[tuple[int, Mapping[str, Any]]], str]:
    value, label = site.cluster("powerscale_exports", "powerscale")
    return [(i, e) for i, e in enumerate(as_list(value)) if isinstance(e, Mapping)], label


def dgx_model(site: Site, host: str) -> Mapping[str, Any] | None:
    model = site.var(host, "dgx_model")
    models = as_dict(site.var(host, "dgx_models"))
    entry = models.get(model) if isinstance(model, str) else None
    return entry if isinstance(entry, Mapping) else None


# ---------------------------------------------------------------------------------------------- schema


def rule_schema(site: Site) -> list[Problem]:
    """Types, ranges, enums and required-ness of every consumed variable (module_utils/preflight_schema.py)."""
    out: list[Problem] = []
    for var in VARIABLES:
        if var.name in SECRET_NAMES:
            continue
        if var.name in site.allvars:
            out += _findings("all", var.spec.check(site.allvars[var.name], var.name))
        for group in var.groups:
            for host in site.hosts(group):
                if var.name in site.unresolved.get(host, {}):
                    continue
                value = site.hostvars.get(host, {}).get(var.name, MISSING)
                if value is MISSING:
                    if var.required:
                        out.append(Problem(host, var.name, MISSING, f"is required by the {group} stage and not set",
                                           f"set {var.name}, or give -i inventories/common before the site "
                                           "(meanings: inventories/common, inventories/production)"))
                    continue
                if var.name in site.allvars and value == site.allvars[var.name]:
                    continue
                out += _findings(host, var.spec.check(value, var.name))
    for host, failed in sorted(site.unresolved.items()):
        for name, reason in sorted(failed.items()):
            shown = SECRET_SHOWN if name in SECRET_NAMES else "(template)"
            out.append(Problem(host, name, shown, f"cannot be resolved: {reason}",
                               "fix the template, or define the variables it uses"))
    return out


def _findings(host: str, findings: Iterable[Any]) -> list[Problem]:
    return [Problem(host, f.path, f.value, f.problem, f.fix) for f in findings]


SPECS = {var.name: var.spec for var in VARIABLES}


def _at_or_below(path: str, flagged: str) -> bool:
    return path == flagged or path.startswith((flagged + ".", flagged + "["))


def root_name(path: str) -> str:
    """The variable a row's path starts at: ngc_mirror from ngc_mirror.registry, nfs_mounts from nfs_mounts[0].hard."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def beside_schema(name: str, value: Any, problems: Iterable[Problem]) -> list[Problem]:
    """A feature's rows (its inventory_problems, which also type-check: its plan module runs without preflight)
    less those on a path that rule_schema reports already, at that path or above it: one row per defect."""
    spec = SPECS.get(name)
    flagged = {f.path for f in spec.check(value, name)} if spec is not None else set()
    return [p for p in problems if not any(_at_or_below(p.variable, f) for f in flagged)]


# ---------------------------------------------------------------------------------------------- MTU


def rule_mtu(site: Site) -> list[Problem]:
    """One MTU end to end: DGX and PowerScale storage NICs and the PowerScale pool equal storage_fabric_host_mtu;
    every switch port carries the host MTU plus L2 overhead."""
    out: list[Problem] = []
    host_mtu, host_mtu_label = site.cluster("storage_fabric_host_mtu", "sn3700v")
    if not is_int(host_mtu):
        return out
    nic_mtus = [(h, i, nic_mtu) for g in ("dgx", "powerscale") for h in site.hosts(g) for i, n in nics(site, h)
                if is_int(nic_mtu := n.get("mtu"))]
    pool_mtu, pool_label = site.cluster("powerscale_pool_mtu", "powerscale")
    seen = {m for _host, _index, m in nic_mtus} | ({pool_mtu} if is_int(pool_mtu) else set())
    if len(seen) == 1 and host_mtu not in seen:
        only = seen.pop()
        out.append(Problem(host_mtu_label, "storage_fabric_host_mtu", host_mtu,
                           f"every storage NIC and the PowerScale pool use MTU {only}, this says {host_mtu}",
                           f"set storage_fabric_host_mtu: {only}"))
    else:
        for host, pos, mtu in nic_mtus:
            if mtu != host_mtu:
                out.append(Problem(host, f"storage_nics[{pos}].mtu", mtu,
                                   f"differs from storage_fabric_host_mtu {host_mtu}: one MTU end to end, or large "
                                   "NFS replies are dropped or fragmented",
                                   f"set mtu: {host_mtu}"))
        if is_int(pool_mtu) and pool_mtu != host_mtu:
            out.append(Problem(pool_label, "powerscale_pool_mtu", pool_mtu,
                               f"differs from the DGX storage NICs' MTU {host_mtu}",
                               f"set powerscale_pool_mtu: {host_mtu} (OneFS pool MTU = host MTU)"))
    overhead = site.settings.l2_overhead_bytes
    for switch in site.hosts("sn3700v"):
        port_mtu = site.var(switch, "storage_fabric_port_mtu")
        if not is_int(port_mtu):
            continue
        carried = [(host_mtu, "storage_fabric_host_mtu")] + [
            (m, f"{h} storage_nics[{i}]") for h, i, m in nic_mtus
            if any(n.get("switch") == switch for _unused, n in nics(site, h))]
        need, origin = max(carried, key=lambda c: c[0])
        if port_mtu < need + overhead:
            out.append(Problem(site.label(switch, "storage_fabric_port_mtu"), "storage_fabric_port_mtu", port_mtu,
                               f"below host MTU {need} ({origin}) + {overhead} bytes of L2 overhead: "
                               "full-size frames would be dropped at the switch",
                               f"set storage_fabric_port_mtu >= {need + overhead} (9216 is the Cumulus maximum)"))
    return _dedupe(out)


# ---------------------------------------------------------------------------------------------- addresses


def rule_storage_addresses(site: Site) -> list[Problem]:
    """Every storage address inside storage_subnet with its prefix length, and unique across all hosts."""
    out: list[Problem] = []
    subnet_value, _unused = site.cluster("storage_subnet", "sn3700v")
    subnet = network(subnet_value)
    owner: dict[Any, str] = {}
    for group in ("dgx", "powerscale"):
        for host in site.hosts(group):
            for pos, nic in nics(site, host):
                iface = interface(nic.get("address"))
                if iface is None:
                    continue
                path = f"storage_nics[{pos}].address"
                if subnet is not None and iface.ip not in subnet:
                    out.append(Problem(host, path, nic["address"], f"is outside storage_subnet {subnet}",
                                       f"use an address in {subnet} (or correct storage_subnet)"))
                elif subnet is not None and iface.network.prefixlen != subnet.prefixlen:
                    out.append(Problem(host, path, nic["address"],
                                       f"prefix /{iface.network.prefixlen} differs from storage_subnet {subnet}",
                                       f"write it as {iface.ip}/{subnet.prefixlen}"))
                if iface.ip in owner:
                    out.append(Problem(host, path, nic["address"], f"duplicate address: {owner[iface.ip]} has it too",
                                       "give every storage NIC its own address"))
                else:
                    owner[iface.ip] = f"{host} storage_nics[{pos}]"
    return out


def rule_ipoib_addresses(site: Site) -> list[Problem]:
    """IPoIB addresses of the DGX nodes and logical node numbers of the PowerScale nodes are unique."""
    out: list[Problem] = []
    lnns: dict[Any, str] = {}
    for host in site.hosts("powerscale"):
        lnn = site.var(host, "powerscale_lnn")
        if is_int(lnn) and lnn in lnns:
            out.append(Problem(host, "powerscale_lnn", lnn, f"{lnns[lnn]} has the same logical node number",
                               "use each node's own LNN (isi status shows them)"))
        elif is_int(lnn):
            lnns[lnn] = host
    owner: dict[Any, str] = {}
    first: tuple[str, Any] | None = None
    for host in site.hosts("dgx"):
        iface = interface(site.var(host, "ib_ipoib_address"))
        if iface is None:
            continue
        if iface.ip in owner:
            out.append(Problem(host, "ib_ipoib_address", str(iface), f"duplicate address: {owner[iface.ip]} has it too",
                               "give every DGX its own IPoIB address"))
        else:
            owner[iface.ip] = host
        if first is None:
            first = (host, iface.network)
        elif iface.network != first[1]:
            out.append(Problem(host, "ib_ipoib_address", str(iface),
                               f"is not in {first[0]}'s IPoIB subnet {first[1]}: the nodes would not reach each other "
                               "over IPoIB", f"use an address in {first[1]}"))
    return out


def rule_management_addresses(site: Site) -> list[Problem]:
    """No two SSH targets share an address and port (a copy-paste would configure one host twice), and no two
    QM8700 share an API endpoint."""
    out: list[Problem] = []
    seen: dict[tuple[Any, Any], str] = {}
    for group in ("dgx", "powerscale", "sn3700v"):
        for host in site.hosts(group):
            if site.var(host, "ansible_connection") == "local" or host in seen.values():
                continue
            endpoint = (site.var(host, "ansible_host") or host, site.var(host, "ansible_port") or 22)
            if endpoint in seen:
                out.append(Problem(host, "ansible_host", f"{endpoint[0]}:{endpoint[1]}",
                                   f"{seen[endpoint]} is reached at the same address and port",
                                   "give each host its own management address (or SSH port)"))
            else:
                seen[endpoint] = host
    apis: dict[tuple[Any, Any], str] = {}
    for host in site.hosts("qm8700"):
        endpoint = (site.var(host, "qm8700_api_host"), site.var(host, "qm8700_api_port"))
        if endpoint[0] is None:
            continue
        if endpoint in apis:
            out.append(Problem(host, "qm8700_api_host", f"{endpoint[0]}:{endpoint[1]}",
                               f"{apis[endpoint]} has the same API endpoint", "give each switch its own address"))
        else:
            apis[endpoint] = host
    return out


# ---------------------------------------------------------------------------------------------- cabling


def rule_switch_cabling(site: Site) -> list[Problem]:
    """Every cable names an SN3700V of the inventory and a real port; no two cables on one port; no cable on
    a peerlink or uplink port; a port is either whole or broken out."""
    out: list[Problem] = []
    switches = site.hosts("sn3700v")
    clag, _unused = site.cluster("storage_fabric_clag", "sn3700v")
    reserved: dict[str, str] = {}
    for member in as_list(as_dict(as_dict(clag).get("peerlink")).get("members")):
        if as_dict(clag).get("enabled"):
            reserved[str(member)] = "the CLAG peerlink (storage_fabric_clag.peerlink.members)"
    for uplink in as_list(site.cluster("storage_fabric_uplinks", "sn3700v")[0]):
        if isinstance(uplink, Mapping):
            reserved[str(uplink.get("name"))] = "an uplink (storage_fabric_uplinks)"
    breakouts, breakouts_label = site.cluster("storage_fabric_breakouts", "sn3700v")
    out += _switch_side_ports(site, clag, breakouts, breakouts_label)
    used: dict[tuple[str, str], str] = {}
    cages: dict[tuple[str, int], list[tuple[str, str]]] = {}  # (switch, front-panel port) -> its cables' keys
    for group in ("dgx", "powerscale"):
        for host in site.hosts(group):
            for pos, nic in nics(site, host):
                switch, port = nic.get("switch"), nic.get("switch_port")
                if isinstance(switch, str) and switch not in switches:
                    out.append(Problem(host, f"storage_nics[{pos}].switch", switch,
                                       "is not an SN3700V host of the inventory (group sn3700v)",
                                       f"name one of: {', '.join(switches) or '(no sn3700v host)'}"))
                    continue
                parts = port_parts(port)
                if parts is None:
                    continue  # the schema reported the name
                path = f"storage_nics[{pos}].switch_port"
                why = port_problem(port)
                if why:
                    out.append(Problem(host, path, port, why, "use the port the cable plugs into"))
                    continue
                if port in reserved:
                    out.append(Problem(host, path, port, f"is {reserved[port]}", "move the cable to a free port"))
                key = (str(switch), str(port))
                if key in used:
                    out.append(Problem(host, path, port, f"{switch} {port} already holds {used[key]}'s cable",
                                       "give each cable its own switch port"))
                    continue
                used[key] = f"{host} storage_nics[{pos}]"
                cages.setdefault((str(switch), parts[0]), []).append(key)
                whole = (str(switch), f"swp{parts[0]}")
                if isinstance(breakouts, Mapping):
                    split_here = whole[1] in breakouts
                    if parts[1] is not None and not split_here:
                        out.append(Problem(host, path, port, f"{whole[1]} is not broken out "
                                           "(storage_fabric_breakouts)",
                                           f"add {whole[1]}: <mode, e.g. 4x25G> to storage_fabric_breakouts, or "
                                           f"use {whole[1]}"))
                    elif parts[1] is None and split_here:
                        out.append(Problem(host, path, port, f"{port} is broken out ({breakouts[port]}): "
                                           "the whole port does not exist", f"use {port}s0..{port}s3"))
                    elif split_here and re.fullmatch(r"\d+x\d+G", str(breakouts[whole[1]])):
                        lanes = int(str(breakouts[whole[1]]).split("x", maxsplit=1)[0])
                        if parts[1] is not None and parts[1] >= lanes:
                            out.append(Problem(host, path, port, f"{whole[1]} is broken out {breakouts[whole[1]]}: "
                                               f"its lanes are s0..s{lanes - 1}", "use an existing lane"))
                split = [k for k in cages[(str(switch), parts[0])] if (other := port_parts(k[1])) is not None
                         and (other[1] is None) != (parts[1] is None)]
                if split:
                    out.append(Problem(host, path, port, f"{whole[1]} is used both whole and broken out "
                                       f"({used[split[0]]} is on {split[0][1]})",
                                       "either break the port out for every cable on it, or not at all"))
    return out


def _switch_side_ports(site: Site, clag: Any, breakouts: Any, breakouts_label: str) -> list[Problem]:
    """The peerlink members, uplinks and broken-out ports exist on an SN3700V (cumulus_fabric.port_problem)."""
    clag_label = site.cluster("storage_fabric_clag", "sn3700v")[1]
    uplinks, uplinks_label = site.cluster("storage_fabric_uplinks", "sn3700v")
    named = [(clag_label, "storage_fabric_clag.peerlink.members", m)
             for m in as_list(as_dict(as_dict(clag).get("peerlink")).get("members"))]
    named += [(uplinks_label, f"storage_fabric_uplinks[{pos}].name", as_dict(u).get("name"))
              for pos, u in enumerate(as_list(uplinks))]
    named += [(breakouts_label, f"storage_fabric_breakouts.{port}", port) for port in as_dict(breakouts)]
    out = []
    for label, path, port in named:
        why = port_problem(port) if port_parts(port) is not None else None  # the schema reports a bad name
        if why:
            out.append(Problem(label, path, port, why, "use a port of the SN3700V front panel"))
    return out


def rule_port_speed(site: Site) -> list[Problem]:
    """A cable's speed that is not one the site's switches are configured for (when the role sets speeds):
    cumulus_fabric.port_speed_problem, the rule the role's plan refuses on, with the plan's severity (an error: a
    warning here let preflight pass an inventory the fabric stage then refused, after the storage stage had
    already changed the cluster)."""
    out: list[Problem] = []
    speeds, _unused = site.cluster("storage_fabric_speeds_gbps", "sn3700v")
    managed, _unused = site.cluster("storage_fabric_port_speed_managed", "sn3700v")
    if not isinstance(speeds, list) or managed is False:
        return out  # speeds not managed (the lab's virtio ports have none)
    for group in ("dgx", "powerscale"):
        for host in site.hosts(group):
            for pos, nic in nics(site, host):
                bad = (cumulus_fabric.port_speed_problem(host, f"storage_nics[{pos}].speed_gbps", nic["speed_gbps"],
                                                         [s for s in speeds if is_int(s)])
                       if is_int(nic.get("speed_gbps")) else None)  # the schema reports a missing or odd speed
                if bad:
                    out.append(bad)
    return out


# ---------------------------------------------------------------------------------------------- VLANs, CLAG


def _switch_rows(site: Site, problems: Iterable[Problem]) -> list[Problem]:
    """A cumulus_fabric function's rows on cluster-wide sn3700v variables, labelled where the variable is set,
    less those on a path rule_schema reports already (beside_schema)."""
    out: list[Problem] = []
    for p in problems:
        name = re.split(r"[.\[]", p.variable, maxsplit=1)[0]
        value, label = site.cluster(name, "sn3700v")
        out += beside_schema(name, value, [replace(p, host=label)])
    return out


def rule_vlans(site: Site) -> list[Problem]:
    """The storage VLANs (cumulus_fabric.vlan_problems: the role's plan calls the same function: IDs and names
    unique, the bridge PVID a storage VLAN, the peerlink VLAN not one), and what spans features: storage_subnet,
    which the DGX and PowerScale NICs use too, is the subnet of a storage VLAN."""
    vlans, _unused = site.cluster("storage_fabric_vlans", "sn3700v")
    out = _switch_rows(site, cumulus_fabric.vlan_problems(
        "sn3700v", vlans, site.cluster("storage_fabric_bridge", "sn3700v")[0],
        site.cluster("storage_fabric_clag", "sn3700v")[0])) if site.hosts("sn3700v") else []
    subnets = [n for vlan in as_list(vlans) if (n := network(as_dict(vlan).get("subnet"))) is not None]
    subnet_value, subnet_label = site.cluster("storage_subnet", "sn3700v")
    subnet = network(subnet_value)
    if subnet is not None and subnets and subnet not in subnets:
        out.append(Problem(subnet_label, "storage_subnet", subnet_value,
                           "is not the subnet of any storage VLAN (storage_fabric_vlans[].subnet)",
                           "make storage_subnet and the storage VLAN's subnet the same"))
    return out


def rule_cumulus_reserved_vlans(site: Site) -> list[Problem]:
    """No storage VLAN or CLAG control VLAN in Cumulus Linux's reserved range 3725-3999
    (cumulus_fabric.reserved_vlan_problems: the role's plan calls the same function)."""
    if not site.hosts("sn3700v"):
        return []
    return _switch_rows(site, cumulus_fabric.reserved_vlan_problems(
        "sn3700v", site.cluster("storage_fabric_vlans", "sn3700v")[0],
        site.cluster("storage_fabric_clag", "sn3700v")[0]))


def rule_forced_speed_fec(site: Site) -> list[Problem]:
    """A forced port speed needs an explicit FEC (Spectrum: auto-negotiation off and FEC auto does not link up):
    cumulus_release.fec_for_forced_speed, the rule the role's plan refuses on (cumulus_fabric.
    forced_speed_fec_problems, ports and uplinks), here over every cable and the release's breakout lanes; speed
    left to the firmware is allowed, with a warning that says what it gives up."""
    switches = site.hosts("sn3700v")
    if not switches:
        return []
    managed, managed_label = site.cluster("storage_fabric_port_speed_managed", "sn3700v")
    if managed is False:
        return [Problem(managed_label, "storage_fabric_port_speed_managed", False,
                        "port speeds are left to the switch firmware (auto-negotiation, FEC chosen by the firmware, as "
                        "NVIDIA recommends for Spectrum): a link that trains at a lower speed or with another FEC than "
                        "the host's is not refused by the fabric stage; only the validation stage's throughput shows it",
                        "set storage_fabric_port_speed_managed: true with storage_fabric_port_fec where every cable's "
                        "speed is known (production); keep false where ports have no speed (the lab's virtio NICs)",
                        WARNING)]
    fec_map, fec_label = site.cluster("storage_fabric_port_fec", "sn3700v")
    fec_map = fec_map if isinstance(fec_map, Mapping) else {}
    missing: dict[int, list[str]] = {}
    for group in ("dgx", "powerscale"):
        for host in site.hosts(group):
            for pos, nic in nics(site, host):
                speed = nic.get("speed_gbps")
                if nic.get("switch") in switches and is_int(speed) and fec_for_forced_speed(speed, fec_map) is None:
                    missing.setdefault(speed, []).append(f"{host} storage_nics[{pos}] ({nic.get('switch')} "
                                                         f"{nic.get('switch_port')})")
    for pos, uplink in enumerate(as_list(site.cluster("storage_fabric_uplinks", "sn3700v")[0])):
        match = re.fullmatch(r"(\d+)G", str(as_dict(uplink).get("speed", "")))
        if match and fec_for_forced_speed(int(match.group(1)), fec_map) is None:
            missing.setdefault(int(match.group(1)), []).append(f"storage_fabric_uplinks[{pos}]")
    # From 5.4 a breakout's speed is forced on each lane (module_utils/cumulus_release.py breakout_parts); an
    # unknown release is judged as a 5.4+ one.
    for parent, mode in as_dict(site.cluster("storage_fabric_breakouts", "sn3700v")[0]).items():
        lane_speed = breakout_parts(Release(5, 4), str(mode))[1]
        releases = [_release_or_none(site.var(s, "sn3700v_cumulus_release")) for s in switches]
        if lane_speed and any(r is None or breakout_syntax(r) == "lanes" for r in releases):
            speed = int(lane_speed.rstrip("G"))
            if fec_for_forced_speed(speed, fec_map) is None:
                missing.setdefault(speed, []).append(f"the lanes of storage_fabric_breakouts.{parent} ({mode})")
    out = []
    for speed, cables in sorted(missing.items()):
        shown = ", ".join(cables[:3]) + (f" and {len(cables) - 3} more" if len(cables) > 3 else "")
        out.append(Problem(fec_label, "storage_fabric_port_fec", fec_map or MISSING,
                           f"has no FEC for {speed}G, which the role forces on {shown}: with the speed forced "
                           "(auto-negotiation off) a Spectrum port left on FEC auto does not link up",
                           f"add {speed}: rs (RS-FEC: 100G, and 25G/50G DAC CA-L) or baser (25G CA-S/CA-N, optics) or "
                           f"off (10G/40G) to storage_fabric_port_fec, matching the host end; or set "
                           "storage_fabric_port_speed_managed: false to leave speed and FEC to the firmware"))
    return out


def _release_or_none(value: Any) -> Release | None:
    try:
        return parse_release(value) if value not in (None, "") else None
    except ReleaseError:
        return None


def rule_cumulus_release(site: Site) -> list[Problem]:
    """sn3700v_cumulus_release, when set, is a release the role models, and the method runs on it
    (module_utils/cumulus_release.py: files on 4.0-5.x, agentless; nvue from 5.0)."""
    out: list[Problem] = []
    for switch in site.hosts("sn3700v"):
        value = site.var(switch, "sn3700v_cumulus_release")
        if value in (None, ""):
            continue
        label = site.label(switch, "sn3700v_cumulus_release")
        try:
            release = parse_release(value)
        except ReleaseError:
            continue  # the schema reports the format
        span = f"{OLDEST[0]}.{OLDEST[1]}-{NEWEST[0]}.{NEWEST[1]}"
        if not known(release):
            out.append(Problem(label, "sn3700v_cumulus_release", value,
                               f"Cumulus Linux {release} is outside the releases the role models ({span}): its "
                               "breakout syntax, NVUE keys and save step are unknown",
                               f"run a release in {span}, or add it to module_utils/cumulus_release.py from its guide"))
            continue
        method = site.var(switch, "storage_fabric_method")
        methods = supported_methods(release)
        if method in ("files", "nvue") and method not in methods:
            out.append(Problem(site.label(switch, "storage_fabric_method"), "storage_fabric_method", method,
                               f"{switch} runs Cumulus Linux {release} (sn3700v_cumulus_release), which has no NVUE "
                               "REST API (NVUE comes with 5.0)",
                               "use storage_fabric_method: files on Cumulus Linux 4.x, or upgrade the switch to 5.x"))
        if method == "nvue" and release.major >= 5 and nvue_api_default_listen(release) == "localhost":
            out.append(Problem(label, "sn3700v_cumulus_release", value,
                               f"on Cumulus Linux {release} the NVUE API listens on localhost only until nginx's "
                               "nvue.conf is changed on the switch",
                               "make nvue.conf listen on the management address first (roles/sn3700v/README.md, "
                               "switch prerequisites), or upgrade to 5.6 or later", WARNING))
    return out


def rule_clag(site: Site) -> list[Problem]:
    """The CLAG pair (cumulus_fabric.clag_pair_problems, the pair rules' one home; the role's plan checks each
    switch's own CLAG settings, derive_plan, and only preflight sees the pair): with CLAG on, two switches, one
    primary and one secondary, distinct priorities (the lower one is the primary), a backup IP pointing at the
    peer; with CLAG off, every switch standalone. More than two switches are several pairs when every switch's
    backup IP names its peer's address (clag_pairs); each pair is judged alone, with its own sys_mac."""
    clag, clag_label = site.cluster("storage_fabric_clag", "sn3700v")
    switches = {s: {"role": site.var(s, "sn3700v_clag_role"), "priority": site.var(s, "sn3700v_clag_priority"),
                    "backup_ip": site.var(s, "sn3700v_clag_backup_ip"), "address": site.var(s, "ansible_host")}
                for s in site.hosts("sn3700v")}
    pairs = clag_pairs(switches) if len(switches) > 2 and as_dict(clag).get("enabled") is True else None
    if not pairs:
        return cumulus_fabric.clag_pair_problems(clag, switches, clag_label)
    out: list[Problem] = []
    macs: dict[Any, str] = {}
    for first, second in pairs:
        pair_clag = site.var(first, "storage_fabric_clag")
        label = site.label(first, "storage_fabric_clag")
        out += cumulus_fabric.clag_pair_problems(pair_clag, {s: switches[s] for s in (first, second)}, label)
        mac = as_dict(pair_clag).get("sys_mac")
        if mac is not None and mac in macs:
            out.append(Problem(label, "storage_fabric_clag.sys_mac", mac,
                               f"the pair of {macs[mac]} has the same CLAG system MAC",
                               "give every CLAG pair its own sys_mac (host vars of the pair's switches)"))
        elif mac is not None:
            macs[mac] = first
    return _dedupe(out)


def clag_pairs(switches: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]] | None:
    """A group of several CLAG pairs (a site larger than one pair's ports, validation/sitegen.py), each pair two
    switches whose backup IPs name each other's management address, in inventory order; None when some switch
    has no such peer (then the group is judged as one pair, which says what is wrong)."""
    by_address = {v.get("address"): s for s, v in switches.items() if v.get("address") is not None}
    pairs: list[tuple[str, str]] = []
    paired: set[str] = set()
    for switch, values in switches.items():
        if switch in paired:
            continue
        peer = by_address.get(values.get("backup_ip"))
        if peer is None or peer == switch or peer in paired or switches[peer].get("backup_ip") != values.get("address"):
            return None
        pairs.append((switch, peer))
        paired.update((switch, peer))
    return pairs


# ---------------------------------------------------------------------------------------------- InfiniBand


def rule_subnet_manager(site: Site) -> list[Problem]:
    """The pair's SM design (mlnxos_fabric.sm_pair_problems: the role's input check calls the same function):
    exactly one QM8700 is SM master, the others standby, with distinct priorities, the master's highest."""
    switches = site.hosts("qm8700")
    if not switches:
        return []
    peers = {s: {"role": site.var(s, "qm8700_sm_role"), "priority": site.var(s, "qm8700_sm_priority")}
             for s in switches}
    out: list[Problem] = []
    for p in mlnxos_fabric.sm_pair_problems(peers):
        if p.host not in switches:
            out.append(p)
            continue
        value = site.var(p.host, p.variable, MISSING)
        if value is not MISSING:
            out += beside_schema(p.variable, value, [replace(p, host=site.label(p.host, p.variable))])
    return out


def rule_hca_ports(site: Site) -> list[Problem]:
    """Each QM8700's own input (mlnxos_fabric.inventory_problems: the role's input check calls the same
    function: ports that exist, speeds, splits, partitions, pkeys, NTP and syslog addresses), and what spans
    features: the QM8700 switches have at least one HDR port per DGX HCA."""
    out: list[Problem] = []
    capacity = 0
    for switch in site.hosts("qm8700"):
        declared = mlnxos_fabric.declared_from_inventory(site.hostvars.get(switch, {}), switch)
        capacity += mlnxos_fabric.declared_port_count(declared)
        for p in mlnxos_fabric.inventory_problems(switch, declared):
            name = re.split(r"[.\[]", p.variable, maxsplit=1)[0]
            value = site.var(switch, name, MISSING)
            if value is not MISSING:
                out += beside_schema(name, value, [replace(p, host=site.label(switch, name))])
    hcas = sum(as_dict(dgx_model(site, h)).get("hcas", 0) for h in site.hosts("dgx")
               if is_int(as_dict(dgx_model(site, h)).get("hcas", 0)))
    if site.hosts("qm8700") and hcas > capacity:
        switch = site.hosts("qm8700")[0]
        out.append(Problem(site.label(switch, "qm8700_ports"), "qm8700_ports", site.var(switch, "qm8700_ports"),
                           f"{hcas} DGX HCAs need as many HDR ports; the QM8700 switches declare {capacity}",
                           "declare one HDR port per HCA across the switches (a QM8700 has 40)"))
    return _dedupe(out)


# ---------------------------------------------------------------------------------------------- node model


def rule_ngc_driver(site: Site) -> list[Problem]:
    """Every NGC framework image a GPU node runs can run on the node's pinned driver (the table and its sources:
    module_utils/ngc_driver_support.py); a release the table does not know is a warning; the NGC PyTorch image
    as the pyxis image of nccl-tests is a warning (nothing shows it ships nccl-tests)."""
    out: list[Problem] = []
    for host in site.hosts("dgx"):
        model = dgx_model(site, host)
        driver = site.var(host, "dgx_nvidia_driver_version")
        if model is None or not is_int(model.get("gpus")) or model["gpus"] == 0 or not isinstance(driver, str):
            continue
        for var in ("ngc_images", "ngc_optional_images"):
            for image in as_list(site.var(host, var)):
                if not isinstance(image, Mapping) or not isinstance(image.get("tag"), str):
                    continue
                if var == "ngc_optional_images" and site.var(host, "ngc_pull_optional") is not True:
                    continue
                verdict = judge_ngc_driver(str(image.get("name")), image["tag"], driver)
                if verdict.ok is False:
                    out.append(Problem(site.label(host, "dgx_nvidia_driver_version"), "dgx_nvidia_driver_version",
                                       driver, verdict.reason,
                                       "pin a driver of a branch the container supports (DGX OS 6: R535), "
                                       "or an NGC release built for this driver"))
                elif verdict.ok is None:
                    out.append(Problem(site.label(host, var), f"{var}.tag", image["tag"], verdict.reason,
                                       "check the release notes' Driver Requirements and add the release to "
                                       "the table", WARNING))
    nccl, label = site.cluster("validation_nccl", "dgx")
    image = as_dict(nccl).get("container_image")
    if isinstance(image, str) and re.match(r"^nvcr\.io[/#]nvidia/pytorch:", image):
        out.append(Problem(label, "validation_nccl.container_image", image,
                           "the NGC PyTorch image is not known to ship nccl-tests: under pyxis the all-reduce "
                           "binary (tests_bin) must be inside the image",
                           "use a dedicated nccl-tests image (DeepOps builds one) with tests_bin its path there",
                           WARNING))
    return _dedupe(out)


def rule_node_model(site: Site) -> list[Problem]:
    """dgx_model names an entry of dgx_models; explicit GPU/HCA counts and the IB rate agree with it; the
    container runtime matches the GPUs."""
    out: list[Problem] = []
    for host in site.hosts("dgx"):
        name = site.var(host, "dgx_model")
        models = site.var(host, "dgx_models")
        if not isinstance(name, str) or not isinstance(models, Mapping):
            continue
        model = dgx_model(site, host)
        if model is None:
            out.append(Problem(site.label(host, "dgx_model"), "dgx_model", name, "is not a key of dgx_models",
                               f"use one of: {', '.join(map(str, models))}, or declare it in dgx_models"))
            continue
        for var, key in (("dgx_expected_gpus", "gpus"), ("dgx_expected_hcas", "hcas")):
            expected = site.var(host, var)
            if expected is not None and is_int(expected) and expected != model.get(key):
                out.append(Problem(site.label(host, var), var, expected,
                                   f"disagrees with dgx_model {name} ({model.get(key)} {key.upper()})",
                                   f"remove {var} or correct dgx_model"))
        names = model.get("compute_hcas")
        if isinstance(names, list) and is_int(model.get("hcas")) and (len(names) != model["hcas"]
                                                                      or len(set(names)) != len(names)):
            out.append(Problem(site.label(host, "dgx_models"), f"dgx_models.{name}.compute_hcas", names,
                               f"must name {model['hcas']} distinct compute HCAs (hcas: {model['hcas']})",
                               "list each compute-fabric mlx5 device once, as ibstat names it, or fix hcas"))
        rate = site.var(host, "ib_rate_gbps")
        if is_int(model.get("hcas")) and model["hcas"] > 0 and is_int(rate) and rate != model.get("hca_rate_gbps"):
            out.append(Problem(site.label(host, "ib_rate_gbps"), "ib_rate_gbps", rate,
                               f"differs from dgx_model {name}'s HCA rate {model.get('hca_rate_gbps')} Gb/s",
                               f"set ib_rate_gbps: {model.get('hca_rate_gbps')}"))
        runtime = site.var(host, "ngc_container_runtime")
        gpus = model.get("gpus")
        if runtime == "nvidia" and gpus == 0:
            out.append(Problem(site.label(host, "ngc_container_runtime"), "ngc_container_runtime", runtime,
                               f"needs GPUs; dgx_model {name} has none", "set ngc_container_runtime: docker"))
        elif runtime == "docker" and is_int(gpus) and gpus > 0:
            out.append(Problem(site.label(host, "ngc_container_runtime"), "ngc_container_runtime", runtime,
                               f"plain docker cannot give containers the {gpus} GPUs of dgx_model {name}",
                               "set ngc_container_runtime: nvidia", WARNING))
    return _dedupe(out)


def rule_sizing(site: Site) -> list[Problem]:
    """Warn when A100 GPUs per F800 node exceed the reference's 8 (reference sizing_004)."""
    f800 = [h for h in site.hosts("powerscale") if site.var(h, "powerscale_node_model") == "F800"]
    if not f800:
        return []
    gpus = 0
    for host in site.hosts("dgx"):
        model = as_dict(dgx_model(site, host))
        if str(model.get("gpu_model", "")).startswith("A100") and is_int(model.get("gpus")):
            gpus += model["gpus"]
    limit = site.settings.sizing_gpus_per_f800_node
    if gpus / len(f800) <= limit:
        return []
    return [Problem("powerscale", "powerscale_node_model",
                    f"{gpus} A100 GPUs / {len(f800)} F800 nodes = {gpus / len(f800):.1f}",
                    f"exceeds the reference sizing of {limit} A100 GPUs per F800 node (sizing_004): "
                    "training may be storage-bound", f"add F800 nodes (one per {limit} A100 GPUs)", WARNING)]


# ---------------------------------------------------------------------------------------------- exports


def _powerscale_rows(site: Site, *parts: str) -> list[Problem]:
    """PowerScale's own rules (powerscale_inventory.inventory_problems: the role's input check calls the same
    function) on the cluster's values, each row on where its variable is set, less what the schema reports."""
    value = {name: site.cluster(name, "powerscale") for name in
             (powerscale_inventory.EXPORTS, powerscale_inventory.QUOTAS, powerscale_inventory.SMARTCONNECT)}
    derived = [n.get("address") for h in site.hosts("dgx") for _unused, n in nics(site, h)
               if n.get("address")]
    found = powerscale_inventory.inventory_problems(
        "powerscale", value[powerscale_inventory.EXPORTS][0], value[powerscale_inventory.QUOTAS][0],
        value[powerscale_inventory.SMARTCONNECT][0], derived, parts)
    out: list[Problem] = []
    for name, (var_value, label) in value.items():
        mine = [replace(p, host=label) for p in found if root_name(p.variable) == name]
        out += beside_schema(name, var_value, mine)
    return out


def rule_exports(site: Site) -> list[Problem]:
    """The exports' and quotas' own rules (powerscale_inventory, parts exports and quotas): export paths unique
    under /ifs, their fields, no group root (GID 0 is wheel on OneFS); quotas inside an export, their thresholds
    ordered advisory <= soft <= hard and a soft one with a grace period."""
    return _powerscale_rows(site, "exports", "quotas")


def client_covers(client: Any, host: str, addresses: list[Any], site: Site) -> bool:
    if not isinstance(client, str):
        return False
    if client in (host, site.var(host, "ansible_host")):
        return True
    if "/" in client:
        try:
            net = ipaddress.ip_network(client, strict=False)
        except ValueError:
            return False
        return any(a in net for a in addresses)
    return address(client) in addresses


def rule_export_clients(site: Site) -> list[Problem]:
    """An export with explicit clients covers every DGX that mounts it (clients: [] = derived = OK)."""
    out: list[Problem] = []
    entries, label = exports(site)
    for pos, export in entries:
        clients = export.get("clients")
        if not isinstance(clients, list) or not clients:
            continue
        for host in site.hosts("dgx"):
            if not any(m.get("export") == export.get("path") for _unused, m in mounts(site, host)):
                continue
            addrs = [i.ip for _unused, n in nics(site, host)
                     if (i := interface(n.get("address"))) is not None]
            if not any(client_covers(c, host, addrs, site) for c in clients):
                shown = ", ".join(map(str, addrs)) or "no storage address"
                out.append(Problem(label, f"powerscale_exports[{pos}].clients", clients,
                                   f"does not cover {host} ({shown}), which mounts {export.get('path')}",
                                   f"add {addrs[0] if addrs else host} (or the storage subnet), or set clients: [] "
                                   "to derive them from storage_nics"))
    return out


def rule_export_exposure(site: Site) -> list[Problem]:
    """Exports are client-restricted and root-squashed unless the export says otherwise in so many words
    (powerscale_inventory, part exposure: every host as a client needs open_to_all_clients: true, map_root: root
    needs no_root_squash: true), and an export that would list no client at all (none given, no DGX storage
    address to derive them from) is open to every host on OneFS and is refused outright."""
    return _powerscale_rows(site, "exposure")


# ---------------------------------------------------------------------------------------------- NFS mounts

def rule_nfs_mounts(site: Site) -> list[Problem]:
    """The NFS client's own rules (dgx_nfs.inventory_problems: the role's plan calls the same function) against
    the exports of powerscale_exports, plus what spans features: nconnect needs a kernel >= 5.3 (dgx_min_kernel)."""
    out: list[Problem] = []
    purposes = dgx_nfs.export_purposes(site.cluster("powerscale_exports", "powerscale")[0])
    for host in site.hosts("dgx"):
        value = site.var(host, "nfs_mounts", MISSING)
        if value is MISSING:
            continue  # the schema reports it
        out += beside_schema("nfs_mounts", value,
                             dgx_nfs.inventory_problems(site.label(host, "nfs_mounts"), value, purposes))
        nconnect = any(is_int(m.get("nconnect")) and m["nconnect"] > 1 for _unused, m in mounts(site, host))
        kernel = version_tuple(site.var(host, "dgx_min_kernel"))
        if nconnect and kernel is not None and kernel < (5, 3):
            out.append(Problem(site.label(host, "dgx_min_kernel"), "dgx_min_kernel", site.var(host, "dgx_min_kernel"),
                               "nfs_mounts use nconnect > 1, which needs Linux >= 5.3",
                               'set dgx_min_kernel: "5.3" (or nconnect: 1)'))
    return _dedupe(out)


def rule_validation_mounts(site: Site) -> list[Problem]:
    """The validation stage's scratch and training directories are NFS mounts of every DGX; scratch is writable."""
    out: list[Problem] = []
    entries, label = exports(site)
    by_path = {e.get("path"): (pos, e) for pos, e in entries}
    for host in site.hosts("dgx"):
        points = {m.get("mount_point"): m for _unused, m in mounts(site, host)}
        for var in ("validation_scratch_mount", "validation_training_mount"):
            point = site.var(host, var)
            if isinstance(point, str) and point not in points:
                out.append(Problem(site.label(host, var), var, point, f"is not a mount point of {host}'s nfs_mounts",
                                   f"use one of: {', '.join(map(str, points)) or '(no mount)'}"))
        scratch = points.get(site.var(host, "validation_scratch_mount"))
        if scratch is not None and scratch.get("export") in by_path:
            pos, export = by_path[scratch["export"]]
            if export.get("read_only") is True:
                out.append(Problem(label, f"powerscale_exports[{pos}].read_only", True,
                                   "is the validation scratch export: fio and DDP write their files there",
                                   "set read_only: false, or point validation_scratch_mount at a writable mount"))
    return _dedupe(out)


# ---------------------------------------------------------------------------------------------- DGX -> PowerScale


def _server_row(site: Site, host: str, problem: Problem) -> Problem:
    """A dgx_nfs.select_server row labelled where its variable is set. A DGX the static map has no key for stays a
    row on the map itself, as preflight has always named it (variable nfs_server_map, value '<host>: (not set)');
    the plan names the missing key (nfs_server_map.<host>)."""
    row = replace(problem, host=site.label(host, root_name(problem.variable)))
    if problem.variable == f"nfs_server_map.{host}":
        row = replace(row, variable="nfs_server_map", value=f"{host}: (not set)")
    return row


def rule_server_mapping(site: Site) -> list[Problem]:
    """Each DGX mounts from an existing PowerScale node + NIC (static map, round robin) or a SmartConnect zone that is
    enabled and a DNS name: dgx_nfs.select_server, which the role's plan calls too; across features: a mapped NIC
    on the DGX's own switch when CLAG is on, and no map entry for a host that is not a DGX."""
    out: list[Problem] = []
    dgx = site.hosts("dgx")
    node_nics = [(h, [dict(n) for _unused, n in nics(site, h)]) for h in site.hosts("powerscale")]
    nodes = {h: {n.get("name"): n for n in ns} for h, ns in node_nics}
    smart, smart_label = site.cluster("powerscale_smartconnect", "powerscale")
    clag_on = as_dict(site.cluster("storage_fabric_clag", "sn3700v")[0]).get("enabled") is True
    for host in dgx:
        mode = site.var(host, "nfs_server_mode")
        if mode == "smartconnect":
            rows = dgx_nfs.select_server(mode, host, dgx, None, node_nics, dict(as_dict(smart)))[1]
            out += [replace(p, host=smart_label) if p.variable.startswith("powerscale_smartconnect")
                    else _server_row(site, host, p) for p in rows]
        elif mode in ("static", "round_robin"):
            smap = site.var(host, "nfs_server_map")
            choice, rows = dgx_nfs.select_server(mode, host, dgx, smap if isinstance(smap, dict) else None,
                                                 node_nics, None)
            out += [_server_row(site, host, p) for p in rows]
            if mode == "static" and choice is not None and clag_on:
                theirs = nodes[choice.node][choice.nic].get("switch")
                mine = {n.get("switch") for _unused, n in nics(site, host)}
                if theirs not in mine:
                    out.append(Problem(site.label(host, "nfs_server_map"), f"nfs_server_map.{host}.nic", choice.nic,
                                       f"{choice.node} {choice.nic} is on {theirs}, {host} on "
                                       f"{', '.join(map(str, mine))}: storage traffic crosses the CLAG peerlink",
                                       "map the DGX to a PowerScale NIC on its own switch", WARNING))
    smap, label = site.cluster("nfs_server_map", "dgx")
    if isinstance(smap, Mapping) and any(site.var(h, "nfs_server_mode") == "static" for h in dgx):
        for key in smap:
            if key not in dgx:
                out.append(Problem(label, f"nfs_server_map.{key}", smap[key],
                                   "is not a DGX host of the inventory: the entry is unused",
                                   f"remove it, or correct the name (DGX hosts: {', '.join(dgx)})", WARNING))
    return _dedupe(out)


def rule_smartconnect(site: Site) -> list[Problem]:
    """When SmartConnect is on: the pool's own rules (powerscale_inventory, part smartconnect: complete, ranges
    well formed and disjoint, the service address outside them), and what spans features: its addresses live in
    the storage subnet, its interfaces are storage NICs of the powerscale hosts, PowerScale pool NICs hold range
    addresses and no DGX address falls in a range or is the service address."""
    out = _powerscale_rows(site, "smartconnect")
    smart, label = site.cluster("powerscale_smartconnect", "powerscale")
    smart = as_dict(smart)
    if smart.get("enabled") is not True:
        return out
    subnet = network(site.cluster("storage_subnet", "sn3700v")[0])
    service = address(smart.get("service_address"))
    if service is not None and subnet is not None and service not in subnet:
        out.append(Problem(label, "powerscale_smartconnect.service_address", str(service),
                           f"is outside storage_subnet {subnet}", f"use an address in {subnet}"))
    ranges = powerscale_inventory.smartconnect_ranges(smart)
    for pos, low, high in ranges:
        if subnet is not None and (low not in subnet or high not in subnet):
            out.append(Problem(label, f"powerscale_smartconnect.ip_ranges[{pos}]", smart["ip_ranges"][pos],
                               f"is outside storage_subnet {subnet}", f"use addresses in {subnet}"))
    names = {n.get("name") for h in site.hosts("powerscale") for _unused, n in nics(site, h)}
    pool_ifaces = as_list(smart.get("interfaces"))
    for pos, name in enumerate(pool_ifaces):
        if name not in names:
            out.append(Problem(label, f"powerscale_smartconnect.interfaces[{pos}]", name,
                               "is not a storage NIC name of any powerscale host",
                               f"use one of: {', '.join(sorted(map(str, names)))}"))

    def in_ranges(ip: IPAddress) -> bool:
        return any(ip_between(ip, low, high) for _unused, low, high in ranges)

    for host in site.hosts("powerscale"):
        for pos, nic in nics(site, host):
            iface = interface(nic.get("address"))
            if iface is not None and ranges and nic.get("name") in pool_ifaces and not in_ranges(iface.ip):
                out.append(Problem(host, f"storage_nics[{pos}].address", nic["address"],
                                   "is on a SmartConnect pool interface but outside powerscale_smartconnect.ip_ranges",
                                   "widen the pool's ip_ranges or correct the address"))
    for host in site.hosts("dgx"):
        for pos, nic in nics(site, host):
            iface = interface(nic.get("address"))
            if iface is None:
                continue
            if ranges and in_ranges(iface.ip):
                out.append(Problem(host, f"storage_nics[{pos}].address", nic["address"],
                                   "lies inside the SmartConnect pool ip_ranges: OneFS may give it to a node",
                                   "use an address outside powerscale_smartconnect.ip_ranges"))
            elif service is not None and iface.ip == service:
                out.append(Problem(host, f"storage_nics[{pos}].address", nic["address"],
                                   "is the SmartConnect service address", "use another address"))
    return out


def rule_powerscale_access(site: Site) -> list[Problem]:
    """powerscale_api_host is one node's address: a OneFS session is valid only on the node that issued it, so a
    DNS-balanced name (the SmartConnect zone), the SmartConnect service address or an address of a dynamic pool
    (it moves between nodes) would send successive calls to different nodes. A name that is no PowerScale host's
    address is a warning (it may be balanced). The cache flush (isi_for_array isi_flush) runs over SSH on the
    first powerscale host and needs a login allowed to run it on every node: root."""
    out: list[Problem] = []
    api_host, label = site.cluster("powerscale_api_host", "powerscale")
    smart = as_dict(site.cluster("powerscale_smartconnect", "powerscale")[0])
    nodes = {str(site.var(h, "ansible_host", h)): h for h in site.hosts("powerscale")}
    fix = (f"set powerscale_api_host to one node's management address (e.g. {next(iter(nodes))}, "
           f"{nodes[next(iter(nodes))]})" if nodes else "set powerscale_api_host to one node's management address")
    if isinstance(api_host, str) and api_host:
        host = api_host.strip().rstrip(".").lower()
        zone = str(smart.get("zone") or "").rstrip(".").lower()
        ip = address(host)
        if smart.get("enabled") is True and zone and (host == zone or host.endswith("." + zone)):
            out.append(Problem(label, "powerscale_api_host", api_host,
                               f"is the SmartConnect zone name {zone}: DNS sends successive calls to different "
                               "nodes, and a OneFS session is valid only on the node that issued it", fix))
        elif ip is not None and smart.get("enabled") is True and ip == address(smart.get("service_address")):
            out.append(Problem(label, "powerscale_api_host", api_host,
                               "is the SmartConnect service address (a DNS server, not one node's API)", fix))
        elif ip is not None and smart.get("enabled") is True and smart.get("alloc_method", "dynamic") == "dynamic" \
                and any((low := address(as_dict(r).get("low"))) is not None
                        and (high := address(as_dict(r).get("high"))) is not None and ip_between(ip, low, high)
                        for r in as_list(smart.get("ip_ranges"))):
            out.append(Problem(label, "powerscale_api_host", api_host,
                               "is an address of the dynamic SmartConnect pool: it moves between nodes, and a OneFS "
                               "session is valid only on the node that issued it", fix))
        elif ip is None and host not in {n.lower() for n in nodes}:
            out.append(Problem(label, "powerscale_api_host", api_host,
                               "is a DNS name that is no powerscale host's address: if it is balanced over the "
                               "nodes, the API session breaks (sessions are per node)", fix, WARNING))
    fio = as_dict(site.cluster("validation_fio", "dgx")[0])
    flush = as_dict(fio.get("server_flush"))
    hosts = site.hosts("powerscale")
    if flush.get("enabled") is True and "isi_for_array" in str(flush.get("command", "")) and hosts:
        first = hosts[0]
        user = site.var(first, "ansible_user")
        if user != "root":
            out.append(Problem(first, "ansible_user", user if user is not None else MISSING,
                               f"runs the cache flush '{flush.get('command')}' (validation_fio.server_flush) over "
                               "SSH; isi_for_array needs a login allowed to run it on every node",
                               "set ansible_user: root on group powerscale (as the reference's scripts run it), or "
                               "a user whose RBAC role and sudo rules allow isi_for_array", WARNING))
    return out


# ---------------------------------------------------------------------------------------------- acceptance, NGC


def _metric_definition_problems(site: Site, label: str, var: str, item: Mapping[str, Any]) -> list[Problem]:
    """A threshold's metric is one the validation defines and may judge against a threshold, under its stage."""
    metric, stage = item.get("metric"), item.get("stage")
    if site.metrics is None or not isinstance(metric, str):
        return []
    known = sorted(name for name, d in site.metrics.items() if d.get("threshold"))
    if metric not in known:
        return [Problem(label, f"{var}.metric", metric, "is no metric the validation judges against a threshold "
                        "(validation/metrics.yml): the threshold would never be evaluated", f"use one of: {', '.join(known)}")]
    own = site.metrics[metric].get("stage")
    stages = as_dict(site.cluster("validation_stages", "dgx")[0])
    if isinstance(stage, str) and stage != own and (not stages or stage in stages):
        return [Problem(label, f"{var}.stage", stage, f"{metric} is measured by the {own} stage", f"set stage: {own}")]
    return []


def rule_acceptance(site: Site) -> list[Problem]:
    """Every enabled validation stage has a threshold; every threshold has a known stage, a metric the validation
    defines (validation/metrics.yml) under that metric's stage, a bound, a unique metric, and (when derived from
    HCAs) a node model with HCAs."""
    out: list[Problem] = []
    stages, stages_label = site.cluster("validation_stages", "dgx")
    thresholds, label = site.cluster("acceptance_thresholds", "dgx")
    stages = as_dict(stages)
    items = [(pos, t) for pos, t in enumerate(as_list(thresholds)) if isinstance(t, Mapping)]
    covered = {t.get("stage") for _unused, t in items}
    for stage, conf in stages.items():
        if as_dict(conf).get("enabled") is True and stage not in covered:
            out.append(Problem(stages_label, f"validation_stages.{stage}", conf,
                               "is enabled but acceptance_thresholds has no threshold for it: its verdict could not "
                               "fail", f"add a threshold with stage: {stage}, or set enabled: false"))
    metrics: dict[Any, int] = {}
    has_hcas = any(is_int(hcas := as_dict(dgx_model(site, h)).get("hcas")) and hcas > 0 for h in site.hosts("dgx"))
    for pos, item in items:
        var = f"acceptance_thresholds[{pos}]"
        if isinstance(item.get("stage"), str) and stages and item["stage"] not in stages:
            out.append(Problem(label, f"{var}.stage", item["stage"], "is not a stage of validation_stages",
                               f"use one of: {', '.join(stages)}"))
        if "floor" not in item and "ceiling" not in item and "measured" not in item:
            out.append(Problem(label, var, item.get("metric"), "has neither floor, ceiling nor measured: it cannot fail",
                               "give a floor (absolute), a ceiling (derived from the topology) and/or measured (a "
                               "fraction of a baseline measured in the same run)"))
        metric = item.get("metric")
        out += _metric_definition_problems(site, label, var, item)
        if metric in metrics:
            out.append(Problem(label, f"{var}.metric", metric, f"also defined by acceptance_thresholds[{metrics[metric]}]",
                               "keep one threshold per metric"))
        elif metric is not None:
            metrics[metric] = pos
        ceiling = as_dict(item.get("ceiling"))
        if ceiling.get("derive") == "hcas_x_link_rate" and site.hosts("dgx") and not has_hcas:
            out.append(Problem(label, f"{var}.ceiling.derive", "hcas_x_link_rate",
                               "the DGX node model has no HCAs to derive a ceiling from",
                               "use a floor instead, or correct dgx_model"))
    nccl, nccl_label = site.cluster("validation_nccl", "dgx")
    nccl = as_dict(nccl)
    if is_int(nccl.get("min_bytes")) and is_int(nccl.get("max_bytes")) and nccl["min_bytes"] > nccl["max_bytes"]:
        out.append(Problem(nccl_label, "validation_nccl.min_bytes", nccl["min_bytes"],
                           f"is above max_bytes {nccl['max_bytes']}: the sweep would be empty",
                           "set min_bytes <= judge_min_bytes <= max_bytes"))
    elif is_int(nccl.get("judge_min_bytes")) and is_int(nccl.get("max_bytes")) and \
            nccl["judge_min_bytes"] > nccl["max_bytes"]:
        out.append(Problem(nccl_label, "validation_nccl.judge_min_bytes", nccl["judge_min_bytes"],
                           f"is above max_bytes {nccl['max_bytes']}: no message size would be judged",
                           "set judge_min_bytes <= max_bytes"))
    per_process = nccl.get("gpus_per_process", 1)
    if is_int(per_process) and per_process > 0:
        for host in site.hosts("dgx"):
            ranks = nccl.get("procs_per_node")
            ranks = ranks if is_int(ranks) else as_dict(dgx_model(site, host)).get("gpus")
            if is_int(ranks) and ranks % per_process:
                out.append(Problem(nccl_label, "validation_nccl.gpus_per_process", per_process,
                                   f"does not divide the {ranks} ranks of {host} (procs_per_node "
                                   f"{nccl.get('procs_per_node')}): every process must drive as many ranks",
                                   f"use a divisor of {ranks} (1 is one process per rank)"))
                break
    ddp, ddp_label = site.cluster("validation_ddp", "dgx")
    ddp = as_dict(ddp)
    if as_dict(stages.get("ddp")).get("enabled") is True and ddp.get("runtime") in ("docker", "pyxis") \
            and ddp.get("image") == "":
        out.append(Problem(ddp_label, "validation_ddp.image", "", f"runtime {ddp['runtime']} needs a container image",
                           "name the NGC PyTorch image (ngc_images, purpose validation)"))
    return out


def rule_ngc(site: Site) -> list[Problem]:
    """The NGC images' own rules (dgx_ngc.inventory_problems: the role's plan calls the same function) on the
    cluster's values, optional images included (preflight judges the inventory, not one run's pulls)."""
    value = {name: site.cluster(name, "dgx") for name in ("ngc_images", "ngc_optional_images", "ngc_mirror")}
    registry = site.cluster("ngc_registry", "dgx")[0]
    found = dgx_ngc.inventory_problems("dgx", value["ngc_images"][0], value["ngc_optional_images"][0], True,
                                       as_dict(value["ngc_mirror"][0]),
                                       registry if isinstance(registry, str) else "nvcr.io")
    out: list[Problem] = []
    for name, (var_value, label) in value.items():
        mine = [replace(p, host=label) for p in found if root_name(p.variable) == name]
        out += beside_schema(name, var_value, mine)
    return out


def rule_tls(site: Site) -> list[Problem]:
    """TLS verification turned off is a warning that names the variable."""
    out: list[Problem] = []
    checks = (
        ("powerscale_validate_certs", "powerscale", "the OneFS Platform API", None),
        ("qm8700_validate_certs", "qm8700", "the MLNX-OS JSON API", ("qm8700_transport", "json")),
        ("storage_fabric_validate_certs", "sn3700v", "the NVUE REST API", ("storage_fabric_method", "nvue")),
    )
    for var, group, what, when in checks:
        for host in site.hosts(group):
            if when is not None and site.var(host, when[0]) != when[1]:
                continue
            if site.var(host, var) is False:
                out.append(Problem(site.label(host, var), var, False,
                                   f"TLS verification of {what} is off: anyone on the path can read the password",
                                   f"set {var}: true and give the CA bundle of the device's certificate", WARNING))
    return _dedupe(out)


def rule_secrets(site: Site) -> list[Problem]:
    """Secrets never in clear text in the inventory; with targets reachable, every secret the site's stages use
    resolves to a non-empty value. The value column never shows a secret."""
    out: list[Problem] = []
    spec = {s.name: s for s in SECRETS}
    mirror_on = as_dict(site.cluster("ngc_mirror", "dgx")[0]).get("enabled") is True
    # Which secrets this site's stages really use (the roles read nothing else).
    needed_by = {
        "powerscale_api_password": bool(site.hosts("powerscale")),
        "storage_fabric_password": site.cluster("storage_fabric_method", "sn3700v")[0] == "nvue",  # files: SSH keys
        "qm8700_api_password": bool(site.hosts("qm8700")),
        "ngc_api_key": not mirror_on,            # mirror mode logs in to the site registry instead of nvcr.io
        "ngc_mirror_password": mirror_on,
    }
    for state in site.secrets:
        secret = spec.get(state.name)
        if secret is None:
            continue
        needed = needed_by.get(state.name, True)
        where = (f"set {secret.vault} in the vault (ansible-vault edit inventories/<site>/group_vars/all/vault.yml) "
                 f"or export {secret.env}")
        if state.state == "clear_text":
            out.append(Problem(state.host, state.name, SECRET_SHOWN, "is written in clear text in the inventory",
                               f"remove it there and {where}; secrets.yml reads it from the vault or {secret.env}"))
        elif state.state == "empty" and needed and not site.offline:
            out.append(Problem(state.host, state.name, SECRET_SHOWN, "resolves empty", where))
        elif state.state == "error" and needed and not site.offline:
            out.append(Problem(state.host, state.name, SECRET_SHOWN, f"cannot be resolved: {state.detail}", where))
    return _dedupe(out)


# ---------------------------------------------------------------------------------------------- compute cabling


def rule_compute_cabling(site: Site) -> list[Problem]:
    """The compute fabric's cable map (module_utils/cabling_design.py, the rules' one home; the cabling plan
    expands the same map): every compute HCA cabled exactly once, no QM8700 port used twice (naming both hosts),
    ports inside the switch and declared in its qm8700_ports. Without a map, a warning: the cabling stage cannot
    judge the compute fabric."""
    design, label = site.cluster("compute_fabric_cables", "dgx")
    dgx_hosts = site.hosts("dgx")
    hcas: dict[str, list[str] | None] = {}
    for host in dgx_hosts:
        listed = as_dict(dgx_model(site, host)).get("compute_hcas")
        hcas[host] = [str(h) for h in listed] if isinstance(listed, list) else None
    if design is None:
        count = sum(len(v or ()) for v in hcas.values())
        if count and site.hosts("qm8700"):
            return [Problem(label, "compute_fabric_cables", MISSING,
                            f"is not set: the {count} compute HCAs have no cable map, so the cabling stage cannot "
                            "judge the compute fabric", "add compute_fabric_cables (rails or cables) to the site's "
                            "compute_fabric.yml, as inventories/production does", WARNING)]
        return []
    cables, unreadable = expand(design, dgx_hosts)
    switches = {s: declared_ports(site.var(s, "qm8700_ports")) for s in site.hosts("qm8700")}
    rows = [Problem(label if p.host == "all" else p.host, p.path, p.value, p.problem, p.fix)
            for p in [*unreadable, *compute_map_problems(cables, hcas, switches)]]
    return beside_schema("compute_fabric_cables", design, rows)


# ---------------------------------------------------------------------------------------------- driver

RULES: tuple[Callable[[Site], list[Problem]], ...] = (
    rule_schema, rule_mtu, rule_storage_addresses, rule_ipoib_addresses, rule_management_addresses,
    rule_switch_cabling, rule_port_speed,
    rule_vlans, rule_cumulus_reserved_vlans, rule_forced_speed_fec, rule_cumulus_release, rule_clag,
    rule_subnet_manager, rule_hca_ports, rule_node_model, rule_sizing, rule_exports,
    rule_export_clients, rule_export_exposure, rule_nfs_mounts, rule_validation_mounts, rule_server_mapping, rule_smartconnect,
    rule_powerscale_access, rule_acceptance, rule_ngc, rule_ngc_driver, rule_tls, rule_secrets,
)
RULES = (*RULES, rule_compute_cabling)  # appended here so the tuple above keeps its lines


def _dedupe(problems: Iterable[Problem]) -> list[Problem]:
    seen: set[tuple[str, str, str, str, str]] = set()
    out = []
    for p in problems:
        key = (p.host, p.variable, show(p.value), p.problem, p.severity)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def collapse(problems: list[Problem], groups: Mapping[str, list[str]]) -> list[Problem]:
    """Rows that are the same for every host of a group become one row for the group."""
    out: list[Problem] = []
    by_key: dict[tuple[str, str, str, str, str], list[Problem]] = {}
    for p in _dedupe(problems):
        by_key.setdefault((p.variable, show(p.value), p.problem, p.fix, p.severity), []).append(p)
    for rows in by_key.values():
        hosts = {r.host for r in rows}
        for group in GROUPS:
            members = set(groups.get(group, []))
            if len(members) > 1 and members <= hosts:
                rows = [r for r in rows if r.host not in members] + [
                    Problem(group, *[getattr(rows[0], f) for f in ("variable", "value", "problem", "fix", "severity")])]
                hosts = {r.host for r in rows}
        out += rows
    return out


def rule_name(rule: Callable[[Site], list[Problem]]) -> str:
    """A rule's name as a role asks for it (preflight_rules: [node_model, secrets]): rule_node_model -> node_model."""
    return rule.__name__.removeprefix("rule_")


def evaluate(site: Site, only: Iterable[str] | None = None) -> list[Problem]:
    """Every problem of the site, errors first, in rule order; ``only``: just the rules of those names (a role's own
    input check when it runs outside the playbooks: roles/preflight/tasks/rules.yml)."""
    wanted = None if only is None else set(only)
    unknown = sorted((wanted or set()) - {rule_name(r) for r in RULES})
    if unknown:
        raise ValueError(f"no preflight rule named {unknown}; the rules are {[rule_name(r) for r in RULES]}")
    problems: list[Problem] = []
    for rule in RULES:
        if wanted is None or rule_name(rule) in wanted:
            problems += rule(site)
    problems = collapse(problems, site.groups)
    return sorted(problems, key=lambda p: p.severity != ERROR)
