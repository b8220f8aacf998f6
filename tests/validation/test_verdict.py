"""Verdict: sanity first, then performance; every failure mode yields FAIL with the reason, never PASS."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import (
    ADDR,
    NODES,
    ddp_asked,
    ddp_doc,
    fio_meta,
    fio_node_meta,
    fixture_text,
    nccl_meta,
    repeated,
    time_based_read,
)

from validation.verdict import FAIL, PASS, evaluate


def by_label(verdict):
    return {c.label: c for c in verdict.checks}


def test_complete_production_run_passes(production_run, production_ctx):
    v = evaluate(production_run, production_ctx)
    assert v.status == PASS, v.failed
    checks = by_label(v)
    assert checks["fio_node_read_MBps[dgx01]"].value == pytest.approx(4712.0)
    assert checks["nccl_multi_node_busbw_gbps"].value == pytest.approx(191.23)
    single = checks["nccl_single_node_busbw_gbps[dgx03]"]
    assert single.samples == [pytest.approx(237.94)] * 5 and single.spread_pct == 0.0
    assert checks["ddp_scaling_efficiency"].value == pytest.approx(63800 / (4 * 16500))


def assert_fails(v, label, *fragments):
    assert v.status == FAIL
    assert label in v.failed, v.failed
    text = " ".join(by_label(v)[label].reasons)
    for f in fragments:
        assert f in text, text


def test_truncated_log_fails(production_run, production_ctx, replace_case):
    replace_case(production_run, "nccl", "all", {"r1.log": fixture_text("nccl/two_nodes_truncated.log")},
                 {"nodes": NODES, "expected_ranks": 32})
    v = evaluate(production_run, production_ctx)
    assert_fails(v, "nccl_sanity[all]", "incomplete", "Avg bus bandwidth")
    assert "nccl_multi_node_busbw_gbps" in v.failed


def test_wrong_values_fail(production_run, production_ctx, replace_case):
    text = fixture_text("nccl/single_node_wrong.log").replace("dgx02", "dgx01")
    replace_case(production_run, "nccl", "single-dgx01", {"r1.log": text}, {"nodes": ["dgx01"], "expected_ranks": 8})
    assert_fails(evaluate(production_run, production_ctx), "nccl_sanity[single-dgx01]", "#wrong > 0", "FAILED")


def test_out_of_bounds_fails(production_run, production_ctx, replace_case):
    text = fixture_text("nccl/two_nodes_out_of_bounds.log")
    replace_case(production_run, "nccl", "pair-dgx04-dgx01", {"r1.log": text}, {"nodes": ["dgx04", "dgx01"]})
    assert_fails(evaluate(production_run, production_ctx), "nccl_sanity[pair-dgx04-dgx01]", "out of bounds values: 248")


def test_rank_count_mismatch_fails(production_run, production_ctx, replace_case):
    # the all-node case produced a two-node (16 rank) table: a node dropped out
    text = fixture_text("nccl/two_nodes_mpirun_tag_output.log")
    replace_case(production_run, "nccl", "all", {"r1.log": text}, nccl_meta(NODES, 33554432, 8589934592, 1, repeats=1))
    assert_fails(evaluate(production_run, production_ctx), "nccl_sanity[all]", "ranks: asked 32, done 16",
                 "nodes: asked [dgx01, dgx02, dgx03, dgx04], done [dgx01, dgx02]; missing dgx03, dgx04")


def test_data_check_disabled_fails(production_run, production_ctx, replace_case):
    text = fixture_text("nccl/single_node_no_check.log").replace("dgx03", "dgx01")
    replace_case(production_run, "nccl", "single-dgx01", {"r1.log": text}, {"nodes": ["dgx01"]})
    assert_fails(evaluate(production_run, production_ctx), "nccl_sanity[single-dgx01]", "-c 0")


def test_fio_error_json_fails(production_run, production_ctx, replace_case):
    replace_case(production_run, "fio", "node-dgx02", {"r1.json": fixture_text("fio/job_error.json")},
                 {"expected_clients": {}})
    assert_fails(evaluate(production_run, production_ctx), "fio_sanity[node-dgx02]", "error 2")


def test_missing_fio_client_fails(production_run, production_ctx, replace_case):
    doc = json.loads(fixture_text("fio/client_server_4dgx_production.json").split("\n\n", 1)[1])
    doc["client_stats"] = [c for c in doc["client_stats"] if c["hostname"] != ADDR["dgx03"]]
    replace_case(production_run, "fio", "aggregate", {"r1.json": time_based_read(json.dumps(doc))}, fio_meta(NODES))
    assert_fails(evaluate(production_run, production_ctx), "fio_sanity[aggregate]", "missing dgx03 (198.51.100.13:8765)")


def test_real_missing_client_fixture_fails(production_run, production_ctx, replace_case):
    replace_case(production_run, "fio", "aggregate", {"r1.json": fixture_text("fio/client_server_missing_client.json")},
                 {"asked": {"clients": {"127.0.0.1:18765": "dgx01", "127.0.0.1:18767": "dgx02"}}})
    assert_fails(evaluate(production_run, production_ctx), "fio_sanity[aggregate]", "missing dgx02 (127.0.0.1:18767)")


def test_timeout_and_crash_fail(production_run, production_ctx, replace_case):
    text = fixture_text("nccl/single_node_dgx_a100.log")
    replace_case(production_run, "nccl", "single-dgx01", {"r1.log": text}, {"nodes": ["dgx01"]},
                 samples=[{"file": "r1.log", "rc": -15, "timed_out": True, "duration_s": 1800}])
    replace_case(production_run, "ddp", "n4", {}, {"nodes": NODES, "reason": "runner crashed: OSError()"}, samples=[])
    v = evaluate(production_run, production_ctx)
    assert_fails(v, "nccl_sanity[single-dgx01]", "timed out")
    assert_fails(v, "ddp_sanity[n4]", "runner crashed")
    assert "ddp_scaling_efficiency" in v.failed


def test_missing_case_is_not_measured(production_run, production_ctx):
    import shutil

    shutil.rmtree(production_run / "raw" / "fio" / "node-dgx04")
    v = evaluate(production_run, production_ctx)
    assert_fails(v, "fio_sanity[node-dgx04]", "not measured")
    assert "fio_node_read_MBps[dgx04]" in v.failed


def test_unparseable_sample_fails(production_run, production_ctx, replace_case):
    replace_case(production_run, "fio", "node-dgx01", {"r1.json": "fio: failed to connect to 198.51.100.11:8765\n"},
                 {"expected_clients": {f"{ADDR['dgx01']}:8765": "dgx01"}})
    assert_fails(evaluate(production_run, production_ctx), "fio_sanity[node-dgx01]", "unparseable")


def test_peer_launcher_failure_fails(production_run, production_ctx, replace_case):
    world = 32
    files = {f"{m}-r1.json": ddp_doc(m, world, 60000.0) for m in ("synthetic", "real")}
    d = replace_case(production_run, "ddp", "n4", files, {"nodes": NODES, "peers": ["dgx02", "dgx03", "dgx04"]},
                     samples=[{"file": f, "rc": 0, "mode": f.split("-")[0]} for f in files])
    for n in ("dgx02", "dgx03"):
        (d / f"peer-{n}.json").write_text(json.dumps({"samples": [{"file": "x", "rc": 0}]}))
    v = evaluate(production_run, production_ctx)
    assert_fails(v, "ddp_sanity[n4]", "dgx04: no launcher result")


def test_ddp_world_size_mismatch(production_run, production_ctx, replace_case):
    files = {f"{m}-r1.json": ddp_doc(m, 24, 50000.0) for m in ("synthetic", "real")}
    replace_case(production_run, "ddp", "n4", files, {"nodes": NODES, "asked": ddp_asked(NODES, repeats=1)},
                 samples=[{"file": f, "rc": 0, "mode": f.split("-")[0]} for f in files])
    assert_fails(evaluate(production_run, production_ctx), "ddp_sanity[n4]", "world_size: asked 32, done 24")


def test_outlier_node_fails(production_run, production_ctx, replace_case):
    text = time_based_read(fixture_text("fio/client_server_1dgx_production.json")).replace(ADDR["dgx01"], ADDR["dgx03"])
    slow = text.replace('"bw_bytes": 4712000000', '"bw_bytes": 4505000000')
    replace_case(production_run, "fio", "node-dgx03", repeated(slow, "json"), fio_node_meta("dgx03"))
    v = evaluate(production_run, production_ctx)
    # 4505 MB/s is above the 4500 ceiling, but 4.4% behind the best node: within 5% -> pass
    assert "fio_node_read_MBps[dgx03]" not in v.failed
    ctx = copy.deepcopy(production_ctx)
    ctx["acceptance_outlier_max_behind_pct"] = 3
    assert_fails(evaluate(production_run, ctx), "fio_node_read_MBps[dgx03]", "behind the best (dgx01)")


def test_below_derived_ceiling_fails(production_run, production_ctx, replace_case):
    text = time_based_read(fixture_text("fio/client_server_1dgx_production.json")).replace(
        '"bw_bytes": 4712000000', '"bw_bytes": 4400000000')
    replace_case(production_run, "fio", "node-dgx01", repeated(text, "json"), fio_node_meta("dgx01"))
    assert_fails(evaluate(production_run, production_ctx), "fio_node_read_MBps[dgx01]", "< ceiling 4500",
                 "min(dgx01 100 Gb/s, f800-1/40gige-1 40 Gb/s)")


def test_unmeasured_threshold_and_baseline(production_run, production_ctx, tmp_path):
    ctx = copy.deepcopy(production_ctx)
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps({"verdict": {"checks": [
        {"label": "nccl_multi_node_busbw_gbps", "kind": "performance", "value": 230.0}]}}))
    ctx["acceptance_baseline"] = {"path": str(base), "max_regression_pct": 10}
    assert_fails(evaluate(production_run, ctx), "nccl_multi_node_busbw_gbps", "< baseline 207")


def test_disabled_stage_is_reported_and_nothing_measured_is_fail(production_run, production_ctx):
    ctx = copy.deepcopy(production_ctx)
    ctx["validation_stages"] = {"nccl": {"enabled": False}, "fio": {"enabled": False}, "ddp": {"enabled": False}}
    v = evaluate(production_run, ctx)
    assert v.status == FAIL  # nothing judged is never a PASS


def test_degraded_hca_fails_the_node(production_run, production_ctx, replace_case):
    replace_case(production_run, "sysinfo", "dgx02", {"topo.txt": fixture_text("topo/dgx_a100_topo_m.txt"),
                                                     "ibstat.txt": fixture_text("topo/dgx_a100_ibstat_degraded.txt")},
                 {"nodes": ["dgx02"]})
    assert_fails(evaluate(production_run, production_ctx), "fabric_sanity[dgx02]", "6 compute HCA ports Active",
                 "mlx5_9 port 1: state Down/Polling")


def test_fio_that_moved_nothing_fails(production_run, production_ctx, replace_case):
    # real lab output: exec_prerun cut at ";" by fio's parser, every client 0 bytes, error 0, exit status 0
    text = fixture_text("fio/lab_prerun_truncated_zero_bytes.json")
    replace_case(production_run, "fio", "aggregate", {"r1.json": text},
                 {"expected_clients": {"203.0.113.11:8765": "dgx01", "203.0.113.12:8765": "dgx02"}})
    assert_fails(evaluate(production_run, production_ctx), "fio_sanity[aggregate]", "no read bandwidth")


def test_a_full_scratch_export_is_named_with_its_fix():
    from validation.verdict import full_scratch_hint

    meta = {"asked": {"directories": {"dgx01": "/mnt/scratch/.validation-scratch/run1/dgx01",
                                      "dgx02": "/mnt/scratch/.validation-scratch/run1/dgx02"}}}
    for problem in ("r1.json: 198.51.100.11:8765 job 'acceptance-read' ended with error 28",
                    "r1.json: fio: pid=812, err=122/file:filesetup.c:240, func=write, error=Disk quota exceeded",
                    "r1.json: fio: io_u error on file /mnt/scratch/x.0.0: No space left on device: write offset=0"):
        hint = full_scratch_hint([problem], meta)
        assert hint and "/mnt/scratch/.validation-scratch/run1" in hint and "powerscale_quotas" in hint, problem
    assert full_scratch_hint(["r1.json: job 'acceptance-read' ended with error 5", "killed after the 60 s limit"],
                             meta) is None


def test_a_node_that_did_not_finish_is_a_fail_naming_why(production_run, production_ctx):
    from validation.verdict import judge_nodes

    (production_run / "nodes.json").write_text(json.dumps({
        "nodes": ["dgx01", "dgx02", "dgx03"], "unfinished": ["dgx02", "dgx03"], "unreachable": ["dgx02"],
        "reasons": {"dgx02": "Failed to connect to the host via ssh: connect to host 127.0.0.1 port 2222: "
                             "Connection refused", "dgx03": ""}}))
    verdict = evaluate(production_run, production_ctx)
    checks = by_label(verdict)
    assert verdict.status == FAIL and {"node_finished[dgx02]", "node_finished[dgx03]"} <= set(verdict.failed)
    two = checks["node_finished[dgx02]"].reasons[0]
    assert two.startswith("dgx02 was unreachable during the validation stage and still is: Failed to connect")
    assert "power it on" in two and "run the validate stage again" in two
    assert checks["node_finished[dgx03]"].reasons[0].startswith("dgx03 did not finish its measurements: a task failed")
    (production_run / "nodes.json").write_text("{not json")
    assert judge_nodes(production_run / "nodes.json")[0].status == FAIL
    (production_run / "nodes.json").write_text(json.dumps({"nodes": ["dgx01"], "unfinished": [], "unreachable": [],
                                                           "reasons": {}}))
    assert judge_nodes(production_run / "nodes.json") == []


def test_a_layout_that_could_not_start_is_a_fail_naming_the_quota(tmp_path):
    from validation.verdict import judge_fio_layout

    case = tmp_path / "layout"
    case.mkdir()
    (case / "meta.json").write_text(json.dumps({
        "stage": "fio", "case": "layout", "samples": [],
        "asked": {"directories": {"dgx01": "/mnt/scratch/.validation-scratch/run1/dgx01"}},
        "reason": "cannot create the client directory /mnt/scratch/.validation-scratch/run1/dgx01: "
                  "[Errno 122] Disk quota exceeded: '/mnt/scratch/.validation-scratch/run1/dgx01'"}))
    (check,) = judge_fio_layout(case, lab=True)
    assert check.status == FAIL and check.label == "fio_layout[layout]"
    assert "Disk quota exceeded" in check.reasons[0] and "the scratch export is full" in check.reasons[1]
    assert judge_fio_layout(tmp_path / "absent", lab=True) == []


@pytest.mark.parametrize("text", ["null", "[]", '"done"'])
def test_ddp_result_that_is_not_an_object_fails(production_run, production_ctx, replace_case, text):
    files = {"synthetic-r1.json": text, "real-r1.json": ddp_doc("real", 32, 50000.0)}
    replace_case(production_run, "ddp", "n4", files, {"nodes": NODES, "asked": ddp_asked(NODES, repeats=1)},
                 samples=[{"file": f, "rc": 0, "mode": f.split("-")[0]} for f in files])
    assert_fails(evaluate(production_run, production_ctx), "ddp_sanity[n4]",
                 "synthetic-r1.json: unparseable: a JSON", "not a training result object")
