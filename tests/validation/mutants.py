"""A seeded, bounded, deterministic generator of broken and of valid variants of a passing production run
(tests/validation/conftest.py build_production_run, judged against inventories/production), much wider than
test_asked_vs_done.py's one row at a time: for a case of a stage, random combinations of

    param     a parameter of validation/asked.yml changed in the tool's output (x0.5, x0.01, +1, -1, 0, negative,
              huge, NaN, a string, the key missing, null, another type)
    asked     the launch record's asked value changed alone, or together with the output (both say 1 s where the
              site asked 60 s: the site's settings in context.json still reject it)
    names     a node of the output renamed, swapped with another case's, duplicated; or renamed in the launch
              record and the output alike (the case's own nodes still reject it)
    repeats   a repeat dropped, listed twice, renamed, an unasked one added, asked another count
    output    a raw output truncated, emptied, deleted, replaced by garbage

Every broken mutant must be a FAIL of the case's sanity check naming the case, without an exception escaping
evaluate() or the report writer, and without a check of an unbroken case failing (broken.py's "no wrong blame").
Valid variants (trailing whitespace, extra keys, rank lines in another order, extra files of no tool's form,
repeats 1 or 3 with the site asking as many) must PASS.

    .venv/bin/python -m tests.validation.mutants [--seed S] [--count N] [--valid-only | --broken-only] [-v]

Deterministic: the same seed and count give the same mutants (random.Random(seed), sorted file listings).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.validation.broken import DDP_DERIVED, _run_builder  # noqa: E402
from validation import asked  # noqa: E402
from validation.context import context_from_inventory  # noqa: E402
from validation.verdict import FAIL, PASS, evaluate  # noqa: E402

TOOL_OF_STAGE = {"nccl": "nccl-tests", "fio": "fio", "ddp": "ddp_train"}
HUGE = 10 ** 18


@dataclass
class Mutant:
    seed: int
    index: int
    stage: str
    case: str
    valid: bool                     # True: must PASS; False: must FAIL naming the case
    ops: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)

    @property
    def what(self) -> str:
        return "; ".join(self.ops)


class Skip(Exception):
    """The operator does not apply to this case (or would change nothing): draw another."""


# ---------------------------------------------------------------------------------------------- the case's files


@dataclass
class Case:
    run: Path
    ctx: dict[str, Any]
    stage: str
    name: str
    tool: str

    @property
    def dir(self) -> Path:
        return self.run / "raw" / self.stage / self.name

    def meta(self) -> dict[str, Any]:
        return json.loads((self.dir / "meta.json").read_text(encoding="utf-8"))

    def save_meta(self, meta: dict[str, Any]) -> None:
        (self.dir / "meta.json").write_text(json.dumps(meta), encoding="utf-8")

    def result_files(self) -> list[Path]:
        """The tool's raw outputs the launch lists (a DDP case's util/peer files are other judges')."""
        listed = [str(s.get("file")) for s in self.meta().get("samples") or [] if s.get("mode") != "bare"]
        return [self.dir / f for f in listed if (self.dir / f).is_file()]


def _split_json(text: str) -> tuple[str, Any]:
    start = 0 if text.lstrip().startswith("{") else text.index("\n{") + 1
    return text[:start], json.loads(text[start:])


def _at(doc: Any, path: str) -> tuple[Any, Any]:
    here = doc
    parts = path.split(".")
    for part in parts[:-1]:
        here = here[int(part)] if isinstance(here, list) else here[part]
    return here, (int(parts[-1]) if isinstance(here, list) else parts[-1])


