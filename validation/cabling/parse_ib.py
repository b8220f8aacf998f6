"""InfiniBand dumps read into Links, each physical link once: ``ibnetdiscover`` (the topology file) and
``iblinkinfo`` (default and ``--line`` mode). infiniband-diags (linux-rdma/rdma-core); real captures and their
sources: tests/fixtures/ib/real/SOURCES.

Naming, as ``cabling parse`` promises: a switch by the name inside ``MF0;<name>:<model>/U1`` (else its description,
trimmed: ``Quantum Mellanox Technologies``); an HCA by its host, the first word of ``<host> mlx5_N`` (stray spaces
ignored), and an HCA port as ``<hca>/<port>`` (``mlx5_1/1``); a node whose description names no host (``Mellanox
Technologies Aggregation Node``, a bare ``MT4123 ConnectX6 Mellanox Technologies``) by its description, its port
by number. A QM8700's SHARP aggregation node hangs on its internal port 41: such a link is marked internal.

Width and speed as printed: ibnetdiscover's ``4xHDR`` is width ``4x``, speed ``HDR``; iblinkinfo's ``4X 53.125
Gbps`` the same (lane rate -> generation), and its ``(Could be 4X Could be 53.125 Gbps)`` (a link trained below what
both ends support) is kept as ``could_be``. Truncated, interleaved or foreign text is a CablingError naming the file
and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .model import IB_LANE_GBPS, IB_SPEEDS, CablingError, End, Link

NO_HOST = re.compile(r"Mellanox Technologies|Aggregation Node|^MT\d+ ", re.IGNORECASE)


def node_name(description: str) -> str:
    """The name of a node from its NodeDescription."""
    text = description.strip()
    match = re.match(r"MF0;([^:]+):", text)
    if match:
        return match.group(1).strip()
    if NO_HOST.search(text) or " " not in text:
        return " ".join(text.split())
    return text.split()[0]


def port_name(description: str, port: int, switch: bool) -> str:
    """A port's name: a switch's and a host-less node's by number, an HCA's as <hca>/<port>."""
    text = description.strip()
    if switch or text.startswith("MF0;") or NO_HOST.search(text) or len(text.split()) < 2:
        return str(port)
    return f"{text.split()[-1]}/{port}"


def is_internal(description: str) -> bool:
    return "aggregation node" in description.lower()


# ------------------------------------------------------------------------------------------------ ibnetdiscover

HEADER = re.compile(r'^(Switch|Ca|Rt)\s*(\d+)\s+"([SHR]-[0-9a-fA-F]+)"\s*#\s*"(.*?)"')
LINK = re.compile(r'^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s*"([SHR]-[0-9a-fA-F]+)"\[(\d+)\]'
                  r'(?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s*#\s*(.*)$')
RATE = re.compile(r'\b(\d+)x([A-Z][A-Z0-9]*)\s*$')
QUOTED = re.compile(r'"(.*?)"')
KEYVAL = re.compile(r'^[a-z]+=0x[0-9a-fA-F]+(\([0-9a-fA-F]+\))?$')


@dataclass
class _Node:
    kind: str
    description: str
    line: int
    ports: dict[int, tuple[str, int, str, int]] = field(default_factory=dict)  # port -> (peer id, peer port, rate)


def parse_ibnetdiscover(text: str, source: str = "") -> list[Link]:
    where = source or "ibnetdiscover output"
    if not text.strip():
        raise CablingError(f"{where}: empty: no ibnetdiscover output")
    nodes: dict[str, _Node] = {}
    remote_desc: dict[str, str] = {}
    current: str | None = None
    headers = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            current = None
            continue
        if line.startswith("#"):
            if "Topology file:" in line:
                headers += 1
                if headers > 1:
                    raise CablingError(f"{where}: line {number}: a second 'Topology file' header: two ibnetdiscover "
                                       "outputs interleaved or concatenated")
            continue
        if KEYVAL.match(line):
            continue
        header = HEADER.match(line)
        if header:
            kind, _ports, ident, desc = header.groups()
            if ident in nodes:
                raise CablingError(f"{where}: line {number}: {ident} ({desc}) is described twice (first at line "
                                   f"{nodes[ident].line}): interleaved output")
            nodes[ident] = _Node(kind, desc, number)
            current = ident
            continue
        link = LINK.match(line)
        if link:
            if current is None:
                raise CablingError(f"{where}: line {number}: a port line outside any node block: {line[:100]}")
            port, _guid, peer, peer_port, _pguid, tail = link.groups()
            rate = RATE.search(tail)
            if not rate or rate.group(2) not in IB_SPEEDS:
                raise CablingError(f"{where}: line {number}: no width and speed at the end (cut off?): {line[:100]}")
            quoted = QUOTED.findall(tail)
            if quoted:
                remote_desc.setdefault(peer, quoted[-1])
            nodes[current].ports[int(port)] = (peer, int(peer_port), f"{rate.group(1)}x{rate.group(2)}", number)
            continue
        raise CablingError(f"{where}: line {number}: not ibnetdiscover output: {line[:100]}")
    if not nodes:
        raise CablingError(f"{where}: no Switch or Ca block: not ibnetdiscover output")
    links: list[Link] = []
    done: set[frozenset[tuple[str, int]]] = set()
    for ident, node in nodes.items():
        for port, (peer, peer_port, link_rate, number) in sorted(node.ports.items()):
            key = frozenset({(ident, port), (peer, peer_port)})
            if key in done:
                continue
            done.add(key)
            other = nodes.get(peer)
            if other is not None:
                back = other.ports.get(peer_port)
                if back is None or (back[0], back[1]) != (ident, port):
                    seen = "no such port" if back is None else f"{back[0]}[{back[1]}]"
                    raise CablingError(f"{where}: line {number}: {ident}[{port}] -> {peer}[{peer_port}], but "
                                       f"{peer}'s block says port {peer_port} -> {seen}: truncated or interleaved")
            peer_desc = other.description if other is not None else remote_desc.get(peer, "")
            if other is None and not peer_desc:
                raise CablingError(f"{where}: line {number}: {peer} has no block and no description")
            width, speed = link_rate.split("x", 1)
            links.append(Link(
                End(node_name(node.description), port_name(node.description, port, node.kind == "Switch")),
                End(node_name(peer_desc), port_name(peer_desc, peer_port, peer.startswith("S-"))),
                "ibnetdiscover", source, width=f"{width}x", speed=speed,
                remote_info={"description": peer_desc.strip(), "guid": peer[2:]},
                internal=is_internal(node.description) or is_internal(peer_desc)))
    missing = sorted({p for n in nodes.values() for p, *_ in n.ports.values()} - set(nodes))
    if missing:
        raise CablingError(f"{where}: {len(missing)} nodes are linked to but have no block of their own (e.g. "
                           f"{missing[0]}): the output is cut off")
    return links


# ------------------------------------------------------------------------------------------------ iblinkinfo

CA_HEAD = re.compile(r'^(CA|Switch|Router):\s+(?:(0x[0-9a-fA-F]+)\s+)?(.*):\s*$')
PORT_LINE = re.compile(
    r'^\s*(?:(0x[0-9a-fA-F]+)\s+)?(?:"\s*(.*?)"\s+)?(\d+)\s+(\d+)\[\s*\d*\s*\]\s+==\((.*?)\)==>\s*(.*)$')
REMOTE = re.compile(r'^(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[\s*\d*\s*\]\s+"(.*)"\s+\((.*)\)\s*$')
LINKINFO = re.compile(r'^\s*(\d+)X\s+([0-9.]+)\s+Gbps(?:\s+\((FDR10)\))?\s+(\w+)/\s*(\w+)\s*$')
COULD = re.compile(r'Could be\s+(\d+)X|Could be\s+([0-9.]+)\s+Gbps(?:\s+\((FDR10)\))?')


def _speed(lane: str, fdr10: str | None) -> str:
    if fdr10:
        return "FDR10"
    return IB_LANE_GBPS.get(lane, f"{lane} Gbps")


def parse_iblinkinfo(text: str, source: str = "") -> list[Link]:
    where = source or "iblinkinfo output"
    if not text.strip():
        raise CablingError(f"{where}: empty: no iblinkinfo output")
    links: list[Link] = []
    done: dict[frozenset[tuple[int, int]], int] = {}
    header: tuple[str, str] | None = None
    seen_ports = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):   # a comment (the lab's stand-in labels itself so)
            continue
        head = CA_HEAD.match(raw.strip())
        if head and "==(" not in raw:
            header = (head.group(1), head.group(3))
            continue
        line = PORT_LINE.match(raw)
        if not line:
            raise CablingError(f"{where}: line {number}: not iblinkinfo output: {raw.strip()[:100]}")
        _guid, line_desc, lid, port, info, rest = line.groups()
        seen_ports += 1
        if line_desc is not None:
            kind = "Switch" if line_desc.strip().startswith("MF0;") or not _guid else "CA"
            local_desc = line_desc
        elif header is not None:
            kind, local_desc = header
        else:
            raise CablingError(f"{where}: line {number}: a port line before any CA:/Switch: header")
        state = LINKINFO.match(info)
        if state is None:
            if re.search(r"Down|Polling|Disabled|Sleep", info):
                continue            # a port with no link
            raise CablingError(f"{where}: line {number}: link state not understood: ({info})")
        remote = REMOTE.match(rest.strip())
        if remote is None:
            if "Port not available" in rest:
                continue
            raise CablingError(f"{where}: line {number}: the far end is not understood (cut off?): {rest[:100]}")
        _rguid, rlid, rport, rdesc, extra = remote.groups()
        key = frozenset({(int(lid), int(port)), (int(rlid), int(rport))})
        if key in done:
            continue
        done[key] = number
        width, lane, fdr10, logical, _physical = state.groups()
        could: dict[str, str] = {}
        for cw, cs, cf in COULD.findall(extra):
            if cw:
                could["width"] = f"{cw}x"
            if cs:
                could["speed"] = _speed(cs, cf or None)
        local_switch = kind == "Switch"
        remote_switch = rdesc.strip().startswith("MF0;")  # a host-less description is numbered by port_name anyway
        links.append(Link(
            End(node_name(local_desc), port_name(local_desc, int(port), local_switch)),
            End(node_name(rdesc), port_name(rdesc, int(rport), remote_switch)),
            "iblinkinfo", source, width=f"{width}x", speed=_speed(lane, fdr10), could_be=could,
            state=logical if logical != "Active" else None, remote_info={"description": rdesc.strip()},
            internal=is_internal(local_desc) or is_internal(rdesc)))
    if not seen_ports:
        raise CablingError(f"{where}: no port line: not iblinkinfo output")
    return links
