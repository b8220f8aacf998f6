"""Small, dependency-free SVG charts for the self-contained HTML report (no scripts, no external assets).

Every series gets its own colour (a fixed palette up to its size, then evenly spaced hues at alternating
lightness, so no two series of a chart share a colour whatever their number), its own marker shape and, past
the palette, its own dash pattern. Labels of threshold lines and series live in the legend under the plot,
never on the plot area; every point, bar and line carries an SVG <title> (its value on hover, no script).
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
MARKERS = ("circle", "square", "triangle", "diamond", "triangle-down")
DASHES = ("", "7 3", "2 2", "9 3 2 3")
THRESHOLD_COLOUR = "#a00000"
THRESHOLD_DASHES = ("6 3", "2 3", "10 3 2 3", "4 2 1 2")
W = 720                               # viewBox width; the page scales the chart down to its column
ML, MR, MT = 70, 20, 30               # margins of the plot area: left (y ticks), right, top (title)
PLOT_H = 250                          # plot area height
AXIS_H = 44                           # below the plot area: x tick labels and the x axis label
LEGEND_ROW = 16
CHAR_W = 5.8                          # average glyph width at font-size 10 (sans-serif), for fitting text


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    dashed: bool = False


@dataclass
class HLine:
    name: str
    y: float


@dataclass
class Chart:
    title: str
    x_label: str
    y_label: str
    series: list[Series] = field(default_factory=list)
    hlines: list[HLine] = field(default_factory=list)
    log_x: bool = False


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str
    dash: str                         # SVG stroke-dasharray; "" = solid


@dataclass(frozen=True)
class LegendItem:
    name: str
    colour: str
    dash: str = ""
    marker: str = ""                  # "" = a line without marker
    bar: bool = False                 # a filled swatch instead of a line
    threshold: bool = False           # the label of a threshold line


def palette(n: int) -> list[str]:
    """n colours, all different: the fixed palette while it lasts, else n evenly spaced hues whose
    neighbours differ in lightness too."""
    if n <= len(PALETTE):
        return list(PALETTE[:n])
    out = []
    for i in range(n):
        r, g, b = colorsys.hls_to_rgb(i / n, 0.36 if i % 2 else 0.52, 0.75)
        out.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
    return out


def series_styles(n: int) -> list[Style]:
    """One style per series: distinct colours always; markers cycle over 5 shapes and, past the fixed
    palette, dashes over 4 patterns (coprime cycles: neighbouring series differ in both)."""
    colours = palette(n)
    return [Style(colour=c, marker=MARKERS[i % len(MARKERS)],
                  dash=DASHES[i % len(DASHES)] if n > len(PALETTE) else "") for i, c in enumerate(colours)]


def _ok(v: object) -> bool:
    """A number that can be drawn: finite (None, NaN and infinities are not)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    start = math.floor(lo / step) * step
    ticks = [round(start, 10)]
    while ticks[-1] < hi - step * 1e-9:  # the last tick is at or above hi, so nothing is drawn off the axis
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e9:
        return f"{v / 2**30:g}G" if v >= 2**30 else f"{v:.3g}"
    if abs(v) >= 1e6:
        return f"{v / 2**20:g}M"
    if abs(v) >= 1e4:
        return f"{v / 2**10:g}K"
    return f"{v:g}"


def _fit(text: str, width: float) -> str:
    """text cut to what fits width pixels at font-size 10 (the full text is in the item's <title>)."""
    room = max(4, int(width / CHAR_W))
    return text if len(text) <= room else text[: room - 1] + "\u2026"


def _title(text: str) -> str:
    return f"<title>{escape(text)}</title>"


def marker(shape: str, x: float, y: float, colour: str, title: str = "", r: float = 3.2) -> str:
    """A filled marker centred on (x, y), with its <title>."""
    inner = _title(title) if title else ""
    if shape == "square":
        return (f'<rect class="point" x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" '
                f'fill="{colour}">{inner}</rect>')
    corners = {"triangle": [(0, -1.2), (1.1, 0.9), (-1.1, 0.9)], "triangle-down": [(0, 1.2), (1.1, -0.9), (-1.1, -0.9)],
               "diamond": [(0, -1.3), (1.1, 0), (0, 1.3), (-1.1, 0)]}.get(shape)
    if corners:
        pts = " ".join(f"{x + dx * r:.1f},{y + dy * r:.1f}" for dx, dy in corners)
        return f'<polygon class="point" points="{pts}" fill="{colour}">{inner}</polygon>'
    return f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{colour}">{inner}</circle>'


