"""Write the handover report of a run: report.json (its JSON Schema: validation/schema/report.schema.json),
junit.xml, metrics.prom (Prometheus textfile collector), summary.md and a self-contained report.html.

The HTML is rendered from a jinja2 template (validation/handover.py; a site may bring its own) and holds
everything inline (CSS, SVG plots generated here, the logo as a data: URI): no scripts, no fonts, no CDN, so
it opens the same on an air-gapped site and in a browser with networking disabled.

JUnit: one testcase per check, grouped in one testsuite per stage. A sanity case's time is the wall time the
runner recorded for its samples; a performance metric judges those same samples, so its own time is 0 (the
suite's time is not counted twice). A stage disabled in validation_stages is a skipped case with that reason.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from markupsafe import Markup

from . import handover, prom, provenance, scaling, svgplot
from .metrics import load as metric_defs
from .site import Site
from .verdict import FAIL, INFO, PASS, Check, Verdict, summary_counts

LAB_BANNER = ("LAB STAND-IN: gloo all-reduce on CPU over the cfab0 stand-in instead of NCCL on GPUs and HDR "
              "InfiniBand, a tiny model instead of ResNet-50, TCG VMs instead of DGX A100. These figures prove "
              "the harness, not the hardware.")
SCHEMA = Path(__file__).resolve().parent / "schema" / "report.schema.json"
STAGE_TITLES = {"cabling": "Cabling (the physical build against the design)",
                "paths": "Path baselines (the network under the measurements)", "nccl": "NCCL all-reduce",
                "fio": "fio on the NFS mounts", "ddp": "PyTorch DDP training", "report": "Report inputs"}
# At scale (docs/scale.md): a metric or sanity check with more instances (nodes, pairs) than PER_NODE_INLINE is one
# row of the summary and of the stage's table, its instances in a per-node table sorted worst first; a chart with
# more nodes than STRIP_OVER draws one strip (a cell per node) instead of a bar or a series per node; a line chart
# keeps at most SERIES_MAX series (the whole-cluster case, then the worst, median and best of each kind).
PER_NODE_INLINE = 8
STRIP_OVER = 32
SERIES_MAX = 12
SUMMARY_LIST_MAX = 5


def margin(c: dict[str, Any]) -> float | None:
    """How far a performance check is inside its tightest bound, as a fraction (negative: outside it); None
    without a value or a bound. Worst first = ascending."""
    value = c.get("value")
    if value is None:
        return None
    out = []
    for b in c.get("bounds") or []:
        limit = b.get("limit")
        if not limit:
            continue
        out.append(limit / value - 1 if b["kind"] == "at_most" and value else value / limit - 1)
    return min(out) if out else None


def _worst_first(c: dict[str, Any]) -> tuple[int, int, float]:
    m = margin(c)
    return (c["status"] != FAIL, c.get("value") is not None, m if m is not None else float("inf"))


def grouped(checks: list[dict[str, Any]], kind: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Checks of one kind, the ones kept as rows and the per-instance groups (name -> checks, worst first) of the
    names with more than PER_NODE_INLINE instances, in first-seen order."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for c in checks:
        if c["kind"] == kind:
            by_name.setdefault(c["name"], []).append(c)
    groups = {name: sorted(cs, key=_worst_first) for name, cs in by_name.items()
              if len(cs) > PER_NODE_INLINE and all(c.get("instance") for c in cs)}
    rows = [c for c in checks if c["kind"] == kind and c["name"] not in groups]
    return rows, groups


def _median(values: list[float]) -> float | None:
    values = sorted(values)
    return values[len(values) // 2] if values else None


def group_line(name: str, checks: list[dict[str, Any]]) -> dict[str, str]:
    """One group's summary: count, failures, worst instance and value, median."""
    fails = sum(c["status"] == FAIL for c in checks)
    worst = checks[0]
    unit = worst.get("unit", "")
    median = _median([c["value"] for c in checks if c.get("value") is not None])
    return {"label": f"{name} x{len(checks)}", "status": FAIL if fails else worst["status"],
            "counts": f"{len(checks) - fails} pass, {fails} fail",
            "worst": f"{worst.get('instance')}: {_fmt(worst.get('value'), unit)}",
            "median": _fmt(median, unit), "bounds": _bounds_text(worst)}


def schema() -> dict[str, Any]:
    """The JSON Schema of report.json (the one home of its schema_version)."""
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    return f"{v:.4g}{(' ' + unit) if unit else ''}"


