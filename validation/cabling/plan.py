"""The cable plan: the design, from the inventory, one cable per entry with both ends.

- every ``storage_nics`` entry of the DGX and PowerScale hosts: ``{host, name}`` to ``{switch, switch_port}``, at
  ``speed_gbps`` (no speed where the site does not manage port speeds: the lab's virtio ports);
- the CLAG peerlink (``storage_fabric_clag.peerlink.members`` when CLAG is on): member i of the first SN3700V to
  member i of the second;
- the uplinks (``storage_fabric_uplinks``) of every SN3700V, to any neighbour (``*``: the inventory does not name
  the far end; the check wants one there);
- the compute map (``compute_fabric_cables``, module_utils/cabling_design.py): ``{host, <hca>/<hca_port>}`` to
  ``{QM8700 name, port number}``, width 4x at the port's qm8700_ports speed.

Ends are named as ``cabling parse`` names them: the DGX and PowerScale hosts and the SN3700Vs by inventory name
(their LLDP system names), a QM8700 by ``qm8700_hostname`` (its NodeDescription ``MF0;<hostname>:MQM8700/U1``;
the role's default is the inventory name).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .model import ANY, IB_SPEEDS, Cable, CablingError, End

ROOT = Path(__file__).resolve().parents[2]
PLAN_VARS = ("storage_nics", "dgx_model", "dgx_models", "compute_fabric_cables", "storage_fabric_clag",
             "storage_fabric_uplinks", "storage_fabric_port_speed_managed", "qm8700_hostname", "qm8700_ports",
             "ib_rate_gbps")
IB_RATE = {100: "EDR", 200: "HDR", 400: "NDR"}


@dataclass
class SiteView:
    """What the plan reads: the hosts of each group in inventory order, and their (templated) variables."""

    groups: dict[str, list[str]]
    hostvars: dict[str, dict[str, Any]]

    def var(self, host: str, name: str, default: Any = None) -> Any:
        return self.hostvars.get(host, {}).get(name, default)

    def first(self, group: str, name: str, default: Any = None) -> Any:
        hosts = self.groups.get(group, [])
        return self.var(hosts[0], name, default) if hosts else default


def design_module() -> Any:
    """module_utils/cabling_design.py under its Ansible name (the preflight rule imports it so)."""
    from ..inventory_layers import module_utils

    return module_utils("cabling_design")


def load_view(sources: Sequence[str], extra_vars: Sequence[str] = ()) -> SiteView:
    from ..inventory_layers import AnsibleInventory

    inventory = AnsibleInventory.open_sources(sources, extra_vars)
    groups = {g: inventory.hosts(g) if g in inventory.manager.groups else []
              for g in ("dgx", "powerscale", "sn3700v", "qm8700")}
    # templated() gives plain data; a value the hosts share (the compute map, dgx_models) is one object for all
    hostvars = {str(h): inventory.templated(h, PLAN_VARS) for hosts in groups.values() for h in hosts}
    return SiteView({str(g): [str(h) for h in hosts] for g, hosts in groups.items()}, hostvars)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def storage_cables(view: SiteView) -> list[Cable]:
    managed = view.first("sn3700v", "storage_fabric_port_speed_managed", True)
    out = []
    for group in ("dgx", "powerscale"):
        for host in view.groups.get(group, []):
            for nic in _list(view.var(host, "storage_nics")):
                nic = _map(nic)
                if not nic.get("name") or not nic.get("switch") or not nic.get("switch_port"):
                    raise CablingError(f"{host}: a storage_nics entry without name, switch or switch_port: {nic}")
                speed = f"{nic['speed_gbps']}G" if managed is not False and nic.get("speed_gbps") else None
                out.append(Cable(End(host, str(nic["name"])), End(str(nic["switch"]), str(nic["switch_port"])),
                                 speed=speed))
    return out


def switch_cables(view: SiteView) -> list[Cable]:
    switches = view.groups.get("sn3700v", [])
    out: list[Cable] = []
    clag = _map(view.first("sn3700v", "storage_fabric_clag"))
    if clag.get("enabled") and len(switches) == 2:
        for member in _list(_map(clag.get("peerlink")).get("members")):
            out.append(Cable(End(switches[0], str(member)), End(switches[1], str(member))))
    for switch in switches:
        for uplink in _list(view.var(switch, "storage_fabric_uplinks")):
            uplink = _map(uplink)
            if uplink.get("name"):
                out.append(Cable(End(switch, str(uplink["name"])), End(ANY, ANY),
                                 speed=str(uplink["speed"]) if uplink.get("speed") else None))
    return out


def compute_cables(view: SiteView) -> list[Cable]:
    cabling_design = design_module()
    dgx = view.groups.get("dgx", [])
    design = view.first("dgx", "compute_fabric_cables")
    if design is None:
        return []
    cables, unreadable = cabling_design.expand(design, dgx)
    hcas: dict[str, list[str] | None] = {}
    for host in dgx:
        model = _map(_map(view.var(host, "dgx_models")).get(view.var(host, "dgx_model")))
        listed = model.get("compute_hcas")
        hcas[host] = [str(h) for h in listed] if isinstance(listed, list) else None
    switches = {s: cabling_design.declared_ports(view.var(s, "qm8700_ports")) for s in view.groups.get("qm8700", [])}
    bad = [*unreadable, *cabling_design.problems(cables, hcas, switches)]
    if bad:
        raise CablingError("compute_fabric_cables: " + "; ".join(f"{p.host} {p.path}: {p.problem}" for p in bad))
    out = []
    for cable in cables:
        name = str(view.var(cable.switch, "qm8700_hostname") or cable.switch)
        speed = _port_speed(view, cable.switch, cable.switch_port)
        out.append(Cable(End(cable.host, f"{cable.hca}/{cable.hca_port}"), End(name, str(cable.switch_port)),
                         speed=speed, width="4x"))
    return out


def _port_speed(view: SiteView, switch: str, port: int) -> str | None:
    for entry in _list(view.var(switch, "qm8700_ports")):
        entry = _map(entry)
        ports = design_module().declared_ports([entry]) or set()
        speed = str(entry.get("speed", "")).upper()
        if port in ports and speed in IB_SPEEDS:
            return speed
    rate = view.var(switch, "ib_rate_gbps")
    return IB_RATE.get(rate) if isinstance(rate, int) else None


def design(view: SiteView) -> list[Cable]:
    """Every designed cable of the site, storage NICs first, then the peerlink and uplinks, then the compute map."""
    return [*storage_cables(view), *switch_cables(view), *compute_cables(view)]


PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}
TOKEN = r'([A-Za-z_][A-Za-z0-9_./-]*|"(?:[^"\\]|\\.)*")'
LINE = re.compile(r"^- \{a: \{node: " + TOKEN + ", port: " + TOKEN + r"\}, b: \{node: " + TOKEN + ", port: " + TOKEN
                  + r"\}(?:, speed: " + TOKEN + ")?(?:, width: " + TOKEN + r")?\}\s*$")


def _scalar(value: str) -> str:
    """A YAML flow scalar: plain where YAML reads it back as the same string, else a JSON string (valid YAML)."""
    return value if PLAIN.match(value) and value.lower() not in YAML_WORDS else json.dumps(value)


def _token(text: str | None) -> str | None:
    if text is None:
        return None
    return str(json.loads(text)) if text.startswith('"') else text


def to_yaml(cables: Sequence[Cable]) -> str:
    """The plan as ``cabling plan`` prints it: a YAML list, one cable a line (written directly: a plan of a large
    fabric has ten thousand cables, and a YAML emitter takes seconds for them)."""
    if not cables:
        return "[]\n"
    lines = []
    for c in cables:
        text = (f"- {{a: {{node: {_scalar(c.a.node)}, port: {_scalar(c.a.port)}}}, "
                f"b: {{node: {_scalar(c.b.node)}, port: {_scalar(c.b.port)}}}")
        if c.speed:
            text += f", speed: {_scalar(c.speed)}"
        if c.width:
            text += f", width: {_scalar(c.width)}"
        lines.append(text + "}\n")
    return "".join(lines)


def _fast(text: str) -> list[dict[str, Any]] | None:
    """The plan's own one-line form, read without a YAML parser; None when a line is in any other form."""
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = LINE.match(line)
        if not match:
            return None
        an, ap, bn, bp, speed, width = (_token(g) for g in match.groups())
        item: dict[str, Any] = {"a": {"node": an, "port": ap}, "b": {"node": bn, "port": bp}}
        if speed is not None:
            item["speed"] = speed
        if width is not None:
            item["width"] = width
        out.append(item)
    return out or None


