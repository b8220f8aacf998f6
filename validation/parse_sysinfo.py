"""Parse the node facts the verdict checks before it trusts a figure: ``nvidia-smi topo -m`` and ``ibstat``."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any


class SysinfoParseError(ValueError):
    """The input is not the expected command's output."""


@dataclass
class Topology:
    gpus: list[str] = field(default_factory=list)
    nics: dict[str, str] = field(default_factory=dict)  # column name (NIC0 or mlx5_0) -> device (mlx5_0)
    links: dict[str, dict[str, str]] = field(default_factory=dict)  # GPU0 -> {GPU1: NV12, mlx5_0: PXB}
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    numa_affinity: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def nvlink_all_pairs(self) -> bool:
        """True when every GPU pair is connected through NVLink (NV#), as on NVSwitch systems."""
        for a in self.gpus:
            for b in self.gpus:
                if a != b and not self.links.get(a, {}).get(b, "").startswith("NV"):
                    return False
        return bool(self.gpus)

    def nearest_nics(self, gpu: str) -> list[str]:
        """NICs attached at PIX/PXB distance to a GPU (candidates for GPUDirect RDMA)."""
        return sorted(n for n, kind in self.links.get(gpu, {}).items() if n in self.nics.values() and kind in ("PIX", "PXB"))


# nvidia-smi underlines the matrix's header line with terminal escapes even when it writes to a file (driver
# 580.159.04: "\t\x1b[4mGPU0\tCPU Affinity\t...\x1b[0m"); a copy from a terminal or a web page has none
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def parse_topo(text: str) -> Topology:
    """Parse ``nvidia-smi topo -m`` (tab-separated matrix, GPUn and NICn or mlx5_n columns, NIC Legend)."""
    text = _SGR.sub("", text)
    lines = [ln.rstrip("\n") for ln in text.splitlines()]
    header_idx = next((i for i, ln in enumerate(lines) if re.match(r"^\s+GPU0\b", ln)), None)
    if header_idx is None:
        raise SysinfoParseError("no 'GPU0 ...' header line: not nvidia-smi topo -m output")
    # nvidia-smi separates cells with tabs; a copy pasted from a terminal or a web page has runs of spaces
    # instead (cells never hold two spaces in a row: "CPU Affinity", "GPU NUMA ID")
    split = (lambda ln: ln.split("\t")) if "\t" in lines[header_idx] else (lambda ln: re.split(r"\s{2,}", ln))
    header = [c.strip() for c in split(lines[header_idx]) if c.strip()]
    device_cols = [c for c in header if c not in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")]
    topo = Topology()
    legend = {m.group(1): m.group(2) for m in re.finditer(r"^\s+(NIC\d+):\s+(\S+)", text, re.M)}
    for col in device_cols:
        if col.startswith("NIC"):
            topo.nics[col] = legend.get(col, col)
        elif not col.startswith("GPU"):
            topo.nics[col] = col
    for ln in lines[header_idx + 1:]:
        if not ln.strip() or ln.startswith("Legend"):
            break
        cells = [c.strip() for c in split(ln.rstrip())]
        name, values = cells[0], cells[1:]
        if len(values) < len(device_cols):
            raise SysinfoParseError(f"row {name!r} has {len(values)} cells, the header names {len(device_cols)} devices")
        own = topo.nics.get(name, name)
        if name.startswith("GPU"):
            topo.gpus.append(name)
            extra = [v for v in values[len(device_cols):]]
            if extra:
                topo.cpu_affinity[name] = extra[0]
            if len(extra) > 1:
                topo.numa_affinity[name] = extra[1]
        topo.links[own] = {topo.nics.get(c, c): v for c, v in zip(device_cols, values[: len(device_cols)], strict=True) if v != "X"}
    if not topo.gpus:
        raise SysinfoParseError("topology matrix without GPU rows")
    return topo


@dataclass
class IbPort:
    ca: str
    port: int
    state: str | None = None
    physical_state: str | None = None
    rate_gbps: int | None = None
    link_layer: str | None = None

    @property
    def active(self) -> bool:
        return self.state == "Active" and self.physical_state == "LinkUp"


def parse_ibstat(text: str) -> list[IbPort]:
    """Parse ``ibstat``: one IbPort per CA port."""
    ports: list[IbPort] = []
    ca: str | None = None
    current: IbPort | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if m := re.match(r"^CA '([^']+)'", line):
            ca, current = m.group(1), None
            if any(p.ca == ca for p in ports):
                raise SysinfoParseError(f"CA '{ca}' appears twice: two ibstat outputs concatenated or interleaved")
            continue
        if ca is None:
            continue
        if m := re.match(r"^Port (\d+):$", line):
            current = IbPort(ca=ca, port=int(m.group(1)))
            ports.append(current)
            continue
        if current is None or ":" not in line:
            continue
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "State":
            current.state = value
        elif key == "Physical state":
            current.physical_state = value
        elif key == "Rate":
            try:
                current.rate_gbps = int(float(value))
            except ValueError:
                raise SysinfoParseError(f"{ca} port {current.port}: rate {value!r} is not a number") from None
        elif key == "Link layer":
            current.link_layer = value
    if not ports:
        raise SysinfoParseError("no \"CA '...'\" with a port: not ibstat output")
    return ports


def ib_port_problems(ports: list[IbPort], expected_hcas: int, rate_gbps: int,
                     compute: list[str] | None = None) -> list[str]:
    """What is wrong with the compute-fabric ports against the node model (empty when all is well): the
    model's compute HCAs by name when it names them (a DGX A100's storage adapters are not compute HCAs,
    whatever their link layer), else every InfiniBand port."""
    problems = []
    if compute:
        present = {p.ca for p in ports}
        problems += [f"{name}: compute HCA missing from ibstat" for name in compute if name not in present]
        ib = [p for p in ports if p.ca in set(compute)]
    else:
        ib = [p for p in ports if p.link_layer == "InfiniBand"]
    good = [p for p in ib if p.active and p.rate_gbps == rate_gbps]
    for p in ib:
        if not p.active:
            problems.append(f"{p.ca} port {p.port}: state {p.state}/{p.physical_state}")
        elif p.rate_gbps != rate_gbps:
            problems.append(f"{p.ca} port {p.port}: rate {p.rate_gbps} Gb/s, expected {rate_gbps}")
    if len(good) < expected_hcas:
        problems.insert(0, f"{len(good)} compute HCA ports Active at {rate_gbps} Gb/s, expected {expected_hcas}")
    return problems