def _reference(check: Check, node_count: int) -> str:
    metric = metric_defs().get(check.name)
    fig = metric.reference_for(node_count) if metric else None
    return fig.text if fig else ""


def build_report(run_dir: Path, site_or_ctx: Site | Mapping[str, Any], verdict: Verdict,
                 environment: dict[str, Any], handover_data: handover.Handover | None = None,
                 root: Path = provenance.ROOT) -> dict[str, Any]:
    site = Site.of(site_or_ctx)
    given = site.raw  # the site, its nodes and the acceptance data echoed exactly as the context gave them
    return {
        "schema_version": schema()["properties"]["schema_version"]["const"],
        "bundle": provenance.bundle(root).to_dict(),
        "run": run_dir.name,
        "generated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "site": given.get("site"),
        "nodes": given.get("nodes"),
        "lab_standins": verdict.lab_standins,
        "verdict": verdict.to_dict(),
        "counts": summary_counts(verdict),
        "thresholds": given.get("acceptance_thresholds"),
        "outlier_max_behind_pct": given.get("acceptance_outlier_max_behind_pct"),
        "baseline": given.get("acceptance_baseline"),
        "environment": environment,
        "reference": {c.label: _reference(c, len(site.nodes)) for c in verdict.checks
                      if c.kind == "performance"},
        "handover": (handover_data or handover.Handover()).to_dict(),
        **_scaling(run_dir, site, verdict),
    }


def _scaling(run_dir: Path, site: Site, verdict: Verdict) -> dict[str, Any]:
    """The scale-out section (docs/scale-out.md) when the run's context names the earlier run of the old node set."""
    found = scaling.section(site.scale_before, run_dir.name, list(site.nodes), verdict.to_dict(), run_dir.parent)
    return {"scaling": found} if found else {}


def _case_text(c: dict[str, Any]) -> str:
    return f"value={c['value']} {c['unit']}; bounds={c['bounds']}; samples={c['samples']}"


def _properties(report: dict[str, Any]) -> dict[str, str]:
    b = report["bundle"]
    return {"run": report["run"], "site": str(report["site"]), "bundle": b["name"], "bundle_version": b["version"],
            "commit": b["commit"], "schema_version": report["schema_version"]}


def _skipped(c: dict[str, Any]) -> bool:
    return c["status"] == INFO and c["kind"] == "sanity"


def _time(c: dict[str, Any]) -> float:
    return float(c.get("duration_s") or 0.0) if c["kind"] == "sanity" else 0.0


def junit_xml(report: dict[str, Any]) -> str:
    checks = report["verdict"]["checks"]
    suites = ET.Element("testsuites", name="validation", tests=str(len(checks)),
                        failures=str(sum(1 for c in checks if c["status"] == FAIL)),
                        errors="0", skipped=str(sum(1 for c in checks if _skipped(c))),
                        time=f"{sum(_time(c) for c in checks):.3f}", timestamp=report["generated"].rstrip("Z"))
    by_stage: dict[str, list[dict[str, Any]]] = {}
    for c in checks:
        by_stage.setdefault(c["stage"], []).append(c)
    for stage, items in by_stage.items():
        suite = ET.SubElement(suites, "testsuite", name=f"validation.{stage}", tests=str(len(items)),
                              failures=str(sum(1 for c in items if c["status"] == FAIL)), errors="0",
                              skipped=str(sum(1 for c in items if _skipped(c))),
                              time=f"{sum(_time(c) for c in items):.3f}", timestamp=report["generated"].rstrip("Z"))
        props = ET.SubElement(suite, "properties")
        for name, value in _properties(report).items():
            ET.SubElement(props, "property", name=name, value=value)
        for c in items:
            case = ET.SubElement(suite, "testcase", classname=f"validation.{stage}.{c['kind']}", name=c["label"],
                                 time=f"{_time(c):.3f}")
            text = _case_text(c)
            if c["status"] == FAIL:
                fail = ET.SubElement(case, "failure", type=FAIL, message="; ".join(c["reasons"])[:500] or "failed")
                fail.text = text
            elif _skipped(c):
                ET.SubElement(case, "skipped", message="; ".join(c["reasons"])[:500] or "not run")
            elif c["status"] == INFO:
                text = f"INFO (measured, no bound to judge it against): {text}"
            ET.SubElement(case, "system-out").text = text
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _op(bound: dict[str, Any]) -> str:
    """How a bound compares: at_most is an upper bound, every other kind a lower one."""
    return "<=" if bound["kind"] == "at_most" else ">="


