"""Broken runs: a healthy production run (tests/validation/conftest.py) with one defect each, judged by
`validation.verdict.evaluate`. Every one must be rejected by a sanity check naming the case (and, for a
per-node case, the node) and saying what differs; none may crash the judge; no check of a case that was not
broken may fail (a healthy node is never blamed for another's impossible figure).

    .venv/bin/python -m tests.validation.broken     one line per case, then "N broken runs, N rejected ..."

The classes follow issue #19: non-numbers, impossible tables, the wrong test, fio not the job asked for, DDP
results that disagree with themselves or the launch, repeats not counted, inputs that crashed the judge.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

def _run_builder():
    """tests/validation/conftest.py (the healthy run builder), loaded under its own name: other test
    directories' conftest modules are also called 'conftest'."""
    name = "validation_run_builder"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "conftest.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_builder = _run_builder()
ADDR, NODES, build_production_run = _builder.ADDR, _builder.NODES, _builder.build_production_run
fixture_text, repeated, nccl_meta = _builder.fixture_text, _builder.repeated, _builder.nccl_meta

from tests.device_text import ibstat_set  # noqa: E402
from validation.context import context_from_inventory  # noqa: E402
from validation.parse_nccl import strip_prefix  # noqa: E402
from validation.verdict import FAIL, PASS, Verdict, evaluate  # noqa: E402

# Cases whose failure may show in the derived DDP metrics (they combine n1 and n4).
DDP_DERIVED = ("ddp_scaling_efficiency", "ddp_real_over_synthetic", "ddp_synthetic_throughput", "ddp_real_throughput")


@dataclass(frozen=True)
class Broken:
    cls: str           # the class
    what: str          # one line: the defect
    stage: str
    case: str          # the case the defect is in
    mutate: Callable[[Path, dict[str, Any]], None]


# ------------------------------------------------------------------------------------------- mutators


def _case(run: Path, stage: str, case: str) -> Path:
    return run / "raw" / stage / case


def _files(run: Path, stage: str, case: str) -> list[Path]:
    return sorted(p for p in _case(run, stage, case).iterdir() if p.name != "meta.json")


def text(stage: str, case: str, fn: Callable[[str], str], only_first: bool = False):
    def go(run: Path, ctx: dict[str, Any]) -> None:
        for i, p in enumerate(_files(run, stage, case)):
            if only_first and i:
                break
            new = fn(p.read_text(encoding="utf-8"))
            p.write_text(new, encoding="utf-8")
    return go


def file_text(stage: str, case: str, name: str, fn: Callable[[str], str]):
    """Replace one raw file of a case (the sysinfo cases hold two tools' outputs side by side)."""
    def go(run: Path, ctx: dict[str, Any]) -> None:
        p = _case(run, stage, case) / name
        p.write_text(fn(p.read_text(encoding="utf-8")), encoding="utf-8")
    return go


def _topo_without_nvlink(gpu: int) -> Callable[[str], str]:
    """GPU <gpu> reached over PCIe only: its row and column say SYS where they said NV12."""
    def fn(t: str) -> str:
        lines = t.splitlines()
        out = []
        for line in lines:
            cells = line.split("\t")
            if cells[0] == f"GPU{gpu}":
                cells = [cells[0]] + [c.replace("NV12", "SYS") for c in cells[1:]]
            elif cells[0].startswith("GPU") and len(cells) > gpu + 1:
                cells[gpu + 1] = cells[gpu + 1].replace("NV12", "SYS")
            out.append("\t".join(cells))
        return "\n".join(out) + "\n"
    return fn


def _ibstat_port(ca: str, field: str, value: str) -> Callable[[str], str]:
    """Set one field of a CA's port block."""
    return lambda t: ibstat_set(t, ca, field, value)


def meta(stage: str, case: str, fn: Callable[[dict[str, Any]], Any]):
    """Edit meta.json in place (fn's return value is ignored)."""
    def go(run: Path, ctx: dict[str, Any]) -> None:
        path = _case(run, stage, case) / "meta.json"
        doc = json.loads(path.read_text())
        fn(doc)
        path.write_text(json.dumps(doc))
    return go


def raw_meta(stage: str, case: str, body: str):
    def go(run: Path, ctx: dict[str, Any]) -> None:
        (_case(run, stage, case) / "meta.json").write_text(body)
    return go


