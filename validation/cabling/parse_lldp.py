"""lldpd's neighbour table as JSON, read into Links: ``lldpctl -f json`` / ``lldpcli -f json show neighbors``, and
``-f json0``, which Cumulus Linux's ``net show lldp json`` (NCLU, 3.x/4.x) prints.

Two shapes (lldpd src/client/json_writer.c; real captures in tests/fixtures/lldp/real/, SOURCES):

- json0: every value a list. ``{"lldp": [{"interface": [{"name": "swp1", "chassis": [{"id": [{"type", "value"}],
  "name": [{"value"}]}], "port": [{"id": [...], "descr": [{"value"}]}]}]}]}``; no neighbour: ``{"lldp": [{}]}``.
- json: lists only where a key repeats. One interface is an object ``{"interface": {"eth0": {...}}}``, several a
  list of one-key objects ``{"interface": [{"eth0": {...}}, {"eth1": {...}}]}`` (the same name twice: two
  neighbours on one port); the chassis is keyed by the system name ``{"chassis": {"leaf01": {"id": ...}}}``, or
  holds ``id`` itself when the neighbour sends no system name; ``port.id`` is ``{"type", "value"}``.

The local node is not in the dump (it lists the neighbours of the host that ran it): the caller names it. The remote
end is the system name (the chassis id when there is none) and the port: its id when that is an interface name,
else its description (lldpd on Linux sends the MAC as port id and the interface name as description), else the
id (a MAC). Anything else is a CablingError naming the file.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .model import CablingError, End, Link


def _strict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CablingError(f"the key {key!r} appears twice in one JSON object (two outputs interleaved?)")
        out[key] = value
    return out


def _value(node: Any) -> Any:
    """json0 wraps every scalar as [{"value": x}]; json writes x (or {"value": x} for some keys)."""
    if isinstance(node, list):
        node = node[0] if node else None
    if isinstance(node, dict) and set(node) <= {"value"}:
        return node.get("value")
    return node


def _one(node: Any) -> dict[str, Any]:
    if isinstance(node, list):
        node = node[0] if node else {}
    return node if isinstance(node, dict) else {}


def _interfaces(lldp: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """(local interface name, its entry) for every neighbour, in either shape."""
    if isinstance(lldp, list):          # json0: [{"interface": [...]}] or [{}]
        out: list[tuple[str, dict[str, Any]]] = []
        for block in lldp:
            if not isinstance(block, dict):
                raise CablingError(f"{where}: lldp holds {type(block).__name__}, not an object")
            for entry in block.get("interface", []):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise CablingError(f"{where}: an interface entry without a name: {str(entry)[:120]}")
                out.append((entry["name"], entry))
        return out
    if not isinstance(lldp, dict):
        raise CablingError(f"{where}: lldp holds {type(lldp).__name__}, not an object or a list")
    interface = lldp.get("interface")
    if interface is None:
        return []                        # no neighbour
    items = interface if isinstance(interface, list) else [interface]
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise CablingError(f"{where}: an interface entry is {type(item).__name__}, not an object")
        if "name" in item and "chassis" in item:   # json0-like entry inside a json document
            out.append((str(item["name"]), item))
            continue
        for name, entry in item.items():
            if not isinstance(entry, dict):
                raise CablingError(f"{where}: interface {name} is {type(entry).__name__}, not an object")
            out.append((name, entry))
    return out


def _chassis(entry: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(system name or None, the chassis object) for either shape."""
    chassis = entry.get("chassis")
    if isinstance(chassis, list):        # json0
        one = _one(chassis)
        name = _value(one.get("name"))
        return (str(name) if name else None), one
    if isinstance(chassis, dict):
        if "id" in chassis or not chassis:   # json without a system name
            name = _value(chassis.get("name"))
            return (str(name) if name else None), chassis
        if len(chassis) == 1:
            name, body = next(iter(chassis.items()))
            return name, body if isinstance(body, dict) else {}
    return None, {}


def _id(node: Any) -> tuple[str, str]:
    one = _one(node)
    return str(one.get("type", "")), str(one.get("value", ""))


def speed_of_mau(text: Any) -> str | None:
    """A MAU type as lldpd prints it ("1000BaseTFD - Four-pair ...", "10GbaseT", "100GbaseCR4") -> "1G", "100G"."""
    match = re.match(r"\s*(\d+)(G?)base", str(text or ""), re.IGNORECASE)
    if not match:
        return None
    value = int(match.group(1))
    if match.group(2):
        return f"{value}G"
    return f"{value // 1000}G" if value >= 1000 and value % 1000 == 0 else f"{value}M"


def parse(text: str, local: str, source: str = "") -> list[Link]:
    """The neighbours in one lldpd JSON dump of host `local` (source: the file, for messages)."""
    where = source or "LLDP JSON"
    if not text.strip():
        raise CablingError(f"{where}: empty: no LLDP output (did lldpctl run?)")
    try:
        doc = json.loads(text, object_pairs_hook=_strict)
    except CablingError as exc:
        raise CablingError(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CablingError(f"{where}: not complete JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
                           "truncated, interleaved or not lldpctl -f json output") from None
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise CablingError(f"{where}: JSON without an 'lldp' key: not lldpctl -f json / net show lldp json output")
    links: list[Link] = []
    for ifname, entry in _interfaces(doc["lldp"], where):
        sysname, chassis = _chassis(entry)
        chassis_type, chassis_id = _id(chassis.get("id"))
        port = _one(entry.get("port"))
        if not chassis_id and not port:
            raise CablingError(f"{where}: interface {ifname} has a neighbour entry without chassis or port")
        subtype, port_id = _id(port.get("id"))
        descr = _value(port.get("descr"))
        if subtype in ("ifname", "local") and port_id:
            remote_port = port_id
        else:
            remote_port = str(descr) if descr else port_id
        autoneg = _one(port.get("auto-negotiation"))
        speed = speed_of_mau(_value(autoneg.get("current")))
        info = {"chassis_id": chassis_id, "chassis_subtype": chassis_type, "port_subtype": subtype,
                "port_id": port_id}
        if descr:
            info["port_descr"] = str(descr)
        if not sysname:
            info["no_system_name"] = "true"
        links.append(Link(End(local, ifname), End(sysname or chassis_id, remote_port or "?"), "lldp", source,
                          speed=speed, remote_info=info))
    return links
