"""Ceilings derived from the inventory's topology, and malformed threshold data."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from validation import thresholds as th
from validation.site import Measured, Site

MEASURED = Measured(judged=True, storage={"dgx01": 4850.0}, storage_aggregate=19000.0,
                    fabric={"dgx01+dgx02": 196.0, "dgx02+dgx03": 150.0})


def site_of(ctx: dict[str, Any], measured: Measured | None = None) -> Site:
    site = Site.from_context(ctx)
    return replace(site, measured=measured) if measured is not None else site


def test_per_dgx_ceiling_from_the_production_inventory(production_ctx):
    # dgx01 (100 GbE) mounts through f800-1/40gige-1 (40 GbE): 0.9 x 40 Gb/s = 4500 MB/s, below the reference's 4959
    ceiling, how = th.node_bottleneck_link_MBps(site_of(production_ctx), "dgx01")
    assert ceiling == pytest.approx(5000.0) and "40 Gb/s" in how
    bounds = th.bounds_for(site_of(production_ctx, MEASURED), "fio_node_read_MBps", "dgx01")
    assert [(b.kind, b.limit) for b in bounds] == [("ceiling", pytest.approx(4500.0)),
                                                   ("measured", pytest.approx(0.8 * 4850.0))]
    assert bounds[0].limit < 4959
    assert "4959" in bounds[0].source and "iperf3, this run" in bounds[1].detail


def test_aggregate_ceiling_is_the_storage_side(production_ctx):
    ceiling, how = th.aggregate_links_MBps(site_of(production_ctx), production_ctx["nodes"])
    # clients 4 x 100 Gb/s, storage links in use 4 x 40 Gb/s -> 160 Gb/s = 20000 MB/s; 0.9 x = 18000 < 18924
    assert ceiling == pytest.approx(20000.0) and "4 PowerScale links" in how
    bounds = th.bounds_for(site_of(production_ctx, MEASURED), "fio_aggregate_read_MBps", None)
    assert bounds[0].limit == pytest.approx(18000.0) and bounds[0].limit < 18924
    assert bounds[1].kind == "measured" and bounds[1].limit == pytest.approx(0.8 * 19000.0)


def test_multi_node_busbw_floor_hca_ceiling_and_the_slowest_measured_pair(production_ctx):
    site = site_of(production_ctx, MEASURED)
    bounds = {b.kind: b.limit for b in th.bounds_for(site, "nccl_multi_node_busbw_gbps", None)}
    assert bounds == {"floor": 180.0, "ceiling": pytest.approx(180.0),  # 0.9 x 8 x 200 Gb/s / 8
                      "measured": pytest.approx(0.85 * 150.0)}           # the slowest pair of this run
    pair = {b.kind: b.limit for b in th.bounds_for(site, "nccl_pair_busbw_gbps", "dgx01+dgx02")}
    assert pair["measured"] == pytest.approx(0.85 * 196.0)


def test_a_threshold_on_a_baseline_that_was_not_measured_cannot_be_evaluated(production_ctx):
    with pytest.raises(th.ThresholdError, match="no path baseline was measured"):
        th.bounds_for(site_of(production_ctx), "fio_node_read_MBps", "dgx01")
    site = site_of(production_ctx, Measured(judged=True, storage={"dgx01": 4850.0}))
    with pytest.raises(th.ThresholdError, match=r"storage path baseline of dgx02 was not measured"):
        th.bounds_for(site, "fio_node_read_MBps", "dgx02")
    with pytest.raises(th.ThresholdError, match="aggregate storage baseline"):
        th.bounds_for(site, "fio_aggregate_read_MBps", None)
    with pytest.raises(th.ThresholdError, match="no compute-fabric baseline"):
        th.bounds_for(site, "nccl_multi_node_busbw_gbps", None)
    with pytest.raises(th.ThresholdError, match="dgx03\\+dgx04 was not measured"):
        th.bounds_for(site_of(production_ctx, MEASURED), "nccl_pair_busbw_gbps", "dgx03+dgx04")


def test_one_dgx_is_every_dgx_at_once(production_ctx):
    """A site of one DGX: the aggregate is judged against that DGX's own storage baseline (the paths stage runs no
    second, identical storage-all case), and the host's own scaling is 1; still not measured, still an error."""
    one = site_of(dict(production_ctx, nodes=["dgx01"]), Measured(judged=True, storage={"dgx01": 4850.0}))
    measured = [b for b in th.bounds_for(one, "fio_aggregate_read_MBps", None) if b.kind == "measured"]
    assert [b.limit for b in measured] == [pytest.approx(0.8 * 4850.0)]
    assert "dgx01, the only DGX" in measured[0].detail
    assert th.host_scaling(one, None)[0] == 1.0
    none = site_of(dict(production_ctx, nodes=["dgx01"]), Measured(judged=True, storage={}))
    with pytest.raises(th.ThresholdError, match="dgx01, the only DGX"):
        th.bounds_for(none, "fio_aggregate_read_MBps", None)
    two = site_of(dict(production_ctx, nodes=["dgx01", "dgx02"]), Measured(judged=True, storage={"dgx01": 4850.0}))
    with pytest.raises(th.ThresholdError, match="aggregate storage baseline"):
        th.bounds_for(two, "fio_aggregate_read_MBps", None)
    with pytest.raises(th.ThresholdError, match="host's capacity"):
        th.host_scaling(two, None)


