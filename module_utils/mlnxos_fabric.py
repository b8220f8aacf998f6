"""Desired state of an MLNX-OS InfiniBand switch (QM8700): the input check, parsing of `show` output, planning.

Pure functions and dataclasses, no I/O. The modules mlnxos_fabric and mlnxos_facts use them; so do the tests.

- check_desired(): checks the inventory-shaped input and returns a normalized DesiredState or a list of
  InputError (option path, value, problem, fix), all of them at once, before anything touches a switch.
- inventory_problems() and sm_pair_problems(): the QM8700's inventory rules, their one home (one switch's input;
  the pair's subnet manager design), as Problem rows: library/mlnxos_fabric.py (the role's input check) and
  preflight (preflight_rules.rule_subnet_manager, rule_hca_ports) both call them.
- parse_*(): turn the `data` of MLNX-OS JSON API results (the same JSON the CLI prints with `| json-print`)
  into LiveState; read_live_state() reads in two rounds (the second asks `show ib smnode HOST ...` about the SM
  node named after the hostname). Every format is in tests/fixtures/mlnxos (real captures, or constructed from
  the manual with the reasoning). The running config is the home of admin state, configured speeds,
  descriptions, splits, SM node priorities and syslog servers; `show interfaces ib` gives link state and rates;
  one-line outputs come as {"value": [LINE]}. Tables in either layout: {"IB1/1": [{...}]} or
  [{"header": "IB1/1", ...}].
- plan(): the configuration commands that turn LiveState into DesiredState, and nothing else: settings the
  inventory does not declare (other ports, partitions, NTP or syslog servers) are left alone unless purge is set.
  Interface settings go inside `interface ib P` ... `exit`; a declared split on a switch without the split-ready
  system profile is a problem (nothing is sent).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ansible.module_utils.inventory_problem import Problem

# QM8700: 40 QSFP56 HDR ports on module 1. A port split in two (module-type qsfp-split-2) becomes 1/N/1 and 1/N/2
# (HDR100 each: two lanes).
QM8700_PORT_COUNT = 40
# The speeds a QM8700 (Quantum, HDR) port supports: `Supported speeds` of its ports; DDR and FDR10 are not among
# them (the switch refuses them at apply time). HDR100 is HDR on the two lanes of a split port.
IB_SPEEDS = ("sdr", "qdr", "fdr", "edr", "hdr")
UNSUPPORTED_SPEEDS = ("ddr", "fdr10")
# Gb/s per speed on a 4X port; a split port has half the lanes.
LANE_RATE_4X = {"sdr": 10, "qdr": 40, "fdr": 56, "edr": 100, "hdr": 200}
SPLITS = {"none": "qsfp", "2": "qsfp-split-2"}
# IB link MTU values of `ib partition NAME mtu`; IPoIB MTU = IB MTU - 4 (the IPoIB encapsulation header).
IB_MTUS = {"256": 256, "512": 512, "1K": 1024, "2K": 2048, "4K": 4096}
IPOIB_HEADER = 4
# The IPoIB MTUs a partition can carry: each IB MTU less the 4-byte IPoIB header (the role and preflight use these).
IPOIB_MTUS = tuple(ib_mtu - IPOIB_HEADER for ib_mtu in IB_MTUS.values())
DEFAULT_PKEY = 0x7FFF
HOSTNAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
PARTITION_NAME_RE = re.compile(r"^[A-Za-z0-9_]{1,64}$")
PORT_RE = re.compile(r"^(?:IB)?(\d+)/(\d+)(?:/(\d+))?$", re.IGNORECASE)
# none: the switch runs no SM (`no ib sm`): the leaves and spines of a fabric larger than the SM pair (sitegen).
SM_ROLES = ("master", "standby", "none")
SM_OFF = "none"


@dataclass(frozen=True)
class InputError:
    option: str
    value: Any
    problem: str
    fix: str

    def render(self, labels: Mapping[str, str] | None = None) -> str:
        return f"{relabel(self.option, labels)} = {self.value!r}: {self.problem}. Fix: {self.fix}"


# The module's options as the inventory names them (roles/qm8700/vars/main.yml, qm8700_input_names).
INPUT_NAMES: dict[str, str] = {
    "hostname": "qm8700_hostname", "sm.priority": "qm8700_sm_priority", "sm.role": "qm8700_sm_role",
    "sm": "qm8700_sm_role/qm8700_sm_priority", "ports": "qm8700_ports", "partitions": "qm8700_partitions",
    "ntp_servers": "qm8700_ntp_servers", "syslog_servers": "qm8700_syslog_servers",
}


def relabel(option: str, labels: Mapping[str, str] | None) -> str:
    """A module option path (ports[0].range) under the inventory's name for it (qm8700_ports[0].range)."""
    for name, label in (labels or {}).items():
        if option == name or option.startswith((name + "[", name + ".")):
            return label + option[len(name):]
    return option


@dataclass
class PortSpec:
    name: str  # "1/5" or "1/5/2"
    speed: str
    description: str
    enabled: bool = True


@dataclass
class ModuleSpec:
    """One front-panel port (cage) as declared: its split and the logical ports it yields."""

    cage: str  # "1/5"
    split: str  # "none" | "2"
    ports: list[PortSpec] = field(default_factory=list)


@dataclass
class PartitionSpec:
    name: str
    pkey: int
    ipoib: bool
    ib_mtu: str | None  # "4K"; None: leave as is


@dataclass
class DesiredState:
    hostname: str | None = None
    sm_enabled: bool | None = None
    sm_priority: int | None = None
    cages: list[ModuleSpec] = field(default_factory=list)
    partitions: list[PartitionSpec] = field(default_factory=list)
    ntp_servers: list[str] | None = None
    syslog_servers: list[str] | None = None
    purge: bool = False


@dataclass
class LivePort:
    name: str
    admin_enabled: bool
    speeds: list[str]  # configured (enabled) speeds
    description: str
    module_type: str
    oper_up: bool
    actual_speed: str | None  # None when the link is down
    line_rate_gbps: float | None


@dataclass
class LivePartition:
    name: str
    pkey: int | None
    ipoib: bool
    ib_mtu: str | None


