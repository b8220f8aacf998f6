"""The compute fabric's cable map: each DGX compute HCA to its QM8700 and port, its one home.

A site writes ``compute_fabric_cables`` (group_vars/all/compute_fabric.yml) explicitly, as a rail pattern, or
both::

    compute_fabric_cables:
      rails:     # HCA `hca` of every DGX on `switch`, ports first_port, first_port+1, ... in the dgx group's order
        - {hca: mlx5_0, switch: qm8700-01, first_port: 1}
      cables:    # one entry per cable; hca_port defaults to 1 (the DGX A100 compute HCAs are single-port)
        - {host: dgx05, hca: mlx5_0, switch: qm8700-02, switch_port: 17}

``expand`` turns both into explicit ``ComputeCable`` entries (a rail of 4 DGX from port 1 gives ports 1..4);
``problems`` is the map's rule set, which preflight (rule_compute_cabling) and the cabling plan both use: every
compute HCA of a node model that lists them (dgx_models[model].compute_hcas) cabled exactly once, no QM8700 port
used twice (naming both hosts), ports inside the switch (a QM8700 has 40) and declared in its ``qm8700_ports``.

A switch port is the number ibnetdiscover prints for it (``[17]``), which MLNX-OS names ``1/17``; both spellings
are accepted. Split ports (1/N/M) are not part of the map. Pure functions; nothing here knows Ansible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

QM8700_PORTS = 40
HCA_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
SWITCH_PORT = re.compile(r"^(?:1/)?([0-9]{1,2})$")
FIX_SEE = "see compute_fabric_cables in inventories/production/group_vars/all/compute_fabric.yml"


@dataclass(frozen=True)
class ComputeCable:
    """One designed compute cable. `source` names the entry it came from (rails[0], cables[3])."""

    host: str
    hca: str
    hca_port: int
    switch: str
    switch_port: int
    source: str


@dataclass(frozen=True)
class MapProblem:
    """One defect of the map: the host to blame (or "all"), the variable path, its value, problem and fix."""

    host: str
    path: str
    value: Any
    problem: str
    fix: str


def port_number(value: Any) -> int | None:
    """17, "17" or "1/17" -> 17; anything else (a split port 1/1/2, text) -> None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    match = SWITCH_PORT.match(str(value).strip()) if isinstance(value, str) else None
    return int(match.group(1)) if match else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> list[tuple[int, Mapping[str, Any]]]:
    return [(i, v) for i, v in enumerate(value) if isinstance(v, Mapping)] if isinstance(value, list) else []


def expand(design: Any, dgx_hosts: Sequence[str]) -> tuple[list[ComputeCable], list[MapProblem]]:
    """The explicit cables of a map (rails expanded in the order of `dgx_hosts`), and the entries that could not
    be read (a missing key, a port that is not a number)."""
    cables: list[ComputeCable] = []
    bad: list[MapProblem] = []
    var = "compute_fabric_cables"
    if design is None:
        return cables, bad
    if not isinstance(design, Mapping):
        return cables, [MapProblem("all", var, design, "must be a mapping with rails and/or cables", FIX_SEE)]
    unknown = sorted(set(design) - {"rails", "cables"})
    bad += [MapProblem("all", f"{var}.{k}", design[k], "is not a known key", "use rails and cables")
            for k in unknown]
    for part in ("rails", "cables"):
        if part in design and not isinstance(design[part], list):
            bad.append(MapProblem("all", f"{var}.{part}", design[part], "must be a list", FIX_SEE))
    for pos, rail in _items(design.get("rails")):
        path = f"{var}.rails[{pos}]"
        first = port_number(rail.get("first_port"))
        hca, switch = rail.get("hca"), rail.get("switch")
        if not isinstance(hca, str) or not HCA_NAME.match(hca):
            bad.append(MapProblem("all", f"{path}.hca", hca, "must be an HCA name like mlx5_0", FIX_SEE))
            continue
        if not isinstance(switch, str) or not switch:
            bad.append(MapProblem("all", f"{path}.switch", switch, "must name a QM8700 of the inventory", FIX_SEE))
            continue
        if first is None:
            bad.append(MapProblem("all", f"{path}.first_port", rail.get("first_port"),
                                  "must be a switch port number (17 or 1/17)", FIX_SEE))
            continue
        hca_port = rail.get("hca_port", 1)
        for index, node in enumerate(dgx_hosts):
            cables.append(ComputeCable(node, hca, hca_port if isinstance(hca_port, int) else 1, switch,
                                       first + index, path))
    for pos, entry in _items(design.get("cables")):
        path = f"{var}.cables[{pos}]"
        host, hca, switch = entry.get("host"), entry.get("hca"), entry.get("switch")
        port = port_number(entry.get("switch_port"))
        hca_port = entry.get("hca_port", 1)
        for key, value, ok in (("host", host, isinstance(host, str) and bool(host)),
                               ("hca", hca, isinstance(hca, str) and bool(HCA_NAME.match(str(hca)))),
                               ("switch", switch, isinstance(switch, str) and bool(switch)),
                               ("switch_port", entry.get("switch_port"), port is not None),
                               ("hca_port", hca_port, isinstance(hca_port, int) and not isinstance(hca_port, bool)
                                and hca_port >= 1)):
            if not ok:
                bad.append(MapProblem(str(host) if isinstance(host, str) else "all", f"{path}.{key}", value,
                                      "is missing or not valid", FIX_SEE))
                break
        else:
            if not (isinstance(host, str) and isinstance(hca, str) and isinstance(switch, str) and port is not None):
                raise AssertionError(f"{path}: every key was checked above")  # narrows the types for mypy
            cables.append(ComputeCable(host, hca, int(hca_port), switch, port, path))
    return cables, bad


