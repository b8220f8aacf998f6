"""nccl-tests parser: every layout branch, keyed on header names; incomplete input is never zeros."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fixture_text

from validation import parse_nccl, verdict


def parse_one(name: str) -> parse_nccl.NcclRun:
    runs = parse_nccl.parse(fixture_text(f"nccl/{name}"))
    assert len(runs) == 1
    return runs[0]


def test_current_layout_single_node():
    run = parse_one("single_node_dgx_a100.log")
    assert run.complete and run.out_of_bounds_ok and not run.errors
    assert run.collective == "all_reduce_perf" and run.ranks == 8 and run.nodes == ["dgx01"]
    assert run.nccl_tests_version == "2.13.11"
    assert len(run.rows) == 31 and run.rows[0].size == 8 and run.rows[-1].size == 8589934592
    big = run.rows[-1]
    assert big.root == -1 and big.redop == "sum" and big.type == "float"
    assert big.out_of_place.wrong == 0 and big.in_place.busbw_gbps > 200
    assert parse_nccl.peak_busbw(run, 1 << 30) == pytest.approx(237.94)


def test_tag_output_prefixes_and_interleaved_nccl_debug():
    run = parse_one("two_nodes_mpirun_tag_output.log")
    assert run.complete and run.ranks == 16 and run.nodes == ["dgx01", "dgx02"]
    assert run.nccl_version == "2.19.3+cuda12.3"
    assert len(run.rows) == 9 and all(r.out_of_place.busbw_gbps for r in run.rows)


def test_old_layout_error_column_without_root():
    run = parse_one("four_nodes_old_error_column.log")
    assert run.complete and run.ranks == 32 and run.collective is None
    row = run.rows[-1]
    assert row.root is None and row.out_of_place.wrong is None and row.out_of_place.max_error is not None
    assert run.data_checked is True
    # keyed on names: busbw is the 7th token here, the 8th with a root column
    assert row.out_of_place.busbw_gbps == pytest.approx(190.21)


def test_no_check_gives_na_not_zero():
    run = parse_one("single_node_no_check.log")
    assert run.complete and run.data_checked is False
    assert all(r.out_of_place.wrong is None and r.in_place.wrong is None for r in run.rows)


def test_wrong_and_out_of_bounds_are_reported():
    run = parse_one("single_node_wrong.log")
    assert run.out_of_bounds_ok is False and run.out_of_bounds_count == 1048576
    assert [r.size for r in run.rows if r.out_of_place.wrong] == [1 << 30]
    oob = parse_one("two_nodes_out_of_bounds.log")
    assert oob.out_of_bounds_ok is False and oob.out_of_bounds_count == 248


def test_truncated_log_is_incomplete_with_reasons():
    run = parse_one("two_nodes_truncated.log")
    assert run.complete is False and run.avg_busbw_gbps is None and run.out_of_bounds_ok is None
    assert len(run.rows) == 4  # the cut row is not invented
    text = " ".join(run.errors)
    assert "unreadable result row" in text and "Avg bus bandwidth" in text and "TIME LIMIT" in text


def test_several_runs_in_one_log_with_srun_labels():
    runs = parse_nccl.parse(fixture_text("nccl/pairwise_two_runs_srun_label.log"))
    assert [r.nodes for r in runs] == [["dgx01", "dgx02"], ["dgx03", "dgx04"]]
    assert all(r.complete for r in runs)
    assert parse_nccl.peak_busbw(runs[0], 1 << 30) > 180 > parse_nccl.peak_busbw(runs[1], 1 << 30)


def test_json_output_matches_stdout():
    js = parse_one("single_node_dgx_a100.json")
    assert js.complete and js.ranks == 8 and js.nccl_version == "2.19.3" and js.out_of_bounds_ok
    assert parse_nccl.peak_busbw(js, 1 << 30) == pytest.approx(
        parse_nccl.peak_busbw(parse_one("single_node_dgx_a100.log"), 1 << 30))


def test_json_empty_last_error_is_no_error():
    """nccl-tests writes ncclGetLastError() into "errors" on every run (src/util.cu, writeErrors): a clean run
    gives [""] (2.19.6 on an H100, tests/fixtures/dgx/real/SOURCES), which is no error; a message is one."""
    text = fixture_text("nccl/single_node_dgx_a100.json")
    assert '"errors":[""]' in text
    assert parse_nccl.parse(text)[0].errors == []
    failed = parse_nccl.parse(text.replace('"errors":[""]', '"errors":["NCCL failure common.cu:1000 \'unhandled system error\'"]'))[0]
    assert failed.errors == ["NCCL failure common.cu:1000 'unhandled system error'"]


def test_json_without_end_time_is_incomplete():
    text = fixture_text("nccl/single_node_dgx_a100.json")
    cut = text[: text.index(',"out_of_bounds"')] + "}"
    run = parse_nccl.parse(cut)[0]
    assert run.complete is False and any("end_time" in e for e in run.errors)


@pytest.mark.parametrize("text", ["", "hello\nworld\n", "# nThread 1 nGpus 8\n#  Rank  0 Pid 1 on x device 0\n"])
def test_unparseable_raises(text):
    with pytest.raises(parse_nccl.NcclParseError):
        parse_nccl.parse(text)


def test_header_without_rows():
    run = parse_nccl.parse("#       size         count      type   redop    root     time   algbw   busbw #wrong"
                           "     time   algbw   busbw #wrong\n")[0]
    assert not run.complete and "the result table has no rows" in run.errors


def test_bus_factor():
    assert parse_nccl.bus_factor("all_reduce_perf", 8) == pytest.approx(1.75)
    assert parse_nccl.bus_factor("all_reduce", 2) == pytest.approx(1.0)


# Real captures (tests/fixtures/dgx/real/SOURCES): a Ray/SkyPilot prefix on top of mpirun's --tag-output, and a
# log that echoes the command line behind a shell prompt.
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "dgx" / "real"
DOUBLE_PREFIX = "nccl-all-gather-skypilot-ray-mpirun-tag.txt"
COMMAND_LINE = "nccl-all-reduce-command-line-nccl-tests-287.txt"
H100_2_19_6 = "nccl-all-reduce-2.19.6-h100-direct.txt"
# The command nccl_rdma_gke_h200.yaml runs (SOURCES): the log above is its output, but does not echo it.
SKYPILOT_COMMAND = "/third_party/nccl-tests/build/all_gather_perf -b 1K -e 8G -f 2 -g 1 -w 5 --iters 100 -c 1"


def real_text(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def test_two_launcher_prefixes_parse_like_the_plain_output():
    text = real_text(DOUBLE_PREFIX)
    run = parse_nccl.parse(text)[0]
    assert run.complete and not run.errors and run.out_of_bounds_ok
    assert run.ranks == 16 and run.nodes == ["nc-d87e1263-head", "nc-d87e1263-worker1"]
    assert len(run.rows) == 24 and run.rows[-1].size == 8589934592 and run.avg_busbw_gbps == pytest.approx(122.073)
    plain = "\n".join(line.split("<stdout>:", 1)[1] for line in text.splitlines() if "<stdout>:" in line)
    assert parse_nccl.parse(plain)[0].to_dict() == run.to_dict()


def test_a_table_that_names_no_collective_is_not_judged_as_all_reduce():
    run = parse_nccl.parse(real_text(DOUBLE_PREFIX))[0]
    assert run.collective is None and {r.redop for r in run.rows} == {"none"}
    problems = verdict.nccl_table_problems(run, None, lab=False)
    assert any("reduction none" in p for p in problems), problems


def test_the_collective_is_taken_from_the_command_line():
    run = parse_nccl.parse(real_text(COMMAND_LINE))[0]
    assert run.collective == "all_reduce_perf" and run.complete and len(run.rows) == 25
    assert run.sweep == {"min_bytes": 8, "max_bytes": 134217728, "step": 2, "step_kind": "factor"}
    # the same line behind both launcher prefixes, as a run script that echoes its command would print it
    echoed = f"(head, rank=0, pid=3808) + {SKYPILOT_COMMAND}\n" + real_text(DOUBLE_PREFIX)
    gather = parse_nccl.parse(echoed)[0]
    assert gather.collective == "all_gather_perf"
    problems = verdict.nccl_table_problems(gather, None, lab=False)
    assert "the log is a all_gather_perf run, not all_reduce_perf" in problems


def test_a_command_line_that_contradicts_the_test_banner_is_an_error():
    text = real_text(COMMAND_LINE).replace(
        "# nThread 1", "# nccl-tests version 2.18.0 nccl-headers=22907 nccl-library=22907\n"
                       "# Collective test starting: all_gather_perf\n# nThread 1", 1)
    run = parse_nccl.parse(text)[0]
    assert run.collective == "all_reduce_perf"
    assert any("all_gather_perf" in e and "unknown" in e for e in run.errors), run.errors
    agreeing = parse_nccl.parse(text.replace("starting: all_gather_perf", "starting: all_reduce_perf_mpi"))[0]
    assert agreeing.errors == []


def test_nccl_tests_2_19_6_as_the_runner_recorded_it_on_an_h100():
    """all_reduce_perf 2.19.6 (NCCL 2.28.9) on one H100, launched by nccl_runner.py --launcher direct (SOURCES):
    the version banner line, the Group column of the rank lines, 1 GB rows; one rank has no bus traffic."""
    run = parse_nccl.parse(real_text(H100_2_19_6))[0]
    assert run.complete and not run.errors and run.out_of_bounds_ok and run.data_checked
    assert run.collective == "all_reduce_perf" and run.ranks == 1 and run.nodes == ["vm"]
    assert len(run.rows) == 28 and run.rows[-1].size == 1 << 30 and run.rows[-1].out_of_place.algbw_gbps == 1505.5
    assert parse_nccl.peak_busbw(run) == 0.0 and parse_nccl.bus_factor("all_reduce_perf", 1) == 0.0
