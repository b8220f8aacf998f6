"""Site generator: a valid inventory for N DGX A100, M F800 nodes and the switches they need.

``python -m validation site generate --dgx N --f800 M --out DIR`` writes ``DIR/hosts.yml`` and
``DIR/group_vars/all/*.yml``, a site layered after ``inventories/common`` exactly as ``inventories/production``
is (``ansible-playbook -i inventories/common -i DIR site.yml``). Tests, benchmarks and real sites that start from
a layout use it; a real site then replaces the addresses (private ranges, below) with its own.

The layout, one documented pattern (docs/scale.md has the pictures and the limits):

Storage Ethernet (SN3700V, storage_nics)
    P CLAG pairs, the fewest whose ports hold the site (``storage_pairs``). Pair p is ``sn3700v-<2p+1>`` and
    ``sn3700v-<2p+2>`` (one pair: sn3700v01/sn3700v02, as the reference). swp31/swp32 are each pair's peerlink;
    with more than one pair swp29/swp30 are the uplinks to the site's core that joins the pairs (the core itself
    is the site's, not configured here). DGX nodes fill the pairs in order, ``ceil(N/P)`` per pair; within a pair
    DGX k's one 100 GbE storage NIC is on switch ``k % 2``, port ``swp<k//2 + 1>``. F800 node j belongs to pair
    ``j % P`` (spread round robin); its two 40 GbE NICs are on both switches of its pair, one port each, after
    the pair's DGX ports. Every DGX mounts (nfs_server_mode static) an F800 NIC of its own pair on its own
    switch, so storage traffic never crosses a peerlink or the core.
Compute InfiniBand (QM8700, ``compute_cable_map``)
    Up to 10 DGX (80 HCAs): the reference's two switches, HCAs 0-3 on qm8700-01 and 4-7 on qm8700-02, DGX k's
    HCA r on port ``1/<4k + r%4 + 1>``; the pair runs the subnet manager (master 15, standby 14).
    More: a rail-optimised two-tier fat tree as in a DGX SuperPOD: scalable units of 20 DGX, 8 leaf switches per
    unit (one per rail: HCA r of each DGX of unit u goes to leaf ``8u + r``, port ``1/<k+1>`` for the unit's k-th
    DGX), ports 1/1-1/20 down and 1/21-1/40 up; ``ceil(leaves/2)`` spines of 40 ports; leaf l's uplink j goes to
    spine ``(l + j) % S``. The first two spines run the SM (master 15, standby 14), every other switch runs none.

Addresses (private ranges; replace with the site's): management 10.0.0.0/16, storage 10.100.0.0/16 (one VLAN),
IPoIB 10.200.0.0/16. Limits: at most 2000 DGX and 2000 F800 nodes (the address blocks); OneFS takes at most 252
nodes in a cluster (``F800_MAX``).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = ROOT / "inventories" / "production" / "group_vars" / "all"
# the node models of the architecture (their compute HCAs name the rails of the compute map)
COMMON_DGX_MODELS = yaml.safe_load((ROOT / "inventories" / "common" / "group_vars" / "all" / "dgx.yml")
                                   .read_text(encoding="utf-8"))["dgx_models"]

F800_MAX = 252                 # OneFS: nodes per cluster
SWITCH_PORTS = 32              # SN3700V: swp1..swp32
PEERLINK = ("swp31", "swp32")
UPLINKS = ("swp29", "swp30")   # to the site core, only with more than one pair
DGX_STORAGE_GBPS = 100
F800_STORAGE_GBPS = 40
SMALL_IB_DGX = 10              # up to 80 HCAs: the reference's two QM8700, no spine
SU_DGX = 20                    # DGX per scalable unit (one leaf per rail holds a unit)
RAILS = 8                      # compute HCAs per DGX A100
LEAF_DOWN = 20                 # leaf ports 1/1-1/20 to HCAs, 1/21-1/40 to spines
QM8700_PORTS = 40
HOSTS_MAX = 2000

MGMT = ipaddress.ip_network("10.0.0.0/16")
STORAGE = ipaddress.ip_network("10.100.0.0/16")
IPOIB = ipaddress.ip_network("10.200.0.0/16")
# Offsets inside each /16, one block per kind of host.
OFF_DGX, OFF_F800, OFF_F800_B, OFF_SN, OFF_QM, OFF_SERVICE = 1000, 3100, 5100, 7100, 7400, 3000


class LayoutError(ValueError):
    """A size the pattern cannot hold; the message says which limit and what to do."""


@dataclass(frozen=True)
class Cable:
    """One storage cable: the host's NIC and the switch port it plugs into."""

    host: str
    nic: str
    address: str
    speed_gbps: int
    switch: str
    port: str