@dataclass
class LiveState:
    hostname: str = ""
    version: str = ""
    sm_enabled: bool = False
    sm_priority: int | None = None
    sm_state: str = ""  # the HA role when the SM runs (master | standby | ...), else disabled / not running
    sm_running: bool = False
    sm_ha_role: str = ""
    sm_ha_state: str = ""
    sm_node_priorities: dict[str, int] = field(default_factory=dict)  # every `ib smnode NAME sm-priority N`
    system_profile: str = ""
    ports: dict[str, LivePort] = field(default_factory=dict)
    partitions: dict[str, LivePartition] = field(default_factory=dict)
    ntp_enabled: bool = False
    ntp_servers: list[str] = field(default_factory=list)
    syslog_servers: list[str] = field(default_factory=list)

    def to_facts(self) -> dict[str, Any]:
        return asdict(self)


class ParseError(ValueError):
    """A `show` output did not have the shape this parser knows: a FAIL, never a guess."""


# ---------------------------------------------------------------- input check


def expand_port_range(text: str) -> list[tuple[int, int]]:
    """'1/1-1/16' -> [(1, 1), ..., (1, 16)]; '1/3' -> [(1, 3)]; '1/1-1/4,1/9' -> both. Raises ValueError."""
    result: list[tuple[int, int]] = []
    for part in str(text).replace(" ", "").split(","):
        if not part:
            raise ValueError("empty element")
        bounds = part.split("-")
        if len(bounds) > 2:
            raise ValueError(f"'{part}' has more than one '-'")
        ends = []
        for bound in bounds:
            match = re.fullmatch(r"(?:IB)?(\d+)/(\d+)", bound, re.IGNORECASE)
            if not match:
                raise ValueError(f"'{bound}' is not a port of the form 1/N")
            ends.append((int(match.group(1)), int(match.group(2))))
        first, last = ends[0], ends[-1]
        if first[0] != last[0]:
            raise ValueError(f"'{part}' spans two modules")
        if last[1] < first[1]:
            raise ValueError(f"'{part}' runs backwards")
        result.extend((first[0], number) for number in range(first[1], last[1] + 1))
    return result