def _legend(items: list[LegendItem], top: float) -> tuple[list[str], float]:
    """The legend under the plot: one or two columns, each entry's text cut to its column (full in <title>).
    Returns the SVG and its height."""
    if not items:
        return [], 0.0
    width = W - ML - MR
    cols = 2 if len(items) > 1 and max(len(i.name) for i in items) * CHAR_W + 34 <= width / 2 else 1
    colw = width / cols
    rows = math.ceil(len(items) / cols)
    out = ['<g class="legend">']
    for k, item in enumerate(items):
        x = ML + (k // rows) * colw
        y = top + (k % rows) * LEGEND_ROW + LEGEND_ROW / 2
        out.append(f"<g>{_title(item.name)}")
        if item.bar:
            out.append(f'<rect x="{x:.1f}" y="{y - 5:.1f}" width="22" height="10" fill="{item.colour}"/>')
        else:
            dash = f' stroke-dasharray="{item.dash}"' if item.dash else ""
            out.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 22:.1f}" y2="{y:.1f}" stroke="{item.colour}" '
                       f'stroke-width="2"{dash}/>')
            if item.marker:
                out.append(marker(item.marker, x + 11, y, item.colour))
        cls = ' class="threshold-label"' if item.threshold else ""
        out.append(f'<text{cls} x="{x + 28:.1f}" y="{y + 3.5:.1f}" font-size="10">{escape(_fit(item.name, colw - 34))}'
                   "</text></g>")
    out.append("</g>")
    return out, rows * LEGEND_ROW


def _svg(title: str, x_label: str, y_label: str, body: list[str], legend: list[LegendItem],
         x_axis_extra: float = 0.0) -> str:
    """The frame around a plot area (title, axis labels) and its legend, sized to hold them."""
    axis_h = AXIS_H + x_axis_extra
    leg, leg_h = _legend(legend, MT + PLOT_H + axis_h + 6)
    h = MT + PLOT_H + axis_h + 6 + leg_h + 8
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {W} {h:.0f}" width="{W}" '
        f'height="{h:.0f}" role="img" aria-label="{escape(title)}">',
        f'<rect x="0" y="0" width="{W}" height="{h:.0f}" fill="#fff"/>',
        f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">'
        f"{escape(_fit(title, W - 20))}</text>",
        f'<text x="{ML + (W - ML - MR) / 2}" y="{MT + PLOT_H + axis_h - 6:.0f}" text-anchor="middle" '
        f'font-size="12">{escape(x_label)}</text>',
        f'<text x="14" y="{MT + PLOT_H / 2}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 14 {MT + PLOT_H / 2})">{escape(y_label)}</text>',
        *body, *leg, "</svg>"])


def _no_data() -> list[str]:
    return [f'<text x="{W / 2}" y="{MT + PLOT_H / 2}" text-anchor="middle" font-size="13" fill="#a00">'
            "no data: the measurement produced no valid samples</text>"]


def _y_axis(ticks: list[float], py: Callable[[float], float]) -> list[str]:
    out = [f'<line x1="{ML}" y1="{MT + PLOT_H}" x2="{W - MR}" y2="{MT + PLOT_H}" stroke="#333"/>',
           f'<line x1="{ML}" y1="{MT}" x2="{ML}" y2="{MT + PLOT_H}" stroke="#333"/>']
    for t in ticks:
        out.append(f'<line x1="{ML}" y1="{py(t):.1f}" x2="{W - MR}" y2="{py(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{ML - 6}" y="{py(t) + 4:.1f}" text-anchor="end" font-size="10">{t:g}</text>')
    return out


def _thresholds(hlines: list[HLine], py: Callable[[float], float], unit: str
                ) -> tuple[list[str], list[LegendItem]]:
    """Threshold lines across the plot area; their labels go to the legend, never over the data."""
    body: list[str] = []
    legend: list[LegendItem] = []
    for i, h in enumerate(hlines):
        dash = THRESHOLD_DASHES[i % len(THRESHOLD_DASHES)]
        text = f"{h.name}: {h.y:.4g}{' ' + unit if unit else ''}"
        body.append(f'<line class="threshold" x1="{ML}" y1="{py(h.y):.1f}" x2="{W - MR}" y2="{py(h.y):.1f}" '
                    f'stroke="{THRESHOLD_COLOUR}" stroke-width="1.5" stroke-dasharray="{dash}">{_title(text)}</line>')
        legend.append(LegendItem(text, THRESHOLD_COLOUR, dash, threshold=True))
    return body, legend


