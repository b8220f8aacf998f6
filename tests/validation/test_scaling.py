"""The report's scale-out section (validation/scaling.py, docs/scale-out.md): the aggregate figures of the earlier
run of the old node set against this run's, in report.json (schema-valid), summary.md and report.html; the earlier
run found by `python -m validation scale-baseline`, refused when it is of another node set."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
from conftest import ROOT, report_schema_errors

from validation import report, scaling
from validation.verdict import evaluate


def _check(name: str, instance: str | None, value: float | None) -> dict:
    label = f"{name}[{instance}]" if instance else name
    return {"name": name, "instance": instance, "label": label, "kind": "performance", "value": value}


BEFORE = {"run": "20261120T080000Z", "nodes": ["dgx01"], "verdict": {"checks": [
    _check("nccl_single_node_busbw_gbps", "dgx01", 230.0),
    _check("fio_node_read_MBps", "dgx01", 4900.0),
    _check("ddp_synthetic_throughput", "1 node", 16000.0),
    {**_check("fio_node_read_MBps", "dgx01", 1.0), "kind": "sanity"},
]}}
AFTER = {"run": "20261128T080000Z", "nodes": ["dgx01", "dgx02"], "verdict": {"checks": [
    _check("nccl_single_node_busbw_gbps", "dgx01", 231.0),
    _check("nccl_single_node_busbw_gbps", "dgx02", 229.0),
    _check("nccl_multi_node_busbw_gbps", None, 188.0),
    _check("fio_node_read_MBps", "dgx01", 4900.0),
    _check("fio_aggregate_read_MBps", None, 9600.0),
    _check("ddp_synthetic_throughput", "1 node", 16000.0),
    _check("ddp_synthetic_throughput", "2 nodes", 31000.0),
]}}


def test_one_node_figures_stand_for_the_aggregates_of_a_one_node_run():
    section = scaling.scaling_section(BEFORE, AFTER)
    assert section["title"] == "scale-out: 1 -> 2 nodes" and section["added"] == ["dgx02"]
    rows = {r["title"]: r for r in section["rows"]}
    nccl = rows["NCCL all-node bus bandwidth"]
    assert (nccl["before_label"], nccl["after_label"]) == ("nccl_single_node_busbw_gbps[dgx01]",
                                                           "nccl_multi_node_busbw_gbps")
    fio = rows["fio aggregate read"]
    assert (fio["before"], fio["after"], fio["ratio"], fio["linear_pct"]) == (4900.0, 9600.0, 1.959, 98.0)
    ddp = rows["DDP synthetic throughput (all nodes)"]
    assert (ddp["before_label"], ddp["after_label"], ddp["linear_pct"]) == (
        "ddp_synthetic_throughput[1 node]", "ddp_synthetic_throughput[2 nodes]", 96.9)


def test_a_per_node_figure_never_stands_for_the_aggregate_of_several_nodes():
    after = copy.deepcopy(AFTER)
    after["verdict"]["checks"] = [c for c in after["verdict"]["checks"] if c["name"] != "fio_aggregate_read_MBps"]
    row = next(r for r in scaling.scaling_section(BEFORE, after)["rows"] if r["title"] == "fio aggregate read")
    assert row["after"] is None and row["ratio"] is None and row["linear_pct"] is None


# Synthetic report.json files (only what the section reads) live outside tmp_path, which this directory's conftest
# holds to the whole schema.
def test_the_section_is_in_every_report_file(production_run, production_ctx, tmp_path_factory):
    before = tmp_path_factory.mktemp("before")
    (before / "report.json").write_text(json.dumps(BEFORE))
    ctx = copy.deepcopy(production_ctx)
    ctx["validate_scale_before"] = str(before)
    doc = report.build_report(production_run, ctx, evaluate(production_run, ctx), {"ansible": "test"})
    assert report_schema_errors(doc) == []
    n = len(ctx["nodes"])
    assert doc["scaling"]["title"] == f"scale-out: 1 -> {n} nodes"
    assert doc["scaling"]["before_run"] == BEFORE["run"] and doc["scaling"]["after_run"] == production_run.name
    assert all(r["after"] is not None for r in doc["scaling"]["rows"]), doc["scaling"]["rows"]
    files = report.write_all(production_run, doc)
    assert f"## scale-out: 1 -> {n} nodes" in files["markdown"].read_text()
    html = files["html"].read_text()
    assert 'id="scaling"' in html and f"scale-out: 1 -&gt; {n} nodes" in html


def test_no_section_without_an_earlier_run_and_an_unreadable_one_says_so(production_run, production_ctx):
    ctx = copy.deepcopy(production_ctx)
    doc = report.build_report(production_run, ctx, evaluate(production_run, ctx), {"ansible": "test"})
    assert "scaling" not in doc and 'id="scaling"' not in report.html_report(doc)
    ctx["validate_scale_before"] = str(production_run.parent / "no-such-run")
    doc = report.build_report(production_run, ctx, evaluate(production_run, ctx), {"ansible": "test"})
    assert report_schema_errors(doc) == []
    assert "cannot be read" in doc["scaling"]["error"] and doc["scaling"]["rows"] == []
    assert "cannot be read" in report.summary_md(doc)


def _run(results, name: str, nodes: list[str]) -> None:
    (results / name).mkdir()
    (results / name / "report.json").write_text(json.dumps({"run": name, "nodes": nodes}))


def _baseline(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "validation", "scale-baseline", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_scale_baseline_finds_the_newest_run_of_exactly_the_old_nodes(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("results")
    _run(tmp_path, "20261101T000000Z", ["dgx01"])
    _run(tmp_path, "20261102T000000Z", ["dgx02", "dgx01"])
    _run(tmp_path, "20261103T000000Z", ["dgx01"])
    _run(tmp_path, "20261104T000000Z", ["dgx01", "dgx02", "dgx03"])
    found = _baseline(str(tmp_path), "--nodes", "dgx01,dgx02")
    assert found.returncode == 0 and found.stdout.strip() == str(tmp_path / "20261102T000000Z")
    assert _baseline(str(tmp_path), "--nodes", "dgx01").stdout.strip() == str(tmp_path / "20261103T000000Z")


@pytest.mark.parametrize("args, expected", [
    (["--nodes", "dgx04"], "no validation run of dgx04"),
    (["--nodes", "dgx01", "--run", "RESULTS/20261102T000000Z"], "that run validated dgx01, dgx02"),
])
def test_scale_baseline_refuses_a_missing_or_other_node_set(tmp_path_factory, args, expected):
    tmp_path = tmp_path_factory.mktemp("results")
    _run(tmp_path, "20261102T000000Z", ["dgx01", "dgx02"])
    proc = _baseline(str(tmp_path), *[a.replace("RESULTS", str(tmp_path)) for a in args])
    assert proc.returncode == 1 and expected in proc.stderr, proc.stderr