def parse_pkey(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a partition key")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip().lower()
        if not re.fullmatch(r"0x[0-9a-f]{1,4}", text):
            raise ValueError("not a hexadecimal number of the form 0x0001..0x7fff")
        number = int(text, 16)
    if not 0x0001 <= number <= 0x7FFF:
        raise ValueError("outside 0x0001..0x7fff (the top bit is the membership bit, 0x0000 is invalid)")
    return number


def ipoib_mtu_to_ib_mtu(ipoib_mtu: int) -> str | None:
    for label, ib_mtu in IB_MTUS.items():
        if ib_mtu - IPOIB_HEADER == ipoib_mtu:
            return label
    return None


def _check_ports(ports: Any, errors: list[InputError]) -> list[ModuleSpec]:
    if ports is None:
        return []
    if not isinstance(ports, list):
        errors.append(InputError("ports", ports, "must be a list of {range, speed, split, description}",
                                 "write a YAML list"))
        return []
    cages: dict[str, ModuleSpec] = {}
    for index, entry in enumerate(ports):
        where = f"ports[{index}]"
        if not isinstance(entry, dict):
            errors.append(InputError(where, entry, "must be a mapping", "use {range: 1/1-1/16, speed: hdr, split: none}"))
            continue
        unknown = sorted(set(entry) - {"range", "speed", "split", "description", "enabled"})
        if unknown:
            errors.append(InputError(where, entry, f"unknown keys {unknown}",
                                     "use only range, speed, split, description, enabled"))
        text = entry.get("range")
        try:
            numbers = expand_port_range(text) if text is not None else []
            if text is None:
                raise ValueError("missing")
        except ValueError as exc:
            errors.append(InputError(f"{where}.range", text, f"not a port range ({exc})",
                                     f"write ports as 1/N or 1/N-1/M with N, M in 1..{QM8700_PORT_COUNT}"))
            continue
        bad = [f"{m}/{n}" for m, n in numbers if m != 1 or not 1 <= n <= QM8700_PORT_COUNT]
        if bad:
            errors.append(InputError(f"{where}.range", text, f"port(s) {', '.join(bad)} do not exist on a QM8700",
                                     f"a QM8700 has ports 1/1 to 1/{QM8700_PORT_COUNT}"))
            continue
        speed = str(entry.get("speed", "hdr")).lower()
        if speed in UNSUPPORTED_SPEEDS:
            errors.append(InputError(f"{where}.speed", entry.get("speed"),
                                     "not a speed a QM8700 port supports (its ports support "
                                     f"{', '.join(IB_SPEEDS)}; the switch would refuse it at apply time)",
                                     f"use one of {', '.join(IB_SPEEDS)} (hdr for 200 Gb/s, hdr100 on a split port)"))
            continue
        if speed not in (*IB_SPEEDS, "hdr100"):
            errors.append(InputError(f"{where}.speed", entry.get("speed"), "not an InfiniBand speed",
                                     f"use one of {', '.join(IB_SPEEDS)} (hdr for 200 Gb/s)"))
            continue
        split = str(entry.get("split", "none")).lower()
        if split not in SPLITS:
            errors.append(InputError(f"{where}.split", entry.get("split"), "not a QM8700 split mode",
                                     "use none (one HDR port) or 2 (two HDR100 ports)"))
            continue
        if speed == "hdr100":
            # HDR100 is HDR signalling on the two lanes of a split port: the switch is told `speed hdr`.
            if split != "2":
                errors.append(InputError(f"{where}.speed", entry.get("speed"), "HDR100 exists only on a split port",
                                         "set split: 2 for two HDR100 ports, or speed: hdr for one 200 Gb/s port"))
                continue
            speed = "hdr"
        description = entry.get("description", "") or ""
        if not isinstance(description, str) or '"' in description or len(description) > 64:
            errors.append(InputError(f"{where}.description", description,
                                     "must be text of at most 64 characters without double quotes",
                                     "shorten the description or remove the quotes"))
            continue
        enabled = entry.get("enabled", True)
        if not isinstance(enabled, bool):
            errors.append(InputError(f"{where}.enabled", enabled, "must be true or false", "write true or false"))
            continue
        for module, number in numbers:
            cage = f"{module}/{number}"
            if cage in cages:
                errors.append(InputError(f"{where}.range", text, f"port {cage} is declared twice",
                                         "declare each port in exactly one qm8700_ports entry"))
                continue
            names = [cage] if split == "none" else [f"{cage}/1", f"{cage}/2"]
            cages[cage] = ModuleSpec(cage, split, [PortSpec(n, speed, description, enabled) for n in names])
    return sorted(cages.values(), key=lambda c: tuple(int(x) for x in c.cage.split("/")))


def _check_partitions(partitions: Any, errors: list[InputError]) -> list[PartitionSpec]:
    if partitions is None:
        return []
    if not isinstance(partitions, list):
        errors.append(InputError("partitions", partitions, "must be a list", "write a YAML list"))
        return []
    result: list[PartitionSpec] = []
    seen_names: set[str] = set()
    seen_pkeys: dict[int, str] = {}
    for index, entry in enumerate(partitions):
        where = f"partitions[{index}]"
        if not isinstance(entry, dict):
            errors.append(InputError(where, entry, "must be a mapping", "use {name, pkey, ipoib, ipoib_mtu}"))
            continue
        name = str(entry.get("name", ""))
        if not PARTITION_NAME_RE.fullmatch(name):
            errors.append(InputError(f"{where}.name", entry.get("name"), "not a partition name",
                                     "use 1-64 letters, digits or underscores"))
            continue
        if name in seen_names:
            errors.append(InputError(f"{where}.name", name, "partition declared twice", "declare it once"))
            continue
        seen_names.add(name)
        try:
            pkey = parse_pkey(entry.get("pkey"))
        except ValueError as exc:
            errors.append(InputError(f"{where}.pkey", entry.get("pkey"), f"bad partition key: {exc}",
                                     "write the pkey as hex, e.g. \"0x7fff\" for Default or 0x0002..0x7ffe"))
            continue
        if name == "Default" and pkey != DEFAULT_PKEY:
            errors.append(InputError(f"{where}.pkey", entry.get("pkey"), "the Default partition always has pkey 0x7fff",
                                     "set pkey: \"0x7fff\" for Default"))
            continue
        if name != "Default" and pkey == DEFAULT_PKEY:
            errors.append(InputError(f"{where}.pkey", entry.get("pkey"), "0x7fff is reserved for the Default partition",
                                     "pick another pkey between 0x0002 and 0x7ffe"))
            continue
        if pkey in seen_pkeys:
            errors.append(InputError(f"{where}.pkey", entry.get("pkey"),
                                     f"pkey already used by partition {seen_pkeys[pkey]}",
                                     "give every partition its own pkey"))
            continue
        seen_pkeys[pkey] = name
        ipoib = entry.get("ipoib", False)
        if not isinstance(ipoib, bool):
            errors.append(InputError(f"{where}.ipoib", ipoib, "must be true or false", "write true or false"))
            continue
        ib_mtu = None
        raw = entry.get("ipoib_mtu")
        if raw is not None:
            try:
                ib_mtu = ipoib_mtu_to_ib_mtu(int(raw))
            except (TypeError, ValueError):
                ib_mtu = None
            if ib_mtu is None:
                allowed = ", ".join(str(v - IPOIB_HEADER) for v in IB_MTUS.values())
                errors.append(InputError(f"{where}.ipoib_mtu", raw,
                                         "not an IPoIB MTU an IB partition can carry (IB MTU minus 4 bytes)",
                                         f"use one of {allowed} (4092 for HDR with a 4K IB MTU)"))
                continue
        result.append(PartitionSpec(name, pkey, ipoib, ib_mtu))
    return result


def _check_addresses(option: str, values: Any, errors: list[InputError]) -> list[str] | None:
    if values is None:
        return None
    if not isinstance(values, list):
        errors.append(InputError(option, values, "must be a list of IP addresses", "write a YAML list"))
        return None
    result: list[str] = []
    for index, value in enumerate(values):
        try:
            result.append(str(ipaddress.ip_address(str(value))))
        except ValueError:
            errors.append(InputError(f"{option}[{index}]", value, "not an IP address",
                                     "give the server's IPv4 or IPv6 address"))
    if len(set(result)) != len(result):
        errors.append(InputError(option, values, "lists a server twice", "list each server once"))
    return result


def check_desired(params: dict[str, Any]) -> tuple[DesiredState, list[InputError]]:
    """Check everything at once; the caller refuses to touch the switch if the error list is not empty."""
    errors: list[InputError] = []
    state = DesiredState(purge=bool(params.get("purge", False)))
    hostname = params.get("hostname")
    if hostname is not None:
        if not HOSTNAME_RE.fullmatch(str(hostname)):
            errors.append(InputError("hostname", hostname, "not a valid switch hostname",
                                     "use 1-63 letters, digits or '-', not starting or ending with '-'"))
        state.hostname = str(hostname)
    sm = params.get("sm")
    if sm is not None:
        enabled = sm.get("enabled", True)
        if not isinstance(enabled, bool):
            errors.append(InputError("sm.enabled", enabled, "must be true or false", "write true or false"))
        state.sm_enabled = bool(enabled)
        priority = sm.get("priority")
        if priority is not None:
            if isinstance(priority, bool) or not str(priority).isdigit() or not 0 <= int(priority) <= 15:
                errors.append(InputError("sm.priority", priority, "SM priority must be an integer from 0 to 15",
                                         "give the master the highest priority, e.g. 15 and 14 for the standby"))
            else:
                state.sm_priority = int(priority)
        role = sm.get("role")
        if role is not None and role not in SM_ROLES:
            errors.append(InputError("sm.role", role, "not an SM role", "use master, standby or none"))
        elif role == SM_OFF and state.sm_enabled:
            errors.append(InputError("sm.enabled", enabled, "role none runs no SM",
                                     "set sm.enabled: false with role none"))
    state.cages = _check_ports(params.get("ports"), errors)
    state.partitions = _check_partitions(params.get("partitions"), errors)
    state.ntp_servers = _check_addresses("ntp_servers", params.get("ntp_servers"), errors)
    state.syslog_servers = _check_addresses("syslog_servers", params.get("syslog_servers"), errors)
    return state, errors


def peers_from_param(peers: list[Any]) -> dict[str, dict[str, Any]]:
    """[[name, role, priority], ...] (as the role builds it from hostvars) -> {name: {role, priority}}."""
    result: dict[str, dict[str, Any]] = {}
    for entry in peers:
        name, role, priority = ([*list(entry), None, None, None])[:3]
        try:
            priority = int(priority) if priority is not None and not isinstance(priority, bool) else None
        except (TypeError, ValueError):
            priority = None
        result[str(name)] = {"role": role, "priority": priority}
    return result


def declared_from_inventory(hostvars: Mapping[str, Any], host: str) -> dict[str, Any]:
    """One switch's inventory variables in the form check_desired takes (roles/qm8700/vars/main.yml's
    qm8700_declared, the role's defaults for what the inventory leaves out)."""
    return {"hostname": hostvars.get("qm8700_hostname", host),
            "sm": {"enabled": hostvars.get("qm8700_sm_role") != SM_OFF,
                   "priority": hostvars.get("qm8700_sm_priority"),
                   "role": hostvars.get("qm8700_sm_role")},
            **{option: hostvars.get(name, []) for option, name in INPUT_NAMES.items()
               if option in ("ports", "partitions", "ntp_servers", "syslog_servers")}}


def inventory_problems(host: str, declared: Mapping[str, Any],
                       names: Mapping[str, str] | None = None) -> list[Problem]:
    """One QM8700's inventory rules, their one home (check_desired: hostname, SM priority and role, ports that
    exist with a speed and split the switch takes, partitions and their pkeys, NTP and syslog addresses), as rows
    on the inventory's variable names. library/mlnxos_fabric.py (the role's input check) and preflight
    (rule_hca_ports) both call it."""
    _unused, errors = check_desired(dict(declared))
    labels = INPUT_NAMES if names is None else names
    return [Problem(host, relabel(e.option, labels), e.value, e.problem, e.fix) for e in errors]


def declared_port_count(declared: Mapping[str, Any]) -> int:
    """The HDR/HDR100 ports a switch's valid qm8700_ports entries give (a split cage gives two)."""
    state, _unused = check_desired({"ports": declared.get("ports")})
    return sum(len(cage.ports) for cage in state.cages)


def sm_pair_problems(switches: Mapping[str, Mapping[str, Any]], group: str = "qm8700") -> list[Problem]:
    """The subnet's SM design, its one home: exactly one designated master, the others standby, every switch
    with its own priority and the master's the highest; a switch of role none runs no SM and is left out of the
    election (its priority is not compared). switches: {name: {"role": .., "priority": ..}} in inventory order.
    Equal priorities are refused even between two standbys: MLNX-OS (OpenSM) breaks a priority tie by the lower
    port GUID, so the failover order would depend on the hardware, not the inventory.
    library/mlnxos_fabric.py (through check_sm_pair) and preflight (rule_subnet_manager) both call it."""
    out: list[Problem] = []
    names = [n for n in switches if switches[n].get("role") != SM_OFF]
    roles = {n: switches[n].get("role") for n in names}
    prios = {n: p if isinstance(p := switches[n].get("priority"), int) and not isinstance(p, bool) else None
             for n in names}
    masters = [n for n in names if roles[n] == "master"]
    if not masters:
        out.append(Problem(group, "qm8700_sm_role", [roles[n] for n in names],
                           "no QM8700 is subnet manager master: the fabric would have no SM",
                           "set qm8700_sm_role: master on exactly one switch and standby on the others"))
    for extra in masters[1:]:
        out.append(Problem(extra, "qm8700_sm_role", "master",
                           f"{len(masters)} switches are 'master' ({', '.join(masters)}); exactly one switch of "
                           "the subnet must be master and the others standby",
                           "set qm8700_sm_role: master on one switch and standby on the others"))
    for name in names:
        if roles[name] not in SM_ROLES:
            out.append(Problem(name, "qm8700_sm_role", roles[name], "is not master, standby or none", "set one"))
    seen: dict[int, str] = {}
    for name in names:
        prio = prios[name]
        if prio is None:
            continue
        if prio in seen:
            out.append(Problem(name, "qm8700_sm_priority", prio,
                               f"equal to {seen[prio]}'s SM priority: the election would fall to the lower port "
                               "GUID", "give every switch its own priority, the master the highest"))
        else:
            seen[prio] = name
    if len(masters) == 1 and prios[masters[0]] is not None:
        master, top = masters[0], prios[masters[0]]
        higher = [n for n in names if n != master and prios[n] is not None and prios[n] > top]  # type: ignore[operator]
        if higher:
            out.append(Problem(master, "qm8700_sm_priority", top,
                               f"standby {higher[0]}'s {prios[higher[0]]} is not below the master {master}'s {top}: "
                               "the standby would win the SM election", "give the master the highest priority (e.g. 15)"))
    return out


def pair_line(problem: Problem) -> str:
    """A sm_pair_problems row as one line of the module's failure, led by the variable."""
    return f"{problem.variable}: {problem.host} = {problem.value!r}: {problem.problem}. Fix: {problem.fix}"


def check_sm_pair(switches: dict[str, dict[str, Any]]) -> list[str]:
    """sm_pair_problems as the module's failure lines."""
    return [pair_line(p) for p in sm_pair_problems(switches)]


# ---------------------------------------------------------------- parsing
#
# Every format read here is in tests/fixtures/mlnxos/real/ (byte-exact public captures, SOURCES there) or, where
# only the manual's prose gives it, in tests/fixtures/mlnxos/constructed/ with the reasoning beside it.


def _rows(data: Any) -> dict[str, dict[str, Any]]:
    """Both MLNX-OS table layouts -> {row name: {field: value}}."""
    rows: dict[str, dict[str, Any]] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, list) and value and isinstance(value[0], dict):
                rows[key] = value[0]
            elif isinstance(value, dict):
                rows[key] = value
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, dict) and "header" in item:
                rows[str(item["header"])] = item
    return rows