def _bounds_text(c: dict[str, Any]) -> str:
    return "; ".join(f"{b['kind']} {_op(b)} {b['limit']:.4g} ({b['detail']})" for b in c["bounds"]) or "-"


def limits_md(report: dict[str, Any]) -> list[str]:
    """The 'where is the limit' section: one diagnosis per failing node, each path's layers as fractions."""
    limits = report["verdict"].get("limits") or {}
    diagnosis = list(limits.get("diagnosis") or [])
    more = [f"- ... and {len(diagnosis) - SUMMARY_LIST_MAX} more (report.html)"] \
        if len(diagnosis) > SUMMARY_LIST_MAX else []
    lines = ["## Where is the limit", ""] + [f"- {d}" for d in diagnosis[:SUMMARY_LIST_MAX]] + more + [""]
    paths = list(limits.get("paths") or [])
    if len(paths) > PER_NODE_INLINE:  # at scale: the paths nearest their limit (lowest fraction of the layer below)
        def tightest(row: dict[str, Any]) -> float:
            return min((layer["fraction_of_below"] for layer in row["layers"]
                        if layer["fraction_of_below"] is not None), default=1.0)

        lines.append(f"{len(paths)} paths; the 3 with the lowest fraction of the layer below (all: report.html):")
        paths = sorted(paths, key=tightest)[:3]
    for row in paths:
        cells = [f"{layer['layer']}: {_fmt(layer['value'], layer['unit'])}"
                 + (f" ({layer['fraction_of_below']:.2f} of the layer below)" if layer["fraction_of_below"] is not None
                    else "") for layer in row["layers"]]
        lines.append(f"- `{row['path']}`: " + " -> ".join(cells))
    return [*lines, ""]


def _bundle_text(report: dict[str, Any]) -> str:
    b = report["bundle"]
    dirty = " (with uncommitted changes)" if b["dirty"] else ""
    return f"{b['name']} {b['version']}, commit {b['commit']}{dirty}; report.json schema {report['schema_version']}"


def summary_md(report: dict[str, Any]) -> str:
    """The summary: one screen whatever the node count (metrics and checks with many instances are one row
    each, their worst instance named; the per-node figures are in report.html and report.json)."""
    v = report["verdict"]
    nodes = report["nodes"] or []
    lines = [f"# Validation {report['run']}: **{v['status']}**", ""]
    if report["lab_standins"]:
        lines += [f"> {LAB_BANNER}", ""]
    shown = ", ".join(nodes) if len(nodes) <= PER_NODE_INLINE else f"{len(nodes)} ({nodes[0]} .. {nodes[-1]})"
    lines += [f"Site `{report['site']}`, nodes {shown}. "
              f"{report['counts'][PASS]} pass, {report['counts'][FAIL]} fail, {report['counts'][INFO]} info.",
              f"Bundle {_bundle_text(report)}.", ""]
    if v["failed"]:
        failed = v["failed"]
        more = [f"- ... and {len(failed) - SUMMARY_LIST_MAX} more (report.html)"] if len(failed) > SUMMARY_LIST_MAX \
            else []
        lines += ["## Failed", ""] + [f"- `{f}`" for f in failed[:SUMMARY_LIST_MAX]] + more + [""]
    lines += scaling_md(report.get("scaling"))
    lines += limits_md(report)
    lines += ["## Performance", "", "| metric | value | samples (spread) | bounds | status | reference |",
              "|---|---|---|---|---|---|"]
    rows, groups = grouped(v["checks"], "performance")
    for c in rows:
        samples = ", ".join(_fmt(s) for s in c["samples"])
        spread = f" ({c['spread_pct']}%)" if c["spread_pct"] is not None else ""
        lines.append(f"| `{c['label']}` | {_fmt(c['value'], c['unit'])} | {samples}{spread} | {_bounds_text(c)} | "
                     f"{c['status']} | {report['reference'].get(c['label'], '')} |")
    for name, checks in groups.items():
        g = group_line(name, checks)
        lines.append(f"| `{g['label']}` | worst {g['worst']} | median {g['median']}; {g['counts']} | "
                     f"{g['bounds']} (worst) | {g['status']} | per node: report.html |")
    lines += ["", "## Sanity", "", "| check | status | reasons |", "|---|---|---|"]
    rows, groups = grouped(v["checks"], "sanity")
    for c in rows:
        lines.append(f"| `{c['label']}` | {c['status']} | {'; '.join(c['reasons']).replace('|', '/')} |")
    for name, checks in groups.items():
        bad = [c for c in checks if c["status"] == FAIL]
        listed = "; ".join(f"{c['instance']}: {'; '.join(c['reasons'])}" for c in bad[:3]).replace("|", "/")
        others = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        lines.append(f"| `{name}` x{len(checks)} | {FAIL if bad else checks[0]['status']} | "
                     f"{len(checks) - len(bad)} pass, {len(bad)} fail{': ' + listed + others if bad else ''} |")
    reasons = [(c["label"], r) for c in v["checks"] if c["kind"] == "performance" for r in c["reasons"]]
    if reasons:
        more = [f"- ... and {len(reasons) - SUMMARY_LIST_MAX} more (report.html)"] \
            if len(reasons) > SUMMARY_LIST_MAX else []
        lines += ["", "## Reasons", ""] + [f"- `{label}`: {r}" for label, r in reasons[:SUMMARY_LIST_MAX]] + more
    lines.append("")
    return "\n".join(lines)


