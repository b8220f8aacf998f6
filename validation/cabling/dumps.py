"""Reading a dump file (plain or .gz) and telling its format: lldp (lldpd JSON, either shape), ibnetdiscover,
iblinkinfo, fdb (bridge fdb show). A file that is none of them is a CablingError naming it."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from . import parse_fdb, parse_ib, parse_lldp
from .model import CablingError, Link

FORMATS = ("lldp", "ibnetdiscover", "iblinkinfo", "fdb")


def read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CablingError(f"{path}: cannot read: {exc.strerror}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise CablingError(f"{path}: a gzip file that does not decompress ({exc}): truncated?") from None
    return data.decode("utf-8", errors="replace")


def detect(text: str, where: str) -> str:
    head = text.lstrip()[:4096]
    if head.startswith(("{", "[")):
        return "lldp"
    if re.search(r"^#\s*Topology file", head, re.MULTILINE) or re.search(r'^(Switch|Ca)\s*\d+\s+"[SH]-', text,
                                                                         re.MULTILINE):
        return "ibnetdiscover"
    if "==(" in head and ")==>" in head:
        return "iblinkinfo"
    if re.match(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5} dev \S+", head):
        return "fdb"
    if not text.strip():
        raise CablingError(f"{where}: empty file: no tool output")
    raise CablingError(f"{where}: not a dump this command reads (lldpctl -f json, net show lldp json, "
                       "ibnetdiscover, iblinkinfo, bridge fdb show); name it with --format if it is one")


def parse(text: str, fmt: str | None, where: str, local: str | None = None) -> tuple[str, list[Link]]:
    """(format, links) of one dump. LLDP needs `local`: the host the dump comes from."""
    fmt = fmt or detect(text, where)
    if fmt == "lldp":
        if not local:
            raise CablingError(f"{where}: an LLDP dump does not name its own host: give it (--local NAME, or "
                               "--observed NAME=FILE)")
        return fmt, parse_lldp.parse(text, local, where)
    if fmt == "fdb":
        if not local:
            raise CablingError(f"{where}: a bridge fdb dump does not name its switch: give it (--local NAME, or "
                               "--observed NAME=FILE)")
        return fmt, parse_fdb.parse(text, local, where)
    if fmt == "ibnetdiscover":
        return fmt, parse_ib.parse_ibnetdiscover(text, where)
    if fmt == "iblinkinfo":
        return fmt, parse_ib.parse_iblinkinfo(text, where)
    raise CablingError(f"{where}: unknown format {fmt!r}; known: {', '.join(FORMATS)}")


def parse_file(path: Path, fmt: str | None = None, local: str | None = None) -> tuple[str, list[Link]]:
    return parse(read_text(path), fmt, str(path), local)