@dataclass(frozen=True)
class IbCable:
    """One compute-fabric cable: a DGX compute HCA (its rail) and the QM8700 port it plugs into."""

    host: str
    rail: int
    switch: str
    port: str


@dataclass(frozen=True)
class Pair:
    """One SN3700V CLAG pair and what it holds."""

    index: int
    switches: tuple[str, str]
    dgx: tuple[str, ...]
    f800: tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    """The site's shape: names, pairs and the fabric switches, from which every map is derived."""

    dgx: tuple[str, ...]
    f800: tuple[str, ...]
    pairs: tuple[Pair, ...]
    leaves: tuple[str, ...] = ()
    spines: tuple[str, ...] = ()
    ib_pair: tuple[str, ...] = ()

    @property
    def qm8700(self) -> tuple[str, ...]:
        return self.ib_pair or (*self.spines, *self.leaves)

    @property
    def sn3700v(self) -> tuple[str, ...]:
        return tuple(s for p in self.pairs for s in p.switches)


@dataclass
class Site:
    """A generated site: its layout, the storage cable map and the inventory files (relative path -> data)."""

    layout: Layout
    cables: list[Cable]
    files: dict[str, Any] = field(default_factory=dict)


def host_ports(pairs: int) -> int:
    """Ports of each switch for hosts: all but the peerlink, and the uplinks when pairs are joined by a core."""
    return SWITCH_PORTS - len(PEERLINK) - (len(UPLINKS) if pairs > 1 else 0)


def storage_pairs(dgx: int, f800: int) -> int:
    """The fewest SN3700V pairs whose ports hold ``dgx`` one-NIC DGX and ``f800`` two-NIC F800 nodes, per switch
    ceil(ceil(dgx/P)/2) DGX ports plus ceil(f800/P) F800 ports."""
    for pairs in range(1, dgx + f800 + 2):
        need = math.ceil(math.ceil(dgx / pairs) / 2) + math.ceil(f800 / pairs)
        if need <= host_ports(pairs):
            return pairs
    raise LayoutError(f"{dgx} DGX and {f800} F800 do not fit any number of SN3700V pairs")


def default_f800(dgx: int) -> int:
    """One F800 node per DGX (the reference sizes 8 A100 per F800 node), whole chassis of 4, 4..252 nodes."""
    return min(F800_MAX, max(4, math.ceil(dgx / 4) * 4))


def dgx_name(i: int, width: int) -> str:
    return f"dgx{i + 1:0{width}d}"


def layout(dgx: int, f800: int) -> Layout:
    """The pattern's names and pairs for ``dgx`` DGX and ``f800`` F800 nodes (module docstring)."""
    if not 1 <= dgx <= HOSTS_MAX:
        raise LayoutError(f"--dgx {dgx}: the pattern takes 1..{HOSTS_MAX} DGX (its address blocks)")
    if not 3 <= f800 <= F800_MAX:
        raise LayoutError(f"--f800 {f800}: a OneFS cluster has 3..{F800_MAX} nodes")
    width = max(2, len(str(dgx)))
    names = tuple(dgx_name(i, width) for i in range(dgx))
    f800_names = tuple(f"f800-{j + 1}" for j in range(f800))
    count = storage_pairs(dgx, f800)
    per_pair = math.ceil(dgx / count)
    pairs = []
    for p in range(count):
        switches = ("sn3700v01", "sn3700v02") if count == 1 else (f"sn3700v-{2 * p + 1:02d}", f"sn3700v-{2 * p + 2:02d}")
        pairs.append(Pair(p, switches, names[p * per_pair:(p + 1) * per_pair], f800_names[p::count]))
    if dgx <= SMALL_IB_DGX:
        return Layout(names, f800_names, tuple(pairs), ib_pair=("qm8700-01", "qm8700-02"))
    leaves = RAILS * math.ceil(dgx / SU_DGX)
    spines = math.ceil(leaves * (QM8700_PORTS - LEAF_DOWN) / QM8700_PORTS)
    return Layout(names, f800_names, tuple(pairs),
                  leaves=tuple(f"qm8700-leaf-{i + 1:03d}" for i in range(leaves)),
                  spines=tuple(f"qm8700-spine-{i + 1:02d}" for i in range(spines)))


