"""Issue #19: every broken variant of a passing production run (tests/validation/broken.py) is rejected by a
sanity check of the case that was broken, with a reason, without crashing the judge and without failing a
healthy case; valid logs behind two launcher prefixes parse and pass."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from broken import CASES, ROOT, fixture_text, judge, nccl_meta, repeated

from validation.context import context_from_inventory
from validation.parse_nccl import parse
from validation.report import build_report, write_all
from validation.verdict import PASS, evaluate

CTX = context_from_inventory(ROOT / "inventories" / "production")


def test_the_corpus_covers_every_class_of_the_issue_with_at_least_72_runs():
    classes = Counter(c.cls for c in CASES)
    assert len(CASES) >= 72, len(CASES)
    assert set(classes) == {"non-number", "impossible table", "wrong test", "fio job", "ddp", "repeats", "crash",
                            "device-output", "asked vs done"}
    assert len({c.what for c in CASES}) == len(CASES), "every case has its own one-line description"


@pytest.mark.parametrize("case", CASES, ids=[f"{c.cls}: {c.what}" for c in CASES])
def test_broken_run_is_rejected_naming_the_case(case, tmp_path):
    outcome = judge(case, tmp_path, CTX)
    assert outcome.problem is None, f"{case.what}: {outcome.problem}"
    assert outcome.reason, "a rejection always says why"
    # the report is still written, and is strict JSON, whatever the broken figure was
    run = tmp_path / "20261121T080000Z"
    report = build_report(run, CTX, outcome.verdict, {})
    paths = write_all(run, report)
    json.loads(paths["json"].read_text(), parse_constant=lambda c: pytest.fail(f"report.json holds {c}"))


PREFIXES = ("0: [1,0]<stdout>:", "(head, rank=0, pid=3808) [1,0]<stdout>:")


@pytest.mark.parametrize("prefix", PREFIXES)
def test_valid_logs_behind_two_launcher_prefixes_parse_and_pass(prefix, production_run, replace_case):
    # Each line of a passing log behind srun --label and mpirun --tag-output (or Ray's and mpirun's) prefixes,
    # as those launchers stack them; the table must read exactly as the plain log does.
    plain = fixture_text("nccl/two_nodes_mpirun_tag_output.log").replace("[1,0]<stdout>:", "")
    wrapped = "".join(f"{prefix}{line}\n" for line in plain.splitlines())
    assert parse(wrapped)[-1].rows == parse(plain)[-1].rows and parse(wrapped)[-1].complete
    replace_case(production_run, "nccl", "pair-dgx01-dgx02", repeated(wrapped, "log"),
                 nccl_meta(["dgx01", "dgx02"], 33554432, 8589934592, 1))
    v = evaluate(production_run, CTX)
    assert v.status == PASS, v.failed


def test_the_command_line_in_the_log_names_the_collective():
    plain = fixture_text("nccl/single_node_dgx_a100.log").replace("# Collective test starting: all_reduce_perf\n", "")
    assert parse("./build/all_gather_perf -b 8 -e 128M -f 2 -g 8\n" + plain)[-1].collective == "all_gather_perf"
    assert parse("./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8\n" + plain)[-1].collective == "all_reduce_perf"