def _first(data: Any, command: str) -> dict[str, Any]:
    if isinstance(data, list):
        data = data[0] if data and isinstance(data[0], dict) else {}
    if not isinstance(data, dict):
        raise ParseError(f"{command}: expected a JSON object, got {type(data).__name__} {str(data)[:80]!r}")
    return data


def _field(row: dict[str, Any], *names: str) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in row.items()}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def _yes(value: Any) -> bool:
    return str(value).strip().lower() in ("yes", "enable", "enabled", "true", "up")


def one_line(data: Any, command: str) -> str:
    """A show command whose output is one line: the CLI prints the line; the JSON API (and `| json-print`) wraps
    it as {"value": ["enable"]}. Anything else is not the shape of such a command: ParseError."""
    if isinstance(data, dict) and set(data) == {"value"}:
        data = data["value"]
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if isinstance(data, str) and data.strip() and "\n" not in data.strip():
        return data.strip()
    raise ParseError(f"{command}: expected one line (or {{\"value\": [LINE]}}), got {str(data)[:120]!r}")


def config_lines(data: Any, command: str = "show running-config") -> list[str]:
    """Text of a configuration: the CLI's lines, or the JSON API's {"Lines": ["   hostname x", ...]}. The
    lines are indented by three spaces and the '##' lines are comments; both are dropped."""
    if isinstance(data, dict) and isinstance(data.get("Lines"), list):
        raw = [str(line) for line in data["Lines"]]
    elif isinstance(data, str):
        raw = data.splitlines()
    else:
        raise ParseError(f"{command}: expected text or {{\"Lines\": [...]}}, got {str(data)[:120]!r}")
    return [line.strip() for line in raw if line.strip() and not line.lstrip().startswith("#")]


