"""Recorded lab runs (tests/fixtures/lab/runs, SOURCES there) judged again by today's verdict and report: the raw
outputs of real validation runs on the lab's VMs, each recorded as PASS on the day it ran, must still PASS with
every stage judged, and their report must build and match its schema. The lab's own runs take an hour on the
2-core machine class and are not in the default run (docs/development.md); these replays are, so a verdict change
that would fail a healthy lab run (or pass it without judging a stage) shows in CI. test_asked_vs_done.py corrupts
them parameter by parameter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LAB_RUNS, ROOT, lab_run_copy, lab_run_ctx, report_schema_errors

from validation.verdict import PASS, evaluate

RUNS = sorted(p.name for p in LAB_RUNS.iterdir() if (p / "context.json").is_file())
# What a lab run's stages are judged on: each stage a sanity check per case, and its performance checks.
STAGES = ("paths", "nccl", "fio", "ddp", "cabling")


def test_there_are_recorded_runs_of_one_and_of_two_nodes():
    sizes = sorted(len(lab_run_ctx(LAB_RUNS / r)["nodes"]) for r in RUNS)
    assert 1 in sizes and 2 in sizes, f"recorded lab runs by node count: {sizes}"


@pytest.mark.parametrize("run_id", RUNS)
def test_a_recorded_lab_run_still_passes_with_every_stage_judged(run_id, tmp_path):
    run = lab_run_copy(run_id, tmp_path)
    v = evaluate(run, lab_run_ctx(run))
    assert v.status == PASS, [(c.label, c.reasons) for c in v.checks if c.status != PASS and c.status != "INFO"]
    for stage in STAGES:
        sanity = [c for c in v.checks if c.stage == stage and c.kind == "sanity"]
        assert sanity and all(c.status == PASS for c in sanity), f"{stage}: no sanity check passed"
    judged = {c.stage for c in v.checks if c.kind == "performance" and c.status == PASS}
    assert set(STAGES) - {"cabling"} <= judged, f"stages without a passing performance check: {judged}"
    nodes = lab_run_ctx(run)["nodes"]
    for stage in ("paths", "fio"):
        per_node = {c.instance for c in v.checks if c.stage == stage and c.kind == "performance"}
        assert set(nodes) <= per_node, f"{stage}: nodes without a figure: {set(nodes) - per_node}"
    standin = [c for c in v.checks if c.kind == "performance" and c.stage in ("nccl", "ddp")]
    assert standin and all(c.lab_standin for c in standin), "a lab stand-in's figure is not marked as one"


@pytest.mark.parametrize("run_id", RUNS)
def test_a_recorded_lab_run_reports_through_the_cli(run_id, tmp_path):
    run = lab_run_copy(run_id, tmp_path)
    doc = _report(run)
    assert doc["verdict"]["status"] == PASS and doc["lab_standins"] is True
    assert report_schema_errors(doc) == []
    html = (run / "report.html").read_text()
    assert "lab stand-in" in html.lower()


def _report(run: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "validation", "report", str(run)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads((run / "report.json").read_text())


def test_the_recorded_scale_out_reports_the_scaling_from_one_node_to_two(tmp_path):
    """The two-node run's copy names the copy of the run before the scale-out (lab_run_copy), reported first by
    today's code."""
    two = [r for r in RUNS if lab_run_ctx(LAB_RUNS / r).get("validate_scale_before")]
    assert two, "no recorded run of a scale-out"
    after = lab_run_copy(two[0], tmp_path)
    before = lab_run_copy(Path(lab_run_ctx(after)["validate_scale_before"]).name, tmp_path)
    assert _report(before)["verdict"]["status"] == PASS
    doc = _report(after)
    assert doc["verdict"]["status"] == PASS
    summary = (after / "summary.md").read_text()
    assert "## scale-out: 1 -> 2 nodes" in summary, summary[:3000]
    assert "cannot be read" not in summary
    scaling = doc["scaling"]
    assert scaling["before_nodes"] == ["dgx01"] and scaling["added"] == ["dgx02"] and "error" not in scaling
    assert len(scaling["rows"]) >= 3, scaling["rows"]


def test_the_recorded_runs_hold_only_what_the_verdict_reads():
    """Context, nodes, environment, handover and the raw outputs: nothing derived from a verdict (a report, JUnit)
    that could hide a change of today's verdict."""
    allowed = {"context.json", "nodes.json", "environment.json", "handover.json", "raw"}
    for run_id in RUNS:
        top = {p.name for p in (LAB_RUNS / run_id).iterdir()}
        assert top <= allowed, f"{run_id}: {sorted(top - allowed)}"


def test_the_sources_file_names_every_recorded_run():
    sources = (LAB_RUNS / "SOURCES").read_text()
    for run_id in RUNS:
        assert run_id in sources, f"tests/fixtures/lab/runs/SOURCES does not say where {run_id} comes from"
