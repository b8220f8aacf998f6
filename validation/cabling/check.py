"""The check: every designed cable against what the dumps show, and every observed link the design lacks.

Per designed cable (ends A and B):

- OK: a link joins A and B, at the designed width and speed (or above), and neither end has another neighbour;
- DEGRADED: it joins them, but narrower or slower than designed (an HDR port at 2x or at EDR, 100 GbE at 40);
- MISWIRED: A or B has a neighbour, but not each other: the verdict names where each end really goes. Also a port
  with two neighbours (something between the ends), and a neighbour whose name several chassis use (the default
  hostname ``cumulus``): which one is cabled cannot be told;
- MISSING: neither end has a neighbour (the reason says when no dump covers either end's node).

An observed link touching no designed end, between two nodes of the design, is UNEXPECTED (a self-loop says so);
links to nodes outside the design (a management switch) are counted, not judged; a QM8700's internal SHARP
aggregation node is not a cable. A port named by a MAC (lldpd's default port id on Linux, when the description is
missing) matches a designed port of the same node by the host's interface MAC when known (``host_macs``), else by
node alone, and the verdict says so. Known deviations a site accepts keep their status and are marked accepted.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .model import ANY, Cable, End, Link, ethernet_gbps, ib_rank, short, width_lanes

OK, MISWIRED, MISSING, DEGRADED, UNEXPECTED = "OK", "MISWIRED", "MISSING", "DEGRADED", "UNEXPECTED"
STATUSES = (OK, MISWIRED, MISSING, DEGRADED, UNEXPECTED)
MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
Key = tuple[str, str]


def key(end: End) -> Key:
    return short(end.node), end.port.strip().lower()


@dataclass(frozen=True)
class Accepted:
    """A deviation the site accepts (cabling_accepted_deviations): a cable end, its status, and why."""

    node: str
    port: str
    status: str
    reason: str


@dataclass
class Verdict:
    a: End
    b: End
    status: str
    reason: str
    a_sees: list[End] = field(default_factory=list)
    b_sees: list[End] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    design: dict[str, str] = field(default_factory=dict)
    seen: dict[str, Any] = field(default_factory=dict)
    accepted: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"a": self.a.to_dict(), "b": self.b.to_dict(), "status": self.status,
                               "reason": self.reason, "a_sees": [e.to_dict() for e in self.a_sees],
                               "b_sees": [e.to_dict() for e in self.b_sees], "evidence": sorted(set(self.evidence))}
        if self.design:
            out["design"] = self.design
        if self.seen:
            out["seen"] = self.seen
        if self.accepted:
            out["accepted"] = self.accepted
        return out


@dataclass
class Report:
    verdicts: list[Verdict]
    unexpected: list[Verdict]
    warnings: list[str]
    outside_design: int
    internal: int

    @property
    def entries(self) -> list[Verdict]:
        return [*self.verdicts, *self.unexpected]

    @property
    def passed(self) -> bool:
        return all(v.status == OK or v.accepted for v in self.entries)

    def summary(self) -> dict[str, Any]:
        counts = {s: sum(1 for v in self.entries if v.status == s) for s in STATUSES}
        return {"cables": len(self.verdicts), **counts, "accepted": sum(1 for v in self.entries if v.accepted),
                "outside_design": self.outside_design, "internal": self.internal, "warnings": self.warnings,
                "passed": self.passed}

    def to_dict(self) -> dict[str, Any]:
        return {"cables": [v.to_dict() for v in self.entries], "summary": self.summary()}


def _evidence(link: Link) -> str:
    return f"{link.evidence} {link.source}".strip()


class Observed:
    """The observed links, indexed by each of their ends."""

    def __init__(self, links: Iterable[Link]) -> None:
        self.by_end: dict[Key, list[tuple[End, Link]]] = defaultdict(list)
        self.mac_ports: dict[str, list[tuple[End, End, Link]]] = defaultdict(list)
        self.links: list[Link] = []
        self.internal = 0
        self.nodes: set[str] = set()
        names: dict[str, set[str]] = defaultdict(set)
        seen: set[frozenset[Key]] = set()
        for link in links:
            self.nodes |= {short(link.local.node), short(link.remote.node)}
            if link.internal:
                self.internal += 1
                continue
            chassis = link.remote_info.get("chassis_id")
            if chassis and link.remote_info.get("no_system_name") != "true":
                names[short(link.remote.node)].add(chassis.lower())
            pair = frozenset({key(link.local), key(link.remote)})
            if pair not in seen:
                seen.add(pair)
                self.links.append(link)
            for here, there in ((link.local, link.remote), (link.remote, link.local)):
                self.by_end[key(here)].append((there, link))
                if MAC.match(here.port.strip().lower()):
                    self.mac_ports[short(here.node)].append((here, there, link))
        self.duplicates = {n: ids for n, ids in names.items() if len(ids) > 1}

    def all_links(self, end: End, host_macs: Mapping[Key, str]) -> list[tuple[End, Link]]:
        """What `end` connects to: its own port's links, and links at a MAC-named port of its node that is (or may
        be) this port; every dump's view of it (ibnetdiscover and iblinkinfo both show a link)."""
        found = list(self.by_end.get(key(end), []))
        mac = host_macs.get(key(end))
        for here, there, link in self.mac_ports.get(short(end.node), []):
            if mac is None or here.port.strip().lower() == mac.lower():
                found.append((there, link))
        return found

    def neighbours(self, end: End, host_macs: Mapping[Key, str]) -> list[tuple[End, Link]]:
        """What `end` connects to, each neighbour once."""
        found = self.all_links(end, host_macs)
        out: list[tuple[End, Link]] = []
        keys: set[Key] = set()
        for there, link in found:
            if key(there) not in keys:
                keys.add(key(there))
                out.append((there, link))
        return out