def doc(stage: str, case: str, fn: Callable[[dict[str, Any]], Any], pattern: str = "*.json", first: bool = False,
        replace: bool = False):
    """Edit parsed JSON result files (ddp result docs, fio documents after their leading text) in place, or
    (replace) write what fn returns instead."""
    def go(run: Path, ctx: dict[str, Any]) -> None:
        for i, p in enumerate(sorted(_case(run, stage, case).glob(pattern))):
            if p.name == "meta.json" or (first and i):
                continue
            raw = p.read_text()
            start = raw.index("{")
            d = json.loads(raw[start:])
            out = fn(d)
            p.write_text(raw[:start] + json.dumps(out if replace else d))
    return go


def row_sub(size: int, field: int, value: str) -> Callable[[str], str]:
    """Replace token `field` (0 = the size) of the result row of `size` in an nccl-tests log, launcher
    prefixes and spacing kept. With a root column (single-node and pair fixtures): time 5, algbw 6, busbw 7,
    in-place busbw 11; without (the old-format all-node fixture): busbw 6."""
    def fn(t: str) -> str:
        out = []
        for line in t.splitlines():
            body = strip_prefix(line)
            toks = re.split(r"(\s+)", body)
            words = [i for i, tok in enumerate(toks) if tok and not tok.isspace()]
            if words and toks[words[0]] == str(size) and len(words) > field:
                toks[words[field]] = value
                line = line[: len(line) - len(body)] + "".join(toks)
            out.append(line)
        return "\n".join(out) + "\n"
    return fn


def fio_opts(case: str, **changes: str):
    def fn(d: dict[str, Any]) -> None:
        d["global options"].update(changes)
    return doc("fio", case, fn)


def fio_client(case: str, fn: Callable[[dict[str, Any]], None], which: int = 0):
    def g(d: dict[str, Any]) -> None:
        fn(d["client_stats"][which])
    return doc("fio", case, g)


def ddp(case: str, fn: Callable[[dict[str, Any]], Any], mode: str = "synthetic"):
    return doc("ddp", case, fn, pattern=f"{mode}-r*.json")


def drop_samples(stage: str, case: str, keep: int, mode: str | None = None):
    def fn(m: dict[str, Any]) -> None:
        if mode is None:
            m["samples"] = m["samples"][:keep]
        else:
            same = [s for s in m["samples"] if s.get("mode") == mode][:keep]
            m["samples"] = [s for s in m["samples"] if s.get("mode") != mode] + same
    return meta(stage, case, fn)


def both(*fns):
    def go(run: Path, ctx: dict[str, Any]) -> None:
        for f in fns:
            f(run, ctx)
    return go


def _set(d: dict[str, Any], **kw: Any) -> None:
    d.update(kw)


def _no_rank_lines(host: str) -> Callable[[str], str]:
    """Rank lines replaced by the NCCL INFO lines a run prints, naming `host` (the host it really ran on)."""
    def fn(t: str) -> str:
        lines = [ln for ln in t.splitlines() if "#  Rank" not in ln]
        info = [f"{host}:41230:41230 [0] NCCL INFO comm 0x55d0 rank {r} nranks 8 cudaDev {r} busId 7000 - Init COMPLETE"
                for r in range(8)]
        return "\n".join(info + lines) + "\n"
    return fn


def repeat_twice(stage: str, case: str, dup: str, gone: str):
    """The sample of `gone` points at `dup`'s file and `gone`'s result is deleted: the count of samples is what was
    asked, but one result is counted twice and an asked repeat never wrote its own."""
    def go(run: Path, ctx: dict[str, Any]) -> None:
        path = _case(run, stage, case) / "meta.json"
        m = json.loads(path.read_text())
        for sample in m["samples"]:
            if sample["file"] == gone:
                sample["file"] = dup
        path.write_text(json.dumps(m))
        (_case(run, stage, case) / gone).unlink()
    return go


def unasked_repeat(stage: str, case: str, src: str, new: str):
    """One more result than the launch asked for, listed as a sample like the others."""
    def go(run: Path, ctx: dict[str, Any]) -> None:
        d = _case(run, stage, case)
        (d / new).write_text((d / src).read_text())
        m = json.loads((d / "meta.json").read_text())
        m["samples"].append(dict(next(s for s in m["samples"] if s["file"] == src), file=new))
        (d / "meta.json").write_text(json.dumps(m))
    return go