def _unit(label: str) -> str:
    """The unit in an axis label's parentheses: "busbw (GB/s)" -> "GB/s"."""
    return label[label.rfind("(") + 1: label.rfind(")")] if "(" in label and label.endswith(")") else ""


def line_chart(chart: Chart) -> str:
    """Lines with markers, optional log2 x axis and horizontal threshold lines."""
    # Only finite points are drawn: a NaN or an infinity is no value (the verdict says why), never an axis.
    for s in chart.series:
        s.points = [p for p in s.points if _ok(p[0]) and _ok(p[1])]
    chart.hlines = [h for h in chart.hlines if _ok(h.y)]
    styles = series_styles(len(chart.series))
    legend = [LegendItem(s.name + ("" if s.points else " (no valid point)"), st.colour,
                         "4 3" if s.dashed and not st.dash else st.dash, st.marker)
              for s, st in zip(chart.series, styles, strict=True)]
    pts = [p for s in chart.series for p in s.points]
    if not pts:
        return _svg(chart.title, chart.x_label, chart.y_label, _no_data(), legend)

    def fx(x: float) -> float:
        return math.log2(x) if chart.log_x and x > 0 else x

    xs = [fx(p[0]) for p in pts]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    y_ticks = _nice_ticks(0, max([p[1] for p in pts] + [h.y for h in chart.hlines]) * 1.1)
    y1 = y_ticks[-1]

    def px(x: float) -> float:
        return ML + (fx(x) - x0) / (x1 - x0) * (W - ML - MR)

    def py(y: float) -> float:
        return MT + PLOT_H - y / y1 * PLOT_H

    body = _y_axis(y_ticks, py)
    x_vals = sorted({p[0] for p in pts})
    step = max(1, math.ceil(len(x_vals) / 10))
    for xv in x_vals[::step]:
        body.append(f'<text x="{px(xv):.1f}" y="{MT + PLOT_H + 14}" text-anchor="middle" font-size="10">'
                    f"{escape(_fmt(xv) if chart.log_x else f'{xv:g}')}</text>")
    lines, t_legend = _thresholds(chart.hlines, py, _unit(chart.y_label))
    body += lines
    for s, item in zip(chart.series, legend, strict=True):
        if not s.points:
            continue
        dash = f' stroke-dasharray="{item.dash}"' if item.dash else ""
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
        body.append(f'<polyline class="series" fill="none" stroke="{item.colour}" stroke-width="2"{dash} '
                    f'points="{path}">{_title(s.name)}</polyline>')
        for x, y in s.points:
            xt = _fmt(x) if chart.log_x else f"{x:g}"
            body.append(marker(item.marker, px(x), py(y), item.colour,
                               f"{s.name}\n{chart.x_label}: {xt}\n{chart.y_label}: {y:.4g}"))
    return _svg(chart.title, chart.x_label, chart.y_label, body, legend + t_legend)