def declared_ports(qm8700_ports: Any) -> set[int] | None:
    """The whole (not split) ports a switch's qm8700_ports declares; None when the entries cannot be read."""
    ports: set[int] = set()
    if not isinstance(qm8700_ports, list):
        return None
    for entry in qm8700_ports:
        text = str(_mapping(entry).get("range", ""))
        if _mapping(entry).get("split", "none") != "none":
            continue
        match = re.fullmatch(r"1/(\d{1,2})(?:-1/(\d{1,2}))?", text)
        if not match:
            return None
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        ports |= set(range(first, last + 1))
    return ports


def problems(cables: Iterable[ComputeCable], compute_hcas: Mapping[str, Sequence[str] | None],
             switches: Mapping[str, set[int] | None], port_count: int = QM8700_PORTS) -> list[MapProblem]:
    """The map's rules. `compute_hcas`: each DGX host's compute HCAs by its node model (None: the model lists none,
    e.g. the lab's VMs, so any HCA name is taken and completeness is not checked); `switches`: each QM8700 of the
    inventory (by inventory name) with the ports its qm8700_ports declares (None: unreadable, the schema says why)."""
    out: list[MapProblem] = []
    seen_hca: dict[tuple[str, str, int], ComputeCable] = {}
    seen_port: dict[tuple[str, int], ComputeCable] = {}
    for cable in cables:
        label = f"{cable.host} {cable.hca}"
        if cable.host not in compute_hcas:
            out.append(MapProblem("all", cable.source, cable.host, f"{cable.host} is not a DGX host of the inventory",
                                  "name a host of the dgx group"))
            continue
        listed = compute_hcas[cable.host]
        if listed is not None and cable.hca not in listed:
            out.append(MapProblem(cable.host, cable.source, cable.hca,
                                  f"{cable.hca} is not a compute HCA of {cable.host}'s model ({', '.join(listed)})",
                                  "cable the model's compute HCAs only (dgx_models[model].compute_hcas)"))
        key = (cable.host, cable.hca, cable.hca_port)
        if key in seen_hca:
            other = seen_hca[key]
            out.append(MapProblem(cable.host, cable.source, f"{cable.hca}/{cable.hca_port}",
                                  f"{label} is cabled twice: {other.source} puts it on {other.switch} port "
                                  f"{other.switch_port}, {cable.source} on {cable.switch} port {cable.switch_port}",
                                  "give each HCA exactly one cable"))
        else:
            seen_hca[key] = cable
        if cable.switch not in switches:
            out.append(MapProblem(cable.host, cable.source, cable.switch,
                                  f"{cable.switch} is not a QM8700 host of the inventory (group qm8700)",
                                  f"name one of: {', '.join(switches) or '(no qm8700 host)'}"))
            continue
        if not 1 <= cable.switch_port <= port_count:
            out.append(MapProblem(cable.host, cable.source, cable.switch_port,
                                  f"{cable.switch} has ports 1..{port_count}; port {cable.switch_port} does not exist",
                                  "use a port of the switch's front panel"))
            continue
        declared = switches[cable.switch]
        if declared is not None and cable.switch_port not in declared:
            out.append(MapProblem(cable.host, cable.source, cable.switch_port,
                                  f"{cable.switch} port 1/{cable.switch_port} is not declared in qm8700_ports "
                                  f"(declared whole ports: {_ranges(declared)})",
                                  "cable a declared HDR port, or declare the port in qm8700_ports"))
        spot = (cable.switch, cable.switch_port)
        if spot in seen_port:
            other = seen_port[spot]
            out.append(MapProblem(cable.host, cable.source, cable.switch_port,
                                  f"{cable.switch} port {cable.switch_port} is used twice: by {other.host} "
                                  f"{other.hca} ({other.source}) and by {cable.host} {cable.hca} ({cable.source})",
                                  "give each cable its own switch port"))
        else:
            seen_port[spot] = cable
    for host, listed in compute_hcas.items():
        for hca in listed or ():
            if not any(k[0] == host and k[1] == hca for k in seen_hca):
                out.append(MapProblem(host, "compute_fabric_cables", hca,
                                      f"{host} {hca} has no cable in the map",
                                      "add it: a rail for the HCA, or an entry under cables"))
    return out


def _ranges(ports: set[int]) -> str:
    if not ports:
        return "none"
    out: list[str] = []
    run = sorted(ports)
    start = prev = run[0]
    for p in [*run[1:], -1]:
        if p == prev + 1:
            prev = p
            continue
        out.append(f"1/{start}" if start == prev else f"1/{start}-1/{prev}")
        start = prev = p
    return ", ".join(out)
