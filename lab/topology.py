"""The lab topology: lab/topology.yml + the lab inventory -> nodes, NICs, cables, ports (pure functions).

Every problem is reported at once, each naming the place, the value and the fix, before anything starts.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_TOPOLOGY = Path(__file__).resolve().parent / "topology.yml"
ROLES = ("dgx", "storage", "switch")
MAC_PREFIX = "52:54:00:4c"  # qemu's OUI + 'L' for lab


class TopologyError(ValueError):
    """One or more problems in topology.yml / the inventory; str() lists them all."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("lab topology is invalid:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class Nic:
    """A NIC inside a VM. kind: user (mgmt, qemu user net), listen / connect (one end of a point-to-point
    cable: a qemu socket netdev on 127.0.0.1:port), hub (the compute-fabric segment: UDP to the hub)."""

    name: str
    mac: str
    kind: str
    port: int | None = None
    local_port: int | None = None
    peer: str | None = None
    address: str | None = None
    mtu: int | None = None


@dataclass(frozen=True)
class Forward:
    host_port: int
    guest_port: int


@dataclass(frozen=True)
class DataDisk:
    """The storage node's /ifs disk; its file system and mount are fixed by the storage image's fstab."""

    size_gb: int
    fs: str = "xfs"
    label: str = "ifs"
    mount: str = "/ifs"
    options: str = "prjquota"


@dataclass(frozen=True)
class Node:
    name: str
    role: str
    image: str
    index: int
    ssh_port: int
    memory_mb: int
    cpus: int
    nics: tuple[Nic, ...]
    forwards: tuple[Forward, ...] = ()
    data_disk: DataDisk | None = None
    in_inventory: bool = True

    def nic(self, name: str) -> Nic:
        for n in self.nics:
            if n.name == name:
                return n
        raise KeyError(f"{self.name} has no NIC {name}")

    @property
    def listens(self) -> bool:
        return any(n.kind == "listen" for n in self.nics)


@dataclass(frozen=True)
class Cable:
    endpoint: str  # node:nic
    switch: str  # node:port
    port: int


@dataclass(frozen=True)
class HostService:
    name: str
    module: str
    argv: tuple[str, ...]
    ports: tuple[int, ...]


@dataclass(frozen=True)
class RegistryForward:
    service: str
    guest_address: str
    port: int
    hostname: str


@dataclass(frozen=True)
class Topology:
    nodes: tuple[Node, ...]
    cables: tuple[Cable, ...]
    host_services: tuple[HostService, ...]
    registry: RegistryForward | None
    hub_port: int | None
    port_offset: int
    dgx_count: int
    notes: tuple[str, ...] = field(default=())
    miswire: str = ""   # "dgx01,dgx02" when those storage cables are swapped on purpose (LAB_MISWIRE)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node {name!r} in the lab (nodes: {', '.join(n.name for n in self.nodes)})")

    def start_order(self) -> list[Node]:
        """Switch-side (listening) VMs first: a qemu socket `connect` fails unless its peer listens."""
        return sorted(self.nodes, key=lambda n: (not n.listens, n.index))

    def images(self) -> list[str]:
        return sorted({n.image for n in self.nodes})

    def host_ports(self) -> list[tuple[str, int]]:
        """Every 127.0.0.1 port the lab binds or forwards, with its owner (for collision checks)."""
        out: list[tuple[str, int]] = []
        for n in self.nodes:
            out.append((f"{n.name} ssh", n.ssh_port))
            out.extend((f"{n.name} forward {f.guest_port}", f.host_port) for f in n.forwards)
            out.extend((f"{n.name}:{nic.name} hub member", nic.local_port) for nic in n.nics if nic.kind == "hub" and nic.local_port)
        out.extend((f"cable {c.endpoint} - {c.switch}", c.port) for c in self.cables)
        if self.hub_port is not None:
            out.append(("compute-fabric hub", self.hub_port))
        for s in self.host_services:
            out.extend((f"host service {s.name}", p) for p in s.ports)
        return out


def expand(template: str, n: int) -> str:
    """`{n}`, `{n:02d}` and `{K+n}` in a topology template, for DGX number n."""

    def sub(m: re.Match[str]) -> str:
        expr = m.group(1)
        if expr == "n":
            return str(n)
        if expr == "n:02d":
            return f"{n:02d}"
        plus = re.fullmatch(r"(\d+)\+n", expr)
        if plus:
            return str(int(plus.group(1)) + n)
        raise ValueError(f"unsupported placeholder {{{expr}}} in {template!r} (use {{n}}, {{n:02d}} or {{K+n}})")

    return re.sub(r"\{([^{}]+)\}", sub, template)