def bar_chart(title: str, y_label: str, bars: list[tuple[str, float | None]], limits: dict[str, float | None],
              limit_name: str, threshold: float | None = None) -> str:
    """Bars (one per node) with each bar's own limit (e.g. its link rate) marked over it."""
    bars = [(n, v if _ok(v) else None) for n, v in bars]
    limits = {k: (v if _ok(v) else None) for k, v in limits.items()}
    threshold = threshold if _ok(threshold) else None
    values = [v for _n, v in bars if v is not None] + [v for v in limits.values() if v is not None]
    if threshold is not None:
        values.append(threshold)
    unit = _unit(y_label)
    legend = [LegendItem(y_label + " per node (best sample)", PALETTE[0], bar=True),
              LegendItem(f"black tick: {limit_name}", "#333")]
    if not bars or not values:
        return _svg(title, "node", y_label, _no_data(), legend)
    ticks = _nice_ticks(0, max(values) * 1.1)
    top = ticks[-1]

    def py(y: float) -> float:
        return MT + PLOT_H - y / top * PLOT_H

    body = _y_axis(ticks, py)
    slot = (W - ML - MR) / len(bars)
    longest = max(len(n) for n, _v in bars) * CHAR_W * 1.1
    slanted = longest > slot - 4
    label_room = min(longest, 130.0) if slanted else 0.0
    for i, (name, value) in enumerate(bars):
        x = ML + i * slot + slot * 0.2
        bw = slot * 0.6
        limit = limits.get(name)
        about = f"{name}: {'missing' if value is None else f'{value:.4g} {unit}'}" + (
            f"; {limit_name} {limit:.4g} {unit}" if limit is not None else "")
        if value is not None:
            body.append(f'<rect class="bar" x="{x:.1f}" y="{py(value):.1f}" width="{bw:.1f}" '
                        f'height="{MT + PLOT_H - py(value):.1f}" fill="{PALETTE[0]}">{_title(about)}</rect>')
            if slot >= 36:
                body.append(f'<text x="{x + bw / 2:.1f}" y="{py(value) - 4:.1f}" text-anchor="middle" '
                            f'font-size="10">{value:.4g}</text>')
        else:
            body.append(f'<text x="{x + bw / 2:.1f}" y="{MT + PLOT_H - 6}" text-anchor="middle" font-size="10" '
                        f'fill="#a00">missing{_title(about)}</text>')
        if limit is not None:
            body.append(f'<line class="limit" x1="{x - 4:.1f}" y1="{py(limit):.1f}" x2="{x + bw + 4:.1f}" '
                        f'y2="{py(limit):.1f}" stroke="#333" stroke-width="2">{_title(about)}</line>')
        cx, ly = x + bw / 2, MT + PLOT_H + 14
        if slanted:
            body.append(f'<text x="{cx:.1f}" y="{ly}" text-anchor="end" font-size="10" '
                        f'transform="rotate(-35 {cx:.1f} {ly})">{escape(_fit(name, 130))}{_title(name)}</text>')
        else:
            body.append(f'<text x="{cx:.1f}" y="{ly}" text-anchor="middle" font-size="10">{escape(name)}</text>')
    t_body, t_legend = _thresholds([HLine("threshold", threshold)] if threshold is not None else [], py, unit)
    body += t_body
    return _svg(title, "node", y_label, body, legend + t_legend, x_axis_extra=label_room * 0.6)


STRIP_COLS = 20                       # cells per row of a strip chart
STRIP_CELL_H = 22
STRIP_COLOURS = (("#a00000", "below the threshold"), ("#ff7f0e", "within 5% above it"),
                 ("#9ecae1", "up to 25% above it"), ("#1f77b4", "further above it"), ("#bbbbbb", "missing"))


def strip_colour(value: float | None, threshold: float | None, lower_is_worse: bool = True) -> str:
    """A cell's colour: missing grey; else by its margin over the threshold (red below it, orange within 5%, light
    blue within 25%, blue beyond); without a threshold light blue, the worst tenth orange."""
    if value is None:
        return STRIP_COLOURS[4][0]
    if threshold is None or threshold == 0:
        return STRIP_COLOURS[2][0]
    margin = (value / threshold - 1) if lower_is_worse else (threshold / value - 1 if value else -1.0)
    if margin < 0:
        return STRIP_COLOURS[0][0]
    if margin < 0.05:
        return STRIP_COLOURS[1][0]
    return STRIP_COLOURS[2][0] if margin < 0.25 else STRIP_COLOURS[3][0]


