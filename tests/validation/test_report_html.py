"""The HTML report renders in headless Chromium with its plots and without console errors or requests."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from validation import report
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
    assert dom.count("<svg") == 3, "three plots: busbw vs size, per-node fio, DDP vs nodes"
    assert dom.count('class="series"') >= 5 and 'class="threshold"' in dom and 'class="bar"' in dom
    assert ("FAIL" if failing else "PASS") in re.search(r'id="verdict">(\w+)<', dom).group(1)
    console = [ln for ln in p.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert console == [], console
    assert "ERR_" not in p.stderr  # no network request was attempted and failed
