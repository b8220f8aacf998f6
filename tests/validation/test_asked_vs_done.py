"""Issue #34, generated from the table validation/asked.yml: for every tool (and so every stage) and every parameter,
a passing run with that parameter corrupted in the tool's own output, a repeat dropped or one added, must FAIL the
case's sanity check with a reason naming the asked and the done value. Two passing runs are corrupted: the
production run (tests/validation/conftest.py, assembled from real nccl-tests, fio and iperf3 outputs) and a recorded
real lab run (tests/fixtures/lab/runs: the lab's own tools and stand-ins, judged with the context it ran with). A
row added to the table later is a test here without a line more; a row whose value this file cannot find in the
output (an output locator without a mutation below) fails as such."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, build_production_run, lab_run_copy, lab_run_ctx

from validation import asked
from validation.context import context_from_inventory
from validation.parse_nccl import strip_prefix
from validation.verdict import FAIL, PASS, evaluate

OTHER_HOST = "other-host-99"
ROWS = [(tool.name, p) for tool in asked.load().values() for p in tool.params]
LAB_RUN = "20261128T171819Z"  # two nodes, tests/fixtures/lab/runs/SOURCES


def _production_run(dest: Path) -> tuple[Path, dict[str, Any]]:
    run = dest / "20261121T080000Z"
    build_production_run(run)
    return run, context_from_inventory(ROOT / "inventories" / "production")


def _lab_run(dest: Path) -> tuple[Path, dict[str, Any]]:
    run = lab_run_copy(LAB_RUN, dest)
    return run, lab_run_ctx(run)


@dataclass(frozen=True)
class Base:
    """A passing run the rows are corrupted in: how to write it (the run and the context it is judged with), and
    the case of each tool it has (a tool added to the table needs a case in every base, or a reason in `without`)."""
    name: str
    write: Callable[[Path], tuple[Path, dict[str, Any]]]
    cases: dict[str, tuple[str, str]]
    without: dict[str, str]


PRODUCTION = Base("production", _production_run, {
    "nccl-tests": ("nccl", "single-dgx01"), "fio": ("fio", "node-dgx02"), "ddp_train": ("ddp", "n4"),
    "iperf3": ("paths", "storage-dgx01"), "ib_write_bw": ("paths", "fabric-dgx01-dgx02")}, {})
LAB = Base("lab", _lab_run, {
    "nccl-tests": ("nccl", "all"), "fio": ("fio", "node-dgx01"), "ddp_train": ("ddp", "n2"),
    "iperf3": ("paths", "fabric-dgx01-dgx02")},
    {"ib_write_bw": "the lab has no HCA: its fabric path baseline is iperf3 over the compute-fabric stand-in "
                    "(inventories/lab validation_paths.fabric_tool)"})
BASES = (PRODUCTION, LAB)


def _params(select: Callable[[asked.Param], bool]) -> list[Any]:
    return [pytest.param(b, tool, p, id=f"{b.name}-{tool}.{p.name}") for b in BASES for tool, p in ROWS
            if tool in b.cases and select(p)]


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Base], tuple[Path, dict[str, Any]]]:
    """Each base written once per module, on first use."""
    made: dict[str, tuple[Path, dict[str, Any]]] = {}

    def get(base: Base) -> tuple[Path, dict[str, Any]]:
        if base.name not in made:
            made[base.name] = base.write(tmp_path_factory.mktemp(f"asked-{base.name}"))
        return made[base.name]
    return get


@pytest.fixture
def run(templates: Callable[[Base], tuple[Path, dict[str, Any]]], base: Base, tmp_path: Path) -> Path:
    template, _ctx = templates(base)
    copy = tmp_path / template.name
    shutil.copytree(template, copy)
    return copy


@pytest.fixture
def ctx(templates: Callable[[Base], tuple[Path, dict[str, Any]]], base: Base) -> dict[str, Any]:
    return templates(base)[1]


# ---------------------------------------------------------------------------------------------- the case's files


def _meta(case_dir: Path) -> dict[str, Any]:
    return json.loads((case_dir / "meta.json").read_text())


def _save_meta(case_dir: Path, meta: dict[str, Any]) -> None:
    (case_dir / "meta.json").write_text(json.dumps(meta))


def _samples(case_dir: Path, tool: str) -> list[dict[str, Any]]:
    """The samples of the case whose result the tool's parser reads (a DDP case's bare trainings are another
    judge's)."""
    return [s for s in _meta(case_dir)["samples"] if s.get("mode") != "bare"]