def parse_version(data: Any) -> str:
    release = _field(_first(data, "show version"), "Product release")
    if not release:
        raise ParseError("show version: no 'Product release'")
    return str(release)


def parse_sm(data: Any) -> bool:
    """show ib sm -> whether the SM is enabled on this switch (`enable` / `disable`)."""
    word = one_line(data, "show ib sm").lower()
    if word not in ("enable", "disable"):
        raise ParseError(f"show ib sm: expected enable or disable, got {word!r}")
    return word == "enable"


def parse_system_profile(data: Any) -> str:
    """show system profile -> the profile words, e.g. 'ib single-switch' or 'ib split-ready'."""
    return " ".join(one_line(data, "show system profile").lower().split())


def split_ready(profile: str) -> bool:
    return "split-ready" in profile.split()


@dataclass
class RunningConfig:
    hostname: str = ""
    module_types: dict[str, str] = field(default_factory=dict)  # cage -> qsfp-split-2 (absent: qsfp)
    shutdown: set[str] = field(default_factory=set)
    speeds: dict[str, list[str]] = field(default_factory=dict)  # port -> speeds (absent: every supported)
    descriptions: dict[str, str] = field(default_factory=dict)
    sm_priorities: dict[str, int] = field(default_factory=dict)  # SM node name -> priority
    syslog_servers: list[str] = field(default_factory=list)


_IF_RE = re.compile(r"^interface ib (\d+/\d+(?:/\d+)?) (.+)$")


def parse_running_config(data: Any) -> RunningConfig:
    """show running-config: the home of every setting MLNX-OS does not print elsewhere - admin state, configured
    speeds, descriptions, splits (module-type), SM node priorities, remote syslog servers."""
    cfg = RunningConfig()
    for line in config_lines(data):
        words = line.split()
        match = _IF_RE.match(line)
        if words[0] == "hostname" and len(words) == 2:
            cfg.hostname = words[1]
        elif match:
            port, rest = match.group(1), match.group(2)
            verb = rest.split()[0]
            args = [w for w in rest.split()[1:] if w != "force"]
            if verb == "module-type" and args:
                cfg.module_types[port] = args[0]
            elif verb == "shutdown":
                cfg.shutdown.add(port)
            elif verb == "speed" and args:
                cfg.speeds[port] = [a.lower() for a in args]
            elif verb == "description":
                text = rest[len("description"):].strip()
                cfg.descriptions[port] = text[1:-1] if len(text) > 1 and text[0] == text[-1] == '"' else text
        elif words[:2] == ["ib", "smnode"] and len(words) == 5 and words[3] == "sm-priority" and words[4].isdigit():
            cfg.sm_priorities[words[2]] = int(words[4])
        elif words[0] == "logging" and len(words) == 2 and _is_address(words[1]):
            cfg.syslog_servers.append(words[1])
    return cfg


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@dataclass
class PortStatus:
    oper_up: bool
    line_rate_gbps: float | None
    speed: str | None  # the active speed ("Speed" label), None when the link is down
    width: str | None


def _rate(text: Any) -> float | None:
    match = re.match(r"\s*([\d.]+)\s*Gbps", str(text or ""), re.IGNORECASE)
    return float(match.group(1)) if match else None


def _na(value: Any) -> str | None:
    text = str(value or "").strip()
    return None if text.upper() in ("", "N/A", "N\\A") else text


def parse_ib_interfaces(data: Any) -> dict[str, PortStatus]:
    """show interfaces ib -> {"1/1": PortStatus}. The IB port block carries link state and rates only (Logical
    port state, Physical port state, Current line rate, Supported speeds, Speed, Width, MTU, Description); the
    admin state and configured speeds are in the running configuration."""
    ports: dict[str, PortStatus] = {}
    for header, row in _rows(data).items():
        match = PORT_RE.match(header.split()[0])
        if not match or not header.upper().startswith("IB"):
            continue
        logical = _field(row, "Logical port state")
        if logical is None:
            raise ParseError(f"show interfaces ib: {header} has no 'Logical port state'")
        name = "/".join(g for g in match.groups() if g)
        speed = _na(_field(row, "Speed"))
        ports[name] = PortStatus(
            oper_up=str(logical).strip().lower() == "active",
            line_rate_gbps=_rate(_field(row, "Current line rate")),
            speed=speed.lower() if speed else None,
            width=_na(_field(row, "Width")),
        )
    if not ports:
        raise ParseError("show interfaces ib: no InfiniBand port in the output")
    return ports