def test_single_node_default_is_the_reference_floor(production_ctx):
    b = th.bounds_for(site_of(production_ctx), "nccl_single_node_busbw_gbps", "dgx01")
    assert [(x.kind, x.limit) for x in b] == [("floor", 228.0)] and "Azure NHC" in b[0].source


def test_round_robin_and_smartconnect_modes(production_ctx):
    rr = copy.deepcopy(production_ctx)
    rr["nfs_server_mode"] = "round_robin"
    assert th.server_nics_for(site_of(rr), "dgx02")[0][0] == "f800-1"  # 8 NICs in inventory order: dgx02 -> f800-1/40gige-2
    assert th.aggregate_links_MBps(site_of(rr), rr["nodes"])[0] == pytest.approx(20000.0)
    sc = copy.deepcopy(production_ctx)
    sc["nfs_server_mode"] = "smartconnect"
    assert th.node_bottleneck_link_MBps(site_of(sc), "dgx03")[0] == pytest.approx(5000.0)
    assert th.aggregate_links_MBps(site_of(sc), sc["nodes"])[0] == pytest.approx(40000.0)  # all 8 x 40 GbE in the pool


def test_lab_vm_has_no_hca_ceiling(lab_ctx):
    ctx = copy.deepcopy(lab_ctx)
    ctx["acceptance_thresholds"] = [{"metric": "nccl_multi_node_busbw_gbps", "source": "x",
                                     "ceiling": {"derive": "hcas_x_link_rate", "fraction": 0.9}}]
    with pytest.raises(th.ThresholdError, match="0 HCAs"):
        th.bounds_for(site_of(ctx), "nccl_multi_node_busbw_gbps", None)


def test_static_map_without_entry_names_the_fix(production_ctx):
    ctx = copy.deepcopy(production_ctx)
    del ctx["nfs_server_map"]["dgx04"]
    with pytest.raises(th.ThresholdError, match=r"dgx04.*nfs_server_map"):
        th.node_bottleneck_link_MBps(site_of(ctx), "dgx04")


@pytest.mark.parametrize("entry, message", [
    ({"metric": "nope", "source": "s", "floor": 1}, "unknown metric"),
    ({"metric": "fio_node_read_MBps", "floor": 1}, "records its source"),
    ({"metric": "fio_node_read_MBps", "source": "s"}, "at least one"),
    ({"metric": "fio_node_read_MBps", "source": "s", "floor": "fast"}, "not a number"),
    ({"metric": "fio_node_read_MBps", "source": "s", "ceiling": {"derive": "magic", "fraction": 0.9}}, "derive"),
    ({"metric": "fio_node_read_MBps", "source": "s", "ceiling": {"derive": "aggregate_links", "fraction": 9}},
     "fraction"),
    ({"metric": "fio_node_read_MBps", "source": "s", "measured": {"derive": "guess", "fraction": 0.5}}, "derive"),
    ({"metric": "fio_node_read_MBps", "source": "s", "measured": {"derive": "storage_path_baseline", "fraction": 0}},
     "fraction"),
])
def test_malformed_entries(entry, message):
    with pytest.raises(th.ThresholdError, match=message):
        th.check_entry(entry, 0)


def test_every_inventory_threshold_records_a_source(production_ctx, lab_ctx):
    for ctx in (production_ctx, lab_ctx):
        for i, entry in enumerate(ctx["acceptance_thresholds"]):
            th.check_entry(entry, i)
        assert {e["metric"] for e in ctx["acceptance_thresholds"]} == {e["metric"] for e in lab_ctx["acceptance_thresholds"]}
