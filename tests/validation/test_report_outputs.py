"""Issue #20 (3): the files sites already read. report.json follows its JSON Schema and names the bundle and
commit that judged it; junit.xml is read by a JUnit consumer (junitparser) with every case, its time, failure
message and skip reason; metrics.prom is read by Prometheus' own text-format parser (prometheus_client)."""

from __future__ import annotations

import copy
import json
import math
import re
import shutil
import subprocess

import jsonschema
import pytest
from conftest import ROOT, report_schema_errors
from junitparser import Failure, JUnitXml, Skipped
from prometheus_client.parser import text_string_to_metric_families

from validation import provenance, report
from validation.verdict import FAIL, INFO, PASS, evaluate


def _report(run, ctx, **overrides):
    ctx = copy.deepcopy(ctx)
    ctx.update(overrides)
    doc = report.build_report(run, ctx, evaluate(run, ctx), {"ansible": "test"})
    return doc, report.write_all(run, doc)


def _failing_ctx(ctx):
    """A judged run with every verdict: an impossible floor (FAIL), a disabled stage (skipped), INFO figures."""
    ctx = copy.deepcopy(ctx)
    for rule in ctx["acceptance_thresholds"]:
        if rule["metric"] == "nccl_single_node_busbw_gbps":
            rule["floor"] = 10_000
    ctx["validation_stages"] = {**ctx["validation_stages"], "fio": {"enabled": False}}
    return ctx


# ---------------------------------------------------------------------------------------------- report.json


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(report.schema())


def test_report_json_carries_schema_version_bundle_version_and_the_live_commit(production_run, production_ctx):
    _doc, files = _report(production_run, production_ctx)
    written = json.loads(files["json"].read_text())
    assert report_schema_errors(written) == []
    assert written["schema_version"] == report.schema()["properties"]["schema_version"]["const"]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:  # this checkout: the commit is read at run time, not stored anywhere
        assert written["bundle"]["commit"] == head.stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        assert written["bundle"]["dirty"] is bool(dirty)
    else:
        assert written["bundle"]["commit"] == "unknown"
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (written["bundle"]["name"], written["bundle"]["version"]) == (project["name"], project["version"])


def _invalid(doc, how):
    bad = copy.deepcopy(doc)
    how(bad)
    return bad


INVALID = {
    "no schema_version": lambda d: d.pop("schema_version"),
    "another schema_version": lambda d: d.update(schema_version="0.9"),
    "no bundle commit": lambda d: d["bundle"].pop("commit"),
    "a made-up commit": lambda d: d["bundle"].update(commit="HEAD"),
    "a verdict that is neither PASS nor FAIL": lambda d: d["verdict"].update(status="MOSTLY"),
    "a FAIL without a reason": lambda d: d["verdict"]["checks"][0].update(status=FAIL, reasons=[]),
    "a value that is a string": lambda d: d["verdict"]["checks"][1].update(value="237.9"),
    "an unknown bound kind": lambda d: d["verdict"]["checks"][1]["bounds"].append(
        {"kind": "guess", "limit": 1, "source": "x", "detail": ""}),
    "a field nobody documented": lambda d: d.update(extra=1),
    "a sign-off entry without date": lambda d: d["handover"]["signoff"].append({"role": "r", "name": "n"}),
    "a negative duration": lambda d: d["verdict"]["checks"][0].update(duration_s=-1),
}


@pytest.mark.parametrize("what", INVALID)
def test_the_schema_rejects_an_invalid_report(production_run, production_ctx, what):
    doc, _files = _report(production_run, production_ctx)
    assert report_schema_errors(json.loads(json.dumps(doc))) == []
    assert report_schema_errors(_invalid(json.loads(json.dumps(doc)), INVALID[what])), f"{what} was accepted"