def drop_repeat(stage: str, case: str, name: str):
    """An asked repeat whose result was never written, and whose sample the launch record does not list."""
    def go(run: Path, ctx: dict[str, Any]) -> None:
        d = _case(run, stage, case)
        m = json.loads((d / "meta.json").read_text())
        m["samples"] = [s for s in m["samples"] if s["file"] != name]
        (d / "meta.json").write_text(json.dumps(m))
        (d / name).unlink()
    return go


S1 = "single-dgx01"
P12 = "pair-dgx01-dgx02"
N1 = "node-dgx02"
D1 = "dgx01"  # a node: its fabric sanity check (ibstat and topo -m of raw/sysinfo/dgx01)

# ------------------------------------------------------------------------------------------- the corpus

CASES: list[Broken] = [
    # 1. non-numbers as measurements
    Broken("non-number", "busbw nan at the largest size", "nccl", S1, text("nccl", S1, row_sub(8589934592, 7, "nan"))),
    Broken("non-number", "busbw inf at the largest size", "nccl", S1, text("nccl", S1, row_sub(8589934592, 7, "inf"))),
    Broken("non-number", "busbw nan in the first judged row (max() would return NaN)", "nccl", S1,
           text("nccl", S1, row_sub(1048576, 7, "nan"))),
    Broken("non-number", "all-node busbw inf (crashed the plots)", "nccl", "all", text("nccl", "all", row_sub(8589934592, 6, "inf"))),
    Broken("non-number", "pair busbw nan", "nccl", P12, text("nccl", P12, row_sub(8589934592, 7, "nan"))),
    Broken("non-number", "algbw inf", "nccl", S1, text("nccl", S1, row_sub(4194304, 6, "inf"))),
    Broken("non-number", "time nan", "nccl", S1, text("nccl", S1, row_sub(4194304, 5, "nan"))),
    Broken("non-number", "DDP samples/s NaN", "ddp", "n1", ddp("n1", lambda d: _set(d, samples_per_s=float("nan")))),
    Broken("non-number", "DDP samples/s Infinity", "ddp", "n4", ddp("n4", lambda d: _set(d, samples_per_s=float("inf")))),
    Broken("non-number", "DDP samples/s a string", "ddp", "n1", ddp("n1", lambda d: _set(d, samples_per_s="fast"))),
    Broken("non-number", "DDP step time NaN", "ddp", "n1",
           ddp("n1", lambda d: d["step_times_s"].__setitem__(3, float("nan")))),
    Broken("non-number", "fio client bw NaN", "fio", N1, fio_client(N1, lambda c: c["read"].__setitem__("bw_bytes", float("nan")))),
    # 2. impossible or inconsistent tables
    Broken("impossible table", "a duplicated row", "nccl", S1,
           text("nccl", S1, lambda t: re.sub(r"(?m)^(\s+4194304\s.*\n)", r"\1\1", t))),
    Broken("impossible table", "text glued in front of a row (silently dropped before)", "nccl", S1,
           text("nccl", S1, lambda t: re.sub(r"(?m)^\s+(8589934592\s)", r"garbage\1", t))),
    Broken("impossible table", "negative busbw at one size", "nccl", S1, text("nccl", S1, row_sub(2097152, 7, "-91.97"))),
    Broken("impossible table", "all-node busbw 480 GB/s over eight HDR links (200 GB/s)", "nccl", "all",
           text("nccl", "all", row_sub(8589934592, 6, "480.00"))),
    Broken("impossible table", "single-node busbw 900 GB/s, above NVLink", "nccl", S1,
           text("nccl", S1, row_sub(8589934592, 7, "900.00"))),
    Broken("impossible table", "pair busbw 400 GB/s above its links", "nccl", P12,
           text("nccl", P12, row_sub(8589934592, 7, "400.00"))),
    Broken("impossible table", "a size missing from the x2 sweep", "nccl", S1,
           text("nccl", S1, lambda t: re.sub(r"(?m)^\s+(2097152|4194304)\s.*\n", "", t))),
    Broken("impossible table", "sizes out of order", "nccl", S1,
           text("nccl", S1, lambda t: re.sub(r"(?m)^(\s+2097152\s.*\n)(\s+4194304\s.*\n)", r"\2\1", t))),
    Broken("impossible table", "a row beyond the header's maxBytes", "nccl", S1,
           text("nccl", S1, lambda t: t.replace("maxBytes 8589934592", "maxBytes 4294967296"))),
    Broken("impossible table", "negative time", "nccl", P12, text("nccl", P12, row_sub(8589934592, 5, "-1.0"))),
    Broken("impossible table", "negative in-place busbw", "nccl", S1, text("nccl", S1, row_sub(8388608, 11, "-3.0"))),
    # 3. the wrong test
    Broken("wrong test", "a half-precision table (type half): busbw of 2-byte elements", "nccl", S1,
           text("nccl", S1, lambda t: t.replace("     float ", "      half "))),
    Broken("wrong test", "an all_gather_perf table (redop none)", "nccl", S1,
           text("nccl", S1, lambda t: t.replace("all_reduce_perf", "all_gather_perf").replace("     sum  ", "    none  "))),
    Broken("wrong test", "all_gather_perf command line echoed above an unlabelled table", "nccl", P12,
           text("nccl", P12, lambda t: "mpirun -np 16 ./build/all_gather_perf -b 32M -e 8G -f 2 -g 1\n"
                + t.replace("# Collective test starting: all_reduce_perf\n", ""))),
    Broken("wrong test", "a max reduction instead of sum", "nccl", S1, text("nccl", S1, lambda t: t.replace("     sum  ", "     max  "))),
    Broken("wrong test", "'Test NCCL failure' printed before the table header", "nccl", S1,
           text("nccl", S1, lambda t: t.replace("# Using devices",
                                                "dgx01: Test NCCL failure common.cu:954 'unhandled system error'\n# Using devices"))),
    Broken("wrong test", "old-format error column above tolerance", "nccl", "all",
           text("nccl", "all", lambda t: t.replace("1e-07  5471.86", "5e-01  5471.86"))),
    Broken("wrong test", "no '# Rank' lines; NCCL INFO says it ran on another host", "nccl", S1,
           text("nccl", S1, _no_rank_lines("dgx09"))),
    Broken("wrong test", "a reduce_scatter run announced by the test itself", "nccl", "all",
           text("nccl", "all", lambda t: "# Collective test starting: reduce_scatter_perf\n" + t)),
    Broken("wrong test", "a NCCL error after the table footer", "nccl", S1,
           text("nccl", S1, lambda t: t + "dgx01: NCCL error init.cc:1210 'remote process exited or there was a network error'\n")),
    Broken("wrong test", "ran on 8 ranks of dgx02 for dgx01's case", "nccl", S1, text("nccl", S1, lambda t: t.replace("dgx01", "dgx02"))),
    Broken("wrong test", "the runner launched all_gather_perf", "nccl", "all",
           meta("nccl", "all", lambda m: m.__setitem__("command", [c.replace("all_reduce", "all_gather")
                                                                  for c in m["command"]]))),
    Broken("wrong test", "the table's size sweep is not the one the command asked for", "nccl", P12,
           meta("nccl", P12, lambda m: m.__setitem__("command", [("1048576" if c == "33554432" else c)
                                                                for c in m["command"]]))),
    Broken("wrong test", "meta.json records no command", "nccl", S1, meta("nccl", S1, lambda m: m.pop("command"))),
    # 4. fio not compared with the job that was asked
    Broken("fio job", "read a local disk directory, not the NFS scratch", "fio", N1, fio_opts(N1, directory="/var/tmp/fio")),
    Broken("fio job", "aggregate on a local disk", "fio", "aggregate", fio_opts("aggregate", directory="/tmp/fio")),
    Broken("fio job", "randrw instead of a sequential read", "fio", N1, fio_opts(N1, rw="randrw")),
    Broken("fio job", "4k blocks instead of 1M", "fio", N1, fio_opts(N1, bs="4k")),
    Broken("fio job", "buffered I/O where direct was asked", "fio", N1, fio_opts(N1, direct="0")),
    Broken("fio job", "a 0.8 s read phase where 60 s were asked", "fio", N1,
           fio_client(N1, lambda c: c["read"].__setitem__("runtime", 800))),
    Broken("fio job", "time-based flag dropped: read the file set once", "fio", N1,
           doc("fio", N1, lambda d: d["global options"].pop("time_based"))),
    Broken("fio job", "a client that read 0 bytes counted as present", "fio", "aggregate",
           fio_client("aggregate", lambda c: c["read"].update(io_bytes=0, bw_bytes=0), which=1)),
    Broken("fio job", "expected clients omitted from meta.json", "fio", "aggregate",
           meta("fio", "aggregate", lambda m: m["asked"].pop("clients"))),
    Broken("fio job", "error text after the JSON document", "fio", N1,
           text("fio", N1, lambda t: t + "\nfio: client 198.51.100.12 timed out\n")),
    Broken("fio job", "a client missing from the aggregate", "fio", "aggregate",
           doc("fio", "aggregate", lambda d: d.__setitem__("client_stats", d["client_stats"][1:]))),
    Broken("fio job", "a result from a client nobody asked for", "fio", N1,
           fio_client(N1, lambda c: c.__setitem__("hostname", "192.0.2.99"))),
    Broken("fio job", "meta.json records no scratch directories", "fio", N1,
           meta("fio", N1, lambda m: m["asked"].pop("directories"))),
    Broken("fio job", "fio printed no job options", "fio", N1, doc("fio", N1, lambda d: d.pop("global options"))),
    Broken("fio job", "a write job recorded as the read", "fio", N1, fio_opts(N1, rw="write")),
    # 5. DDP results not cross-checked
    Broken("ddp", "fewer ranks' step times than the world size", "ddp", "n4",
           ddp("n4", lambda d: _set(d, rank_mean_step_s=d["rank_mean_step_s"][:24]))),
    Broken("ddp", "step times of 0", "ddp", "n1", ddp("n1", lambda d: _set(d, step_times_s=[0.0] * len(d["step_times_s"])))),
    Broken("ddp", "samples/s ten times what batch x world x steps / time gives", "ddp", "n1",
           ddp("n1", lambda d: _set(d, samples_per_s=d["samples_per_s"] * 10))),
    Broken("ddp", "trained on CPU with gloo outside the lab", "ddp", "n1", ddp("n1", lambda d: _set(d, backend="gloo", device="cpu"))),
    Broken("ddp", "nodes in the result differ from the nodes launched", "ddp", "n4", ddp("n4", lambda d: _set(d, nodes=NODES[:2]))),
    Broken("ddp", "a 'real data' sample that is a synthetic run (no dataset read)", "ddp", "n1",
           ddp("n1", lambda d: _set(d, dataset=None), mode="real")),
    Broken("ddp", "a real-data sample that read another directory", "ddp", "n4",
           ddp("n4", lambda d: _set(d, dataset="/raid/local-copy"), mode="real")),
    Broken("ddp", "real-data result without the dataset it read", "ddp", "n1", ddp("n1", lambda d: d.pop("dataset"), mode="real")),
    Broken("ddp", "world size 8 for the 4-node case", "ddp", "n4", ddp("n4", lambda d: _set(d, world_size=8))),
    Broken("ddp", "fewer timed steps than asked", "ddp", "n1", ddp("n1", lambda d: _set(d, step_times_s=d["step_times_s"][:10]))),
    Broken("ddp", "a synthetic result recorded under real", "ddp", "n1", ddp("n1", lambda d: _set(d, mode="synthetic"), mode="real")),
    Broken("ddp", "negative samples/s", "ddp", "n4", ddp("n4", lambda d: _set(d, samples_per_s=-5.0))),
    Broken("ddp", "no per-rank step times at all", "ddp", "n1", ddp("n1", lambda d: d.pop("rank_mean_step_s"))),
    # 6. repeats not counted
    Broken("repeats", "single-node case with 4 of 5 samples", "nccl", S1, drop_samples("nccl", S1, 4)),
    Broken("repeats", "all-node case with 2 of 5 samples", "nccl", "all", drop_samples("nccl", "all", 2)),
    Broken("repeats", "per-node fio with 1 of 5 samples", "fio", N1, drop_samples("fio", N1, 1)),
    Broken("repeats", "aggregate fio with 3 of 5 samples", "fio", "aggregate", drop_samples("fio", "aggregate", 3)),
    Broken("repeats", "DDP real data with 2 of 5 samples", "ddp", "n4", drop_samples("ddp", "n4", 2, mode="real")),
    # 7. asked against done (issue #34): a measurement shorter than asked, a repeat missing or unasked, other
    # parameters, nodes or ranks than the launch asked for
    Broken("asked vs done", "one client of the aggregate read 0.5 s of the 60 s asked", "fio", "aggregate",
           fio_client("aggregate", lambda c: c["read"].__setitem__("runtime", 500), which=2)),
    Broken("asked vs done", "a whole-file-set read that read a quarter of the file set", "fio", N1, both(
        meta("fio", N1, lambda m: m["asked"].update(runtime=0, time_based=0)),
        doc("fio", N1, lambda d: [d["global options"].pop(k) for k in ("runtime", "time_based")]),
        fio_client(N1, lambda c: c["read"].__setitem__("io_bytes", 16 * 1024 * 1024)))),
    Broken("asked vs done", "fio ran 1M files per job where 32M were asked", "fio", N1, fio_opts(N1, size="1M")),
    Broken("asked vs done", "fio ran one job per client where eight were asked", "fio", "aggregate",
           fio_opts("aggregate", numjobs="1")),
    Broken("asked vs done", "DDP repeat r2 never written, r1 listed twice in its place", "ddp", "n4",
           repeat_twice("ddp", "n4", "synthetic-r1.json", "synthetic-r2.json")),
    Broken("asked vs done", "DDP asked repeat never written nor listed", "ddp", "n1",
           drop_repeat("ddp", "n1", "real-r5.json")),
    Broken("asked vs done", "DDP result names dgx02, its launch dgx01", "ddp", "n1",
           ddp("n1", lambda d: _set(d, nodes=["dgx02"]))),
    Broken("asked vs done", "DDP result names dgx05 for dgx04 (same count)", "ddp", "n4",
           ddp("n4", lambda d: _set(d, nodes=["dgx01", "dgx02", "dgx03", "dgx05"]), mode="real")),
    Broken("asked vs done", "DDP trained 25 of the 50 steps asked (its result says 25)", "ddp", "n1",
           ddp("n1", lambda d: _set(d, steps=25, step_times_s=d["step_times_s"][:25]))),
    Broken("asked vs done", "DDP batch 128 per rank where 256 was asked", "ddp", "n4",
           ddp("n4", lambda d: _set(d, batch_size_per_rank=128, samples_per_s=d["samples_per_s"] / 2))),
    Broken("asked vs done", "nccl-tests ran 2 iterations where 20 were asked", "nccl", "all",
           text("nccl", "all", lambda t: t.replace(" iters: 20 ", " iters: 2 "))),
    Broken("asked vs done", "one process drove every GPU (nGpus 8) where one per process was asked", "nccl", P12,
           text("nccl", P12, lambda t: t.replace("nGpus 1 ", "nGpus 8 "))),
    Broken("asked vs done", "an NCCL repeat nobody asked for (r6)", "nccl", S1, unasked_repeat("nccl", S1, "r1.log", "r6.log")),
    Broken("asked vs done", "an NCCL repeat listed twice, the other never written", "nccl", "all",
           repeat_twice("nccl", "all", "r1.log", "r3.log")),
    Broken("asked vs done", "the all-node run's ranks on dgx01..dgx03 only", "nccl", "all",
           text("nccl", "all", lambda t: re.sub(r"(#  Rank\s+\d+ .*on)(\s+)dgx04", r"\1\2dgx03", t))),
    Broken("asked vs done", "iperf3 received for 3 s of the 10 s asked", "paths", "storage-dgx01",
           doc("paths", "storage-dgx01", lambda d: d["end"]["sum_received"].__setitem__("seconds", 3.0))),
    Broken("asked vs done", "iperf3 ran 5 s where 10 s were asked", "paths", "storage-dgx02",
           doc("paths", "storage-dgx02", lambda d: d["start"]["test_start"].__setitem__("duration", 5))),
    Broken("asked vs done", "iperf3 of storage-dgx03 ran on dgx04", "paths", "storage-dgx03",
           doc("paths", "storage-dgx03", lambda d: d["start"].__setitem__(
               "system_info", d["start"]["system_info"].replace("dgx03", "dgx04")))),
    # the launch record changed with its output: only the site and the case tell
    Broken("asked vs done", "fio asked 1 s and read 1 s where the site asks 60 s (launch and output agree)", "fio", N1,
           both(meta("fio", N1, lambda m: m["asked"].__setitem__("runtime", 1)), fio_opts(N1, runtime="1"),
                fio_client(N1, lambda c: c["read"].__setitem__("runtime", 1000)))),
    Broken("asked vs done", "nccl-tests asked 2 iterations and ran 2 where the site asks 20", "nccl", "all",
           both(meta("nccl", "all", lambda m: m["asked"].__setitem__("iters", 2)),
                meta("nccl", "all", lambda m: m.__setitem__("command", [("2" if c == "20" else c) for c in m["command"]])),
                text("nccl", "all", lambda t: t.replace(" iters: 20 ", " iters: 2 ")))),
    Broken("asked vs done", "single-dgx01 launched and ran on dgx03 (record and output agree)", "nccl", S1,
           both(meta("nccl", S1, lambda m: _set(m, nodes=["dgx03"]) or m["asked"].__setitem__("nodes", ["dgx03"])),
                text("nccl", S1, lambda t: t.replace("dgx01", "dgx03")))),
    Broken("asked vs done", "DDP n1 launched and trained on dgx02 (record and result agree)", "ddp", "n1",
           both(meta("ddp", "n1", lambda m: _set(m, nodes=["dgx02"]) or m["asked"].__setitem__("nodes", ["dgx02"])),
                ddp("n1", lambda d: _set(d, nodes=["dgx02"])), ddp("n1", lambda d: _set(d, nodes=["dgx02"]), mode="real"))),
    # 8. crashes instead of a FAIL
    Broken("crash", "a DDP result file holding a JSON list", "ddp", "n1",
           doc("ddp", "n1", lambda d: [d], pattern="synthetic-r1.json", replace=True)),
    Broken("crash", "meta.json samples not a list", "nccl", S1, meta("nccl", S1, lambda m: _set(m, samples="r1.log"))),
    Broken("crash", "meta.json samples a list of strings", "fio", N1, meta("fio", N1, lambda m: _set(m, samples=["r1.json"]))),
    Broken("crash", "meta.json is a JSON list", "ddp", "n4", raw_meta("ddp", "n4", "[1, 2, 3]")),
    Broken("crash", "meta.json is not JSON", "nccl", P12, raw_meta("nccl", P12, "{samples: oops")),
    Broken("crash", "DDP step times a string", "ddp", "n1", ddp("n1", lambda d: _set(d, step_times_s="0.1,0.1"))),
    Broken("crash", "DDP per-rank step times a dict", "ddp", "n4", ddp("n4", lambda d: _set(d, rank_mean_step_s={"0": 0.1}))),
    Broken("crash", "meta.json asked entry a string", "ddp", "n1", meta("ddp", "n1", lambda m: _set(m, asked="resnet50"))),
    Broken("crash", "an NCCL log of binary garbage", "nccl", S1, text("nccl", S1, lambda t: "\x00\x01\x02 garbage \ufffd\n" * 20)),
    Broken("crash", "fio document with client_stats a dict", "fio", N1, doc("fio", N1, lambda d: _set(d, client_stats={"a": 1}))),
    Broken("crash", "a sample whose exit status is a string", "nccl", S1,
           meta("nccl", S1, lambda m: m["samples"][0].__setitem__("rc", "0"))),
    Broken("crash", "fio asked clients a list", "fio", "aggregate",
           meta("fio", "aggregate", lambda m: m["asked"].__setitem__("clients", [f"{ADDR[n]}:8765" for n in NODES]))),
    # 7. device outputs of the fabric sanity check (ibstat, nvidia-smi topo -m): failed, truncated, doubled
    Broken("device-output", "ibstat answered ibpanic (no umad)", "nccl", D1, file_text("sysinfo", D1, "ibstat.txt",
           lambda t: "ibpanic: [4127] main: stat of IB device 'mlx5_0' failed: No such file or directory\n")),
    Broken("device-output", "ibstat empty", "nccl", D1, file_text("sysinfo", D1, "ibstat.txt", lambda t: "")),
    Broken("device-output", "ibstat cut off after half the adapters", "nccl", D1,
           file_text("sysinfo", D1, "ibstat.txt", lambda t: t[:t.index("CA 'mlx5_4'")] + "CA 'mlx5_4'\n\tCA type: MT41")),
    Broken("device-output", "ibstat printed twice (two nodes' outputs concatenated)", "nccl", D1,
           file_text("sysinfo", D1, "ibstat.txt", lambda t: t + t)),
    Broken("device-output", "ibstat rate not a number", "nccl", D1,
           file_text("sysinfo", D1, "ibstat.txt", _ibstat_port("mlx5_3", "Rate", "unknown"))),
    Broken("device-output", "a compute port Initializing (no subnet manager)", "nccl", D1,
           file_text("sysinfo", D1, "ibstat.txt", _ibstat_port("mlx5_6", "State", "Initializing"))),
    Broken("device-output", "a compute port at HDR100", "nccl", D1,
           file_text("sysinfo", D1, "ibstat.txt", _ibstat_port("mlx5_7", "Rate", "100"))),
    Broken("device-output", "topo -m: No devices were found", "nccl", D1,
           file_text("sysinfo", D1, "topo.txt", lambda t: "No devices were found\n")),
    Broken("device-output", "topo -m: NVML driver mismatch message", "nccl", D1,
           file_text("sysinfo", D1, "topo.txt", lambda t: "Failed to initialize NVML: Driver/library version mismatch\n")),
    Broken("device-output", "topo -m cut off after four GPU rows", "nccl", D1,
           file_text("sysinfo", D1, "topo.txt", lambda t: "\n".join(t.splitlines()[:5]) + "\n")),
    Broken("device-output", "topo -m: one GPU reached over PCIe only (NVSwitch lost)", "nccl", D1,
           file_text("sysinfo", D1, "topo.txt", _topo_without_nvlink(3))),
    Broken("device-output", "topo -m of binary garbage", "nccl", D1,
           file_text("sysinfo", D1, "topo.txt", lambda t: "\x00\x7f garbage \ufffd\n" * 10)),
]