def matches(design: End, seen: End, host_macs: Mapping[Key, str]) -> bool:
    if design.node == ANY:
        return True
    if short(design.node) != short(seen.node):
        return False
    port = seen.port.strip().lower()
    if port == design.port.strip().lower():
        return True
    if MAC.match(port):
        mac = host_macs.get(key(design))
        return mac is None or mac.lower() == port
    return False


def _degraded(cable: Cable, links: Sequence[Link]) -> tuple[list[str], dict[str, Any]]:
    why: list[str] = []
    seen: dict[str, Any] = {}
    for link in links:
        if link.width:
            seen["width"] = link.width
        if link.speed:
            seen["speed"] = link.speed
        if link.could_be:
            seen["could_be"] = dict(link.could_be)
    if cable.width and seen.get("width"):
        want, got = width_lanes(cable.width), width_lanes(seen["width"])
        if want and got and got < want:
            why.append(f"width {seen['width']}, designed {cable.width}")
    if cable.speed and seen.get("speed"):
        want_ib, got_ib = ib_rank(cable.speed), ib_rank(seen["speed"])
        want_eth, got_eth = ethernet_gbps(cable.speed), ethernet_gbps(seen["speed"])
        if (want_ib is not None and got_ib is not None and got_ib < want_ib) or (want_eth is not None and got_eth is not None and got_eth < want_eth):
            why.append(f"speed {seen['speed']}, designed {cable.speed}")
    if why and seen.get("could_be"):
        why.append("iblinkinfo: could be " + " ".join(seen["could_be"].values()))
    return why, seen


def _names(ends: Sequence[End]) -> str:
    return ", ".join(str(e) for e in ends) or "nothing"


def judge(cable: Cable, observed: Observed, host_macs: Mapping[Key, str]) -> Verdict:
    seen_a = observed.neighbours(cable.a, host_macs)
    seen_b = [] if cable.b.node == ANY else observed.neighbours(cable.b, host_macs)
    ends_a, ends_b = [e for e, _ in seen_a], [e for e, _ in seen_b]
    evidence = list(dict.fromkeys(_evidence(link) for _, link in seen_a + seen_b))
    design = {k: v for k, v in (("speed", cable.speed), ("width", cable.width)) if v}
    verdict = Verdict(cable.a, cable.b, OK, "", ends_a, ends_b, evidence, design)
    direct = [link for end, link in observed.all_links(cable.a, host_macs) if matches(cable.b, end, host_macs)]
    if cable.b.node != ANY:
        direct += [link for end, link in observed.all_links(cable.b, host_macs) if matches(cable.a, end, host_macs)]
    others = [e for e in ends_a if not matches(cable.b, e, host_macs)]
    others += [e for e in ends_b if not matches(cable.a, e, host_macs)]
    if direct:
        if others or (cable.b.node == ANY and len(ends_a) > 1):
            verdict.status = MISWIRED
            verdict.reason = (f"more than one neighbour on one port: {cable.a} sees {_names(ends_a)}"
                              + (f"; {cable.b} sees {_names(ends_b)}" if cable.b.node != ANY else "")
                              + " (an unmanaged switch or a hub between the ends?)")
            return verdict
        dup = [e.node for e in ends_a + ends_b if short(e.node) in observed.duplicates]
        if dup:
            ids = ", ".join(sorted(observed.duplicates[short(dup[0])]))
            verdict.status = MISWIRED
            verdict.reason = (f"the neighbour's system name {dup[0]!r} is used by several chassis ({ids}): which of "
                              "them is cabled cannot be told; give each its own hostname")
            return verdict
        why, seen = _degraded(cable, direct)
        verdict.seen = seen
        mac_only = [e for e in ends_a + ends_b if MAC.match(e.port.strip().lower())]
        notes = [f"port {e.port} of {e.node} identified by MAC" for e in mac_only]
        if why:
            verdict.status = DEGRADED
            verdict.reason = "; ".join(why)
        else:
            verdict.reason = "; ".join(["cabled as designed", *notes])
            if cable.speed and "speed" not in seen:
                verdict.reason += "; speed not reported by the dump"
        return verdict
    if not ends_a and not ends_b:
        verdict.status = MISSING
        uncovered = [n for n in (cable.a.node, cable.b.node) if n != ANY and short(n) not in observed.nodes]
        verdict.reason = (f"no neighbour seen on {cable.a}" + ("" if cable.b.node == ANY else f" nor on {cable.b}")
                          + (f" (no dump shows {' or '.join(uncovered)} at all)" if uncovered else ""))
        return verdict
    verdict.status = MISWIRED
    parts = [f"{cable.a} goes to {_names(ends_a)}"]
    if cable.b.node != ANY:
        parts.append(f"{cable.b} goes to {_names(ends_b)}")
    verdict.reason = "; ".join(parts)
    return verdict