def test_commit_is_unknown_outside_a_git_checkout_of_the_bundle(tmp_path, monkeypatch):
    copy_dir = tmp_path / "copy"
    copy_dir.mkdir()
    shutil.copy(ROOT / "pyproject.toml", copy_dir / "pyproject.toml")
    b = provenance.bundle(copy_dir)
    assert (b.commit, b.dirty) == ("unknown", None) and b.version != "unknown"
    # a copy inside another repository must not report that repository's commit
    outer = tmp_path / "site-repo"
    (outer / "vendor" / "bundle").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", outer / "vendor" / "bundle" / "pyproject.toml")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "site"]):
        subprocess.run(["git", "-C", str(outer), *cmd], check=True, env=env, capture_output=True)
    assert provenance.bundle(outer / "vendor" / "bundle").commit == "unknown"
    assert provenance.bundle(outer).commit != "unknown"  # the same code does read a checkout's own commit
    # no git at all, and no pyproject.toml: no crash, "unknown" or the installed distribution's version
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    b = provenance.bundle(tmp_path / "nothing-here")
    assert b.commit == "unknown" and b.dirty is None and b.name and b.version


# ---------------------------------------------------------------------------------------------- junit.xml


def test_junit_lists_every_case_with_time_failure_message_and_skip_reason(production_run, production_ctx):
    ctx = _failing_ctx(production_ctx)
    doc, files = _report(production_run, ctx)
    checks = doc["verdict"]["checks"]
    xml = JUnitXml.fromfile(str(files["junit"]))
    cases = {(s.name, c.name): c for s in xml for c in s}
    assert len(cases) == len(checks), "every check is one testcase"
    assert xml.tests == len(checks) and xml.failures == doc["counts"][FAIL] > 0
    skipped = [c for c in checks if c["status"] == INFO and c["kind"] == "sanity"]
    assert skipped and xml.skipped == len(skipped)
    for c in checks:
        case = cases[(f"validation.{c['stage']}", c["label"])]
        assert case.time is not None and case.time >= 0
        results = case.result
        if c["status"] == FAIL:
            assert len(results) == 1 and isinstance(results[0], Failure)
            assert results[0].message == "; ".join(c["reasons"])[:500] and results[0].message
        elif c in skipped:
            assert len(results) == 1 and isinstance(results[0], Skipped)
            assert results[0].message == "stage disabled in validation_stages"
        else:
            assert results == [], f"{c['label']} passed"
    # a sanity case's time is what the runner recorded for its samples (5 x 30 s in the fixture)
    assert cases[("validation.nccl", "nccl_sanity[single-dgx01]")].time == pytest.approx(150.0)
    assert cases[("validation.nccl", "nccl_single_node_busbw_gbps[dgx01]")].time == 0.0
    for suite in xml:
        props = {p.name: p.value for p in suite.properties()}
        assert props["commit"] == doc["bundle"]["commit"] and props["schema_version"] == doc["schema_version"]
        assert suite.time == pytest.approx(sum(c.time for c in suite))


# ---------------------------------------------------------------------------------------------- metrics.prom