def parse_partitions(data: Any) -> dict[str, LivePartition]:
    """show ib partition: {"NAME": [{"PKey": ..., "ipoib": ..., "mtu": ...}], ...}; any other shape is a ParseError
    (read as "no partition", it would plan to create every declared one)."""
    if not isinstance(data, dict) or any(not isinstance(v, (dict, list)) for v in data.values()):
        raise ParseError(f"show ib partition: expected {{\"NAME\": [{{\"PKey\": ...}}]}}, got {str(data)[:120]!r}")
    parts: dict[str, LivePartition] = {}
    for name, row in _rows(data).items():
        pkey_text = _field(row, "PKey", "pkey")
        try:
            pkey = int(str(pkey_text), 16) if pkey_text not in (None, "") else None
        except ValueError as exc:
            raise ParseError(f"show ib partition: {name} pkey {pkey_text!r}") from exc
        mtu = _field(row, "mtu", "MTU")
        parts[name.rstrip(":")] = LivePartition(name.rstrip(":"), pkey, _yes(_field(row, "ipoib")),
                                                str(mtu).upper() if mtu else None)
    return parts


def parse_ntp(data: Any) -> tuple[bool, list[str]]:
    """show ntp configured: a list - a first element with 'NTP enabled' (older: 'NTP is administratively'),
    then one element per server or peer with a header 'NTP server ADDRESS'."""
    enabled: bool | None = None
    servers: list[str] = []
    items = data if isinstance(data, list) else [data]
    for item in items:
        if not isinstance(item, dict):
            continue
        words = str(item.get("header", "")).split()
        if len(words) >= 3 and words[0].upper() == "NTP" and words[1].lower() == "server":
            servers.append(words[2])
        elif _field(item, "NTP enabled", "NTP is administratively") is not None:
            enabled = _yes(_field(item, "NTP enabled", "NTP is administratively"))
    if enabled is None:
        raise ParseError("show ntp configured: no 'NTP enabled' field")
    return enabled, servers


# Read in two rounds: the first gives the switch's SM node name (its hostname), the second asks about that node.
SHOW_COMMANDS = (
    "show version",
    "show running-config",
    "show system profile",
    "show ib sm",
    "show interfaces ib",
    "show ib partition",
    "show ntp configured",
)
SMNODE_FIELDS = ("sm-priority", "sm-running", "ha-role", "ha-state")


def smnode_commands(node: str) -> list[str]:
    return [f"show ib smnode {node} {what}" for what in SMNODE_FIELDS]


def _smnode_values(node: str, outputs: list[Any]) -> tuple[int, bool, str, str]:
    if len(outputs) != len(SMNODE_FIELDS):
        raise ParseError(f"expected {len(SMNODE_FIELDS)} smnode outputs, got {len(outputs)}")
    texts = [one_line(out, f"show ib smnode {node} {what}").lower()
             for out, what in zip(outputs, SMNODE_FIELDS, strict=True)]
    priority, running, role, state = texts
    if not priority.isdigit():
        raise ParseError(f"show ib smnode {node} sm-priority: {priority!r} is not a number")
    if running not in ("running", "not running", "yes", "no"):
        raise ParseError(f"show ib smnode {node} sm-running: unexpected {running!r}")
    return int(priority), running in ("running", "yes"), role, state


def parse_live_state(outputs: list[Any], smnode_outputs: list[Any]) -> LiveState:
    if len(outputs) != len(SHOW_COMMANDS):
        raise ParseError(f"expected {len(SHOW_COMMANDS)} outputs, got {len(outputs)}")
    version, running, profile, sm, interfaces, partitions, ntp = outputs
    cfg = parse_running_config(running)
    if not cfg.hostname:
        raise ParseError("show running-config: no hostname line")
    live = LiveState(hostname=cfg.hostname, version=parse_version(version))
    live.system_profile = parse_system_profile(profile)
    live.sm_enabled = parse_sm(sm)
    live.sm_priority, live.sm_running, live.sm_ha_role, live.sm_ha_state = _smnode_values(cfg.hostname,
                                                                                          smnode_outputs)
    live.sm_state = live.sm_ha_role if live.sm_running else "disabled" if not live.sm_enabled else "not running"
    live.sm_node_priorities = dict(cfg.sm_priorities)
    status = parse_ib_interfaces(interfaces)
    for name, st in status.items():
        cage = "/".join(name.split("/")[:2])
        live.ports[name] = LivePort(
            name=name, admin_enabled=name not in cfg.shutdown,
            speeds=cfg.speeds.get(name, list(IB_SPEEDS)), description=cfg.descriptions.get(name, ""),
            module_type=cfg.module_types.get(cage, "qsfp"), oper_up=st.oper_up, actual_speed=st.speed,
            line_rate_gbps=st.line_rate_gbps)
    live.partitions = parse_partitions(partitions)
    live.ntp_enabled, live.ntp_servers = parse_ntp(ntp)
    live.syslog_servers = cfg.syslog_servers
    return live


def read_live_state(run: Callable[[list[str]], list[Any]]) -> LiveState:
    """Both rounds through one transport's run(); the second needs the SM node name from the first."""
    first = run(list(SHOW_COMMANDS))
    hostname = parse_running_config(first[1]).hostname
    if not hostname:
        raise ParseError("show running-config: no hostname line")
    return parse_live_state(first, run(smnode_commands(hostname)))


# ---------------------------------------------------------------- planning


@dataclass
class Plan:
    commands: list[str] = field(default_factory=list)
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # desired state the switch cannot take (missing port...)
    unmanaged: dict[str, list[str]] = field(default_factory=dict)


def _quote(text: str) -> str:
    return f'"{text}"'


def _plan_system(desired: DesiredState, live: LiveState, plan: Plan) -> None:
    if desired.hostname is not None:
        plan.before["hostname"] = live.hostname
        plan.after["hostname"] = desired.hostname
        if live.hostname != desired.hostname:
            plan.commands.append(f"hostname {desired.hostname}")
    for option, live_list, add, remove in (
        ("ntp_servers", live.ntp_servers, "ntp server {}", "no ntp server {}"),
        ("syslog_servers", live.syslog_servers, "logging {}", "no logging {}"),
    ):
        wanted = getattr(desired, option)
        if wanted is None:
            continue
        extra = [s for s in live_list if s not in wanted]
        plan.before[option] = sorted(live_list)
        kept = [] if desired.purge else extra
        plan.after[option] = sorted(set(wanted) | set(kept))
        plan.commands.extend(add.format(s) for s in wanted if s not in live_list)
        if desired.purge:
            plan.commands.extend(remove.format(s) for s in extra)
        elif extra:
            plan.unmanaged[option] = extra
    if desired.ntp_servers:
        plan.before["ntp_enabled"] = live.ntp_enabled
        plan.after["ntp_enabled"] = True
        if not live.ntp_enabled:
            plan.commands.append("ntp enable")


