"""Day 2 scale-out and scale-in plans: what the shared objects of a running site become when nodes are added to
it or removed from it, as pure functions (playbooks/scale_out.yml, playbooks/scale_in.yml, docs/scale-out.md).

A scale-out only adds: an export's client lists, the SmartConnect pool's interfaces and the storage switches'
ports grow by the new nodes and nothing already there changes. A scale-in is its mirror: it removes only what
the inventory gives for the nodes that leave, and only when they are no longer in use. Every function returns
the problems it finds as text naming the host, the variable, the value and the fix; the callers refuse to change
anything while there is one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MODES = ("add", "remove")
# What a node's live in-use probe (library/dgx_in_use.py) reports; each must be present and a list.
PROBE_KEYS = ("mounted", "busy", "containers")


@dataclass(frozen=True)
class ListPlan:
    """A set-valued field (an export's client list, a pool's interfaces) before and after, and what changes."""

    before: list[Any]
    after: list[Any]
    added: list[Any] = field(default_factory=list)
    removed: list[Any] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def _ordered_unique(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def list_plan(current: Iterable[Any], members: Iterable[Any], mode: str) -> ListPlan:
    """``current`` grown by ``members`` (mode add) or without them (mode remove). Nothing else changes: a member
    already there is not added twice, one that is not there is not removed, the order of the others is kept."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    before = _ordered_unique(current)
    wanted = _ordered_unique(members)
    if mode == "add":
        added = [m for m in wanted if m not in before]
        return ListPlan(before=before, after=before + added, added=added)
    removed = [m for m in before if m in wanted]
    return ListPlan(before=before, after=[m for m in before if m not in wanted], removed=removed)


def node_request_problems(requested: Iterable[str], variable: str, groups: dict[str, list[str]],
                          kinds: tuple[str, ...] = ("dgx", "powerscale")) -> list[str]:
    """Why a scale request cannot run: no node named, a name the inventory does not know (or not in a group this
    flow handles), a node named twice, or every DGX of the site named (nothing would stay in production)."""
    names = [str(n).strip() for n in requested if str(n).strip()]
    if not names:
        return [f"localhost | {variable} | (empty) | names no node | give the inventory names of the nodes, "
                f"comma separated: -e {variable}=dgx03,dgx04"]
    problems = []
    known = {h for k in kinds for h in groups.get(k) or []}
    for name in _ordered_unique(names):
        if names.count(name) > 1:
            problems.append(f"localhost | {variable} | {name} | is named {names.count(name)} times | name it once")
        if name not in known:
            problems.append(f"localhost | {variable} | {name} | is not a host of group {' or '.join(kinds)} in "
                            f"this inventory | add it to the site's hosts.yml first (its addresses and cabling), "
                            f"or fix the name")
    dgx = set(groups.get("dgx") or [])
    if dgx and dgx <= set(names):
        problems.append(f"localhost | {variable} | {','.join(names)} | names every DGX of the site: none would "
                        f"stay in production | run site.yml for a new site; a scale flow changes a running one")
    return problems


def in_use_problems(node: str, probe: Any) -> list[str]:
    """Why ``node`` counts as in use, from its live probe (library/dgx_in_use.py). Fail closed: a probe that did
    not run, failed or lacks a field is a problem too (in use is unknown, so the node is not touched)."""
    if not isinstance(probe, dict):
        return [f"{node} | in-use probe | {probe!r} | did not run | make the node reachable over SSH and run again"]
    if probe.get("failed") or probe.get("unreachable"):
        why = str(probe.get("msg") or "it failed").strip()[:300]
        return [f"{node} | in-use probe | failed | {why} | make the node reachable and its /proc readable, "
                "then run again: a node whose use cannot be checked is left alone"]
    problems = []
    for key in PROBE_KEYS:
        if not isinstance(probe.get(key), list):
            problems.append(f"{node} | in-use probe | {key}={probe.get(key)!r} | is missing from the probe's answer "
                            "| run again; a node whose use cannot be checked is left alone")
    if problems:
        return problems
    if probe["mounted"]:
        problems.append(f"{node} | nfs_mounts | {', '.join(map(str, probe['mounted']))} | mounted on the node")
    if probe["busy"]:
        shown = ", ".join(f"{p.get('pid')} ({p.get('comm')}) on {p.get('mount_point')}" for p in probe["busy"][:10])
        more = f" and {len(probe['busy']) - 10} more" if len(probe["busy"]) > 10 else ""
        problems.append(f"{node} | nfs_mounts | processes {shown}{more} | use the mounts")
    if probe["containers"]:
        problems.append(f"{node} | containers | {', '.join(map(str, probe['containers'][:10]))} | are running")
    return problems