def _threshold_for(report: dict[str, Any], metric: str) -> float | None:
    limits = [b["limit"] for c in report["verdict"]["checks"] if c["name"] == metric for b in c["bounds"]
              if b["kind"] in ("floor", "ceiling")]
    return max(limits) if limits else None


def plots(report: dict[str, Any]) -> dict[str, list[str]]:
    """The report's charts by stage; a chart that cannot be drawn says so in its place (the report is still
    written, and the other charts with it)."""
    out: dict[str, list[str]] = {}
    for stage, draw in (("cabling", _cabling_plot), ("paths", _storage_paths_plot), ("paths", _fabric_paths_plot),
                        ("nccl", _nccl_plot),
                        ("fio", _fio_plot), ("fio", _array_plot), ("ddp", _ddp_plot), ("ddp", _util_plot)):
        try:
            svg = draw(report)
        except Exception as exc:  # a plot must never cost the customer the report
            svg = (f'<p class="FAIL">the plot could not be drawn ({escape(type(exc).__name__)}: {escape(str(exc))}); '
                   "the tables hold every figure</p>")
        if svg:
            out.setdefault(stage, []).append(svg)
    return out


SWITCH_PORT = re.compile(r"^(swp\d+(s\d+)?|\d+)$")


def _cabling_plot(report: dict[str, Any]) -> str | None:
    """Every switch with its cabled ports coloured by their cable's status (validation/stages/cabling.py)."""
    cabling = report["verdict"]["series"].get("cabling")
    if not cabling:
        return None
    switches: dict[str, dict[str, tuple[str, str]]] = {}
    for cable in cabling["cables"]:
        status = "ACCEPTED" if cable.get("accepted") else cable["status"]
        for end in (cable["a"], cable["b"]):
            if SWITCH_PORT.match(end["port"]) and end["node"] != "*":
                other = cable["b"] if end is cable["a"] else cable["a"]
                text = f"designed to {other['node']} {other['port']}; {cable['reason']}"
                switches.setdefault(end["node"], {})[end["port"]] = (status, text)
    return svgplot.port_map("Switch ports by cable status (hover a port for its cable)", switches) \
        if switches else None


def _storage_paths_plot(report: dict[str, Any]) -> str | None:
    paths = report["verdict"]["series"].get("paths") or {}
    if not paths.get("storage_MBps"):
        return None
    nodes = list(paths["storage_MBps"])
    if len(nodes) > STRIP_OVER:
        return svgplot.strip_chart("Storage path baseline per DGX (iperf3 from the storage side, best sample)", "MB/s",
                                   [(n, paths["storage_MBps"].get(n)) for n in nodes],
                                   _threshold_for(report, "path_storage_MBps"))
    return svgplot.bar_chart("Storage path baseline per DGX (iperf3 from the storage side, best sample)",
                             "throughput (MB/s)", [(n, paths["storage_MBps"].get(n)) for n in nodes],
                             paths.get("nominal_storage_MBps") or {}, "nominal link rate",
                             _threshold_for(report, "path_storage_MBps"))