def _plan_sm(desired: DesiredState, live: LiveState, plan: Plan) -> None:
    if desired.sm_enabled is None:
        return
    plan.before["sm"] = {"enabled": live.sm_enabled, "priority": live.sm_priority}
    plan.after["sm"] = {"enabled": desired.sm_enabled,
                        "priority": desired.sm_priority if desired.sm_priority is not None else live.sm_priority}
    # The switch keeps the priority per SM node name (running config: `ib smnode HOST sm-priority N`); a new
    # hostname is a new node name, so after a rename the priority is set again, under the new name.
    renamed = desired.hostname is not None and desired.hostname != live.hostname
    # Priority first, so that the SM never runs, even for a moment, with a priority other than the designed one.
    if desired.sm_priority is not None and (renamed or live.sm_priority != desired.sm_priority):
        plan.commands.append(f"ib sm sm-priority {desired.sm_priority}")
    if desired.sm_enabled and not live.sm_enabled:
        plan.commands.append("ib sm")
    elif not desired.sm_enabled and live.sm_enabled:
        plan.commands.append("no ib sm")
    node = desired.hostname or live.hostname
    stale = sorted(n for n in live.sm_node_priorities if n != node)
    if stale:
        plan.unmanaged["sm_nodes"] = stale


def _port_view(port: LivePort | None) -> dict[str, Any] | None:
    if port is None:
        return None
    return {"enabled": port.admin_enabled, "speed": ",".join(port.speeds), "description": port.description}


def interface_block(port: str, commands: list[str]) -> list[str]:
    """Interface settings are sent in the interface's context, as the CLI and public clients do."""
    return [f"interface ib {port}", *commands, "exit"] if commands else []


SPLIT_READY_FIX = ("run `system profile ib split-ready` on the switch first: it reboots the switch and resets it "
                   "to the initial configuration wizard, so do it before the switch is configured (see "
                   "roles/qm8700/README.md, switch prerequisites)")


def _plan_ports(desired: DesiredState, live: LiveState, plan: Plan) -> None:
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for cage in desired.cages:
        module_type = SPLITS[cage.split]
        subports = [n for n in (f"{cage.cage}/1", f"{cage.cage}/2") if n in live.ports]
        current_names = subports if subports else ([cage.cage] if cage.cage in live.ports else [])
        if not current_names:
            plan.problems.append(f"port {cage.cage} does not exist on this switch")
            continue
        current_type = "qsfp-split-2" if subports else "qsfp"
        before.setdefault(cage.cage, {})["split"] = "2" if subports else "none"
        for name in current_names:
            before.setdefault(name, {}).update(_port_view(live.ports.get(name)) or {})
        after.setdefault(cage.cage, {})["split"] = cage.split
        for port in cage.ports:
            after.setdefault(port.name, {}).update(
                {"enabled": port.enabled, "speed": port.speed, "description": port.description})
        fresh = current_type != module_type
        if fresh:
            if not split_ready(live.system_profile):
                plan.problems.append(
                    f"port {cage.cage} is declared with split {cage.split} but the switch's system profile is "
                    f"'{live.system_profile}', not split-ready: module-type {module_type} is refused without it. "
                    f"Fix: {SPLIT_READY_FIX}")
                continue
            # The module type can only change while its ports are administratively down.
            for name in current_names:
                if live.ports[name].admin_enabled:
                    plan.commands.extend(interface_block(name, ["shutdown"]))
            plan.commands.append(f"interface ib {cage.cage} module-type {module_type} force")
        for port in cage.ports:
            current = None if fresh else live.ports.get(port.name)
            todo: list[str] = []
            if current is None or current.speeds != [port.speed]:
                todo.append(f"speed {port.speed} force")
            if current is None or current.description != port.description:
                if port.description:
                    todo.append(f"description {_quote(port.description)}")
                elif current is not None:
                    todo.append("no description")
            # After a module-type change the new ports start shut down; enable (or keep down) as declared.
            # A subport the switch does not list (only 1/20/1 of a split 1/20) is set as declared too.
            if current is None or current.admin_enabled != port.enabled:
                todo.append("no shutdown" if port.enabled else "shutdown")
            plan.commands.extend(interface_block(port.name, todo))
    if desired.cages:
        plan.before["ports"] = before
        plan.after["ports"] = after


def _plan_partitions(desired: DesiredState, live: LiveState, plan: Plan) -> None:
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for part in desired.partitions:
        current = live.partitions.get(part.name)
        before[part.name] = (None if current is None else
                             {"pkey": None if current.pkey is None else f"0x{current.pkey:04x}",
                              "ipoib": current.ipoib, "mtu": current.ib_mtu})
        after[part.name] = {"pkey": f"0x{part.pkey:04x}", "ipoib": part.ipoib,
                            "mtu": part.ib_mtu if part.ib_mtu else (current.ib_mtu if current else None)}
        if current is not None and current.pkey not in (None, part.pkey):
            plan.problems.append(
                f"partition {part.name} exists with pkey 0x{current.pkey:04x}, not 0x{part.pkey:04x}; changing the "
                "pkey of a live partition moves every member to a new partition, so it is not done automatically: "
                f"remove the partition by hand (no ib partition {part.name}) or declare its current pkey")
            continue
        for other in live.partitions.values():
            if other.name != part.name and other.pkey == part.pkey:
                plan.problems.append(f"pkey 0x{part.pkey:04x} of partition {part.name} is already used on the "
                                     f"switch by partition {other.name}")
        if current is None or current.pkey is None:
            plan.commands.append(f"ib partition {part.name} pkey 0x{part.pkey:04x} force")
        # A new partition starts without IPoIB: only turning it on is a change then.
        if (current is None and part.ipoib) or (current is not None and current.ipoib != part.ipoib):
            plan.commands.append(f"{'' if part.ipoib else 'no '}ib partition {part.name} ipoib force")
        if part.ib_mtu and (current is None or current.ib_mtu != part.ib_mtu):
            plan.commands.append(f"ib partition {part.name} mtu {part.ib_mtu} force")
    if desired.partitions:
        plan.before["partitions"] = before
        plan.after["partitions"] = after
        declared = {p.name for p in desired.partitions}
        extra = sorted(n for n in live.partitions if n not in declared)
        if extra:
            plan.unmanaged["partitions"] = extra