@dataclass
class Outcome:
    case: Broken
    verdict: Verdict | None
    problem: str | None      # why the outcome is wrong (None: rejected as it must be)
    reason: str = ""


def judge(case: Broken, workdir: Path, ctx: dict[str, Any]) -> Outcome:
    run = workdir / "20261121T080000Z"
    build_production_run(run)
    case.mutate(run, ctx)
    try:
        v = evaluate(run, ctx)
    except Exception as exc:
        return Outcome(case, None, f"the judge crashed: {type(exc).__name__}: {exc}")
    if v.status == PASS:
        return Outcome(case, v, "PASSED")
    sanity = [c for c in v.checks if c.kind == "sanity" and c.status == FAIL and c.case == case.case
              and c.stage == case.stage]
    if not sanity:
        return Outcome(case, v, f"no sanity check of {case.stage}/{case.case} failed; failed: {v.failed}")
    blamed = []
    for c in v.checks:
        if c.status != FAIL or c.case == case.case:
            continue
        if case.stage == "ddp" and c.name.startswith(DDP_DERIVED):
            continue
        if case.stage == "paths" and any("baseline" in r and "not measured" in r for r in c.reasons):
            continue  # a threshold measured against the broken baseline (acceptance_thresholds' "measured")
        blamed.append(c.label)
    if blamed:
        return Outcome(case, v, f"checks of unbroken cases failed too: {blamed}")
    return Outcome(case, v, None, "; ".join(sanity[0].reasons)[:160])


def run_all(cases: list[Broken] | None = None) -> list[Outcome]:
    ctx = context_from_inventory(ROOT / "inventories" / "production")
    out = []
    for case in cases or CASES:
        with tempfile.TemporaryDirectory(prefix="broken-run-") as tmp:
            out.append(judge(case, Path(tmp), ctx))
    return out


def line(o: Outcome) -> str:
    status = "rejected" if o.problem is None else "WRONG"
    return f"{status:8} [{o.case.cls}] {o.case.what} ({o.case.stage}/{o.case.case}): {o.problem or o.reason}"


def main() -> int:
    outcomes = run_all()
    for o in outcomes:
        print(line(o))
    rejected = sum(o.problem is None for o in outcomes)
    passed = sum(o.problem == "PASSED" for o in outcomes)
    crashed = sum((o.problem or "").startswith("the judge crashed") for o in outcomes)
    print(f"{len(outcomes)} broken runs, {rejected} rejected with a reason, {passed} passed, {crashed} crashed")
    return 0 if rejected == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