def _fabric_paths_plot(report: dict[str, Any]) -> str | None:
    paths = report["verdict"]["series"].get("paths") or {}
    if not paths.get("fabric_GBps"):
        return None
    pairs = list(paths["fabric_GBps"])
    if len(pairs) > STRIP_OVER:
        return svgplot.strip_chart("Compute-fabric baseline per pair (best sample)", "GB/s",
                                   [(p, paths["fabric_GBps"].get(p)) for p in pairs],
                                   _threshold_for(report, "path_fabric_GBps"))
    return svgplot.bar_chart("Compute-fabric baseline per pair (best sample)", "throughput (GB/s)",
                             [(p, paths["fabric_GBps"].get(p)) for p in pairs], paths.get("nominal_fabric_GBps") or {},
                             "nominal link rate", _threshold_for(report, "path_fabric_GBps"))


def _array_plot(report: dict[str, Any]) -> str | None:
    rows = report["verdict"]["series"].get("array") or []
    if not rows:
        return None
    if len(rows) > STRIP_OVER:
        return svgplot.strip_chart("Array side (its own counters) over client side (fio), per read phase", "x",
                                   [(r["case"], r.get("ratio")) for r in rows],
                                   _threshold_for(report, "fio_array_over_client"))
    return svgplot.bar_chart("Array side (its own counters) against client side (fio), per read phase",
                             "read (MB/s)", [(r["case"], r["array_MBps"]) for r in rows],
                             {r["case"]: r["client_MBps"] for r in rows}, "client side (fio) MB/s")


def _util_plot(report: dict[str, Any]) -> str | None:
    util = report["verdict"]["series"].get("util") or {}
    if not util.get("nodes"):
        return None
    what = "CPU (lab stand-in)" if util.get("what") == "cpu" else "GPU"
    chart = svgplot.Chart(title=f"{what} utilisation during the trainings (shaded: none; means over real data in the "
                                "table)", x_label="seconds since sampling started", y_label="utilisation (%)")
    floor = _threshold_for(report, "ddp_real_util_pct")
    items = list(util["nodes"].items())
    strip = ""
    if len(items) > SERIES_MAX:
        strip = svgplot.strip_chart(f"{what} utilisation over real data, mean per node (case)", "%",
                                    [(label, node.get("mean_real")) for label, node in items], floor)
        items = _extremes(items, lambda node: node.get("mean_real"))
        chart.title = f"{what} utilisation: worst, median and best node of {len(util['nodes'])} (every node: the strip)"
    for label, node in items:
        chart.series.append(svgplot.Series(label, [(t, v) for t, v in node.get("points") or []]))
    if floor is not None:
        chart.hlines.append(svgplot.HLine("floor (real data)", floor))
    return svgplot.line_chart(chart) + strip