def plan(desired: DesiredState, live: LiveState) -> Plan:
    """Only the difference, in an order the switch accepts. Never removes what the inventory does not own
    (partitions always; NTP/syslog servers unless purge)."""
    result = Plan()
    _plan_system(desired, live, result)
    _plan_sm(desired, live, result)
    _plan_ports(desired, live, result)
    _plan_partitions(desired, live, result)
    return result


@dataclass
class Undo:
    """How to put back what an accepted prefix of a plan changed (see :func:`undo_commands`)."""

    commands: list[str] = field(default_factory=list)
    not_undoable: list[str] = field(default_factory=list)  # accepted commands with no known inverse
    left_in_interface: bool = False  # the prefix stopped inside an `interface ib P` block (the CLI is still there)


def _undo_port(command: str, before: LivePort | None) -> str | None:
    """The inverse of one interface-context command, from the port as it was read before the run."""
    if before is None:
        return None
    verb = command.split()[0] if not command.startswith("no ") else command.split()[1]
    if verb == "speed":
        return f"speed {' '.join(before.speeds)} force" if before.speeds else None
    if verb == "description":
        return f"description {_quote(before.description)}" if before.description else "no description"
    if verb == "shutdown":
        return "no shutdown" if before.admin_enabled else "shutdown"
    return None


def _undo_global(command: str, live: LiveState, created: set[str]) -> str | None:
    """The inverse of one global configuration command of a plan, from the live state read before the run."""
    words = command.split()
    negate = words[0] == "no"
    rest = words[1:] if negate else words
    if rest[0] == "hostname":
        return f"hostname {live.hostname}" if live.hostname else None
    if (rest[:2] == ["ntp", "server"] and len(rest) == 3) or (rest[0] == "logging" and len(rest) == 2):
        return " ".join(rest) if negate else f"no {command}"
    if rest == ["ntp", "enable"]:
        return "no ntp enable" if not negate else "ntp enable"
    if rest == ["ib", "sm"]:
        return "ib sm" if negate else "no ib sm"
    if rest[:3] == ["ib", "sm", "sm-priority"]:
        return f"ib sm sm-priority {live.sm_priority}" if live.sm_priority is not None else None
    if rest[:2] == ["ib", "partition"] and len(rest) >= 4:
        name, verb = rest[2], rest[3]
        if verb == "pkey":
            created.add(name)
            return f"no ib partition {name} force"
        if name in created:
            return ""  # removed with the partition itself
        current = live.partitions.get(name)
        if current is None:
            return None
        if verb == "ipoib":
            return f"{'' if current.ipoib else 'no '}ib partition {name} ipoib force"
        if verb == "mtu" and current.ib_mtu:
            return f"ib partition {name} mtu {current.ib_mtu} force"
    return None


def undo_commands(applied: list[str], live: LiveState) -> Undo:
    """Commands that put back what ``applied`` changed: the commands of a plan the switch accepted before it
    refused one, in the order sent; ``live`` is the state read before the run. The inverses are the plan's own
    command forms (the speeds as the running configuration lists them, the partition's `force` removal); a
    module-type change has none (it resets the cage's ports) and is reported instead."""
    undo = Undo()
    blocks: list[list[str]] = []
    created: set[str] = set()
    port: str | None = None
    inner: list[str] = []
    for command in applied:
        words = command.split()
        if words[:2] == ["interface", "ib"] and len(words) == 3:
            port, inner = words[2], []
            continue
        if port is not None and command == "exit":
            blocks.append(interface_block(port, list(reversed(inner))))
            port = None
            continue
        if port is not None:
            back = _undo_port(command, live.ports.get(port))
            if back is None:
                undo.not_undoable.append(f"interface ib {port} {command}")
            else:
                inner.append(back)
            continue
        back = None if "module-type" in words else _undo_global(command, live, created)
        if back is None:
            undo.not_undoable.append(command)
        elif back:
            blocks.append([back])
    if port is not None:
        undo.left_in_interface = True
        blocks.append(interface_block(port, list(reversed(inner))))
    for block in reversed(blocks):
        undo.commands.extend(block)
    return undo


def render_state(view: dict[str, Any]) -> str:
    """Stable, line-oriented text for Ansible's --diff (one setting per line)."""
    lines: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            if not value:
                lines.append(f"{prefix}: {{}}")
            for key in sorted(value, key=str):
                walk(f"{prefix}.{key}" if prefix else str(key), value[key])
        elif isinstance(value, list):
            lines.append(f"{prefix}: [{', '.join(str(v) for v in value)}]")
        else:
            lines.append(f"{prefix}: {value}")

    walk("", view)
    return "\n".join(lines) + "\n"


def verify(desired: DesiredState, live: LiveState, expected_sm_state: str | None) -> list[str]:
    """Live-state check after applying: every declared setting in place, links that are up run at the declared
    speed, and the SM in the designed state. Returns the mismatches (empty = pass)."""
    mismatches: list[str] = []
    remaining = plan(desired, live)
    mismatches.extend(remaining.problems)
    mismatches.extend(f"not in place: {cmd}" for cmd in remaining.commands)
    for cage in desired.cages:
        for port in cage.ports:
            current = live.ports.get(port.name)
            if current is None or not current.oper_up:
                continue
            if current.actual_speed not in (None, port.speed):
                mismatches.append(f"port {port.name} is up at {current.actual_speed}, declared {port.speed}")
            lanes = 2 if cage.split == "2" else 4
            expected_rate = LANE_RATE_4X[port.speed] * lanes / 4
            if current.line_rate_gbps is not None and abs(current.line_rate_gbps - expected_rate) > 0.5:
                mismatches.append(f"port {port.name} line rate {current.line_rate_gbps:g} Gb/s, expected "
                                  f"{expected_rate:g} Gb/s for {port.speed}")
    if expected_sm_state is not None and desired.sm_enabled and live.sm_state != expected_sm_state:
        mismatches.append(f"subnet manager on node {live.hostname} is {live.sm_state!r} (show ib smnode "
                          f"{live.hostname} sm-running / ha-role), designed {expected_sm_state!r} "
                          f"(priority {live.sm_priority})")
    return mismatches
