"""Write the handover report of a run: report.json, junit.xml, summary.md and a self-contained report.html.

The HTML holds everything inline (CSS and SVG plots generated here): no scripts, no fonts, no CDN, so it
opens the same on an air-gapped site and in a browser with networking disabled.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from . import svgplot
from .reference import reference_for
from .verdict import FAIL, INFO, PASS, Check, Verdict, summary_counts

LAB_BANNER = ("LAB STAND-IN: gloo all-reduce on CPU over the cfab0 stand-in instead of NCCL on GPUs and HDR "
              "InfiniBand, a tiny model instead of ResNet-50, TCG VMs instead of DGX A100. These figures prove "
              "the harness, not the hardware.")


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    return f"{v:.4g}{(' ' + unit) if unit else ''}"


def _reference(check: Check, node_count: int) -> str:
    fig = reference_for(check.name, node_count)
    return fig.text if fig else ""


def build_report(run_dir: Path, ctx: dict[str, Any], verdict: Verdict, environment: dict[str, Any]) -> dict[str, Any]:
    return {
        "run": run_dir.name,
        "generated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "site": ctx.get("site"),
        "nodes": ctx.get("nodes"),
        "lab_standins": verdict.lab_standins,
        "verdict": verdict.to_dict(),
        "counts": summary_counts(verdict),
        "thresholds": ctx.get("acceptance_thresholds"),
        "outlier_max_behind_pct": ctx.get("acceptance_outlier_max_behind_pct"),
        "baseline": ctx.get("acceptance_baseline"),
        "environment": environment,
        "reference": {c.label: _reference(c, len(ctx.get("nodes") or [])) for c in verdict.checks
                      if c.kind == "performance"},
    }


def junit_xml(report: dict[str, Any]) -> str:
    checks = report["verdict"]["checks"]
    suites = ET.Element("testsuites", name="validation", tests=str(len(checks)),
                        failures=str(sum(1 for c in checks if c["status"] == FAIL)))
    by_stage: dict[str, list[dict[str, Any]]] = {}
    for c in checks:
        by_stage.setdefault(c["stage"], []).append(c)
    for stage, items in by_stage.items():
        suite = ET.SubElement(suites, "testsuite", name=f"validation.{stage}", tests=str(len(items)),
                              failures=str(sum(1 for c in items if c["status"] == FAIL)),
                              skipped=str(sum(1 for c in items if c["status"] == INFO and c["kind"] == "sanity")))
        for c in items:
            case = ET.SubElement(suite, "testcase", classname=f"validation.{stage}.{c['kind']}", name=c["label"])
            text = f"value={c['value']} {c['unit']}; bounds={c['bounds']}; samples={c['samples']}"
            if c["status"] == FAIL:
                fail = ET.SubElement(case, "failure", message="; ".join(c["reasons"])[:500] or "failed")
                fail.text = text
            ET.SubElement(case, "system-out").text = text
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _bounds_text(c: dict[str, Any]) -> str:
    return "; ".join(f"{b['kind']} >= {b['limit']:.4g} ({b['detail']})" for b in c["bounds"]) or "-"


def summary_md(report: dict[str, Any]) -> str:
    v = report["verdict"]
    lines = [f"# Validation {report['run']}: **{v['status']}**", ""]
    if report["lab_standins"]:
        lines += [f"> {LAB_BANNER}", ""]
    lines += [f"Site `{report['site']}`, nodes {', '.join(report['nodes'] or [])}. "
              f"{report['counts'][PASS]} pass, {report['counts'][FAIL]} fail, {report['counts'][INFO]} info.", ""]
    if v["failed"]:
        lines += ["## Failed", ""] + [f"- `{f}`" for f in v["failed"]] + [""]
    lines += ["## Performance", "", "| metric | value | samples (spread) | bounds | status | reference |",
              "|---|---|---|---|---|---|"]
    for c in v["checks"]:
        if c["kind"] != "performance":
            continue
        samples = ", ".join(_fmt(s) for s in c["samples"])
        spread = f" ({c['spread_pct']}%)" if c["spread_pct"] is not None else ""
        lines.append(f"| `{c['label']}` | {_fmt(c['value'], c['unit'])} | {samples}{spread} | {_bounds_text(c)} | "
                     f"{c['status']} | {report['reference'].get(c['label'], '')} |")
    lines += ["", "## Sanity", "", "| check | status | reasons |", "|---|---|---|"]
    for c in v["checks"]:
        if c["kind"] == "sanity":
            lines.append(f"| `{c['label']}` | {c['status']} | {'; '.join(c['reasons']).replace('|', '/')} |")
    reasons = [(c["label"], r) for c in v["checks"] if c["kind"] == "performance" for r in c["reasons"]]
    if reasons:
        lines += ["", "## Reasons", ""] + [f"- `{label}`: {r}" for label, r in reasons]
    lines.append("")
    return "\n".join(lines)


def _threshold_for(report: dict[str, Any], metric: str) -> float | None:
    limits = [b["limit"] for c in report["verdict"]["checks"] if c["name"] == metric for b in c["bounds"]
              if b["kind"] in ("floor", "ceiling")]
    return max(limits) if limits else None


def plots(report: dict[str, Any]) -> list[str]:
    """The report's charts; a chart that cannot be drawn says so in its place (the report is still written)."""
    try:
        return _plots(report)
    except Exception as exc:  # a plot must never cost the customer the report
        return [f'<p class="FAIL">the plots could not be drawn ({escape(type(exc).__name__)}: {escape(str(exc))}); '
                "the tables below hold every figure</p>"]