def port_key(port: dict[str, Any]) -> tuple[str, str]:
    return (str(port.get("host")), str(port.get("nic")))


def switch_plan_growth(switch: str, smaller: dict[str, Any], larger: dict[str, Any],
                       nodes: Iterable[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The ports of ``nodes`` that ``larger`` (the switch's plan with them) adds to ``smaller`` (its plan without
    them), and every other difference between the two plans as a problem: a scale flow changes no port, VLAN,
    uplink, peerlink or bridge that is already there, it only adds (or, for a scale-in, removes) the nodes' ports.
    """
    nodes = set(nodes)
    problems = []
    small_ports = {p["name"]: p for p in smaller.get("ports") or []}
    large_ports = {p["name"]: p for p in larger.get("ports") or []}
    delta = []
    for name, port in large_ports.items():
        if name in small_ports:
            if small_ports[name] != port:
                problems.append(f"{switch} | storage_nics | {name}: {small_ports[name]} -> {port} | an existing "
                                "port would change | a scale flow only adds ports: apply other changes with "
                                "site.yml --tags fabric in a maintenance window")
            continue
        if port.get("host") not in nodes:
            problems.append(f"{switch} | storage_nics | {name} ({port.get('host')}:{port.get('nic')}) | is a new "
                            "port of a node that is not being added or removed | name the node in the scale "
                            "request, or apply it with site.yml --tags fabric")
            continue
        delta.append(port)
    for name in small_ports.keys() - large_ports.keys():
        problems.append(f"{switch} | storage_nics | {name} | the port would go although its node stays | restore "
                        "its cable in hosts.yml")
    for key in sorted((smaller.keys() | larger.keys()) - {"ports", "bridge_ports", "owned_interfaces"}):
        if smaller.get(key) != larger.get(key):
            problems.append(f"{switch} | storage_fabric ({key}) | {smaller.get(key)!r} -> {larger.get(key)!r} | "
                            "would change with the nodes | a scale flow changes only the nodes' ports")
    return delta, problems


def ib_commands_problems(switch: str, commands: Iterable[str]) -> list[str]:
    """The MLNX-OS commands a scale-out would send a QM8700 (mlnxos_fabric in check mode) that do more than add
    ports: anything outside an ``interface ib`` block (subnet manager, partitions, NTP, hostname) and any
    ``shutdown`` or ``no`` of a port setting. Adding a port (speed, split, description, no shutdown) is allowed."""
    problems = []
    port = None
    for raw in commands:
        cmd = str(raw).strip()
        if cmd.startswith("interface ib "):
            port = cmd.split()[2] if len(cmd.split()) > 2 else "?"
            continue
        if cmd == "exit":
            port = None
            continue
        if port is None:
            problems.append(f"{switch} | qm8700 | {cmd} | is not a port command: it would change the running "
                            "fabric | apply it with site.yml --tags fabric in a maintenance window")
        elif cmd == "shutdown" or (cmd.startswith("no ") and cmd != "no shutdown"):
            problems.append(f"{switch} | qm8700_ports | interface ib {port}: {cmd} | would take a port down or "
                            "remove its setting | a scale-out only adds ports")
    return problems
