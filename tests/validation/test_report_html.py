"""The HTML report renders in headless Chromium with its plots and without console errors or requests."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from validation import handover, report
from validation.verdict import evaluate

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(url: str, profile, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM, "chromium is not installed (scripts/apt-packages.txt lists it)"
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra, url],
        capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("failing", [False, True])
def test_report_renders_plots_without_console_errors(production_run, tmp_path, failing):
    import json

    ctx = json.loads((production_run / "context.json").read_text())
    if failing:
        ctx["acceptance_thresholds"][0]["floor"] = 10_000
    doc = report.build_report(production_run, ctx, evaluate(production_run, ctx), {"ansible": "test"})
    files = report.write_all(production_run, doc)
    html = files["html"].read_text()
    assert not re.search(r"<script|https?://(?!www\.w3\.org/2000/svg)", html), "report must be self-contained"
    p = _chromium(files["html"].as_uri(), tmp_path / "profile", "--dump-dom")
    assert p.returncode == 0, p.stderr[-2000:]
    dom = p.stdout
    assert dom.count("<svg") == 7, ("seven plots: storage and fabric baselines, busbw vs size, per-node fio, array vs "
                                    "client side, DDP vs nodes, utilisation")
    assert 'id="limits"' in dom and "Where is the limit" in dom
    assert "Array side (OneFS statistics) and client side (fio)" in dom and "Utilisation during the real-data" in dom
    assert dom.count('class="series"') >= 5 and 'class="threshold"' in dom and 'class="bar"' in dom
    assert ("FAIL" if failing else "PASS") in re.search(r'id="verdict">(\w+)<', dom).group(1)
    console = [ln for ln in p.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert console == [], console
    assert "ERR_" not in p.stderr  # no network request was attempted and failed


# ---------------------------------------------------------------------------------------------- issue #20 (4)

LONG = "dgx-a100-rack{:02d}-slot{:02d}-very-long-hostname.datacenter.customer.example.org"
UNBROKEN = "/mnt/training/" + "averyveryverylongdirectorynamewithoutanybreak" * 6


def _crowded_report(run, ctx, extra_series: int = 24):
    """The production report with many more series, long host names and long unbreakable words."""
    import copy

    doc = report.build_report(run, ctx, evaluate(run, ctx), {"ansible": "test", "dataset": UNBROKEN},
                              handover.handover_from({"customer": "ACME Research " + "Laboratories " * 8,
                                                      "signoff": [{"role": "Customer acceptance",
                                                                   "name": "Ada Lovelace", "date": "2026-11-26"},
                                                                  {"role": "Delivery engineer"}]}))
    v = doc["verdict"]
    nccl = v["series"]["nccl"]
    base = nccl["all"][0]["rows"]
    for i in range(extra_series):
        nccl[f"pair-{LONG.format(i, 1)}-{LONG.format(i, 2)}"] = [
            {"file": "r1.log", "rows": [[size, None if b is None else b * (0.4 + i / 40)] for size, b in base]}]
    template = next(c for c in v["checks"] if c["name"] == "nccl_pair_busbw_gbps")
    sanity = next(c for c in v["checks"] if c["kind"] == "sanity" and c["stage"] == "nccl")
    for i in range(extra_series):
        instance = f"{LONG.format(i, 1)}+{LONG.format(i, 2)}"
        perf = dict(copy.deepcopy(template), instance=instance, label=f"nccl_pair_busbw_gbps[{instance}]",
                    status="FAIL", reasons=[f"{UNBROKEN}: {i}"])
        check = dict(copy.deepcopy(sanity), instance=f"pair-{instance}", label=f"nccl_sanity[pair-{instance}]",
                     status="FAIL", reasons=[f"r1.log: ran on {LONG.format(i, 3)}, expected {UNBROKEN}"])
        v["checks"] += [check, perf]
        v["failed"] += [perf["label"], check["label"]]
    v["status"] = "FAIL"
    fio = v["series"]["fio"]
    for i in range(12):
        fio["node_read_MBps"][LONG.format(i, 7)] = 4000.0 + 50 * i
        fio["link_MBps"][LONG.format(i, 7)] = 5000.0
    doc["counts"] = {s: sum(1 for c in v["checks"] if c["status"] == s) for s in ("PASS", "FAIL", "INFO")}
    return doc


def test_handover_document_fits_1200px_prints_a4_and_stays_self_contained(production_run, tmp_path):
    import json
    import struct

    from cdp import Browser

    ctx = json.loads((production_run / "context.json").read_text())
    doc = _crowded_report(production_run, ctx)
    html_path = report.write_all(production_run, doc)["html"]
    html = html_path.read_text()
    assert not re.search(r"<script|\son\w+\s*=|<link|@import|url\((?!data:)|https?://(?!www\.w3\.org/2000/svg)",
                         html), "one self-contained file: no script, no external asset"
    assert CHROMIUM, "chromium is not installed (scripts/apt-packages.txt lists it)"
    browser = Browser(CHROMIUM, tmp_path / "profile")
    try:
        page = browser.page(html_path.as_uri(), 1200, 900)
        width = browser.evaluate(page, "document.documentElement.scrollWidth")
        wide = browser.evaluate(page, """[...document.querySelectorAll('body *')]
            .filter(e => !(e instanceof SVGElement) || e.tagName === 'svg')
            .filter(e => e.getBoundingClientRect().right > 1200.5 || e.scrollWidth > e.clientWidth + 1)
            .map(e => e.tagName + '.' + e.className)""")
        plots = browser.evaluate(page, "document.querySelectorAll('svg.plot').length")
        series = browser.evaluate(page, "document.querySelectorAll('svg.plot polyline.series').length")
        hover = browser.evaluate(page, "document.querySelectorAll('svg.plot .point > title').length")
        scripts = browser.evaluate(page, "document.scripts.length")
        png = browser.screenshot(page, 1200)
        pdf = browser.pdf(page)
        browser.send("Emulation.setEmulatedMedia", {"media": "print"}, page)
        breaks = browser.evaluate(page, "[...document.querySelectorAll('section')].map("
                                        "s => s.className + ':' + getComputedStyle(s).breakBefore)")
        events = browser.session_events(page)
    finally:
        browser.close()
    shot, printed = tmp_path / "report-1200.png", tmp_path / "report.pdf"
    shot.write_bytes(png)
    printed.write_bytes(pdf)

    assert width <= 1200 and wide == [], f"horizontal overflow at 1200 px: {width} px, {wide[:10]}"
    # busbw: 33 cases are more than report.SERIES_MAX, so the whole-cluster case and the worst, median and best of
    # the single-node and pair cases (7 lines) and a strip per kind (2 more plots); DDP (3), utilisation (5
    # node/case lines); the bar charts draw no polyline
    assert plots == 7 + 2 and series == 7 + 3 + 5 and hover >= series * 3 and scripts == 0
    console = [e for e in events if e["method"] in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown")
               or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] in ("error", "warning"))]
    assert console == [], console
    requested = [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"]
    assert requested and all(u == html_path.as_uri() or u.startswith("data:") for u in requested), requested
    # the screenshot: a PNG 1200 px wide holding the whole (long) page
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 100_000
    png_w, png_h = struct.unpack(">II", png[16:24])
    assert png_w == 1200 and png_h > 3000
    # the PDF: A4 (595 x 842 pt, from the CSS @page rule), one page per stage at least, plus appendix and sign-off
    assert pdf[:5] == b"%PDF-" and printed.stat().st_size > 50_000
    boxes = {tuple(round(float(x)) for x in m.split()) for m in re.findall(rb"/MediaBox\s*\[([^\]]*)\]", pdf)}
    assert boxes == {(0, 0, 595, 842)}, boxes
    stages = sum(1 for b in breaks if b.startswith("stage:"))
    assert stages == 4 and all(b.endswith(":page") for b in breaks), breaks
    assert len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf)) >= stages + 3


def test_sign_off_block_fills_names_and_leaves_blank_lines(production_run):
    import json

    ctx = json.loads((production_run / "context.json").read_text())
    doc = report.build_report(production_run, ctx, evaluate(production_run, ctx), {}, handover.handover_from(
        {"customer": "ACME <Research>", "signoff": [{"role": "Customer acceptance", "name": "Ada Lovelace",
                                                    "date": "2026-11-26"}, {"role": "Delivery engineer"}]}))
    html = report.html_report(doc)
    rows = re.findall(r"<tr><td[^>]*>(.*?)</td><td class=\"(\w*)\">(.*?)</td><td class=\"(\w*)\">(.*?)</td>", html)
    assert rows[-2:] == [("Customer acceptance", "", "Ada Lovelace", "", "2026-11-26"),
                         ("Delivery engineer", "line", "", "line", "")]
    assert "ACME &lt;Research&gt;" in html and 'src="data:image/svg+xml;base64,' in html
    blank = report.html_report(report.build_report(production_run, ctx, evaluate(production_run, ctx), {}))
    assert blank.count('<td class="line"></td>') == 8, "no sign-off data: two rows of blank lines"
    assert '<span class="blank"></span>' in blank, "no customer: a blank line"


def _cli(*args, capsys):
    from validation import cli

    rc = cli.main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_site_template_directory_replaces_blocks_and_the_stylesheet(production_run, tmp_path, capsys):
    import json

    site = tmp_path / "site-template"
    site.mkdir()
    (site / "report.html.j2").write_text(
        '{% extends "default/report.html.j2" %}\n'
        '{% block logo %}<p id="site-logo">ACME DATA CENTRE</p>{% endblock %}\n'
        '{% block signoff %}{{ super() }}<p id="site-footer">Accepted for {{ customer }}</p>{% endblock %}\n')
    (site / "report.css.j2").write_text("body { font-family: serif; } /* site stylesheet */\n")
    logo = tmp_path / "logo.svg"
    logo.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>')
    (production_run / "handover.json").write_text(json.dumps({"customer": "ACME", "logo": str(logo),
                                                              "signoff": [{"role": "CIO", "name": "Grace Hopper"}]}))
    rc, _out, err = _cli("report", str(production_run), "--json", "--template", str(site), capsys=capsys)
    assert rc == 0, err
    html = (production_run / "report.html").read_text()
    assert '<p id="site-logo">ACME DATA CENTRE</p>' in html and '<p id="site-footer">Accepted for ACME</p>' in html
    assert "/* site stylesheet */" in html and "@page" not in html
    assert "Grace Hopper" in html and 'id="verdict">PASS<' in html and html.count('class="plot"') == 7
    assert json.loads((production_run / "report.json").read_text())["handover"]["logo"] == str(logo)
    # one template file instead of a directory; the bundled logo otherwise, as a data: URI of the site's file
    single = tmp_path / "one.html.j2"
    single.write_text("<!DOCTYPE html><title>{{ run }}</title><p>{{ status }} {{ customer }}</p>"
                      '<img src="{{ logo_uri }}" alt="">\n')
    rc, _out, err = _cli("report", str(production_run), "--json", "--template", str(single), capsys=capsys)
    assert rc == 0, err
    assert (production_run / "report.html").read_text().startswith(
        f"<!DOCTYPE html><title>{production_run.name}</title><p>PASS ACME</p><img src=\"data:image/svg+xml;base64,")


@pytest.mark.parametrize(("template", "handover_doc", "message"), [
    ("missing-dir", None, "no such file or directory"),
    ("empty-dir", None, "the directory has no report.html.j2"),
    ("bad-syntax", None, "bad.html.j2:2:"),
    ("undefined", None, "'nosuchvariable' is undefined"),
    (None, {"customer": ["a"]}, "validate_report_handover (%s).customer=['a']: not a text"),
    (None, {"signoff": [{"role": "x", "nmae": "y"}]}, "signoff[0]: unknown key(s) nmae"),
    (None, {"logo": "logo.png"}, ".logo='logo.png': not an absolute path"),
    (None, {"logo": "/nonexistent/logo.png"}, "cannot be read (No such file or directory)"),
    (None, {"logo": "/etc/hostname"}, "unsupported image type"),
])
def test_bad_template_or_handover_data_is_a_clear_error(production_run, tmp_path, capsys, template, handover_doc,
                                                        message):
    import json

    args = ["report", str(production_run), "--json"]
    if template:
        path = tmp_path / template
        if template == "empty-dir":
            path.mkdir()
        elif template == "bad-syntax":
            path = tmp_path / "bad.html.j2"
            path.write_text("<p>\n{% if status %}\n")
        elif template == "undefined":
            path = tmp_path / "u.html.j2"
            path.write_text("<p>{{ nosuchvariable }}</p>\n")
        args += ["--template", str(path)]
    if handover_doc is not None:
        (production_run / "handover.json").write_text(json.dumps(handover_doc))
    rc, _out, err = _cli(*args, capsys=capsys)
    assert rc == 2, err
    expected = message % (production_run / "handover.json") if "%s" in message else message
    assert expected in err and "fix:" in err, err