def resolve_fdb(links: list[Link], macs: Mapping[Key, str]) -> tuple[list[Link], int]:
    """Forwarding-table links (evidence fdb: a MAC learned on a switch port) named by the host interface that owns
    the MAC; only at a port where no LLDP neighbour is seen (LLDP names the neighbour itself). Returns the links
    and the number of learned MACs that belong to no known host interface (left out)."""
    owner = {mac: End(host, port) for (host, port), mac in macs.items()}
    direct = {key(lk.local) for lk in links if lk.evidence != "fdb"} | {key(lk.remote) for lk in links
                                                                        if lk.evidence != "fdb"}
    out: list[Link] = []
    unresolved = 0
    for link in links:
        if link.evidence == "fdb":
            if key(link.local) in direct:
                continue
            end = owner.get(link.remote.node.lower())
            if end is None:
                unresolved += 1
                continue
            link = replace(link, remote=end)
        out.append(link)
    return out, unresolved


def check(plan: Sequence[Cable], links: Iterable[Link], accepted: Sequence[Accepted] = (),
          host_macs: Mapping[Key, str] | None = None) -> Report:
    macs = {k: v.lower() for k, v in (host_macs or {}).items()}
    links, unresolved = resolve_fdb(list(links), macs)
    observed = Observed(links)
    verdicts = [judge(cable, observed, macs) for cable in plan]
    designed_ends = [c.a for c in plan] + [c.b for c in plan if c.b.node != ANY]
    designed_keys = {key(e) for e in designed_ends}
    designed_nodes = {short(e.node) for e in designed_ends}
    by_node: dict[str, list[End]] = defaultdict(list)
    for end in designed_ends:
        by_node[short(end.node)].append(end)
    unexpected: list[Verdict] = []
    outside = 0
    for link in observed.links:
        if key(link.local) in designed_keys or key(link.remote) in designed_keys:
            continue
        mac_ends = [e for e in (link.local, link.remote) if MAC.match(e.port.strip().lower())]
        if any(matches(d, e, macs) for e in mac_ends for d in by_node.get(short(e.node), ())):
            continue
        if short(link.local.node) in designed_nodes and short(link.remote.node) in designed_nodes:
            loop = short(link.local.node) == short(link.remote.node)
            reason = ("a self-loop: both ends on one node" if loop else "not in the design")
            unexpected.append(Verdict(link.local, link.remote, UNEXPECTED, reason, [link.remote], [link.local],
                                      [_evidence(link)]))
        else:
            outside += 1
    warnings = [f"system name {name!r} is used by {len(ids)} chassis ({', '.join(sorted(ids))}): rename them"
                for name, ids in sorted(observed.duplicates.items())]
    if unresolved:
        warnings.append(f"{unresolved} MAC address(es) the switches learned belong to no host interface given "
                        "(host MACs): not judged")
    report = Report(verdicts, unexpected, warnings, outside, observed.internal)
    for verdict in report.entries:
        for acc in accepted:
            if verdict.status == acc.status and any(key(e) == key(End(acc.node, acc.port))
                                                    for e in (verdict.a, verdict.b)):
                verdict.accepted = acc.reason
    return report


def accepted_from_data(data: Any, where: str) -> list[Accepted]:
    from .model import CablingError

    if data is None:
        return []
    if not isinstance(data, list):
        raise CablingError(f"{where}: accepted deviations are a list of {{node, port, status, reason}}")
    out = []
    for pos, item in enumerate(data):
        if not isinstance(item, Mapping) or set(item) != {"node", "port", "status", "reason"} \
                or item["status"] not in STATUSES[1:] or not str(item["reason"]).strip():
            raise CablingError(f"{where}: entry {pos + 1} must be {{node, port, status (one of "
                               f"{', '.join(STATUSES[1:])}), reason}}, got {item!r}")
        out.append(Accepted(str(item["node"]), str(item["port"]), str(item["status"]), str(item["reason"])))
    return out
