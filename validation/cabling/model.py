"""The cabling check's types: a cable end, a designed cable, an observed link; and their JSON forms.

The JSON forms are a contract (issue #37): ``cabling parse`` prints ``{"format": F, "links": [link...]}`` with each
link ``{"local": {"node", "port"}, "remote": {"node", "port", ...}, "width"?, "speed"?}``; ``cabling plan`` prints a
YAML list of ``{a: {node, port}, b: {node, port}, speed?, width?}``, which ``cabling check --plan`` reads back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

ANY = "*"  # a designed end that any neighbour satisfies (an uplink's far end: the inventory does not name it)

# InfiniBand speeds, slowest first (the generation names ibnetdiscover prints: 4xHDR), and iblinkinfo's lane rates.
IB_SPEEDS = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR")
IB_LANE_GBPS = {"2.5": "SDR", "5.0": "DDR", "10.0": "QDR", "14.0625": "FDR", "25.78125": "EDR", "53.125": "HDR",
                "106.25": "NDR", "212.5": "XDR"}


class CablingError(ValueError):
    """A dump or a plan that cannot be read as what it claims to be: a FAIL naming the file, never a guess."""


@dataclass(frozen=True)
class End:
    node: str
    port: str

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "port": self.port}

    def __str__(self) -> str:
        return f"{self.node} {self.port}"


@dataclass(frozen=True)
class Cable:
    """One designed cable."""

    a: End
    b: End
    speed: str | None = None   # Ethernet: "100G"; InfiniBand: "HDR"
    width: str | None = None   # InfiniBand: "4x"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"a": self.a.to_dict(), "b": self.b.to_dict()}
        if self.speed:
            out["speed"] = self.speed
        if self.width:
            out["width"] = self.width
        return out


@dataclass(frozen=True)
class Link:
    """One observed link, as a dump shows it. `evidence`: lldp | ibnetdiscover | iblinkinfo | fdb; `source`: the
    file (or host) it was read from; `remote_info`: what the dump says about the far end (chassis_id, port_subtype,
    port_id, port_descr, description); `internal`: not a cable (a QM8700's SHARP aggregation node on port 41)."""

    local: End
    remote: End
    evidence: str
    source: str = ""
    width: str | None = None
    speed: str | None = None
    could_be: dict[str, str] = field(default_factory=dict)
    state: str | None = None
    remote_info: dict[str, str] = field(default_factory=dict)
    internal: bool = False

    def to_dict(self) -> dict[str, Any]:
        remote: dict[str, Any] = {**self.remote.to_dict(), **self.remote_info}
        out: dict[str, Any] = {"local": self.local.to_dict(), "remote": remote}
        for key in ("width", "speed", "state"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.could_be:
            out["could_be"] = dict(self.could_be)
        if self.internal:
            out["internal"] = True
        return out


def ethernet_gbps(speed: str | None) -> float | None:
    """"100G" -> 100.0, "1000M" -> 1.0, None/other -> None."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([GM])", speed or "")
    if not match:
        return None
    return float(match.group(1)) / (1000.0 if match.group(2) == "M" else 1.0)


def ib_rank(speed: str | None) -> int | None:
    return IB_SPEEDS.index(speed) if speed in IB_SPEEDS else None


def width_lanes(width: str | None) -> int | None:
    match = re.fullmatch(r"(\d+)x", (width or "").lower())
    return int(match.group(1)) if match else None


@lru_cache(maxsize=65536)
def short(name: str) -> str:
    """A node name as compared: lower case, without a DNS domain (dgx01.example.com is dgx01); an address (a MAC or
    IP chassis id) whole."""
    text = name.strip().lower()
    if re.fullmatch(r"[0-9a-f:]{17}|[0-9.]+|[0-9a-f:]+", text):
        return text
    return text.split(".")[0]
