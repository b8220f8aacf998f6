"""Issue #20 (4): plots where no two series look the same at any count, threshold labels off the data, and
every point's value on hover (<title>) without a script."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest

from validation import svgplot

NS = {"s": "http://www.w3.org/2000/svg"}
POINT_TAGS = ("circle", "rect", "polygon")


def _tag(el: ET.Element) -> str:
    return el.tag.split("}", 1)[1]


@pytest.mark.parametrize("n", [1, 2, 8, 9, 10, 16, 25, 40, 64, 100, 150])
def test_every_series_has_its_own_colour_and_neighbours_differ_in_marker_and_dash(n):
    styles = svgplot.series_styles(n)
    assert len({s.colour for s in styles}) == n, "a colour is reused"
    assert len(set(styles)) == n
    for a, b in itertools.pairwise(styles):
        assert a.marker != b.marker
        if n > len(svgplot.PALETTE):
            assert a.dash != b.dash


def _chart(n: int, name_len: int = 12) -> ET.Element:
    chart = svgplot.Chart(title="t", x_label="message size (bytes, log2)", y_label="busbw (GB/s)", log_x=True)
    for i in range(n):
        name = f"series-{i:02d}-" + "x" * max(0, name_len - 10)
        chart.series.append(svgplot.Series(name, [(2**k, 10.0 * k + i) for k in range(10, 20)]))
    chart.hlines += [svgplot.HLine("single-node threshold", 150.0), svgplot.HLine("multi-node threshold", 120.0)]
    return ET.fromstring(svgplot.line_chart(chart))


@pytest.mark.parametrize("n", [3, 12, 30])
def test_line_chart_draws_each_series_distinctly_with_hover_values(n):
    svg = _chart(n)
    lines = svg.findall(".//s:polyline[@class='series']", NS)
    assert len(lines) == n
    looks = {(p.get("stroke"), p.get("stroke-dasharray")) for p in lines}
    assert len({p.get("stroke") for p in lines}) == n and len(looks) == n
    points = [el for el in svg.iter() if el.get("class") == "point" and el.find("s:title", NS) is not None]
    assert len(points) == n * 10, "every point has its <title>"
    assert "series-00-xx\nmessage size (bytes, log2): 1024\nbusbw (GB/s): 100" in {
        p.find("s:title", NS).text for p in points}


def test_threshold_labels_are_in_the_legend_below_the_plot_area():
    svg = _chart(5)
    bottom = svgplot.MT + svgplot.PLOT_H
    labels = svg.findall(".//s:text[@class='threshold-label']", NS)
    assert [lb.text for lb in labels] == ["single-node threshold: 150 GB/s", "multi-node threshold: 120 GB/s"]
    assert all(float(lb.get("y")) > bottom + svgplot.AXIS_H for lb in labels), "a label over the data"
    lines = svg.findall(".//s:line[@class='threshold']", NS)
    assert len({ln.get("stroke-dasharray") for ln in lines}) == 2, "the two thresholds look different"
    # nothing but tick labels sits inside the plot area
    inside = [t.text for t in svg.iter(f"{{{NS['s']}}}text")
              if svgplot.MT < float(t.get("y")) < bottom and float(t.get("x")) > svgplot.ML]
    assert inside == [], inside


def test_long_series_names_are_cut_to_the_legend_with_the_full_name_on_hover():
    svg = _chart(6, name_len=180)
    texts = [t.text for t in svg.findall(".//s:g[@class='legend']//s:text", NS)]
    assert all(len(t) * svgplot.CHAR_W <= svgplot.W - svgplot.ML - svgplot.MR for t in texts)
    assert any(t.endswith("\u2026") for t in texts)
    titles = {t.text for t in svg.findall(".//s:g[@class='legend']/s:g/s:title", NS)}
    assert "series-00-" + "x" * 170 in titles
    height = float(svg.get("height"))
    assert all(float(t.get("y")) < height for t in svg.findall(".//s:text", NS)), "legend drawn off the image"


def test_bar_chart_hover_titles_and_threshold_in_the_legend():
    bars = [(f"dgx-rack{i:02d}-very-long-hostname.example.org", 4000.0 + i) for i in range(16)] + [("dgx99", None)]
    svg = ET.fromstring(svgplot.bar_chart("fio", "read (MB/s)", bars, {bars[0][0]: 5000.0}, "link", 4500.0))
    rects = svg.findall(".//s:rect[@class='bar']", NS)
    assert len(rects) == 16
    assert rects[0].find("s:title", NS).text == (
        "dgx-rack00-very-long-hostname.example.org: 4000 MB/s; link 5000 MB/s")
    assert [t.text for t in svg.findall(".//s:text[@class='threshold-label']", NS)] == ["threshold: 4500 MB/s"]
    assert any("missing" in (t.text or "") for t in svg.findall(".//s:text", NS))


def test_no_data_chart_keeps_its_legend():
    chart = svgplot.Chart(title="t", x_label="x", y_label="y", series=[svgplot.Series("single-a", [])])
    svg = svgplot.line_chart(chart)
    assert "no data" in svg and "single-a (no valid point)" in svg