def _split_json(text: str) -> tuple[str, Any]:
    """A raw file as (the text before its JSON document, the document): fio prints its servers' text first."""
    start = 0 if text.lstrip().startswith("{") else text.index("\n{") + 1
    return text[:start], json.loads(text[start:])


def _at(doc: Any, path: str) -> tuple[Any, Any]:
    """The container and the key of a dotted path ('client_stats.0.read.runtime')."""
    parts = path.split(".")
    here = doc
    for part in parts[:-1]:
        here = here[int(part)] if isinstance(here, list) else here.setdefault(part, {})
    last: Any = int(parts[-1]) if isinstance(here, list) else parts[-1]
    return here, last


# ---------------------------------------------------------------------------------------------- wrong values


def _wrong(p: asked.Param, want: Any, current: Any) -> Any:
    """A value of the output's own type that differs from what was asked as the row's comparison sees it."""
    if p.compare == "at_least":
        target = float(want) * float(p.output.get("scale", 1)) * (p.fraction or 1.0) / 4
        if isinstance(current, list):
            return current[: int(target)]
        return str(int(target)) if isinstance(current, str) else (int(target) if isinstance(current, int)
                                                                   else round(target, 3))
    if p.compare == "set":
        return [OTHER_HOST, *current[1:]] if isinstance(current, list) else OTHER_HOST
    if p.compare == "one_of":
        return "/nowhere/else"
    if isinstance(want, bool):
        return type(current)(not want) if isinstance(current, (bool, int)) else str(int(not want))
    number = asked._number(want)
    if number is not None:
        other = int(number) * 2 + 1
        return str(other) if isinstance(current, str) or current is None else other
    return f"{want}x"


def _corrupt_json(p: asked.Param, text: str, want: Any, value: Any = None) -> str:
    before, doc = _split_json(text)
    where, key = _at(doc, p.output["json"])
    current = where.get(key) if isinstance(where, dict) else where[key]
    if "regex" in p.output:
        m = re.search(p.output["regex"], current)
        assert m, f"{p.tool}.{p.name}: {p.output['regex']} finds nothing in {current!r}"
        new = str(value) if value is not None else str(_wrong(p, want, m.group(1)))
        where[key] = current[: m.start(1)] + new + current[m.end(1):]
    else:
        where[key] = value if value is not None else _wrong(p, want, current)
    return before + json.dumps(doc, indent=1)


def _corrupt_text(p: asked.Param, text: str, want: Any, value: Any = None) -> str:
    m = re.search(p.output["text"], text)
    assert m, f"{p.tool}.{p.name}: {p.output['text']} finds nothing in the output"
    new = str(value) if value is not None else str(_wrong(p, want, m.group(1)))
    return text[: m.start(1)] + new + text[m.end(1):]


def _nccl_drop_largest_row(p: asked.Param, text: str, want: Any) -> str:
    largest = max(int(line.split()[0]) for line in map(strip_prefix, text.splitlines())
                  if line.strip() and not line.lstrip().startswith("#") and line.split()[0].isdigit())
    return "".join(line for line in text.splitlines(True)
                   if strip_prefix(line).split()[:1] != [str(largest)])


def _nccl_drop_last_rank(p: asked.Param, text: str, want: Any) -> str:
    ranks = [line for line in text.splitlines(True) if re.search(r"#\s+Rank\s+\d+ ", line)]
    return text.replace(ranks[-1], "", 1)


def _nccl_standin_banner(p: asked.Param, text: str, want: Any) -> str:
    """The other engine's table: the lab stand-in's banner where nccl-tests was asked, or none where it was not."""
    if want:
        kept = re.sub(r"(?m)^# lab stand-in:.*\n", "", text)
        assert kept != text, "the stand-in's output has no '# lab stand-in:' line"
        return kept
    return "# lab stand-in: torch.distributed all_reduce over gloo on CPU (torch 2.4.1), not NCCL\n" + text


MUTATIONS: dict[str, Callable[[asked.Param, str, Any], str]] = {
    "nccl_drop_largest_row": _nccl_drop_largest_row, "nccl_drop_last_rank": _nccl_drop_last_rank,
    "nccl_standin_banner": _nccl_standin_banner}


def corrupt(p: asked.Param, text: str, want: Any, value: Any = None) -> str:
    """The raw file with the row's value changed (to `value`, or to one that differs from what was asked)."""
    if "json" in p.output:
        return _corrupt_json(p, text, want, value)
    if "text" in p.output:
        return _corrupt_text(p, text, want, value)
    return MUTATIONS[p.output["mutation"]](p, text, want)


