"""The CLI contract: parse prints the documented JSON shapes and exits non-zero on unparseable input;
evaluate re-judges stored results with other thresholds; report writes every artefact; latest finds it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIX, ROOT


def cli(*args: str, env=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "validation", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


def test_parse_nccl_shape():
    p = cli("parse", "nccl-tests", str(FIX / "nccl/two_nodes_mpirun_tag_output.log"))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    for key in ("collective", "ranks", "complete", "out_of_bounds_ok", "avg_busbw_gbps", "rows", "errors"):
        assert key in doc
    row = doc["rows"][0]
    assert set(row) >= {"size", "count", "type", "redop", "out_of_place", "in_place"}
    assert set(row["out_of_place"]) >= {"time_us", "algbw_gbps", "busbw_gbps", "wrong"}


def test_parse_nccl_truncated_is_nonzero_with_nulls():
    p = cli("parse", "nccl-tests", str(FIX / "nccl/two_nodes_truncated.log"))
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["complete"] is False and doc["avg_busbw_gbps"] is None and doc["out_of_bounds_ok"] is None
    assert doc["errors"]


def test_parse_fio_shape():
    p = cli("parse", "fio", str(FIX / "fio/client_server_2clients.json"))
    assert p.returncode == 0
    doc = json.loads(p.stdout)
    assert set(doc) >= {"jobs", "clients", "aggregate", "errors"}
    assert set(doc["clients"][0]) >= {"name", "error", "read", "write"}
    assert set(doc["aggregate"]["read"]) >= {"bw_bytes", "iops", "clat_ns_p99"}


@pytest.mark.parametrize("kind", ["nccl-tests", "fio", "topo", "ibstat"])
def test_parse_garbage_exits_2_with_structured_error(kind, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("Segmentation fault (core dumped)\n")
    p = cli("parse", kind, str(bad))
    assert p.returncode == 2
    assert json.loads(p.stdout)["errors"]
    missing = cli("parse", kind, str(tmp_path / "nope"))
    assert missing.returncode == 2


def test_evaluate_with_an_impossible_threshold_fails_naming_the_metric(production_run):
    ok = cli("evaluate", str(production_run))
    assert ok.returncode == 0, ok.stdout
    assert "VERDICT: PASS" in ok.stdout
    bad = cli("evaluate", str(production_run), "--set", "fio_aggregate_read_MBps.floor=1e9")
    assert bad.returncode == 1
    assert "VERDICT: FAIL" in bad.stdout and "fio_aggregate_read_MBps" in bad.stdout.split("VERDICT")[1]


def test_evaluate_with_a_thresholds_file(production_run, tmp_path):
    t = tmp_path / "t.yml"
    t.write_text("acceptance_thresholds:\n  - {metric: ddp_scaling_efficiency, stage: ddp, floor: 0.99, source: test}\n")
    p = cli("evaluate", str(production_run), "--thresholds", str(t), "--json")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["verdict"]["failed"] == ["ddp_scaling_efficiency"]


def test_report_and_latest(production_run):
    p = cli("report", str(production_run))
    assert p.returncode == 0, p.stdout + p.stderr
    for name in ("report.json", "junit.xml", "summary.md", "report.html"):
        assert (production_run / name).is_file(), name
    junit = (production_run / "junit.xml").read_text()
    assert 'failures="0"' in junit and "fio_node_read_MBps[dgx01]" in junit
    md = (production_run / "summary.md").read_text()
    assert "**PASS**" in md and "4959 MB/s" in md
    env = dict(__import__("os").environ, VALIDATION_RESULTS_DIR=str(production_run.parent))
    latest = cli("latest", env=env)
    assert latest.returncode == 0
    assert str(production_run / "report.html") in latest.stdout and "verdict: PASS" in latest.stdout


def test_latest_without_runs(tmp_path):
    p = cli("latest", "--results", str(tmp_path))
    assert p.returncode == 1 and "no validation run" in p.stderr


def test_report_fail_junit_names_failures(production_run):
    p = cli("report", str(production_run), "--set", "nccl_single_node_busbw_gbps.floor=500")
    assert p.returncode == 1
    junit = (production_run / "junit.xml").read_text()
    assert 'failures="4"' in junit.splitlines()[1] and "&lt; floor 500" in junit
    assert Path(production_run / "report.html").read_text().count('class="FAIL"') >= 4