def strip_chart(title: str, unit: str, cells: list[tuple[str, float | None]], threshold: float | None = None,
                lower_is_worse: bool = True) -> str:
    """One coloured cell per node (or pair), STRIP_COLS a row, in the given order, for sites where a bar or a
    series per node would not be read: the colour says how far above its threshold each is, the cell's <title>
    its name and value, and the worst cell is named under the strip. Its size grows with the cells, one short
    element each."""
    cells = [(n, v if _ok(v) else None) for n, v in cells]
    threshold = threshold if _ok(threshold) else None
    legend = [LegendItem(text, colour, bar=True) for colour, text in STRIP_COLOURS]
    if not cells:
        return _svg(title, "", unit, _no_data(), legend)
    rows = math.ceil(len(cells) / STRIP_COLS)
    cw = (W - ML - MR) / STRIP_COLS
    body = []
    for i, (name, value) in enumerate(cells):
        x, y = ML + (i % STRIP_COLS) * cw, MT + 8 + (i // STRIP_COLS) * STRIP_CELL_H
        about = f"{name}: {'missing' if value is None else f'{value:.4g} {unit}'}"
        body.append(f'<rect x="{x:.1f}" y="{y}" width="{cw - 2:.1f}" height="{STRIP_CELL_H - 2}" '
                    f'fill="{strip_colour(value, threshold, lower_is_worse)}">{_title(about)}</rect>')
    for r in range(rows):
        first = cells[r * STRIP_COLS][0]
        body.append(f'<text x="{ML - 4}" y="{MT + 8 + r * STRIP_CELL_H + 15}" text-anchor="end" font-size="9">'
                    f"{escape(_fit(first, ML - 6))}</text>")
    known = [(n, v) for n, v in cells if v is not None]
    missing = len(cells) - len(known)
    worst = (min if lower_is_worse else max)(known, key=lambda c: c[1]) if known else None
    note = (f"worst {worst[0]}: {worst[1]:.4g} {unit}" if worst else "no value") + (
        f"; threshold {threshold:.4g} {unit}" if threshold is not None else "") + (
        f"; {missing} missing" if missing else "")
    top = MT + 8 + rows * STRIP_CELL_H + 14
    body.append(f'<text x="{ML}" y="{top}" font-size="11">{escape(note)}</text>')
    height = rows * STRIP_CELL_H + 30 - PLOT_H  # the frame adds PLOT_H and the axis room
    return _svg(title, f"{len(cells)} cells, {STRIP_COLS} a row, in order", "", body, legend, x_axis_extra=height)
# ---------------------------------------------------------------------------------------------- port map

STATUS_COLOURS = {"OK": "#2ca02c", "MISWIRED": "#d62728", "MISSING": "#7f7f7f", "DEGRADED": "#ff7f0e",
                  "UNEXPECTED": "#9467bd", "ACCEPTED": "#17becf"}


def port_map(title: str, switches: dict[str, dict[str, tuple[str, str]]], ports_per_row: int = 20) -> str:
    """The fabric drawn as its switches: one row of squares per switch (wrapped at `ports_per_row`), each cabled
    port coloured by its cable's status, with a <title> naming the port, the status and what it sees; a legend of
    the statuses under it. `switches`: switch -> port -> (status, text)."""
    cell, gap, label_w = 22, 4, 110
    rows: list[tuple[str, bool, list[tuple[str, tuple[str, str]]]]] = []   # (switch, first row, its ports)
    for switch, ports in switches.items():
        ordered = sorted(ports.items(), key=lambda kv: (len(kv[0]), kv[0]))
        for start in range(0, max(len(ordered), 1), ports_per_row):
            rows.append((switch, start == 0, ordered[start:start + ports_per_row]))
    height = MT + len(rows) * (cell + gap) + 2 * LEGEND_ROW + 10
    width = max(W, label_w + ports_per_row * (cell + gap) + 10)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" class="chart" role="img" '
           f'aria-label="{escape(title)}" font-family="sans-serif" font-size="10">',
           f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="13">{escape(title)}</text>']
    for i, (owner, first, row_ports) in enumerate(rows):
        y = MT + i * (cell + gap)
        if first:
            out.append(f'<text x="4" y="{y + cell * 0.7:.1f}">{escape(owner[:18])}</text>')
        for j, (port, (status, text)) in enumerate(row_ports):
            x = label_w + j * (cell + gap)
            colour = STATUS_COLOURS.get(status, "#000")
            out.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{colour}" stroke="#333">'
                       f'<title>{escape(f"{owner} {port}: {status}: {text}")}</title></rect>')
            out.append(f'<text x="{x + cell / 2}" y="{y + cell * 0.65:.1f}" text-anchor="middle" font-size="8" '
                       f'fill="#fff">{escape(port[-4:])}</text>')
    y = MT + len(rows) * (cell + gap) + LEGEND_ROW
    for k, (status, colour) in enumerate(STATUS_COLOURS.items()):
        x = 10 + k * 110
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{x + 14}" y="{y}">{escape(status)}</text>')
    out.append("</svg>")
    return "".join(out)