def mac_for(node_index: int, nic_index: int) -> str:
    return f"{MAC_PREFIX}:{node_index:02x}:{nic_index:02x}"


def inventory_hosts(inventory: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Host name -> its host-level variables, walking all.children recursively (plain YAML, no Ansible)."""
    hosts: dict[str, dict[str, Any]] = {}

    def walk(group: dict[str, Any] | None) -> None:
        if not isinstance(group, dict):
            return
        for name, hvars in (group.get("hosts") or {}).items():
            hosts.setdefault(name, {}).update(hvars or {})
        for child in (group.get("children") or {}).values():
            walk(child)

    for top in inventory.values():
        walk(top)
    return hosts


def _int(problems: list[str], where: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        problems.append(f"{where}: {value!r} is not an integer in {lo}..{hi}; set it to one")
        return lo
    return value


def _cidr(problems: list[str], where: str, value: Any) -> str | None:
    try:
        ipaddress.ip_interface(str(value))
    except ValueError:
        problems.append(f"{where}: {value!r} is not an address with a prefix length (e.g. 198.51.100.11/24)")
        return None
    if "/" not in str(value):
        problems.append(f"{where}: {value!r} has no prefix length; write it as CIDR (e.g. 198.51.100.11/24)")
        return None
    return str(value)


def build_topology(
    spec: dict[str, Any],
    inventory: dict[str, Any],
    *,
    dgx_count: int | None = None,
    port_offset: int = 0,
    inventory_name: str = "inventories/lab/hosts.yml",
    miswire: tuple[str, str] | None = None,
) -> Topology:
    """Validate and expand the topology spec against the inventory. Raises TopologyError listing every problem.

    `miswire` (LAB_MISWIRE=dgx01,dgx02): those two DGX VMs' storage cables are swapped at the switch, on purpose,
    while the inventory keeps its design; the cabling stage must then stop the run (docs/cabling.md#the-lab)."""
    problems: list[str] = []
    notes: list[str] = []
    inv = inventory_hosts(inventory)
    port_offset = _int(problems, "LAB_PORT_OFFSET", port_offset, 0, 30000)

    known = {"inventory", "dgx", "roles", "nodes", "compute_fabric", "data_mtu", "ports", "registry_forward", "host_services"}
    problems.extend(
        f"topology.yml: unknown key {k!r}; known keys: {', '.join(sorted(known))}" for k in spec if k not in known
    )

    roles_spec = spec.get("roles") or {}
    for role in ROLES:
        if role not in roles_spec:
            problems.append(f"topology.yml roles: role {role!r} is missing; add {{image: {role}, memory_mb: ..., cpus: ...}}")

    def role_size(role: str) -> tuple[str, int, int]:
        r = roles_spec.get(role) or {}
        return (
            str(r.get("image", role)),
            _int(problems, f"topology.yml roles.{role}.memory_mb", r.get("memory_mb", 1024), 256, 65536),
            _int(problems, f"topology.yml roles.{role}.cpus", r.get("cpus", 1), 1, 16),
        )

    data_mtu = _int(problems, "topology.yml data_mtu", spec.get("data_mtu", 9000), 1280, 9216)
    ports = spec.get("ports") or {}
    cable_base = _int(problems, "topology.yml ports.cable_base", ports.get("cable_base", 24100), 1024, 65000) + port_offset
    hub_base = _int(problems, "topology.yml ports.hub_base", ports.get("hub_base", 24200), 1024, 65000) + port_offset

    dgx = spec.get("dgx") or {}
    dmax = _int(problems, "topology.yml dgx.max", dgx.get("max", 4), 1, 16)
    count = dgx_count if dgx_count is not None else dgx.get("count", 2)
    count = _int(problems, "dgx count (topology.yml dgx.count, LAB_DGX_COUNT or --dgx)", count, 1, dmax)

    # Raw node list: name -> (role, ssh_port, extra spec, cables [(nic, switch, switch_port)])
    raw: list[dict[str, Any]] = []
    for n in range(1, count + 1):
        name = expand(str(dgx.get("name", "dgx{n:02d}")), n)
        raw.append(
            {
                "name": name,
                "role": "dgx",
                "ssh_port": _int(problems, "topology.yml dgx.ssh_port_base", dgx.get("ssh_port_base", 2220), 1024, 65000) + n,
                "spec": {},
                "cables": [{"nic": "storage0", "switch": dgx.get("switch", "sn3700v01"), "switch_port": expand(str(dgx.get("switch_port", "swp{n}")), n)}],
                "defaults": {
                    "storage": expand(str(dgx.get("default_storage_address", "198.51.100.{10+n}/24")), n),
                    "ipoib": expand(str(dgx.get("default_ipoib_address", "203.0.113.{10+n}/24")), n),
                },
            }
        )
    for name, nspec in (spec.get("nodes") or {}).items():
        nspec = nspec or {}
        node_role = nspec.get("role")
        if node_role not in ROLES:
            problems.append(f"topology.yml nodes.{name}.role: {node_role!r} is not one of {', '.join(ROLES)}")
            continue
        raw.append(
            {
                "name": name,
                "role": node_role,
                "ssh_port": _int(problems, f"topology.yml nodes.{name}.ssh_port", nspec.get("ssh_port"), 1024, 65000),
                "spec": nspec,
                "cables": list(nspec.get("cables") or []),
                "defaults": {},
            }
        )

    if miswire is not None:
        pair = [next((r for r in raw if r["name"] == m and r["role"] == "dgx"), None) for m in miswire]
        if len(set(miswire)) != 2 or None in pair:
            problems.append(f"LAB_MISWIRE={','.join(miswire)}: name two different DGX VMs of this lab "
                            f"({', '.join(r['name'] for r in raw if r['role'] == 'dgx')})")
        else:
            first, second = pair[0]["cables"][0], pair[1]["cables"][0]  # type: ignore[index]
            first["switch_port"], second["switch_port"] = second["switch_port"], first["switch_port"]
            for r in pair:
                r["miswired"] = True  # type: ignore[index]
    names = [r["name"] for r in raw]
    for dup in sorted({x for x in names if names.count(x) > 1}):
        problems.append(f"topology.yml: node name {dup!r} is declared twice; rename one")
    by_name = {r["name"]: r for r in raw}

    # Cables: endpoint nic -> switch port, in a stable order (for port numbers).
    cable_list: list[tuple[str, str, str, str]] = []  # (endpoint, nic, switch, switch_port)
    for r in raw:
        for c in r["cables"]:
            sw, swp, nic = c.get("switch"), c.get("switch_port"), c.get("nic")
            where = f"topology.yml {r['name']} cable {nic}"
            if sw not in by_name or by_name[sw]["role"] != "switch":
                problems.append(f"{where}: switch {sw!r} is not a node with role switch; name one of the switch nodes")
                continue
            if not re.fullmatch(r"swp\d+", str(swp)):
                problems.append(f"{where}: switch_port {swp!r} is not a Cumulus port name (swpN)")
                continue
            cable_list.append((r["name"], str(nic), str(sw), str(swp)))
    seen_sw: dict[tuple[str, str], str] = {}
    for ep, nic, sw, swp in cable_list:
        if (sw, swp) in seen_sw:
            problems.append(f"topology.yml: {sw}:{swp} is cabled to both {seen_sw[(sw, swp)]} and {ep}:{nic}; pick another port")
        seen_sw[(sw, swp)] = f"{ep}:{nic}"
    cable_list.sort(key=lambda c: (c[2], int(c[3][3:])))
    cables = tuple(Cable(f"{ep}:{nic}", f"{sw}:{swp}", cable_base + i) for i, (ep, nic, sw, swp) in enumerate(cable_list))

    fabric = spec.get("compute_fabric") or {}
    fabric_nic = str(fabric.get("nic", "cfab0"))
    fabric_mtu = _int(problems, "topology.yml compute_fabric.mtu", fabric.get("mtu", data_mtu), 1280, 9216)
    dgx_names = [r["name"] for r in raw if r["role"] == "dgx"]
    hub_port = hub_base if fabric and dgx_names else None

    nodes: list[Node] = []
    for index, r in enumerate(raw, start=1):
        name, role = r["name"], r["role"]
        image, mem, cpus = role_size(role)
        nspec = r["spec"]
        hv = inv.get(name)
        if hv is None:
            if role == "dgx":
                notes.append(
                    f"{name} is not in {inventory_name}: it boots with storage0 {r['defaults']['storage']}, "
                    f"cfab0 {r['defaults']['ipoib']}, SSH 127.0.0.1:{r['ssh_port'] + port_offset}; add it to the "
                    f"inventory's dgx group with those values so that site.yml deploys it"
                )
            else:
                problems.append(f"{inventory_name}: node {name} of the topology is missing; add it (role {role})")
            hv = {}
        inv_port = hv.get("ansible_port")
        if inv_port is not None and inv_port != r["ssh_port"]:
            problems.append(
                f"{inventory_name} {name}: ansible_port {inv_port} differs from lab/topology.yml ssh port "
                f"{r['ssh_port']}; make them equal"
            )
        nics: list[Nic] = [Nic("mgmt0", mac_for(index, 0), "user")]
        storage_nics = hv.get("storage_nics") or []
        for nic_index, (ep, nic, sw, swp) in enumerate([c for c in cable_list if c[0] == name], start=1):
            address, mtu = None, data_mtu
            match = [s for s in storage_nics if isinstance(s, dict) and s.get("name") == nic]
            if match:
                address = _cidr(problems, f"{inventory_name} {name} storage_nics {nic} address", match[0].get("address"))
                mtu = _int(problems, f"{inventory_name} {name} storage_nics {nic} mtu", match[0].get("mtu", data_mtu), 1280, 9216)
                inv_sw, inv_swp = match[0].get("switch"), match[0].get("switch_port")
                if (inv_sw, inv_swp) != (sw, swp) and r.get("miswired"):
                    notes.append(f"{name} {nic} is cabled to {sw}:{swp}, where the inventory designs {inv_sw}:"
                                 f"{inv_swp}: miswired on purpose (LAB_MISWIRE)")
                elif (inv_sw, inv_swp) != (sw, swp):
                    problems.append(
                        f"{inventory_name} {name} storage_nics {nic}: switch/switch_port {inv_sw}/{inv_swp} differ "
                        f"from the lab cable to {sw}:{swp} (lab/topology.yml); make them equal"
                    )
            elif storage_nics:
                problems.append(
                    f"{inventory_name} {name}: storage_nics has no entry named {nic} (the lab cable's NIC); "
                    f"name the first storage NIC {nic}"
                )
            elif role == "dgx":
                address = r["defaults"]["storage"]
            else:
                problems.append(f"{inventory_name} {name}: storage_nics is missing; add {{name: {nic}, address: ...}}")
            cable = next(c for c in cables if c.endpoint == f"{ep}:{nic}")
            nics.append(Nic(nic, mac_for(index, nic_index), "connect", port=cable.port, peer=f"{sw}:{swp}", address=address, mtu=mtu))
        if role == "switch":
            mine = [c for c in cables if c.switch.startswith(f"{name}:")]
            for nic_index, c in enumerate(sorted(mine, key=lambda c: int(c.switch.split(":swp")[1])), start=1):
                nics.append(Nic(c.switch.split(":")[1], mac_for(index, nic_index), "listen", port=c.port, peer=c.endpoint))
        if role == "dgx" and hub_port is not None:
            member = dgx_names.index(name) + 1
            ipoib = hv.get("ib_ipoib_address", r["defaults"].get("ipoib"))
            address = _cidr(problems, f"{inventory_name} {name} ib_ipoib_address", ipoib) if ipoib else None
            nics.append(
                Nic(fabric_nic, mac_for(index, 0x20), "hub", port=hub_port, local_port=hub_port + member, address=address, mtu=fabric_mtu)
            )
        forwards = tuple(
            Forward(
                _int(problems, f"topology.yml nodes.{name}.forwards host", f.get("host"), 1024, 65000) + port_offset,
                _int(problems, f"topology.yml nodes.{name}.forwards guest", f.get("guest"), 1, 65535),
            )
            for f in nspec.get("forwards") or []
        )
        disk = None
        if nspec.get("data_disk"):
            d = nspec["data_disk"]
            extra = sorted(set(d) - {"size_gb"}) if isinstance(d, dict) else ["(not a mapping)"]
            if extra:
                problems.append(
                    f"topology.yml nodes.{name}.data_disk: only size_gb can be set ({', '.join(extra)} given); "
                    "the storage image fixes the rest (XFS labelled ifs, mounted at /ifs with prjquota)"
                )
            elif role != "storage":
                problems.append(f"topology.yml nodes.{name}.data_disk: only storage nodes have a data disk (role {role})")
            else:
                disk = DataDisk(_int(problems, f"topology.yml nodes.{name}.data_disk.size_gb", d.get("size_gb", 8), 1, 1024))
        nodes.append(
            Node(
                name=name,
                role=role,
                image=image,
                index=index,
                ssh_port=r["ssh_port"] + port_offset,
                memory_mb=_int(problems, f"topology.yml nodes.{name}.memory_mb", nspec.get("memory_mb", mem), 256, 65536),
                cpus=_int(problems, f"topology.yml nodes.{name}.cpus", nspec.get("cpus", cpus), 1, 16),
                nics=tuple(nics),
                forwards=forwards,
                data_disk=disk,
                in_inventory=name in inv,
            )
        )

    services: list[HostService] = []
    for i, s in enumerate(spec.get("host_services") or []):
        where = f"topology.yml host_services[{i}]"
        if not isinstance(s, dict) or not s.get("name") or not isinstance(s.get("argv"), list) or not s["argv"]:
            problems.append(f"{where}: needs name, argv (a non-empty list) and ports")
            continue
        services.append(
            HostService(
                name=str(s["name"]),
                module=str(s.get("module", "")),
                argv=tuple(str(a) for a in s["argv"]),
                ports=tuple(_int(problems, f"{where} ({s['name']}) ports", p, 1024, 65535) for p in s.get("ports") or []),
            )
        )
    snames = [s.name for s in services]
    problems.extend(f"topology.yml host_services: {d!r} is declared twice" for d in sorted({x for x in snames if snames.count(x) > 1}))

    registry = None
    rf = spec.get("registry_forward")
    if rf:
        registry = RegistryForward(
            service=str(rf.get("service", "registry")),
            guest_address=str(rf.get("guest_address", "10.0.2.100")),
            port=_int(problems, "topology.yml registry_forward.port", rf.get("port", 15000), 1024, 65535),
            hostname=str(rf.get("hostname", "registry.lab")),
        )
        try:
            addr = ipaddress.ip_address(registry.guest_address)
            if addr not in ipaddress.ip_network("10.0.2.0/24") or str(addr) in ("10.0.2.2", "10.0.2.3", "10.0.2.15"):
                raise ValueError
        except ValueError:
            problems.append(
                f"topology.yml registry_forward.guest_address: {registry.guest_address!r} must be a free address "
                "of qemu's user network 10.0.2.0/24 (not .2, .3 or .15), e.g. 10.0.2.100"
            )

    topo = Topology(
        nodes=tuple(nodes),
        cables=cables,
        host_services=tuple(services),
        registry=registry,
        hub_port=hub_port,
        port_offset=port_offset,
        dgx_count=count,
        notes=tuple(notes),
        miswire=",".join(miswire) if miswire is not None and not any("LAB_MISWIRE" in p for p in problems) else "",
    )
    seen: dict[int, str] = {}
    for owner, port in topo.host_ports():
        if not 1024 <= port <= 65535:
            problems.append(f"{owner}: port {port} is outside 1024..65535; lower LAB_PORT_OFFSET")
        elif port in seen:
            problems.append(f"{owner}: port {port} is also used by {seen[port]}; change one (or LAB_PORT_OFFSET)")
        else:
            seen[port] = owner
    if problems:
        raise TopologyError(problems)
    return topo


def load_topology(
    path: Path = DEFAULT_TOPOLOGY, *, dgx_count: int | None = None, port_offset: int = 0, inventory: Path | None = None,
    miswire: tuple[str, str] | None = None,
) -> Topology:
    spec = yaml.safe_load(path.read_text()) or {}
    inv_path = inventory or (path.parent / str(spec.get("inventory", "../inventories/lab/hosts.yml"))).resolve()
    if not inv_path.is_file():
        raise TopologyError([f"topology {path}: inventory {inv_path} does not exist; fix `inventory:` in it"])
    inv = yaml.safe_load(inv_path.read_text()) or {}
    try:
        rel = str(inv_path.relative_to(path.resolve().parent.parent))
    except ValueError:
        rel = str(inv_path)
    return build_topology(spec, inv, dgx_count=dgx_count, port_offset=port_offset, inventory_name=rel, miswire=miswire)
