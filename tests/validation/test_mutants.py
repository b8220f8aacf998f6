"""The mutation generator (tests/validation/mutants.py) at a CI-affordable count: broken variants of a passing
production run must each FAIL naming their case, with no exception out of evaluate() or the report writer and no
check of an unbroken case failing; valid variants must PASS. The full sweep is `python -m tests.validation.mutants
--count N`; this test draws a few of one seed per broken class and a few valid ones."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from tests.validation import mutants
from validation.context import context_from_inventory

SEED = 34
BROKEN = 10     # ~3 s each on a 2-core machine: the whole file stays under a minute
VALID = 4


@pytest.fixture(scope="module")
def tpl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mutants.template(tmp_path_factory.mktemp("mutants"))


@pytest.fixture(scope="module")
def ctx() -> dict:
    return context_from_inventory(ROOT / "inventories" / "production")


@pytest.mark.parametrize("index", range(BROKEN + VALID))
def test_mutant(index: int, tpl: Path, ctx: dict, tmp_path: Path) -> None:
    valid = index >= BROKEN
    m, run, mctx = mutants.make(SEED, index, tpl, tmp_path, copy.deepcopy(ctx), valid)
    problem = mutants.judge(m, run, mctx)
    shutil.rmtree(run.parent, ignore_errors=True)
    assert problem is None, mutants.line(m, problem)


def test_the_generator_is_deterministic(tpl: Path, ctx: dict, tmp_path: Path) -> None:
    first, _, _ = mutants.make(7, 3, tpl, tmp_path / "a", ctx, False)
    again, _, _ = mutants.make(7, 3, tpl, tmp_path / "b", ctx, False)
    assert first.ops == again.ops and first.case == again.case


def test_a_consistent_shortening_is_caught_by_the_site(tpl: Path, ctx: dict, tmp_path: Path) -> None:
    """The brief's example: both the launch record and fio's output say 1 s where the site asks 60 s."""
    import json

    run = tmp_path / tpl.name
    shutil.copytree(tpl, run)
    case = run / "raw" / "fio" / "node-dgx03"
    meta = json.loads((case / "meta.json").read_text())
    meta["asked"]["runtime"] = 1
    (case / "meta.json").write_text(json.dumps(meta))
    for f in sorted(case.glob("r*.json")):
        head, doc = mutants._split_json(f.read_text())
        doc["global options"]["runtime"] = "1"
        for client in doc["client_stats"]:
            client["read"]["runtime"] = 1000
        f.write_text(head + json.dumps(doc))
    m = mutants.Mutant(0, 0, "fio", "node-dgx03", False, ["runtime 1 s in both"])
    assert mutants.judge(m, run, ctx) is None
    verdict = mutants.evaluate(run, ctx)
    reasons = [r for c in verdict.checks if c.case == "node-dgx03" and c.kind == "sanity" for r in c.reasons]
    assert any("validation_fio.runtime_s" in r and "asked 1" in r and "configured 60" in r for r in reasons), reasons
