"""Asked against done: the one place that compares what a case's launch asked for (meta.json ``asked``, written once
by the runner from its own arguments) with what the tool's output says was done (each parser's ``done``), for every
stage. The parameters, how each is compared and the fractions with their reasons are the table validation/asked.yml
(``load``); docs/asked-vs-done.md shows it.

A difference is a sanity FAIL that names both values: a parameter that differs, a measurement under the documented
fraction of its asked duration or steps, an asked repeat that is missing or an unasked one, a node, rank count or
engine the launch did not use. A launch record without the asked value is a FAIL too: what ran cannot be compared.
"""

from __future__ import annotations

import functools
import math
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .site import Site

ASKED_FILE = Path(__file__).resolve().parent / "asked.yml"
COMPARES = ("repeats", "equal", "set", "one_of", "at_least")


class AskedError(ValueError):
    """asked.yml is malformed; the message names the tool, the row and the fix."""


@dataclass(frozen=True)
class Param:
    tool: str
    stage: str
    name: str
    compare: str
    done: str
    asked: str
    fraction: float | None = None
    why: str = ""
    when: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] = field(default_factory=dict)
    site: str | None = None     # the key of the stage's site settings (context.json) that says what to ask

    def applies(self, asked: dict[str, Any]) -> bool:
        """Whether the row is judged for a launch that asked these values (its ``when``)."""
        return all(_same(asked.get(k), v) for k, v in self.when.items())


@dataclass(frozen=True)
class Tool:
    name: str
    stage: str
    files: str
    site_repeats: bool
    params: tuple[Param, ...]
    site: str | None = None     # the stage's site settings in context.json (validation_fio, ...)


