"""Pair rounds and localisation (validation/localise.py) against the model engine (tests/scale/model_engine.py, a
model of the cluster, not a measurement) at N = 8, 32 and 140, with one fault injected."""

from __future__ import annotations

import pytest

from tests.scale.model_engine import BUSBW_GBPS, ModelCluster
from validation import localise
from validation.checks import ring_pairs

FLOOR = 0.9 * BUSBW_GBPS
SIZES = [8, 32, 140]


def names(n: int) -> list[str]:
    return [f"dgx{i:03d}" for i in range(1, n + 1)]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 31, 32, 139, 140, 560])
def test_ring_edges_split_into_two_or_three_rounds_of_disjoint_pairs(n: int) -> None:
    nodes = names(n)
    edges = localise.ring_edges(nodes)
    rounds = localise.pair_rounds(edges)
    assert sorted(p for r in rounds for p in r) == sorted(edges), "every edge once"
    assert len(rounds) == (1 if n == 2 else 3 if n % 2 else 2)
    for r in rounds:
        members = [x for p in r for x in p]
        assert len(members) == len(set(members)), "a round's pairs are disjoint"
    assert localise.pair_rounds(ring_pairs(nodes)) == (rounds if n > 2 else [])


def test_pairs_out_of_ring_order_are_refused() -> None:
    with pytest.raises(ValueError, match="ring"):
        localise.pair_rounds([("a", "b"), ("b", "c"), ("a", "d"), ("d", "c")])


@pytest.mark.parametrize("n", SIZES)
def test_pair_stage_takes_at_most_three_rounds(n: int) -> None:
    model = ModelCluster(names(n))
    results, rounds = localise.run_pair_stage(model.nodes, model)
    assert rounds <= 3 and len(model.launches) == rounds
    assert len(results) == n


def localise_with(model: ModelCluster, use_pairs: bool) -> localise.Finding:
    nodes = model.nodes
    pairs = localise.run_pair_stage(nodes, model)[0] if use_pairs else None
    model.launches.clear()
    whole = model.launch([nodes])[0]
    model.launches.clear()
    return localise.localise(nodes, whole, FLOOR, model, pairs)


@pytest.mark.parametrize("use_pairs", [True, False], ids=["pairs", "bisection"])
@pytest.mark.parametrize("n", SIZES)
def test_healthy_cluster_passes_with_nobody_blamed(n: int, use_pairs: bool) -> None:
    found = localise_with(ModelCluster(names(n)), use_pairs)
    assert (found.kind, found.nodes, found.rounds) == ("none", (), 0)


@pytest.mark.parametrize("fault", ["slow_node", "dead_hca"])
@pytest.mark.parametrize("use_pairs", [True, False], ids=["pairs", "bisection"])
@pytest.mark.parametrize("n", SIZES)
def test_slow_or_dead_node_is_named_within_the_bound(n: int, use_pairs: bool, fault: str) -> None:
    nodes = names(n)
    for culprit in (nodes[0], nodes[n // 2 - 1], nodes[-1]):
        where = (culprit,) if fault == "slow_node" else (culprit, "mlx5_6")
        model = ModelCluster(nodes, fault=(fault, where))
        found = localise_with(model, use_pairs)
        assert (found.kind, found.nodes) == ("node", (culprit,)), found
        assert found.rounds == len(model.launches) <= localise.bound(n)
        for r in model.launches:
            members = [x for g in r for x in g]
            assert len(members) == len(set(members))


@pytest.mark.parametrize("use_pairs", [True, False], ids=["pairs", "bisection"])
@pytest.mark.parametrize("n", SIZES)
def test_slow_link_is_named_by_both_ends(n: int, use_pairs: bool) -> None:
    nodes = names(n)
    for i in (0, n // 2 - 1, n // 3, n - 1):
        ends = (nodes[i], nodes[(i + 1) % n])
        model = ModelCluster(nodes, fault=("slow_link", ends))
        found = localise_with(model, use_pairs)
        assert found.kind == "link" and set(found.nodes) == set(ends), (ends, found)
        assert found.rounds == len(model.launches) <= localise.bound(n)