def _extremes(items: list[tuple[str, Any]], key: Any) -> list[tuple[str, Any]]:
    """The worst (lowest), median and best of items by key (those without a value first: they are the worst)."""
    ranked = sorted(items, key=lambda item: (key(item[1]) is not None, key(item[1]) or 0.0))
    picks = [ranked[0], ranked[len(ranked) // 2], ranked[-1]]
    out: list[tuple[str, Any]] = []
    for what, (label, value) in zip(("worst", "median", "best"), picks, strict=True):
        if all(label != seen.split(" (")[0] for seen, _ in out):
            out.append((f"{label} ({what})", value))
    return out


def _nccl_plot(report: dict[str, Any]) -> str | None:
    nccl = report["verdict"]["series"].get("nccl") or {}
    if not nccl:
        return None
    chart = svgplot.Chart(title="All-reduce bus bandwidth vs message size (best sample per case)",
                          x_label="message size (bytes, log2)", y_label="busbw (GB/s)", log_x=True)
    cases = list(nccl.items())
    strips = ""
    if len(cases) > SERIES_MAX:
        kept: list[tuple[str, Any]] = [(c, v) for c, v in cases if not c.startswith(("single-", "pair-"))]
        for prefix, metric, what in (("single-", "nccl_single_node_busbw_gbps", "single node"),
                                     ("pair-", "nccl_pair_busbw_gbps", "ring pair")):
            mine = [(c, v) for c, v in cases if c.startswith(prefix)]
            if not mine:
                continue
            strips += svgplot.strip_chart(f"All-reduce peak bus bandwidth per {what} (best sample)", "GB/s",
                                          [(c.removeprefix(prefix), _peak(v)) for c, v in mine],
                                          _threshold_for(report, metric))
            kept += _extremes(mine, _peak) if len(mine) > 3 else mine
        cases = kept
        chart.title = "All-reduce bus bandwidth vs message size: the whole cluster, worst, median and best of each kind"
    for case, samples in cases:
        if not samples:
            chart.series.append(svgplot.Series(f"{case} (no data)", []))
            continue
        best = max(samples, key=lambda s: max((b for _sz, b in s["rows"] if b is not None), default=0))
        chart.series.append(svgplot.Series(case, [(sz, b) for sz, b in best["rows"] if b is not None]))
    for metric, name in (("nccl_single_node_busbw_gbps", "single-node threshold"),
                         ("nccl_multi_node_busbw_gbps", "multi-node threshold")):
        t = _threshold_for(report, metric)
        if t is not None:
            chart.hlines.append(svgplot.HLine(name, t))
    return svgplot.line_chart(chart) + strips


def _peak(samples: list[dict[str, Any]] | None) -> float | None:
    """A case's best bus bandwidth over its samples and sizes (None: no data)."""
    values = [b for s in samples or [] for _sz, b in s.get("rows") or [] if b is not None]
    return max(values) if values else None


def _fio_plot(report: dict[str, Any]) -> str | None:
    fio = report["verdict"]["series"].get("fio") or {}
    if not fio:
        return None
    nodes = list((fio.get("node_read_MBps") or {}).keys())
    if len(nodes) > STRIP_OVER:
        return svgplot.strip_chart("NFS read per DGX (fio, best sample)", "MB/s",
                                   [(n, fio["node_read_MBps"].get(n)) for n in nodes],
                                   _threshold_for(report, "fio_node_read_MBps"))
    return svgplot.bar_chart("NFS read per DGX (fio, best sample) against its bottleneck link", "read (MB/s)",
                             [(n, fio["node_read_MBps"].get(n)) for n in nodes], fio.get("link_MBps") or {},
                             "bottleneck link rate", _threshold_for(report, "fio_node_read_MBps"))


def _ddp_plot(report: dict[str, Any]) -> str | None:
    ddp = report["verdict"]["series"].get("ddp") or {}
    if not ddp or not ddp.get("nodes"):
        return None
    counts = ddp["nodes"]
    chart = svgplot.Chart(title="DDP training throughput vs node count", x_label="nodes", y_label="samples/s")
    chart.series.append(svgplot.Series("synthetic data", list(zip(counts, ddp["synthetic"], strict=True))))
    chart.series.append(svgplot.Series("dataset on NFS", list(zip(counts, ddp["real"], strict=True))))
    base = ddp["synthetic"][0]
    if base:
        chart.series.append(svgplot.Series("ideal linear", [(c, base * c) for c in counts], dashed=True))
    return svgplot.line_chart(chart)


def _performance_row(c: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    return {
        "label": c["label"], "status": c["status"], "value": _fmt(c["value"], c["unit"]),
        "samples": ", ".join(_fmt(s) for s in c["samples"]),
        "spread": "-" if c["spread_pct"] is None else f"{c['spread_pct']}%",
        "bounds": [{"kind": b["kind"], "op": "\u2264" if b["kind"] == "at_most" else "\u2265",
                    "limit": f"{b['limit']:.4g}", "detail": b["detail"], "source": b["source"]} for b in c["bounds"]],
        "reasons": "; ".join(c["reasons"]), "reference": report["reference"].get(c["label"], ""),
    }


def _group_row(name: str, checks: list[dict[str, Any]]) -> dict[str, Any]:
    """A metric with many instances as one row of the stage's table (its instances: per_node_table)."""
    g = group_line(name, checks)
    worst = checks[0]
    return {"label": g["label"], "status": g["status"], "value": f"worst {g['worst']}", "samples": f"median {g['median']}",
            "spread": "-", "reasons": f"{g['counts']}; every instance, worst first: the table '{name} per node'",
            "reference": "",
            "bounds": [{"kind": b["kind"], "op": "\u2264" if b["kind"] == "at_most" else "\u2265",
                        "limit": f"{b['limit']:.4g}", "detail": b["detail"], "source": b["source"]}
                       for b in worst["bounds"]]}


def _sanity_group_row(name: str, checks: list[dict[str, Any]]) -> dict[str, str]:
    bad = [c for c in checks if c["status"] == FAIL]
    listed = "; ".join(f"{c['instance']}: {'; '.join(c['reasons'])}" for c in bad)
    return {"label": f"{name} x{len(checks)}", "status": FAIL if bad else checks[0]["status"],
            "reasons": f"{len(checks) - len(bad)} pass, {len(bad)} fail" + (f": {listed}" if bad else "")}


def per_node_table(name: str, checks: list[dict[str, Any]]) -> dict[str, Any]:
    """A metric's instances (nodes, pairs), worst first: failures, then the nearest to their bound."""
    rows = []
    for c in checks:
        m = margin(c)
        rows.append([c.get("instance") or c["label"], _fmt(c.get("value"), c.get("unit", "")),
                     "-" if m is None else f"{m * 100:+.1f}%", c["status"], "; ".join(c["reasons"])])
    return {"title": f"{name} per node, worst first", "rows": rows,
            "headers": ["node (pair, case)", "value", "margin to its tightest bound", "status", "reasons"]}


def _threshold_row(t: dict[str, Any]) -> dict[str, str]:
    ceiling = t.get("ceiling")
    return {"metric": str(t.get("metric")), "floor": str(t.get("floor", "-")),
            "ceiling": f"{ceiling.get('fraction')} x {ceiling.get('derive')}" if isinstance(ceiling, dict) else "-",
            "source": str(t.get("source"))}


def html_view(report: dict[str, Any]) -> dict[str, Any]:
    """Everything the report template shows, as plain data (the template only lays it out). ``report`` is the
    whole report.json for a site template that wants more."""
    v = report["verdict"]
    charts = plots(report)
    order = [s for s in STAGE_TITLES if s in {c["stage"] for c in v["checks"]} | set(charts)]
    order += sorted({c["stage"] for c in v["checks"]} - set(order))
    stages = []
    for key in order:
        checks = [c for c in v["checks"] if c["stage"] == key]
        perf, perf_groups = grouped(checks, "performance")
        sanity, sanity_groups = grouped(checks, "sanity")
        stages.append({
            "key": key, "title": STAGE_TITLES.get(key, key),
            "performance": [_performance_row(c, report) for c in perf] + [
                _group_row(name, cs) for name, cs in perf_groups.items()],
            "sanity": [{"label": c["label"], "status": c["status"], "reasons": "; ".join(c["reasons"])}
                       for c in sanity] + [_sanity_group_row(name, cs) for name, cs in sanity_groups.items()],
            "plots": [Markup(svg) for svg in charts.get(key, [])],  # built by svgplot, every text escaped there
            "tables": [per_node_table(name, cs) for name, cs in perf_groups.items()] + stage_tables(report, key),
        })
    hand = report["handover"]
    return {
        "report": report,
        "run": report["run"], "status": v["status"], "site": str(report["site"]),
        "nodes": ", ".join(report["nodes"] or []), "generated": report["generated"],
        "counts": report["counts"], "failed": v["failed"],
        "lab_banner": LAB_BANNER if report["lab_standins"] else "",
        "bundle": report["bundle"], "bundle_text": _bundle_text(report), "schema_version": report["schema_version"],
        "customer": hand["customer"], "logo_uri": handover.logo_data_uri(hand["logo"]),
        "signoff": hand["signoff"], "stages": stages, "limits": limits_view(report),
        "thresholds": [_threshold_row(t) for t in report.get("thresholds") or []],
        "outlier_max_behind_pct": str(report.get("outlier_max_behind_pct")),
        "environment": json.dumps(report.get("environment") or {}, indent=1, sort_keys=True),
        "scaling": scaling_view(report.get("scaling")),
    }


def scaling_view(section: dict[str, Any] | None) -> dict[str, Any] | None:
    """The scale-out section as text cells (None when the run is no scale-out)."""
    if not section:
        return None
    return {"title": section["title"], "before_run": section["before_run"], "error": section.get("error") or "",
            "before_nodes": ", ".join(section["before_nodes"]) or "-",
            "after_nodes": ", ".join(section["after_nodes"]) or "-", "added": ", ".join(section["added"]) or "-",
            "rows": [{"title": r["title"], "before": _fmt(r["before"]), "after": _fmt(r["after"]),
                      "ratio": _fmt(r["ratio"]), "linear": "-" if r["linear_pct"] is None else f"{r['linear_pct']}%"}
                     for r in section["rows"]]}


def scaling_md(section: dict[str, Any] | None) -> list[str]:
    """The scale-out section of summary.md (nothing when the run is no scale-out)."""
    view = scaling_view(section)
    if not view:
        return []
    lines = [f"## {view['title']}", "", f"Nodes {view['before_nodes']} (run `{view['before_run']}`) -> "
             f"{view['after_nodes']} (this run); added {view['added']}.", ""]
    if view["error"]:
        lines += [f"**{view['error']}**", ""]
    lines += ["| aggregate figure | before | after | after / before | of linear |", "|---|---|---|---|---|"]
    lines += [f"| {r['title']} | {r['before']} | {r['after']} | {r['ratio']} | {r['linear']} |" for r in view["rows"]]
    return [*lines, ""]


def limits_view(report: dict[str, Any]) -> dict[str, Any]:
    """The 'where is the limit' section as text cells: diagnosis lines, and per path its layers."""
    limits = report["verdict"].get("limits") or {}
    rows = []
    for row in limits.get("paths") or []:
        rows.append({"path": row["path"], "layers": [
            {"layer": layer["layer"], "value": _fmt(layer["value"], layer["unit"]), "status": layer["status"] or "",
             "fraction": "-" if layer["fraction_of_below"] is None else f"{layer['fraction_of_below']:.2f}"}
            for layer in row["layers"]]})
    return {"diagnosis": list(limits.get("diagnosis") or []), "paths": rows}


def stage_tables(report: dict[str, Any], stage: str) -> list[dict[str, Any]]:
    """Extra tables of a stage: the array side against the client side (fio, DDP), the utilisation (DDP)."""
    series = report["verdict"]["series"]
    tables = []
    if stage == "fio" and series.get("array"):
        tables.append({"title": "Array side (OneFS statistics) and client side (fio), per read phase",
                       "headers": ["read phase", "node", "client (fio)", "array sent (net.ext out)",
                                   "array read (ifs out)", "array / client"],
                       "rows": [[r["case"], r["node"], _fmt(r["client_MBps"], "MB/s"), _fmt(r["array_MBps"], "MB/s"),
                                 _fmt(r["array_ifs_MBps"], "MB/s"), _fmt(r["ratio"])] for r in series["array"]]})
    if stage == "ddp" and series.get("ddp_array"):
        tables.append({"title": "Array side and training side during the real-data trainings",
                       "headers": ["case", "nodes", "loaders read", "array sent", "array / loaders"],
                       "rows": [[r["case"], r["node"], _fmt(r["loader_MBps"], "MB/s"), _fmt(r["array_MBps"], "MB/s"),
                                 _fmt(r["ratio"])] for r in series["ddp_array"]]})
    cabling = series.get("cabling") or {}
    if stage == "cabling" and cabling.get("cables"):
        order = {"MISWIRED": 0, "MISSING": 1, "DEGRADED": 2, "UNEXPECTED": 3, "OK": 4}
        cables = sorted(cabling["cables"], key=lambda c: order.get(c["status"], 9))
        tables.append({"title": "Cables: the design against what the switches and hosts show",
                       "headers": ["status", "end a", "end b", "what is seen", "evidence"],
                       "rows": [[c["status"] + (" (accepted)" if c.get("accepted") else ""),
                                 f"{c['a']['node']} {c['a']['port']}", f"{c['b']['node']} {c['b']['port']}",
                                 c["reason"] + (f" [accepted: {c['accepted']}]" if c.get("accepted") else ""),
                                 ", ".join(c.get("evidence") or [])] for c in cables]})
    util = series.get("util") or {}
    if stage == "ddp" and util.get("nodes"):
        what = "CPU, lab stand-in" if util.get("what") == "cpu" else "GPU"
        tables.append({"title": f"Utilisation during the real-data trainings ({what})",
                       "headers": ["node (case)", "mean over real data", "GPUs", "peak GPU memory"],
                       "rows": [[label, _fmt(n.get("mean_real"), "%"), str(n.get("gpus") or "-"),
                                 _fmt(n.get("peak_memory_mib"), "MiB")] for label, n in util["nodes"].items()]})
    return tables


def html_report(report: dict[str, Any], template: Path | None = None) -> str:
    return handover.render(html_view(report), template)


def write_all(run_dir: Path, report: dict[str, Any], template: Path | None = None) -> dict[str, Path]:
    """Write every report artefact into run_dir; returns their paths. report.html is written last: a site
    template or logo that fails (HandoverError, naming it) leaves the other files written."""
    files = {
        "json": run_dir / "report.json",
        "junit": run_dir / "junit.xml",
        "prometheus": run_dir / "metrics.prom",
        "markdown": run_dir / "summary.md",
        "html": run_dir / "report.html",
    }
    files["json"].write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    files["junit"].write_text(junit_xml(report), encoding="utf-8")
    files["prometheus"].write_text(prom.textfile(report), encoding="utf-8")
    files["markdown"].write_text(summary_md(report), encoding="utf-8")
    files["html"].write_text(html_report(report, template), encoding="utf-8")
    return files