def _ip(net: ipaddress.IPv4Network | ipaddress.IPv6Network, offset: int) -> str:
    return str(net[offset])


def storage_cables(site: Layout) -> list[Cable]:
    """The storage cable map of the pattern: every DGX's and F800's storage NICs, their addresses and ports."""
    cables: list[Cable] = []
    index = {name: i for i, name in enumerate(site.dgx)}
    f800_index = {name: j for j, name in enumerate(site.f800)}
    for pair in site.pairs:
        for k, host in enumerate(pair.dgx):
            cables.append(Cable(host, "enp225s0f0", f"{_ip(STORAGE, OFF_DGX + index[host])}/{STORAGE.prefixlen}",
                                DGX_STORAGE_GBPS, pair.switches[k % 2], f"swp{k // 2 + 1}"))
        first = math.ceil(len(pair.dgx) / 2) + 1
        for q, host in enumerate(pair.f800):
            j = f800_index[host]
            for side, offset in ((0, OFF_F800), (1, OFF_F800_B)):
                cables.append(Cable(host, f"40gige-{side + 1}", f"{_ip(STORAGE, offset + j)}/{STORAGE.prefixlen}",
                                    F800_STORAGE_GBPS, pair.switches[side], f"swp{first + q}"))
    return cables


def compute_cable_map(site: Layout) -> list[IbCable]:
    """DGX compute HCA (rail 0..7, the order of dgx_models.<model>.compute_hcas) -> QM8700 port, by the pattern
    (module docstring); compute_fabric_cables writes it into the site's compute_fabric.yml."""
    out: list[IbCable] = []
    for i, host in enumerate(site.dgx):
        for rail in range(RAILS):
            if site.ib_pair:
                switch, port = site.ib_pair[rail // 4], f"1/{4 * i + rail % 4 + 1}"
            else:
                unit, k = divmod(i, SU_DGX)
                switch, port = site.leaves[RAILS * unit + rail], f"1/{k + 1}"
            out.append(IbCable(host, rail, switch, port))
    return out


def spine_links(site: Layout) -> list[tuple[str, str, str, str]]:
    """(leaf, leaf port, spine, spine port) of every leaf uplink: leaf l's uplink j to spine (l + j) % S."""
    if not site.spines:
        return []
    used: dict[str, int] = {}
    out = []
    for leaf_index, leaf in enumerate(site.leaves):
        for j in range(QM8700_PORTS - LEAF_DOWN):
            spine = site.spines[(leaf_index + j) % len(site.spines)]
            used[spine] = used.get(spine, 0) + 1
            out.append((leaf, f"1/{LEAF_DOWN + j + 1}", spine, f"1/{used[spine]}"))
    return out


def _nfs_map(site: Layout, cables: list[Cable]) -> dict[str, dict[str, str]]:
    """Each DGX mounts an F800 NIC on its own switch, spread over the pair's F800 nodes."""
    by_switch: dict[str, list[Cable]] = {}
    for cable in cables:
        if cable.host in site.f800:
            by_switch.setdefault(cable.switch, []).append(cable)
    out: dict[str, dict[str, str]] = {}
    for pair in site.pairs:
        for k, host in enumerate(pair.dgx):
            targets = by_switch[pair.switches[k % 2]]
            target = targets[(k // 2) % len(targets)]
            out[host] = {"node": target.host, "nic": target.nic}
    return out


def _nics(cables: Iterable[Cable], host: str) -> list[dict[str, Any]]:
    return [{"name": c.nic, "address": c.address, "speed_gbps": c.speed_gbps, "mtu": 9000, "switch": c.switch,
             "switch_port": c.port} for c in cables if c.host == host]


def _clag(pair: int) -> dict[str, Any]:
    mac = 0x4094 + pair
    return {"enabled": True, "peerlink": {"bond": "peerlink", "members": list(PEERLINK), "vlan": 4094},
            "sys_mac": f"44:38:39:ff:{mac >> 8 & 0xff:02x}:{mac & 0xff:02x}"}


def _qm_ports(site: Layout, switch: str) -> list[dict[str, Any]]:
    if site.ib_pair:
        used = 4 * len(site.dgx)
        return [{"range": f"1/1-1/{used}", "speed": "hdr", "split": "none", "description": "DGX A100 compute HCAs"}]
    if switch in site.spines:
        return [{"range": f"1/1-1/{QM8700_PORTS}", "speed": "hdr", "split": "none", "description": "leaf uplinks"}]
    return [{"range": f"1/1-1/{LEAF_DOWN}", "speed": "hdr", "split": "none", "description": "DGX A100 compute HCAs"},
            {"range": f"1/{LEAF_DOWN + 1}-1/{QM8700_PORTS}", "speed": "hdr", "split": "none",
             "description": "spine uplinks"}]


def hosts_yml(site: Layout, cables: list[Cable]) -> dict[str, Any]:
    by_host: dict[str, list[Cable]] = {}
    for cable in cables:
        by_host.setdefault(cable.host, []).append(cable)
    dgx = {name: {"ansible_host": _ip(MGMT, OFF_DGX + i), "storage_nics": _nics(by_host[name], name),
                  "ib_ipoib_address": f"{_ip(IPOIB, OFF_DGX + i)}/{IPOIB.prefixlen}"}
           for i, name in enumerate(site.dgx)}
    f800 = {name: {"ansible_host": _ip(MGMT, OFF_F800 + j), "powerscale_lnn": j + 1,
                   "storage_nics": _nics(by_host[name], name)} for j, name in enumerate(site.f800)}
    sn: dict[str, Any] = {}
    sn_index = 0
    for pair in site.pairs:
        addresses = [_ip(MGMT, OFF_SN + sn_index), _ip(MGMT, OFF_SN + sn_index + 1)]
        for side, switch in enumerate(pair.switches):
            sn[switch] = {"ansible_host": addresses[side],
                          "sn3700v_clag_role": ("primary", "secondary")[side],
                          "sn3700v_clag_priority": (1000, 2000)[side],
                          "sn3700v_clag_backup_ip": addresses[1 - side],
                          "sn3700v_loopback": f"{_ip(MGMT, OFF_SN + 200 + sn_index + side)}/32"}
            if len(site.pairs) > 1:
                sn[switch]["storage_fabric_clag"] = _clag(pair.index)
        sn_index += 2
    qm: dict[str, Any] = {}
    for i, switch in enumerate(site.qm8700):
        role, priority = ("master", 15) if i == 0 else ("standby", 14) if i == 1 else ("none", 0)
        qm[switch] = {"qm8700_api_host": _ip(MGMT, OFF_QM + i), "qm8700_sm_role": role,
                      "qm8700_sm_priority": priority, "qm8700_ports": _qm_ports(site, switch)}
    return {"all": {"children": {
        "dgx": {"vars": {"dgx_model": "dgx-a100"}, "hosts": dgx},
        "powerscale": {"vars": {"powerscale_node_model": "F800", "ansible_user": "root"}, "hosts": f800},
        "sn3700v": {"hosts": sn},
        "qm8700": {"vars": {"ansible_connection": "local"}, "hosts": qm}}}}


def group_vars(site: Layout, cables: list[Cable]) -> dict[str, Any]:
    """The site's group_vars/all/<feature>.yml that depend on its size (the others are the production sample's)."""
    f800_cables = [c for c in cables if c.host in site.f800]
    side_a = [ipaddress.ip_interface(c.address).ip for c in f800_cables if c.nic == "40gige-1"]
    side_b = [ipaddress.ip_interface(c.address).ip for c in f800_cables if c.nic == "40gige-2"]
    storage = {
        "powerscale_api_host": _ip(MGMT, OFF_F800),
        "powerscale_ca_path": "",
        "powerscale_smartconnect": {
            "enabled": True, "groupnet": "groupnet0", "subnet": "subnet0", "pool": "pool-dl",
            "zone": "dl.storage.example.com", "service_address": _ip(STORAGE, OFF_SERVICE),
            "ip_ranges": [{"low": str(min(side_a)), "high": str(max(side_a))},
                          {"low": str(min(side_b)), "high": str(max(side_b))}],
            "interfaces": ["40gige-1", "40gige-2"], "connect_policy": "round_robin", "alloc_method": "dynamic"}}
    fabric = yaml.safe_load((PRODUCTION / "storage_fabric.yml").read_text())
    fabric["storage_subnet"] = str(STORAGE)
    fabric["storage_fabric_vlans"] = [{"id": 100, "name": "storage", "subnet": str(STORAGE)}]
    if len(site.pairs) > 1:
        del fabric["storage_fabric_clag"]  # each pair's own, in hosts.yml (its own sys_mac)
        fabric["storage_fabric_uplinks"] = [{"name": port, "speed": "100G", "description": "to the site core"}
                                            for port in UPLINKS]
    nfs = {"nfs_server_mode": "static", "nfs_server_map": _nfs_map(site, cables)}
    compute = yaml.safe_load((PRODUCTION / "compute_fabric.yml").read_text())
    compute["compute_fabric_cables"] = compute_fabric_cables(site)
    return {"storage.yml": storage, "storage_fabric.yml": fabric, "nfs_client.yml": nfs,
            "compute_fabric.yml": compute}


def compute_fabric_cables(site: Layout) -> dict[str, Any]:
    """The compute map of the pattern as the inventory's explicit ``compute_fabric_cables`` entries
    (module_utils/cabling_design.py): rail r is the r-th of the node model's compute HCAs, the port the number
    ibnetdiscover prints (MLNX-OS 1/N is N)."""
    hcas = COMMON_DGX_MODELS["dgx-a100"]["compute_hcas"]
    return {"cables": [{"host": c.host, "hca": hcas[c.rail], "switch": c.switch,
                        "switch_port": int(c.port.split("/")[-1])} for c in compute_cable_map(site)]}


COPIED = ("exports.yml", "ngc.yml", "secrets.yml")


def generate(dgx: int, f800: int) -> Site:
    """The whole site in memory: layout, storage cables and every file's data."""
    shape = layout(dgx, f800)
    cables = storage_cables(shape)
    files: dict[str, Any] = {"hosts.yml": hosts_yml(shape, cables)}
    for name, data in group_vars(shape, cables).items():
        files[f"group_vars/all/{name}"] = data
    return Site(shape, cables, files)


HEADER = ("# Generated by `python -m validation site generate --dgx {dgx} --f800 {f800}` (validation/sitegen.py,\n"
          "# pattern: docs/scale.md). Addresses are private ranges: replace them with the site's own.\n")


def write(site: Site, out: Path, mutate: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """Write the site under ``out`` (created; files of the same names replaced, nothing else touched).
    ``mutate`` may change the files' data first (the tests' injected defects)."""
    files = dict(site.files)
    if mutate is not None:
        mutate(files)
    header = HEADER.format(dgx=len(site.layout.dgx), f800=len(site.layout.f800))
    for rel, data in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + yaml.safe_dump(data, sort_keys=False, width=110), encoding="utf-8")
    for name in COPIED:
        path = out / "group_vars" / "all" / name
        path.write_text((PRODUCTION / name).read_text(encoding="utf-8"), encoding="utf-8")
    return out


def summary(site: Site) -> Mapping[str, Any]:
    """What the CLI prints: counts of hosts and switches and the storage pairs."""
    shape = site.layout
    return {"dgx": len(shape.dgx), "f800": len(shape.f800), "sn3700v_pairs": len(shape.pairs),
            "qm8700": len(shape.qm8700), "leaves": len(shape.leaves), "spines": len(shape.spines),
            "storage_cables": len(site.cables), "compute_cables": len(compute_cable_map(shape))}