# ---------------------------------------------------------------------------------------------- the tests


def _judge(run: Path, ctx: dict[str, Any], stage: str, case: str) -> tuple[Any, Any]:
    v = evaluate(run, ctx)
    return v, next(c for c in v.checks if c.kind == "sanity" and c.case == case and c.stage == stage)


def _meet_when(run: Path, ctx: dict[str, Any], base: Base, tool: str, p: asked.Param) -> None:
    """Make the healthy case one the row applies to: its `when` values asked, and printed as done."""
    stage, case = base.cases[tool]
    d = run / "raw" / stage / case
    meta = _meta(d)
    if p.applies(meta["asked"]):
        return
    rows = {r.name: r for r in asked.load()[tool].params}
    for key, value in p.when.items():
        meta["asked"][key] = value
        for sample in _samples(d, tool):
            f = d / sample["file"]
            f.write_text(corrupt(rows[key], f.read_text(), value, str(value)))
    _save_meta(d, meta)
    _v, sanity = _judge(run, ctx, stage, case)
    assert sanity.status == PASS, f"the case asking {p.when} is not healthy before the corruption: {sanity.reasons}"


@pytest.mark.parametrize("base, tool, p", _params(lambda p: p.compare != "repeats"))
def test_a_parameter_done_otherwise_than_asked_fails_naming_both(run, ctx, base, tool, p):
    assert "mutation" not in p.output or p.output["mutation"] in MUTATIONS, \
        f"{tool}.{p.name}: no mutation {p.output['mutation']!r} in this file"
    stage, case = base.cases[tool]
    _meet_when(run, ctx, base, tool, p)
    d = run / "raw" / stage / case
    meta = _meta(d)
    expected = []
    for sample in _samples(d, tool):
        f = d / sample["file"]
        want = asked.for_sample(tool, meta["asked"], sample)[p.asked]
        f.write_text(corrupt(p, f.read_text(), want))
        done = asked.DONE[tool](f.read_text())[p.name]
        shown = f"one of {asked.show(list(want.values()) if isinstance(want, dict) else want)}" \
            if p.compare == "one_of" else asked.show(want)
        # a reason names its sample: the raw file, or an HCA's report its HCA
        tags = {str(sample["file"]), str(sample.get("device"))}
        expected.append((tags, f"{p.name}: asked {shown}, done {asked.show(done)}"))
    v, sanity = _judge(run, ctx, stage, case)
    assert v.status == FAIL and sanity.status == FAIL, f"{tool}.{p.name} corrupted in {case} was not rejected"
    for tags, fragment in expected:
        assert any(r.split(": ", 1)[0] in tags and fragment in r for r in sanity.reasons), (fragment, sanity.reasons)


@pytest.mark.parametrize("base, tool, _p", _params(lambda p: p.compare == "repeats"))
@pytest.mark.parametrize("how", ["dropped", "unasked"])
def test_a_repeat_missing_or_unasked_fails_naming_both(run, ctx, base, tool, _p, how):
    stage, case = base.cases[tool]
    d = run / "raw" / stage / case
    meta = _meta(d)
    files = asked.asked_files(tool, meta["asked"])
    assert files and all(s["file"] in files for s in meta["samples"])
    if how == "dropped":
        gone = files[-1]
        meta["samples"] = [s for s in meta["samples"] if s["file"] != gone]
        (d / gone).unlink()
        fragment = f"repeats: asked {meta['asked']['repeats']} ({len(files)} result"
        also = f"done {len(files) - 1}: no result of {gone}"
    else:
        pattern = asked.load()[tool].files
        new = pattern.format(k=int(meta["asked"]["repeats"]) + 1, mode=(meta["asked"].get("modes") or [""])[0],
                             device="mlx5_99")
        shutil.copy(d / files[0], d / new)
        meta["samples"].append(dict(next(s for s in meta["samples"] if s["file"] == files[0]), file=new))
        fragment = f"repeats: asked {meta['asked']['repeats']} ({len(files)} result"
        also = f"done also {new}"
    _save_meta(d, meta)
    v, sanity = _judge(run, ctx, stage, case)
    assert v.status == FAIL and sanity.status == FAIL
    assert any(fragment in r and also in r for r in sanity.reasons), (fragment, also, sanity.reasons)