NAME = re.compile(r"[a-z_:][a-z0-9_:]*")
# Prometheus naming: lower snake case, base units (nccl-tests' GB/s = 1e9 B/s, the judged fio MB/s = 1e6 B/s)
PROM_NAMES = {
    "nccl_single_node_busbw_gbps": ("dgx_validation_nccl_single_node_busbw_bytes_per_second", 1e9),
    "nccl_multi_node_busbw_gbps": ("dgx_validation_nccl_multi_node_busbw_bytes_per_second", 1e9),
    "nccl_pair_busbw_gbps": ("dgx_validation_nccl_pair_busbw_bytes_per_second", 1e9),
    "fio_node_read_MBps": ("dgx_validation_fio_node_read_bytes_per_second", 1e6),
    "fio_aggregate_read_MBps": ("dgx_validation_fio_aggregate_read_bytes_per_second", 1e6),
    "ddp_scaling_efficiency": ("dgx_validation_ddp_scaling_efficiency_ratio", 1.0),
    "ddp_real_over_synthetic": ("dgx_validation_ddp_real_over_synthetic_ratio", 1.0),
    "ddp_synthetic_throughput": ("dgx_validation_ddp_synthetic_throughput_samples_per_second", 1.0),
    "ddp_real_throughput": ("dgx_validation_ddp_real_throughput_samples_per_second", 1.0),
    "path_storage_MBps": ("dgx_validation_path_storage_bytes_per_second", 1e6),
    "path_storage_aggregate_MBps": ("dgx_validation_path_storage_aggregate_bytes_per_second", 1e6),
    "path_fabric_GBps": ("dgx_validation_path_fabric_bytes_per_second", 1e9),
    "ddp_real_util_pct": ("dgx_validation_ddp_real_util_ratio", 0.01),
    "fio_array_over_client": ("dgx_validation_fio_array_over_client_ratio", 1.0),
    "ddp_array_over_loader": ("dgx_validation_ddp_array_over_loader_ratio", 1.0),
}


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_metrics_prom_parses_with_one_labelled_sample_per_metric(production_run, production_ctx):
    ctx = _failing_ctx(production_ctx)
    (production_run / "raw" / "nccl" / "single-dgx03" / "meta.json").unlink()  # one metric without a value
    doc, files = _report(production_run, ctx)
    text = files["prometheus"].read_text()
    families = _families(text)
    for name, fam in families.items():
        assert NAME.fullmatch(name), name
        assert fam.type == "gauge" and fam.documentation, name
        assert f"# HELP {name} " in text and f"# TYPE {name} gauge" in text
        labelsets = [tuple(sorted(s.labels.items())) for s in fam.samples]
        assert len(labelsets) == len(set(labelsets)), f"{name}: two samples with the same labels"
        assert all(s.timestamp is None for s in fam.samples), "the textfile collector refuses timestamps"
    perf = [c for c in doc["verdict"]["checks"] if c["kind"] == "performance"]
    samples = {(s.name, s.labels["node"]): s for f in families.values() for s in f.samples if "node" in s.labels}
    assert len(samples) == len(perf), "one sample per judged metric"
    for c in perf:
        name, factor = PROM_NAMES[c["name"]]
        s = samples[(name, c["instance"] or "all")]
        assert s.labels["stage"] == c["stage"] and s.labels["verdict"] == c["status"]
        if c["value"] is None:
            assert math.isnan(s.value) and c["status"] == FAIL
        else:
            assert s.value == pytest.approx(c["value"] * factor)
    missing = samples[("dgx_validation_nccl_single_node_busbw_bytes_per_second", "dgx03")]
    assert math.isnan(missing.value) and missing.labels["verdict"] == FAIL
    run = families["dgx_validation_run_passed"].samples
    assert [(s.labels["verdict"], s.value) for s in run] == [(FAIL, 0.0)]
    info = families["dgx_validation_run_info"].samples[0].labels
    assert info["commit"] == doc["bundle"]["commit"] and info["version"] == doc["bundle"]["version"]
    sanity = families["dgx_validation_sanity_passed"].samples
    assert len(sanity) == sum(1 for c in doc["verdict"]["checks"] if c["kind"] == "sanity")
    counts = {s.labels["verdict"]: s.value for s in families["dgx_validation_checks"].samples}
    assert counts == {k: float(v) for k, v in doc["counts"].items()}


def test_metrics_prom_of_a_passing_run(production_run, production_ctx):
    _doc, files = _report(production_run, production_ctx)
    families = _families(files["prometheus"].read_text())
    assert [s.value for s in families["dgx_validation_run_passed"].samples] == [1.0]
    fio = {s.labels["node"]: s.value for s in families["dgx_validation_fio_node_read_bytes_per_second"].samples}
    assert set(fio) == {"dgx01", "dgx02", "dgx03", "dgx04"} and all(v > 1e9 for v in fio.values())
    assert {s.labels["verdict"] for f in families.values() for s in f.samples if "node" in s.labels} <= {PASS, INFO}


def test_label_values_are_escaped(production_run, production_ctx):
    doc, _files = _report(production_run, production_ctx)
    doc["site"] = 'site "A"\\B\nC'
    from validation import prom

    families = _families(prom.textfile(doc))
    assert families["dgx_validation_run_passed"].samples[0].labels["site"] == 'site "A"\\B\nC'
