"""The metric definitions (validation/metrics.yml, validation/metrics.py) cover every metric a judge reports and
every metric an inventory's thresholds name, each under its own stage, and each definition says where it comes
from; preflight refuses a threshold for a metric the file does not define."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from validation import metrics
from validation.inventory_layers import group_vars
from validation.verdict import evaluate

SITES = ("lab", "production")
# A performance check named by a literal in a judge: _perf_check(site, "name", ...) or Check(name="name", ...,
# kind="performance"); f-string names (ddp_{mode}_throughput) are expanded by the evaluated run below.
_LITERAL = re.compile(r'_perf_check\(site, "(\w+)"|Check\(name="(\w+)",[^)]*?kind="performance"', re.S)


def judged_literals(root: Path = ROOT / "validation") -> set[str]:
    names: set[str] = set()
    for path in root.rglob("*.py"):
        for a, b in _LITERAL.findall(path.read_text(encoding="utf-8")):
            names.add(a or b)
    return names


def undefined(names: set[str]) -> list[str]:
    return sorted(names - set(metrics.load()))


def test_every_metric_a_judge_reports_is_defined(production_run, production_ctx):
    reported = {c.name for c in evaluate(production_run, production_ctx).checks if c.kind == "performance"}
    literals = judged_literals()
    assert len(literals) >= 8 and {"ddp_synthetic_throughput", "ddp_real_throughput"} <= reported, (literals, reported)
    assert undefined(reported | literals) == []


@pytest.mark.parametrize("site", SITES)
def test_every_inventory_threshold_names_a_defined_metric_of_its_stage(site):
    defs = metrics.threshold_metrics()
    entries = group_vars(ROOT / "inventories" / site)["acceptance_thresholds"]
    assert entries
    wrong = [(e["metric"], e["stage"]) for e in entries if e["metric"] not in defs or defs[e["metric"]].stage != e["stage"]]
    assert not wrong, f"inventories/{site}: thresholds without a definition of that stage in validation/metrics.yml: {wrong}"


def test_every_definition_has_a_source_a_unit_and_a_stage():
    defs = metrics.load()
    assert len(defs) >= 16
    for m in defs.values():
        assert m.source.strip() and m.unit and m.stage in metrics.STAGES, m
        assert all(f.source and f.text for f in m.reference), m


def test_the_checks_see_a_missing_definition_and_a_definition_without_source():
    assert undefined({"nccl_all_busbw_gbps", "fio_node_read_MBps"}) == ["nccl_all_busbw_gbps"]
    doc = yaml.safe_load(metrics.METRICS_FILE.read_text(encoding="utf-8"))
    doc["metrics"]["fio_node_read_MBps"]["source"] = " "
    with pytest.raises(metrics.MetricsError, match=r"fio_node_read_MBps\.source"):
        metrics.parse(doc)
    del doc["metrics"]["fio_node_read_MBps"]["source"]
    with pytest.raises(metrics.MetricsError, match=r"fio_node_read_MBps\.source"):
        metrics.parse(doc)


def test_reference_figures_follow_the_node_count():
    multi = metrics.load()["nccl_multi_node_busbw_gbps"]
    two, four = multi.reference_for(2), multi.reference_for(4)
    assert two is not None and four is not None
    assert two.value == 188.53 and four.value == 191.05
    assert metrics.load()["path_storage_MBps"].reference_for(4) is None


def test_preflight_refuses_a_threshold_metric_the_validation_does_not_define():
    from ansible.module_utils import preflight_rules as rules

    thresholds = [{"metric": "nccl_allreduce_busbw_gbps", "stage": "nccl", "floor": 1, "source": "s"},
                  {"metric": "fio_node_read_MBps", "stage": "nccl", "floor": 1, "source": "s"},
                  {"metric": "nccl_single_node_busbw_gbps", "stage": "nccl", "floor": 1, "source": "s"}]
    stages = {"nccl": {"enabled": True}, "fio": {"enabled": False}}
    site = rules.Site(groups={"dgx": ["dgx01"]}, allvars={},
                      hostvars={"dgx01": {"acceptance_thresholds": thresholds, "validation_stages": stages}},
                      metrics=metrics.as_plain(metrics.load()))
    rows = {(p.variable, p.severity) for p in rules.rule_acceptance(site)}
    assert ("acceptance_thresholds[0].metric", "error") in rows
    assert ("acceptance_thresholds[1].stage", "error") in rows
    assert not {v for v, _ in rows if v.startswith("acceptance_thresholds[2]")}
    site.metrics = None  # no definitions beside the plugins: the other rules still run, this one has nothing to read
    assert not {v for v, _ in {(p.variable, p.severity) for p in rules.rule_acceptance(site)}
                if v.endswith(".metric")}