def _end(value: Any, where: str) -> End:
    if not isinstance(value, Mapping) or set(value) != {"node", "port"}:
        raise CablingError(f"{where}: must be {{node: NAME, port: PORT}}, got {value!r}")
    node, port = value["node"], value["port"]
    if not isinstance(node, str | int) or not isinstance(port, str | int) or str(node) == "" or str(port) == "":
        raise CablingError(f"{where}: node and port must be names, got {value!r}")
    return End(str(node), str(port))


def from_data(data: Any, where: str) -> list[Cable]:
    if not isinstance(data, list) or not data:
        raise CablingError(f"{where}: a plan is a non-empty YAML list of cables ({{a: ..., b: ...}}), as "
                           "`cabling plan` prints it")
    out = []
    for pos, item in enumerate(data):
        at = f"{where}: cable {pos + 1}"
        if not isinstance(item, Mapping):
            raise CablingError(f"{at}: must be a mapping with a and b")
        unknown = sorted(set(item) - {"a", "b", "speed", "width"})
        if unknown or "a" not in item or "b" not in item:
            raise CablingError(f"{at}: needs a and b (and optional speed, width); unknown keys: {unknown}")
        speed, width = item.get("speed"), item.get("width")
        out.append(Cable(_end(item["a"], f"{at} a"), _end(item["b"], f"{at} b"),
                         str(speed) if speed is not None else None, str(width).lower() if width is not None else None))
    return out


def read_plan(path: Path) -> list[Cable]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CablingError(f"{path}: cannot read: {exc.strerror}") from None
    data: Any = _fast(text)
    if data is None:
        try:
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise CablingError(f"{path}: not YAML: {exc}") from None
    return from_data(data, str(path))
