"""Pair cases in rounds of disjoint pairs, and localisation of a slow node or link among N (docs/scale.md).

- ``pair_rounds``: the ring's edges (checks.ring_pairs) split into 2 matchings (3 when N is odd); every pair of a
  round runs at once, so the pair stages take 2 or 3 rounds whatever N is. The validate role launches the NCCL
  pairs and the fabric path pairs by these rounds (``python -m validation rounds``, roles/validate).
- ``localise``: when the all-node all-reduce (or the aggregate fio) falls short, name the culprit. The pair
  results first (a node whose two ring pairs both fall short is the slow node; one short pair between two
  nodes whose other pairs pass is the slow link, named by both ends); then a bisection of the node set, both
  halves launched at once, every failing group split again in the next round, a lone node measured with a
  known-good partner. At most ceil(log2 N) + 2 rounds of launches.

A ``Launcher`` runs one round: groups of disjoint nodes, all at once, one figure (or an error) per group. The
model engine of the tests and the benchmark (tests/scale/model_engine.py) is one; on a cluster the launches are
the role's NCCL cases.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

Pair = tuple[str, str]


def ring_edges(nodes: Sequence[str]) -> list[Pair]:
    """The ring's edges n0-n1, ..., n(k-1)-n0 (checks.ring_pairs without its 2-node rule: two nodes are one edge)."""
    if len(nodes) < 2:
        return []
    if len(nodes) == 2:
        return [(nodes[0], nodes[1])]
    return [(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))]


def pair_rounds(pairs: Sequence[Pair]) -> list[list[Pair]]:
    """The ring's edges (in ring order, as ring_pairs or ring_edges give them) in rounds of disjoint pairs: the
    even edges, then the odd ones; with an odd ring the last edge (closing the ring) alone in a third round.
    Raises ValueError when the pairs are not a ring's edges in order (a round would hold a node twice)."""
    edges: list[Pair] = [(p[0], p[1]) for p in pairs]
    if len(edges) <= 1:
        return [edges] if edges else []
    n = len(edges)
    closing = [edges[-1]] if n % 2 else []
    body = edges[:-1] if n % 2 else edges
    rounds = [r for r in (body[0::2], body[1::2], closing) if r]
    for r in rounds:
        members = [node for pair in r for node in pair]
        if len(members) != len(set(members)):
            raise ValueError(f"pairs {list(pairs)} are not a ring's edges in order: a round would hold a node twice")
    return [list(r) for r in rounds]


# ----------------------------------------------------------------------------------------- localisation


@dataclass(frozen=True)
class Outcome:
    """One group's launch: its figure, or None with the reason it failed (fail closed: a failure is short)."""

    nodes: tuple[str, ...]
    value: float | None
    error: str = ""


class Launcher(Protocol):
    def launch(self, groups: Sequence[Sequence[str]]) -> list[Outcome]:
        """Run every group at once (disjoint nodes), one outcome per group, in order."""
        ...


@dataclass(frozen=True)
class Finding:
    """Who is blamed: kind node (nodes: the one), link (nodes: both ends), none (all passed), or unresolved
    (the shortfall did not show in any group smaller than the whole set)."""

    kind: str
    nodes: tuple[str, ...]
    rounds: int
    evidence: tuple[str, ...] = ()
    launches: tuple[tuple[str, ...], ...] = field(default=(), compare=False)


def bound(n: int) -> int:
    """The most rounds a localisation may take among n nodes: ceil(log2 n) + 2."""
    return math.ceil(math.log2(max(n, 2))) + 2


def _short(outcome: Outcome | None, floor: float) -> bool:
    return outcome is None or outcome.value is None or outcome.value < floor


def _show(outcome: Outcome) -> str:
    what = f"{outcome.value:g}" if outcome.value is not None else f"failed ({outcome.error})"
    return f"{'+'.join(outcome.nodes)}: {what}"


def from_pairs(nodes: Sequence[str], pairs: Mapping[Pair, Outcome], floor: float) -> Finding | None:
    """The pair results alone: every node whose ring pairs all fall short is slow; a short pair whose two ends
    each pass another pair is a slow link. None when the pairs show nothing (or were not measured)."""
    edges = ring_edges(nodes)
    if len(nodes) < 3 or any(e not in pairs for e in edges):
        return None
    short = [e for e in edges if _short(pairs[e], floor)]
    if not short:
        return None
    evidence = tuple(_show(pairs[e]) for e in short)
    by_node: dict[str, list[Pair]] = {n: [] for n in nodes}
    for e in edges:
        for n in e:
            by_node[n].append(e)
    slow = [n for n in nodes if all(_short(pairs[e], floor) for e in by_node[n])]
    if len(slow) == 1:
        return Finding("node", (slow[0],), 0, evidence)
    if len(short) == 1 and not slow:
        return Finding("link", short[0], 0, evidence)
    if slow:
        return Finding("node", tuple(slow), 0, evidence)
    return None