def _edit_json(path: Path, fn: Callable[[Any], Any]) -> None:
    head, doc = _split_json(path.read_text(encoding="utf-8"))
    out = fn(doc)
    path.write_text(head + json.dumps(doc if out is None else out, indent=2) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------- value transforms

TRANSFORMS = ("x0.5", "x0.01", "+1", "-1", "0", "negative", "huge", "nan", "string", "missing", "null", "type")
DOWN = ("x0.5", "x0.01", "-1", "0", "negative", "nan", "string", "missing", "null", "type")  # for at_least rows


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def transform(value: Any, how: str) -> Any:
    """The value changed as `how` says, in the value's own type where it has one (fio's options are strings);
    raises Skip where the change would leave it the same or does not apply. 'missing' returns the sentinel."""
    if how == "missing":
        return _MISSING
    if how == "null":
        return None
    if how == "string":
        return "not-a-number"
    if how == "type":
        return [value]
    if isinstance(value, list):  # a list judged by its length (DDP's timed steps)
        n = {"x0.5": len(value) // 2, "x0.01": len(value) // 100, "-1": len(value) - 1, "0": 0}.get(how)
        if n is None or n == len(value):
            raise Skip
        return value[:n]
    number = _num(value)
    if number is None:
        raise Skip
    new = {"x0.5": number * 0.5, "x0.01": number * 0.01, "+1": number + 1, "-1": number - 1, "0": 0.0,
           "negative": -abs(number) - 1, "huge": float(HUGE), "nan": math.nan}[how]
    if math.isfinite(new) and new == number:
        raise Skip
    if isinstance(value, str):
        return "nan" if not math.isfinite(new) else (str(int(new)) if new == int(new) else f"{new:g}")
    if isinstance(value, int) and math.isfinite(new) and new == int(new):
        return int(new)
    return new


_MISSING = object()


def _text_value(new: Any) -> str:
    if new is _MISSING or new is None:
        return ""
    if isinstance(new, float):
        return "nan" if not math.isfinite(new) else (str(int(new)) if new == int(new) else f"{new:g}")
    return str(new)


# ---------------------------------------------------------------------------------------------- operators


def _rows(tool: str, kinds: tuple[str, ...], asked_values: dict[str, Any]) -> list[asked.Param]:
    return [p for p in asked.load()[tool].params if p.compare in kinds and p.applies(asked_values)]


def op_param(c: Case, rng: random.Random) -> str:
    """A parameter of the table changed in every raw output of the case (or in one of them)."""
    meta = c.meta()
    rows = [p for p in _rows(c.tool, ("equal", "at_least"), meta["asked"]) if "mutation" not in p.output]
    if not rows:
        raise Skip
    p = rng.choice(rows)
    how = rng.choice(DOWN if p.compare == "at_least" else TRANSFORMS)
    files = c.result_files()
    if rng.random() < 0.3:
        files = [rng.choice(files)]
    if "json" in p.output:
        if how == "missing" and p.compare == "at_least" and p.name == "timed_steps":
            how = "0"
        scale = p.output.get("scale", 1)

        def fn(doc: Any) -> None:
            where, key = _at(doc, p.output["json"])
            old = where[key]
            if "regex" in p.output:
                m = re.search(p.output["regex"], str(old))
                if not m:
                    raise Skip
                new = {"string": "other-host-99", "missing": "", "null": ""}.get(how, "other-host-99")
                where[key] = str(old)[: m.start(1)] + new + str(old)[m.end(1):]
                return
            new = transform(old if scale == 1 else (_num(old) or 0) / scale, how)
            if new is _MISSING:
                del where[key]
            elif scale != 1 and _num(new) is not None:
                where[key] = type(old)(_num(new) * scale) if isinstance(old, (int, float)) else new
            else:
                where[key] = new
        for f in files:
            _edit_json(f, fn)
    else:
        pattern = re.compile(p.output["text"])

        def sub(m: re.Match[str]) -> str:
            new = transform(m.group(1), how if how not in ("type",) else "string")
            return m.group(0)[: m.start(1) - m.start(0)] + _text_value(new) + m.group(0)[m.end(1) - m.start(0):]
        for f in files:
            t = f.read_text(encoding="utf-8")
            f.write_text(pattern.sub(sub, t, count=1), encoding="utf-8")
    return f"param {p.name} {how} in {len(files)} output(s)"


def op_asked_alone(c: Case, rng: random.Random) -> str:
    """The launch record's asked value changed, the output left as it was."""
    meta = c.meta()
    rows = [p for p in _rows(c.tool, ("equal", "at_least", "set"), meta["asked"])
            if meta["asked"].get(p.asked) is not None]
    p = rng.choice(rows)
    how = rng.choice(TRANSFORMS)
    old = meta["asked"][p.asked]
    if p.compare == "set":
        new: Any = (old[1:] or ["other-host-99"]) if isinstance(old, list) else _MISSING
    else:
        new = transform(old, how)
    if new is _MISSING:
        del meta["asked"][p.asked]
    else:
        meta["asked"][p.asked] = new
    c.save_meta(meta)
    return f"asked.{p.asked} {how if p.compare != 'set' else 'one node fewer'} in meta.json only"


def op_asked_with_output(c: Case, rng: random.Random) -> str:
    """The launch asked less than the site configured and its output agrees with it (both say so): only the
    site's settings in context.json tell. Rows the site configures (asked.yml site keys), or the repeats."""
    meta = c.meta()
    rows = [p for p in _rows(c.tool, ("equal",), meta["asked"]) if p.site and "mutation" not in p.output]
    if rng.random() < 0.25 or not rows:
        return _consistent_repeats(c, rng)
    p = rng.choice(rows)
    old = meta["asked"][p.asked]
    number = _num(old)
    if number is None:  # a name (model): another name in both
        new: Any = "resnet18"
    else:
        new = int(number // 2) if number >= 2 else int(number) + 1
        if new == number:
            raise Skip
    meta["asked"][p.asked] = new
    c.save_meta(meta)
    if "json" in p.output:
        def fn(doc: Any) -> None:
            where, key = _at(doc, p.output["json"])
            where[key] = str(new) if isinstance(where[key], str) else new
        for f in c.result_files():
            _edit_json(f, fn)
        if p.tool == "ddp_train" and p.name == "steps":
            for f in c.result_files():
                _edit_json(f, lambda d: d.update(step_times_s=d["step_times_s"][:new]))
        if p.tool == "fio" and p.name == "runtime":
            for f in c.result_files():
                _edit_json(f, lambda d: [cl["read"].update(runtime=int(new) * 1000) for cl in d["client_stats"]])
    else:
        pattern = re.compile(p.output["text"])
        for f in c.result_files():
            t = f.read_text(encoding="utf-8")
            f.write_text(pattern.sub(lambda m: m.group(0)[: m.start(1) - m.start(0)] + str(new)
                                     + m.group(0)[m.end(1) - m.start(0):], t), encoding="utf-8")
    return f"asked.{p.asked} {old} -> {new} in meta.json and every output alike (the site asks {old})"


def _consistent_repeats(c: Case, rng: random.Random) -> str:
    meta = c.meta()
    if c.tool == "ib_write_bw":
        raise Skip
    n = meta["asked"]["repeats"]
    keep = rng.choice([k for k in range(1, n)])
    mine = [s for s in meta["samples"] if s.get("mode") != "bare"]
    drop = [s for s in mine if int(re.search(r"r(\d+)\.", s["file"]).group(1)) > keep]
    for s in drop:
        (c.dir / s["file"]).unlink(missing_ok=True)
    meta["samples"] = [s for s in meta["samples"] if s not in drop]
    meta["asked"]["repeats"] = keep
    c.save_meta(meta)
    return f"asked {keep} repeats of the site's {n}, and {keep} done"


def op_names(c: Case, rng: random.Random) -> str:
    """A node of the output renamed: another case's node, an unknown host, or duplicated over another."""
    nodes = list(c.ctx.get("nodes") or [])
    files = c.result_files()
    text = "\n".join(f.read_text(encoding="utf-8") for f in files)
    mine = [n for n in nodes if re.search(rf"\b{n}\b", text)]
    if not mine:
        raise Skip
    victim = rng.choice(mine)
    others = [n for n in nodes if n not in mine] or ["dgx05"]
    kind = rng.choice(["other", "unknown", "dup"] if len(mine) > 1 else ["other", "unknown"])
    repl = {"other": rng.choice(others), "unknown": "other-host-99",
            "dup": rng.choice([n for n in mine if n != victim])}[kind]
    if files and rng.random() < 0.3:
        files = [rng.choice(files)]
    for f in files:
        t = f.read_text(encoding="utf-8")
        f.write_text(re.sub(rf"\b{victim}\b", repl, t), encoding="utf-8")
    if c.stage == "fio":  # fio names its clients by address: move one to another's
        addr = _run_builder().ADDR
        if victim in addr and repl in addr:
            for f in files:
                f.write_text(f.read_text(encoding="utf-8").replace(addr[victim], addr[repl]), encoding="utf-8")
    return f"names: {victim} -> {repl} ({kind}) in {len(files)} output(s)"


def op_names_with_launch(c: Case, rng: random.Random) -> str:
    """A node of the case renamed in its launch record and its outputs alike (the case measured another node than
    it is named for, and says so consistently): only the case's own nodes tell."""
    nodes = [str(n) for n in c.ctx.get("nodes") or []]
    meta_text = (c.dir / "meta.json").read_text(encoding="utf-8")
    mine = [n for n in nodes if re.search(rf"\b{n}\b", meta_text)]
    if not mine:
        raise Skip
    victim = rng.choice(mine)
    repl = rng.choice([n for n in nodes if n not in mine] or ["dgx09"])
    for f in [c.dir / "meta.json", *c.result_files()]:
        f.write_text(re.sub(rf"\b{victim}\b", repl, f.read_text(encoding="utf-8")), encoding="utf-8")
    return f"names: {victim} -> {repl} in meta.json and every output alike"


def op_repeats(c: Case, rng: random.Random) -> str:
    meta = c.meta()
    mine = [s for s in meta["samples"] if s.get("mode") != "bare"]
    s = rng.choice(mine)
    kind = rng.choice(["drop", "file-gone", "unlisted", "twice", "rename", "extra", "asked+1", "asked-1",
                       "asked-0", "asked-str"])
    if kind == "drop":
        meta["samples"].remove(s)
        (c.dir / s["file"]).unlink()
    elif kind == "file-gone":
        (c.dir / s["file"]).unlink()
    elif kind == "unlisted":
        meta["samples"].remove(s)
    elif kind == "twice":
        other = rng.choice([x for x in mine if x is not s] or [s])
        if other is s:
            meta["samples"].append(dict(s))
        else:
            (c.dir / other["file"]).unlink()
            other["file"] = s["file"]
    elif kind == "rename":
        new = re.sub(r"r(\d+)\.", "r9.", s["file"])
        (c.dir / s["file"]).rename(c.dir / new)
        s["file"] = new
    elif kind == "extra":
        new = re.sub(r"r(\d+)\.", "r7.", s["file"])
        shutil.copy(c.dir / s["file"], c.dir / new)
        if rng.random() < 0.5:
            meta["samples"].append(dict(s, file=new))
    else:
        n = meta["asked"].get("repeats")
        meta["asked"]["repeats"] = {"asked+1": (n or 0) + 1, "asked-1": (n or 0) - 1, "asked-0": 0,
                                    "asked-str": "five"}[kind]
        if kind == "asked-1" and c.tool == "ib_write_bw":
            meta["asked"]["repeats"] = 2
    c.save_meta(meta)
    return f"repeats: {kind} ({s['file']})"


def op_output(c: Case, rng: random.Random) -> str:
    files = c.result_files()
    f = rng.choice(files)
    t = f.read_text(encoding="utf-8")
    kind = rng.choice(["truncate", "empty", "delete", "garbage", "head"])
    if kind == "truncate":
        f.write_text(t[: len(t) // 2], encoding="utf-8")
    elif kind == "head":
        f.write_text(t[: max(1, len(t) // 10)], encoding="utf-8")
    elif kind == "empty":
        f.write_text("", encoding="utf-8")
    elif kind == "delete":
        f.unlink()
    else:
        f.write_text("\x00\x01 garbage \ufffd\n" * 5, encoding="utf-8")
    return f"output: {f.name} {kind}"


BROKEN_OPS: dict[str, Callable[[Case, random.Random], str]] = {
    "param": op_param, "asked": op_asked_alone, "asked+output": op_asked_with_output, "names": op_names,
    "names+launch": op_names_with_launch,
    "repeats": op_repeats, "output": op_output}


# ---------------------------------------------------------------------------------------------- valid variants


def ok_trailing_whitespace(c: Case, rng: random.Random) -> str:
    for f in c.result_files():
        f.write_text(f.read_text(encoding="utf-8").rstrip("\n") + "\n  \n\n", encoding="utf-8")
    return "valid: trailing whitespace after every output"


def ok_extra_keys(c: Case, rng: random.Random) -> str:
    if not all(f.suffix == ".json" for f in c.result_files()):
        raise Skip
    def fn(doc: Any) -> None:
        doc["x_extra_field"] = {"note": "a newer tool version's key", "n": 1}
        for key in ("start", "end"):
            if isinstance(doc.get(key), dict):
                doc[key]["x_extra_field"] = 0
    for f in c.result_files():
        _edit_json(f, fn)
    return "valid: extra keys in every JSON result"


def ok_rank_order(c: Case, rng: random.Random) -> str:
    if c.tool != "nccl-tests":
        raise Skip
    for f in c.result_files():
        lines = f.read_text(encoding="utf-8").split("\n")
        idx = [i for i, ln in enumerate(lines) if "#  Rank" in ln]
        if len(idx) < 2:
            raise Skip
        block = [lines[i] for i in idx]
        rng.shuffle(block)
        for i, ln in zip(idx, block, strict=True):
            lines[i] = ln
        f.write_text("\n".join(lines), encoding="utf-8")
    return "valid: rank lines in another order"


def ok_other_files(c: Case, rng: random.Random) -> str:
    (c.dir / "stderr.txt").write_text("warning: nothing\n", encoding="utf-8")
    (c.dir / "notes.md").write_text("kept by the operator\n", encoding="utf-8")
    return "valid: files of no tool's form beside the results"


def ok_host_case(c: Case, rng: random.Random) -> str:
    """The tool printed the case's host names in capitals (nccl-tests prints gethostname as it is: a real capture
    says GENOA-06; DNS names have no case)."""
    nodes = [str(n) for n in c.ctx.get("nodes") or []]
    if c.tool == "nccl-tests":
        def fn(t: str) -> str:
            return "\n".join(re.sub(r"\b(dgx\d+)\b", lambda m: m.group(1).upper(), ln) if "#  Rank" in ln else ln
                             for ln in t.split("\n"))
        for f in c.result_files():
            f.write_text(fn(f.read_text(encoding="utf-8")), encoding="utf-8")
    elif c.tool == "ddp_train":
        for f in c.result_files():
            _edit_json(f, lambda d: d.update(nodes=[str(n).upper() for n in d["nodes"]]))
    elif c.tool == "iperf3":
        for f in c.result_files():
            _edit_json(f, lambda d: d["start"].update(system_info=re.sub(
                "|".join(nodes), lambda m: m.group(0).upper(), d["start"]["system_info"])))
    else:
        raise Skip
    return "valid: host names in capitals in the tool's output"


def ok_header_version(c: Case, rng: random.Random) -> str:
    """nccl-tests 2.19.6's header line ends in 'unalign: 0' (tests/fixtures/dgx/real/nccl-all-reduce-2.19.6-h100-
    direct.txt); older ones stop at 'graph: 0' or 'validation: 1'."""
    if c.tool != "nccl-tests":
        raise Skip
    for f in c.result_files():
        t = f.read_text(encoding="utf-8")
        new = re.sub(r"(?m)^(.*# nThread .*?)[ \t]*$", r"\1 unalign: 0", t, count=1)
        if new == t:
            raise Skip
        f.write_text(new, encoding="utf-8")
    return "valid: the header of nccl-tests 2.19.6 (unalign: 0)"


def ok_nccl_json(c: Case, rng: random.Random) -> str:
    """nccl-tests -J: a single-node case whose samples are the JSON document (tests/validation/fixtures/nccl/
    single_node_dgx_a100.json: 32M..8G), the launch asking that sweep."""
    if c.tool != "nccl-tests" or not c.name.startswith("single-"):
        raise Skip
    node = c.name.removeprefix("single-")
    doc = _run_builder().fixture_text("nccl/single_node_dgx_a100.json").replace('"dgx01"', f'"{node}"')
    for f in c.result_files():
        f.write_text(doc, encoding="utf-8")
    meta = c.meta()
    meta["asked"].update(min_bytes=33554432, sizes=9)
    meta["command"] = [("33554432" if a == "8" and meta["command"][i - 1] == "-b" else a)
                       for i, a in enumerate(meta["command"])]
    c.save_meta(meta)
    return "valid: nccl-tests -J JSON results (32M..8G asked)"


VALID_OPS: dict[str, Callable[[Case, random.Random], str]] = {
    "whitespace": ok_trailing_whitespace, "extra keys": ok_extra_keys, "rank order": ok_rank_order,
    "other files": ok_other_files, "host case": ok_host_case, "nccl 2.19.6 header": ok_header_version,
    "nccl -J": ok_nccl_json}


def site_repeats(run: Path, ctx: dict[str, Any], keep: int) -> None:
    """The whole run with `keep` repeats asked and done, and the site asking as many (validation_repeats)."""
    ctx["validation_repeats"] = keep
    for meta_path in sorted((run / "raw").glob("*/*/meta.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if not isinstance(meta.get("asked"), dict) or meta.get("tool") == "ib_write_bw":
            continue
        kept = []
        for s in meta["samples"]:
            m = re.search(r"r(\d+)\.", str(s.get("file")))
            if m and int(m.group(1)) > keep:
                (meta_path.parent / s["file"]).unlink(missing_ok=True)
            else:
                kept.append(s)
        meta["samples"], meta["asked"]["repeats"] = kept, keep
        meta_path.write_text(json.dumps(meta), encoding="utf-8")
    for sampler in sorted((run / "raw" / "telemetry" / "fio").glob("*/r*.jsonl")):
        if int(sampler.stem[1:]) > keep:
            sampler.unlink()


# ---------------------------------------------------------------------------------------------- the generator


def cases_of(run: Path, ctx: dict[str, Any]) -> list[Case]:
    out = []
    for stage in ("paths", "nccl", "fio", "ddp"):
        for d in sorted((run / "raw" / stage).iterdir()):
            meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
            tool = str(meta.get("tool")) if stage == "paths" else TOOL_OF_STAGE[stage]
            out.append(Case(run, ctx, stage, d.name, tool))
    return out


def template(workdir: Path) -> Path:
    run = workdir / "template" / "20261121T080000Z"
    _run_builder().build_production_run(run)
    return run


def make(seed: int, index: int, tpl: Path, workdir: Path, base_ctx: dict[str, Any], valid: bool
         ) -> tuple[Mutant, Path, dict[str, Any]]:
    """Mutant number `index` of `seed`: its run directory (a copy of the template, changed) and its context."""
    rng = random.Random(f"{seed}:{index}:{valid}")
    run = workdir / f"m{index}{'v' if valid else ''}" / tpl.name
    ctx = copy.deepcopy(base_ctx)
    for _attempt in range(50):
        if run.parent.exists():
            shutil.rmtree(run.parent)
        shutil.copytree(tpl, run)
        cases = cases_of(run, ctx)
        c = rng.choice(cases)
        m = Mutant(seed, index, c.stage, c.name, valid)
        try:
            if valid:
                if rng.random() < 0.25:
                    keep = rng.choice([1, 3])
                    site_repeats(run, ctx, keep)
                    m.ops.append(f"valid: {keep} repeat(s) asked, done and configured (validation_repeats)")
                    m.classes.append(f"repeats {keep}")
                for name in rng.sample(sorted(VALID_OPS), k=rng.randint(1, 3)):
                    try:
                        m.ops.append(VALID_OPS[name](c, rng))
                        m.classes.append(name)
                    except Skip:
                        continue
            else:
                for name in rng.sample(sorted(BROKEN_OPS), k=rng.choice([1, 1, 2, 3])):
                    m.ops.append(BROKEN_OPS[name](c, rng))
                    m.classes.append(name)
        except (Skip, KeyError, ValueError, IndexError, TypeError, OSError, AttributeError):
            ctx = copy.deepcopy(base_ctx)
            continue
        if m.ops:
            return m, run, ctx
    raise RuntimeError(f"seed {seed} mutant {index}: no operator applied in 50 draws")


def judge(m: Mutant, run: Path, ctx: dict[str, Any]) -> str | None:
    """None when the outcome is right; else what is wrong with it."""
    from validation.report import build_report, write_all

    try:
        v = evaluate(run, ctx)
    except Exception as exc:  # the finding itself
        return f"evaluate() raised {type(exc).__name__}: {exc}"
    try:
        write_all(run, build_report(run, ctx, v, {}))
    except Exception as exc:  # the finding itself
        return f"the report writer raised {type(exc).__name__}: {exc}"
    if m.valid:
        return None if v.status == PASS else f"a valid run rejected: {v.failed[:6]} " + \
            "; ".join(r for c in v.checks if c.status == FAIL for r in c.reasons)[:400]
    if v.status == PASS:
        return "PASSED"
    own = [c for c in v.checks if c.kind == "sanity" and c.status == FAIL and c.case == m.case and c.stage == m.stage]
    if not own:
        return f"no sanity check of {m.stage}/{m.case} failed; failed: {v.failed[:6]}"
    blamed = []
    for c in v.checks:
        if c.status != FAIL or c.case == m.case:
            continue
        if m.stage == "ddp" and c.name.startswith(DDP_DERIVED):
            continue
        if m.stage == "paths" and any("baseline" in r and "not measured" in r for r in c.reasons):
            continue
        if m.stage == "paths" and c.name == "path_storage_aggregate_MBps" and m.case.startswith("storage-all"):
            continue
        blamed.append(c.label)
    return f"checks of unbroken cases failed too: {blamed}" if blamed else None


def generate(seed: int, count: int, valid_count: int, verbose: bool = False) -> list[tuple[Mutant, str | None]]:
    ctx = context_from_inventory(ROOT / "inventories" / "production")
    out: list[tuple[Mutant, str | None]] = []
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        work = Path(tmp)
        tpl = template(work)
        for index in range(count + valid_count):
            valid = index >= count
            m, run, mctx = make(seed, index, tpl, work, ctx, valid)
            problem = judge(m, run, mctx)
            shutil.rmtree(run.parent, ignore_errors=True)
            out.append((m, problem))
            if verbose:
                print(line(m, problem), flush=True)
    return out


def line(m: Mutant, problem: str | None) -> str:
    status = ("passed" if m.valid else "rejected") if problem is None else "WRONG"
    return f"{status:8} #{m.index} {m.stage}/{m.case}: {m.what}" + (f": {problem}" if problem else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=34, help="the generator's seed (default 34)")
    p.add_argument("--count", type=int, default=60, help="broken mutants (default 60)")
    p.add_argument("--valid", type=int, default=None, help="valid variants (default: count / 4)")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per mutant as it is judged")
    args = p.parse_args(argv)
    valid = args.valid if args.valid is not None else max(1, args.count // 4)
    results = generate(args.seed, args.count, valid, args.verbose)
    if not args.verbose:
        for m, problem in results:
            if problem:
                print(line(m, problem))
    by: dict[str, int] = {}
    for m, _ in results:
        for cls in m.classes:
            key = f"{'valid' if m.valid else 'broken'} {cls} [{m.stage}]"
            by[key] = by.get(key, 0) + 1
    for key in sorted(by):
        print(f"  {by[key]:4} {key}")
    wrong = [r for r in results if r[1]]
    broken = sum(not m.valid for m, _ in results)
    print(f"seed {args.seed}: {broken} broken mutants, {len(results) - broken} valid variants, {len(wrong)} wrong "
          f"(PASS of a broken run, a crash, a wrong rejection or blame)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