def _plots(report: dict[str, Any]) -> list[str]:
    series = report["verdict"]["series"]
    out = []
    nccl = series.get("nccl") or {}
    if nccl:
        chart = svgplot.Chart(title="All-reduce bus bandwidth vs message size (best sample per case)",
                              x_label="message size (bytes, log2)", y_label="busbw (GB/s)", log_x=True)
        for case, samples in nccl.items():
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
        out.append(svgplot.line_chart(chart))
    fio = series.get("fio") or {}
    if fio:
        nodes = list((fio.get("node_read_MBps") or {}).keys())
        out.append(svgplot.bar_chart("NFS read per DGX (fio, best sample) against its bottleneck link",
                                     "read (MB/s)", [(n, fio["node_read_MBps"].get(n)) for n in nodes],
                                     fio.get("link_MBps") or {}, "bottleneck link rate",
                                     _threshold_for(report, "fio_node_read_MBps")))
    ddp = series.get("ddp") or {}
    if ddp and ddp.get("nodes"):
        counts = ddp["nodes"]
        chart = svgplot.Chart(title="DDP training throughput vs node count", x_label="nodes",
                              y_label="samples/s")
        chart.series.append(svgplot.Series("synthetic data", list(zip(counts, ddp["synthetic"], strict=True))))
        chart.series.append(svgplot.Series("dataset on NFS", list(zip(counts, ddp["real"], strict=True))))
        base = ddp["synthetic"][0]
        if base:
            chart.series.append(svgplot.Series("ideal linear", [(c, base * c) for c in counts], dashed=True))
        out.append(svgplot.line_chart(chart))
    return out


_CSS = """
body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:4px 6px;text-align:left;vertical-align:top}
.PASS{background:#dfd}.FAIL{background:#fdd}.INFO{background:#eef}
.verdict{font-size:28px;padding:.3em .6em;display:inline-block}.lab{background:#fe9;border:2px solid #c90;padding:.6em;margin:1em 0}
svg.plot{border:1px solid #ddd;margin:.5em 0;display:block}
"""