def bisect(nodes: Sequence[str], launcher: Launcher, floor: float, good: Sequence[str] = ()) -> Finding:
    """Bisection of a group that falls short: each round launches both halves of every failing group at once; a
    group of two that fails is split into two nodes, each measured with a known-good partner. When both halves of
    a group pass, the fault is on a link the split cut: the group's two seam pairs are measured (one round)."""
    known_good = list(good)
    failing: list[list[str]] = [list(nodes)]
    rounds = 0
    launches: list[tuple[str, ...]] = []
    evidence: list[str] = []
    culprits: list[str] = []
    links: list[Pair] = []
    while failing and rounds < bound(len(nodes)):
        plan: list[tuple[list[str], list[str]]] = []  # (group launched, the suspect nodes it stands for)
        partners = [g for g in known_good if all(g not in f for f in failing)]
        for group in failing:
            if len(group) >= 4 or (len(group) == 3):
                half = (len(group) + 1) // 2
                for part in (group[:half], group[half:]):
                    if len(part) >= 2:
                        plan.append((part, part))
                    elif partners:
                        plan.append(([part[0], partners.pop()], part))
                    else:
                        plan.append((part, part))
            elif len(group) == 2:
                for node in group:
                    if partners:
                        plan.append(([node, partners.pop()], [node]))
                    else:
                        culprits += group  # no known-good node to tell the two apart
                        break
            else:
                culprits += group
        plan = [p for p in plan if len(p[0]) >= 2]
        if not plan:
            break
        rounds += 1
        outcomes = launcher.launch([g for g, _ in plan])
        launches += [tuple(g) for g, _ in plan]
        next_failing: list[list[str]] = []
        by_parent: dict[int, list[bool]] = {}
        for (_launched, suspects), outcome in zip(plan, outcomes, strict=True):
            bad = _short(outcome, floor)
            if bad:
                evidence.append(_show(outcome))
            parent = next(i for i, f in enumerate(failing) if suspects[0] in f)
            by_parent.setdefault(parent, []).append(bad)
            if not bad:
                known_good += [n for n in suspects if n not in known_good]
            elif len(suspects) == 1:
                culprits.append(suspects[0])
            else:
                next_failing.append(suspects)
        for parent, results in by_parent.items():
            group = failing[parent]
            if not any(results) and len(group) >= 3:
                half = (len(group) + 1) // 2
                seams = [(group[half - 1], group[half]), (group[-1], group[0])]
                rounds += 1
                seam_out = launcher.launch([list(s) for s in seams])
                launches += [tuple(s) for s in seams]
                for seam, outcome in zip(seams, seam_out, strict=True):
                    if _short(outcome, floor):
                        links.append(seam)
                        evidence.append(_show(outcome))
            elif not any(results) and len(group) == 2:
                links.append((group[0], group[1]))
        failing = next_failing
    if culprits:
        return Finding("node", tuple(dict.fromkeys(culprits)), rounds, tuple(evidence), tuple(launches))
    if links:
        return Finding("link", links[0], rounds, tuple(evidence), tuple(launches))
    return Finding("unresolved", tuple(nodes), rounds, tuple(evidence), tuple(launches))


def localise(nodes: Sequence[str], all_nodes: Outcome, floor: float, launcher: Launcher,
             pairs: Mapping[Pair, Outcome] | None = None) -> Finding:
    """Who makes the all-node figure fall short: nobody when it does not; else the pair results, else bisection."""
    if not _short(all_nodes, floor):
        return Finding("none", (), 0)
    found = from_pairs(nodes, pairs or {}, floor)
    if found is not None:
        return found
    good = [n for n in nodes if pairs and all(not _short(pairs[e], floor) for e in ring_edges(nodes)
                                              if n in e and e in pairs)]
    return bisect(nodes, launcher, floor, good if pairs else ())


def run_pair_stage(nodes: Sequence[str], launcher: Launcher) -> tuple[dict[Pair, Outcome], int]:
    """Every ring pair, in pair_rounds: the results and the number of rounds it took."""
    results: dict[Pair, Outcome] = {}
    rounds = pair_rounds(ring_edges(nodes))
    for r in rounds:
        for pair, outcome in zip(r, launcher.launch([list(p) for p in r]), strict=True):
            results[pair] = outcome
    return results, len(rounds)


