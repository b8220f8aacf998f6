"""The verdict and the report of a 140-node run written by the model engine (tests/scale/model_engine.py: a model
of the cluster, not a measurement): readable at scale (the summary one screen, a per-node table sorted worst
first, one picture per metric, no chart with a series per node) and the HTML under 2 MB."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.scale import model_engine
from validation import report, sitegen
from validation.context import context_from_inventory
from validation.verdict import FAIL, PASS, evaluate

ROOT = Path(__file__).resolve().parents[2]
N = 140


@pytest.fixture(scope="module")
def base_ctx() -> dict[str, Any]:
    return context_from_inventory(ROOT / "inventories" / "production")


def model_run(tmp: Path, base: dict[str, Any], fault: tuple[str, tuple[str, ...]]) -> tuple[dict[str, Any], Path]:
    site = sitegen.generate(N, sitegen.default_f800(N))
    ctx = model_engine.context_from_site(site, base)
    model = model_engine.ModelCluster(list(site.layout.dgx), f800=len(site.layout.f800), fault=fault)
    run = model_engine.write_full_run(tmp / "run", model, ctx)
    verdict = evaluate(run, ctx)
    doc = report.build_report(run, ctx, verdict, {"model_engine": model_engine.LABEL})
    report.write_all(run, doc)
    return doc, run


@pytest.fixture(scope="module")
def slow_node_run(tmp_path_factory: pytest.TempPathFactory, base_ctx: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    return model_run(tmp_path_factory.mktemp("slow"), base_ctx, ("slow_node", ("dgx070",)))


def test_healthy_model_run_passes(tmp_path: Path, base_ctx: dict[str, Any]) -> None:
    doc, run = model_run(tmp_path, base_ctx, ("none", ()))
    assert doc["verdict"]["status"] == PASS, doc["verdict"]["failed"][:5]
    assert (run / "report.html").stat().st_size < 2 * 2**20


def test_report_of_140_nodes_is_readable_and_small(slow_node_run: tuple[dict[str, Any], Path]) -> None:
    doc, run = slow_node_run
    assert doc["verdict"]["status"] == FAIL
    html = (run / "report.html").read_text(encoding="utf-8")
    assert len(html.encode()) < 2 * 2**20, f"report.html of {N} nodes is {len(html.encode())} bytes"
    summary = (run / "summary.md").read_text(encoding="utf-8").splitlines()
    assert len(summary) <= 70, f"summary.md of {N} nodes has {len(summary)} lines (one screen: 70)"
    # one picture per metric: no line chart holds a series per node
    for svg in re.findall(r"<svg.*?</svg>", html, re.S):
        assert svg.count('class="series"') <= report.SERIES_MAX
    # the per-node table of the pair bandwidth, worst first: the slow node's two pairs
    table = re.search(r"nccl_pair_busbw_gbps per node, worst first.*?</table>", html, re.S)
    assert table, "per-node table of the pair bandwidth"
    first_rows = re.findall(r"<tr><td>([^<]*)</td>", table.group(0))[:2]
    assert sorted(first_rows) == ["dgx069+dgx070", "dgx070+dgx071"], first_rows
    assert "dgx070" in "\n".join(summary), "the summary names the worst instance"


def test_every_model_output_says_it_is_a_model(slow_node_run: tuple[dict[str, Any], Path]) -> None:
    _doc, run = slow_node_run
    assert json.loads((run / "context.json").read_text())["model_engine"] == model_engine.LABEL
    for meta in (run / "raw").rglob("meta.json"):
        assert json.loads(meta.read_text())["model_engine"] == model_engine.LABEL, meta
    for log in (run / "raw" / "nccl").rglob("*.log"):
        assert log.read_text().startswith("# MODEL ENGINE"), log
    assert json.loads((run / "report.json").read_text())["environment"]["model_engine"] == model_engine.LABEL