def html_report(report: dict[str, Any]) -> str:
    v = report["verdict"]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>Validation {escape(report['run'])}: {v['status']}</title>", f"<style>{_CSS}</style></head><body>",
             f"<h1>Validation handover report <code>{escape(report['run'])}</code></h1>",
             f'<p class="verdict {v["status"]}" id="verdict">{v["status"]}</p>']
    if report["lab_standins"]:
        parts.append(f'<p class="lab" id="lab-standin">{escape(LAB_BANNER)}</p>')
    parts.append(f"<p>Site <b>{escape(str(report['site']))}</b>; nodes {escape(', '.join(report['nodes'] or []))}; "
                 f"generated {escape(report['generated'])}.</p>")
    if v["failed"]:
        parts.append("<h2>Failed</h2><ul>" + "".join(f"<li><code>{escape(f)}</code></li>" for f in v["failed"]) + "</ul>")
    parts.append("<h2>Performance</h2><table><tr><th>metric</th><th>value (best of N)</th><th>samples</th>"
                 "<th>spread</th><th>bounds (source)</th><th>status</th><th>reasons</th><th>reference</th></tr>")
    for c in v["checks"]:
        if c["kind"] != "performance":
            continue
        bounds = "<br>".join(f"{escape(b['kind'])} &ge; {b['limit']:.4g}: {escape(b['detail'])} "
                             f"<i>({escape(b['source'])})</i>" for b in c["bounds"]) or "-"
        parts.append(
            f'<tr class="{c["status"]}"><td><code>{escape(c["label"])}</code></td><td>{escape(_fmt(c["value"], c["unit"]))}</td>'
            f"<td>{escape(', '.join(_fmt(s) for s in c['samples']))}</td>"
            f"<td>{'-' if c['spread_pct'] is None else escape(str(c['spread_pct'])) + '%'}</td><td>{bounds}</td>"
            f"<td>{c['status']}</td><td>{escape('; '.join(c['reasons']))}</td>"
            f"<td>{escape(report['reference'].get(c['label'], ''))}</td></tr>")
    parts.append("</table><h2>Plots</h2>")
    parts.extend(f'<figure>{svg}</figure>' for svg in plots(report))
    parts.append("<h2>Sanity (did each measurement run correctly?)</h2><table><tr><th>check</th><th>status</th>"
                 "<th>reasons</th></tr>")
    for c in v["checks"]:
        if c["kind"] == "sanity":
            parts.append(f'<tr class="{c["status"]}"><td><code>{escape(c["label"])}</code></td><td>{c["status"]}</td>'
                         f"<td>{escape('; '.join(c['reasons']))}</td></tr>")
    parts.append("</table><h2>Thresholds</h2><table><tr><th>metric</th><th>floor</th><th>ceiling</th><th>source</th></tr>")
    for t in report.get("thresholds") or []:
        ceiling = t.get("ceiling")
        ceiling_text = f"{ceiling.get('fraction')} x {ceiling.get('derive')}" if isinstance(ceiling, dict) else "-"
        parts.append(f"<tr><td><code>{escape(str(t.get('metric')))}</code></td><td>{escape(str(t.get('floor', '-')))}</td>"
                     f"<td>{escape(ceiling_text)}</td><td>{escape(str(t.get('source')))}</td></tr>")
    parts.append(f"</table><p>Outlier rule: a node more than {escape(str(report.get('outlier_max_behind_pct')))}% "
                 "behind the best node fails.</p>")
    env = json.dumps(report.get("environment") or {}, indent=1, sort_keys=True)
    parts.append(f"<h2>Environment</h2><pre>{escape(env)}</pre></body></html>")
    return "\n".join(parts) + "\n"


def write_all(run_dir: Path, report: dict[str, Any]) -> dict[str, Path]:
    """Write every report artefact into run_dir; returns their paths."""
    files = {
        "json": run_dir / "report.json",
        "junit": run_dir / "junit.xml",
        "markdown": run_dir / "summary.md",
        "html": run_dir / "report.html",
    }
    files["json"].write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    files["junit"].write_text(junit_xml(report), encoding="utf-8")
    files["markdown"].write_text(summary_md(report), encoding="utf-8")
    files["html"].write_text(html_report(report), encoding="utf-8")
    return files