@functools.cache
def load(path: Path = ASKED_FILE) -> dict[str, Tool]:
    """The table: tool -> its stage, the files of its repeats and its parameters (validated)."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    tools: dict[str, Tool] = {}
    for name, body in (doc.get("tools") or {}).items():
        if not isinstance(body, dict) or not body.get("stage") or not body.get("files"):
            raise AskedError(f"{path.name}: tool {name} needs a stage and the files of its repeats")
        params = []
        for row in body.get("params") or []:
            where = f"{path.name}: {name}.{row.get('name')}"
            if row.get("compare") not in COMPARES:
                raise AskedError(f"{where}: compare {row.get('compare')!r} is not one of {', '.join(COMPARES)}")
            if row["compare"] == "at_least" and not (isinstance(row.get("fraction"), (int, float))
                                                      and 0 < row["fraction"] <= 1 and row.get("why")):
                raise AskedError(f"{where}: an at_least row needs a fraction in (0, 1] and why that fraction")
            if not row.get("done") or not isinstance(row.get("output"), dict):
                raise AskedError(f"{where}: say where the tool prints it (done) and where a test finds it (output)")
            params.append(Param(tool=name, stage=str(body["stage"]), name=str(row["name"]), compare=row["compare"],
                                done=str(row["done"]), asked=str(row.get("asked") or row["name"]),
                                fraction=float(row["fraction"]) if row.get("fraction") is not None else None,
                                why=" ".join(str(row.get("why") or "").split()), when=dict(row.get("when") or {}),
                                output=dict(row["output"]), site=str(row["site"]) if row.get("site") else None))
            if row.get("site") and not body.get("site"):
                raise AskedError(f"{where}: a row with a site key needs its tool's site (validation_<stage>)")
        if not any(p.compare == "repeats" for p in params):
            raise AskedError(f"{path.name}: tool {name} has no repeats row")
        tools[name] = Tool(name=name, stage=str(body["stage"]), files=str(body["files"]),
                           site_repeats=bool(body.get("site_repeats")), params=tuple(params),
                           site=str(body["site"]) if body.get("site") else None)
    return tools


# ---------------------------------------------------------------------------------------------- values


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _same(a: Any, b: Any) -> bool:
    """Equal as numbers where both are numbers (8 and '8', True and 1), else as text without case."""
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        return na == nb
    return str(a).strip().lower() == str(b).strip().lower()


def _names(value: Any) -> list[str]:
    """A set of names as sorted text: a list's items, a mapping's keys (fio's clients: address:port -> node)."""
    items = value if isinstance(value, (list, tuple, set, dict)) else [value]
    return sorted({str(v) for v in items if v is not None})


def _folded(value: Any) -> list[str]:
    """A set of names compared without case: host names are DNS names (a tool may print DGX01 for dgx01)."""
    return sorted({n.lower() for n in _names(value)})


def _set_difference(want: Any, got: Any) -> str:
    """'; missing A; not asked B' between two sets of names (an asked mapping names each: 'node (address)')."""
    missing = sorted(k for k in _names(want) if k.lower() not in _folded(got))
    extra = sorted(k for k in _names(got) if k.lower() not in _folded(want))
    label = (lambda k: f"{want[k]} ({k})") if isinstance(want, dict) else str
    return (f"; missing {', '.join(label(k) for k in missing)}" if missing else "") + \
        (f"; not asked {', '.join(extra)}" if extra else "")


def show(value: Any) -> str:
    """How a value is named in a reason (the test looks for exactly this)."""
    if isinstance(value, (list, tuple, set, dict)):
        return "[" + ", ".join(_names(value)) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# ---------------------------------------------------------------------------------------------- the comparison


def asked_of(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The launch record's asked values, or None when meta.json has none (a run the runners did not launch)."""
    asked = meta.get("asked")
    return asked if isinstance(asked, dict) and asked else None


def compare(tool: str, asked: dict[str, Any], done: dict[str, Any]) -> list[str]:
    """Every parameter of the tool's table (but repeats) asked against done; one reason per difference, each
    naming the asked and the done value."""
    out: list[str] = []
    for p in load()[tool].params:
        if p.compare == "repeats" or not p.applies(asked):
            continue
        if p.asked not in asked or asked[p.asked] is None:
            out.append(f"{p.name}: the launch record (meta.json asked.{p.asked}) does not say what was asked, so "
                       "what ran cannot be compared with it")
            continue
        want = asked[p.asked]
        got = done.get(p.name)
        if got is None or (isinstance(got, (list, tuple, set)) and not got):
            out.append(f"{p.name}: asked {show(want)}, done unknown: the output does not say ({p.done})")
            continue
        if p.compare == "equal" and not _same(want, got):
            out.append(f"{p.name}: asked {show(want)}, done {show(got)} ({p.done})")
        elif p.compare == "set" and _folded(want) != _folded(got):
            out.append(f"{p.name}: asked {show(want)}, done {show(got)}{_set_difference(want, got)} ({p.done})")
        elif p.compare == "one_of":
            allowed = _names(list(want.values()) if isinstance(want, dict) else want)
            if str(got) not in allowed:
                out.append(f"{p.name}: asked one of {show(allowed)}, done {show(got)} ({p.done})")
        elif p.compare == "at_least":
            wanted, value = _number(want), _number(got)
            if wanted is None or value is None:
                out.append(f"{p.name}: asked {show(want)}, done {show(got)}: not numbers ({p.done})")
            elif value < wanted * (p.fraction or 1.0):
                out.append(f"{p.name}: asked {show(want)}, done {show(got)}: under {p.fraction:.0%} of what was "
                           f"asked, the least a whole measurement gives ({p.done}; the fraction's reason: "
                           "validation/asked.yml, docs/asked-vs-done.md)")
    return out


def site_problems(tool: str, meta: dict[str, Any] | None, site: Site) -> list[str]:
    """The launch record against the site: every row with a site key must have been asked as the site's settings
    of the stage (context.json validation_<stage>) say. A launch that asked something else (1 s of fio where the
    site asks 60 s, 2 iterations where it asks 20) measured another thing than the acceptance agreed, even when
    its output agrees with its own record. A site setting that is absent, null or "auto" (resolved by the role
    per node) is not compared here; a launch record without the value is compare()'s FAIL."""
    spec = load()[tool]
    settings = site.stage_settings.get(spec.site) if spec.site else None
    asked = asked_of(meta) if isinstance(meta, dict) else None
    if settings is None or asked is None:
        return []
    out: list[str] = []
    seen: set[str] = set()
    for p in spec.params:
        if not p.site or p.asked in seen or p.site not in settings:
            continue
        seen.add(p.asked)
        want, got = settings[p.site], asked.get(p.asked)
        if want is None or (isinstance(want, str) and want.strip().lower() == "auto") or got is None:
            continue
        if not _same(want, got):
            out.append(f"{p.name}: the launch asked {show(got)} (meta.json asked.{p.asked}), the site configured "
                       f"{show(want)} ({spec.site}.{p.site} in context.json): not the measurement the acceptance "
                       "agreed")
    return out


def node_problems(meta: dict[str, Any] | None, case_nodes: list[str] | tuple[str, ...]) -> list[str]:
    """The launch record's nodes (meta.json nodes: the inventory names the runner was given) against the case's:
    a case named for dgx01 whose launch and output both say dgx09 measured another node than the case judges."""
    if not isinstance(meta, dict) or meta.get("_unreadable") or not case_nodes:
        return []
    launched = meta.get("nodes")
    if not isinstance(launched, list) or not launched:
        return [f"nodes: the launch record (meta.json nodes) names no nodes, the case is {show(list(case_nodes))}"]
    if _folded(launched) != _folded(list(case_nodes)):
        return [f"nodes: launched on {show(launched)}, the case is {show(list(case_nodes))}"
                f"{_set_difference(list(case_nodes), launched)}"]
    return []


def asked_files(tool: str, asked: dict[str, Any]) -> list[str] | None:
    """The raw file of every asked repeat, or None when the launch record does not say how many."""
    pattern = load()[tool].files
    repeats = _number(asked.get("repeats"))
    if repeats is None or repeats < 1 or not repeats.is_integer():
        return None
    files = []
    for mode in (asked.get("modes") or [None]) if "{mode}" in pattern else [None]:
        for device in (asked.get("devices") or [None]) if "{device}" in pattern else [None]:
            for k in range(1, int(repeats) + 1):
                files.append(pattern.format(k=k, mode=mode, device=device))
    return files


def _file_form(pattern: str) -> re.Pattern[str]:
    """Any file of the pattern's form, whatever its repeat, mode or device."""
    out, rest = "", pattern
    while rest:
        m = re.search(r"\{(k|mode|device)\}", rest)
        if not m:
            out += re.escape(rest)
            break
        out += re.escape(rest[: m.start()]) + {"k": r"\d+", "mode": r"[a-z]+", "device": r"[\w.-]+"}[m.group(1)]
        rest = rest[m.end():]
    return re.compile(out + "$")


def repeat_problems(tool: str, meta: dict[str, Any], case_dir: Path, site_repeats: int | None) -> list[str]:
    """The repeats asked against the repeats done: every asked file listed as a sample and present, no sample and
    no result file of that form that nobody asked for, and (where the tool's repeats are the site's) as many as the
    site's validation_repeats."""
    asked = asked_of(meta) or {}
    files = asked_files(tool, asked)
    if files is None:
        return [f"repeats: the launch record (meta.json asked.repeats) does not say how many were asked: "
                f"{show(asked.get('repeats'))}"]
    out: list[str] = []
    if load()[tool].site_repeats and site_repeats and not _same(asked.get("repeats"), site_repeats):
        out.append(f"repeats: asked {show(asked.get('repeats'))} at launch, validation_repeats asks for "
                   f"{site_repeats}")
    listed = [str(s.get("file")) for s in meta.get("samples") or [] if isinstance(s, dict)]
    twice = sorted({f for f in listed if listed.count(f) > 1})
    if twice:
        out.append(f"repeats: sample(s) {', '.join(twice)} listed more than once: one result counted as several")
    missing = [f for f in files if f not in listed or not (case_dir / f).is_file()]
    counted = f"asked {show(asked.get('repeats'))} ({len(files)} result{'s' if len(files) > 1 else ''})"
    if missing:
        out.append(f"repeats: {counted}, done {len(files) - len(missing)}: no result of {', '.join(missing)}")
    form = _file_form(load()[tool].files)
    present = {p.name for p in case_dir.iterdir() if form.match(p.name)} if case_dir.is_dir() else set()
    unasked = sorted((set(listed) | present) - set(files))
    unasked = [f for f in unasked if form.match(f) or f in listed]
    if unasked:
        out.append(f"repeats: {counted}, done also {', '.join(unasked)}: a result nobody asked for")
    return out


def for_sample(tool: str, asked: dict[str, Any], sample: dict[str, Any] | None) -> dict[str, Any]:
    """The asked values of one sample: the case's, and those the launch recorded on the sample itself (the HCA of
    an ib_write_bw report) for a parameter the case does not name."""
    own = {p.asked: sample[p.asked] for p in load()[tool].params
           if sample and p.asked in sample and p.asked not in asked}
    return dict(asked, **own)


def problems(tool: str, meta: dict[str, Any], done: dict[str, Any], sample: dict[str, Any] | None = None
             ) -> list[str]:
    """One sample's parameters asked against done."""
    asked = asked_of(meta)
    if asked is None:
        return ["meta.json records no asked parameters (asked): what ran cannot be compared with what was asked"]
    return compare(tool, for_sample(tool, asked, sample), done)


def _nccl_done(text: str) -> dict[str, Any]:
    from . import parse_nccl

    runs = parse_nccl.parse(text)
    return parse_nccl.done(runs[-1]) if runs else {}


def _fio_done(text: str) -> dict[str, Any]:
    from . import parse_fio

    return parse_fio.done(parse_fio.parse(text))


def _ddp_done(text: str) -> dict[str, Any]:
    from . import parse_ddp

    return parse_ddp.done(parse_ddp.parse(text))


def _iperf3_done(text: str) -> dict[str, Any]:
    from . import parse_iperf3

    return parse_iperf3.done(parse_iperf3.parse(text))


def _perftest_done(text: str) -> dict[str, Any]:
    from . import parse_perftest

    return parse_perftest.done(parse_perftest.parse(text))


# Each tool's raw file -> what it says was done (its parser's done()), by the table's tool names. The stages call
# the parsers themselves; this is the table's view of them (tests/validation/test_asked_vs_done.py: every row of
# the table is a key of its tool's done()).
DONE = {"nccl-tests": _nccl_done, "fio": _fio_done, "ddp_train": _ddp_done, "iperf3": _iperf3_done,
        "ib_write_bw": _perftest_done}


def markdown() -> str:
    """The table as docs/asked-vs-done.md shows it (tests/validation/test_asked_vs_done.py keeps them equal): per
    tool, each parameter, where the launch writes it, how it is compared and where the tool prints it; then the
    fractions with their reasons."""
    lines: list[str] = []
    for tool in load().values():
        lines += [f"### {tool.stage}: {tool.name}", "", f"Repeats: one `{tool.files}` per asked repeat"
                  + (", as many as `validation_repeats`." if tool.site_repeats else "."), "",
                  "| parameter | asked (`meta.json` asked) | site (`context.json`) | compared | done (the tool's output) |",
                  "|---|---|---|---|---|"]
        for p in tool.params:
            how = f">= {p.fraction:.0%} of asked" if p.compare == "at_least" else p.compare
            if p.when:
                how += " (when " + ", ".join(f"{k} {v}" for k, v in p.when.items()) + ")"
            site = f"`{tool.site}.{p.site}`" if p.site else ("`validation_repeats`" if p.compare == "repeats"
                                                             and tool.site_repeats else "")
            lines.append(f"| `{p.name}` | `{p.asked}` | {site} | {how} | {p.done} |")
        lines.append("")
    lines += ["### The fractions and why", ""]
    for tool in load().values():
        for p in tool.params:
            if p.compare == "at_least":
                lines.append(textwrap.fill(f"- {tool.name} `{p.name}`, at least {p.fraction:.0%} of `{p.asked}`: "
                                           f"{p.why}", width=120, subsequent_indent="  "))
    return "\n".join(lines) + "\n"