@pytest.mark.parametrize("base", BASES, ids=[b.name for b in BASES])
def test_every_tool_of_the_table_has_a_case_a_reader_and_every_row_a_value_in_the_output(templates, base):
    template, _ctx = templates(base)
    assert set(asked.load()) == set(base.cases) | set(base.without) and set(asked.load()) == set(asked.DONE)
    assert not set(base.cases) & set(base.without)
    assert not PRODUCTION.without, "the production run has a case of every tool"
    for tool in base.without:
        stage = asked.load()[tool].stage
        tools = {json.loads(m.read_text()).get("tool") for m in (template / "raw" / stage).glob("*/meta.json")}
        assert tool not in tools, f"{base.name} has a {tool} case: corrupt it instead of leaving it out"
    for tool, (stage, case) in base.cases.items():
        assert asked.load()[tool].stage == stage
        d = template / "raw" / stage / case
        first = _samples(d, tool)[0]
        done = asked.DONE[tool]((d / first["file"]).read_text())
        want = asked.for_sample(tool, _meta(d)["asked"], first)
        for p in asked.load()[tool].params:
            if p.compare != "repeats":
                assert p.name in done, f"{tool}: its parser's done() does not name {p.name}"
                assert p.asked in want, f"{tool}: the healthy launch record does not ask {p.asked}"


def _runner(name: str) -> Any:
    sys.path.insert(0, str(ROOT / "validation" / "runners"))
    try:
        return __import__(name)
    finally:
        sys.path.pop(0)


def test_the_runners_write_every_asked_parameter_of_the_table():
    """What the launchers write (meta.json asked) holds every parameter the table compares, and the repeats."""
    nccl = _runner("nccl_runner").asked(argparse.Namespace(
        nodes="dgx01,dgx02", node_hostnames="a,b", launcher="mpirun", gpus_per_node=8, gpus_per_process=1,
        min_bytes=8, max_bytes=8 << 30, warmup=5, iters=20, repeats=3, standin=False))
    assert nccl["sizes"] == 31 and nccl["ranks"] == 16 and nccl["nodes"] == ["a", "b"] and nccl["ngpus"] == 1
    assert nccl["standin"] is False
    fio = _runner("fio_runner").asked(argparse.Namespace(
        phase="read", runtime=60, size_per_job="2G", numjobs=8, bs="1M", iodepth=16, ioengine="libaio", direct=1,
        drop_caches=1, repeats=5), "read", {"dgx01": "/mnt/x/dgx01"}, {"198.51.100.11:8765": "dgx01"})
    assert fio["read_bytes"] == 8 * 2 * 1024 ** 3 and fio["time_based"] == 1 and fio["repeats"] == 5
    ddp = _runner("ddp_runner").asked(argparse.Namespace(
        nodes="dgx01,dgx02", node_hostnames=None, procs_per_node=8, model="resnet50", steps=50, warmup_steps=10,
        batch_size=256, image_size=224, gpus=1, repeats=5, dataset="/mnt/d", runtime="pyxis"), ["synthetic", "real"])
    assert ddp["world_size"] == 16 and ddp["backend"] == "nccl" and ddp["nodes"] == ["dgx01", "dgx02"]
    for tool, written in (("nccl-tests", nccl), ("fio", fio), ("ddp_train", ddp)):
        missing = sorted({p.asked for p in asked.load()[tool].params if p.compare != "repeats"} - set(written))
        assert not missing and "repeats" in written, f"{tool}: the runner does not write {missing}"


def test_a_row_without_its_reason_or_comparison_is_refused(tmp_path):
    bad = tmp_path / "asked.yml"
    bad.write_text("tools:\n  fio:\n    stage: fio\n    files: 'r{k}.json'\n    params:\n"
                   "      - {name: repeats, compare: repeats, done: x, output: {mutation: repeats}}\n"
                   "      - {name: read_s, compare: at_least, fraction: 0.9, done: x, output: {json: a}}\n")
    with pytest.raises(asked.AskedError, match=r"at_least row needs a fraction in .* and why"):
        asked.load(bad)
    bad.write_text(bad.read_text().replace("compare: at_least, fraction: 0.9", "compare: about"))
    with pytest.raises(asked.AskedError, match="compare 'about' is not one of"):
        asked.load(bad)


def test_the_docs_show_the_table_as_it_is():
    page = (ROOT / "docs" / "asked-vs-done.md").read_text(encoding="utf-8")
    assert asked.markdown() in page, "docs/asked-vs-done.md: paste validation.asked.markdown() under 'The table'"
