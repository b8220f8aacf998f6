"""Small, dependency-free SVG charts for the self-contained HTML report (no scripts, no external assets)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
W, H = 640, 340
ML, MR, MT, MB = 70, 20, 30, 60


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


def _frame(title: str, x_label: str, y_label: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>',
        f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">{escape(title)}</text>',
        f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle" font-size="12">{escape(x_label)}</text>',
        f'<text x="14" y="{H / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 14 {H / 2})">'
        f"{escape(y_label)}</text>",
    ]


def line_chart(chart: Chart) -> str:
    """Lines with markers, optional log2 x axis and horizontal threshold lines."""
    # Only finite points are drawn: a NaN or an infinity is no value (the verdict says why), never an axis.
    for s in chart.series:
        s.points = [p for p in s.points if _ok(p[0]) and _ok(p[1])]
    chart.hlines = [h for h in chart.hlines if _ok(h.y)]
    pts = [p for s in chart.series for p in s.points if p[1] is not None]
    out = _frame(chart.title, chart.x_label, chart.y_label)
    if not pts:
        out.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" font-size="13" fill="#a00">'
                   "no data: the measurement produced no valid samples</text></svg>")
        return "\n".join(out)

    def fx(x: float) -> float:
        return math.log2(x) if chart.log_x and x > 0 else x

    xs = [fx(p[0]) for p in pts]
    ys = [p[1] for p in pts] + [h.y for h in chart.hlines]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    y_ticks = _nice_ticks(0, max(ys) * 1.1)
    y1 = y_ticks[-1]

    def px(x: float) -> float:
        return ML + (fx(x) - x0) / (x1 - x0) * (W - ML - MR)

    def py(y: float) -> float:
        return H - MB - y / y1 * (H - MT - MB)

    out.append(f'<line x1="{ML}" y1="{H - MB}" x2="{W - MR}" y2="{H - MB}" stroke="#333"/>')
    out.append(f'<line x1="{ML}" y1="{MT}" x2="{ML}" y2="{H - MB}" stroke="#333"/>')
    for t in y_ticks:
        out.append(f'<line x1="{ML}" y1="{py(t):.1f}" x2="{W - MR}" y2="{py(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{ML - 6}" y="{py(t) + 4:.1f}" text-anchor="end" font-size="10">{t:g}</text>')
    x_vals = sorted({p[0] for p in pts})
    step = max(1, len(x_vals) // 8)
    for xv in x_vals[::step]:
        out.append(f'<text x="{px(xv):.1f}" y="{H - MB + 14}" text-anchor="middle" font-size="10">'
                   f"{escape(_fmt(xv) if chart.log_x else f'{xv:g}')}</text>")
    for i, h in enumerate(chart.hlines):
        out.append(f'<line class="threshold" x1="{ML}" y1="{py(h.y):.1f}" x2="{W - MR}" y2="{py(h.y):.1f}" '
                   f'stroke="#a00" stroke-dasharray="6 3"/>')
        out.append(f'<text x="{W - MR - 4}" y="{py(h.y) - 4 - 12 * i:.1f}" text-anchor="end" font-size="10" '
                   f'fill="#a00">{escape(h.name)} {h.y:.4g}</text>')
    for i, s in enumerate(chart.series):
        color = PALETTE[i % len(PALETTE)]
        good = [(px(x), py(y)) for x, y in s.points if y is not None]
        if not good:
            continue
        dash = ' stroke-dasharray="4 3"' if s.dashed else ""
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in good)
        out.append(f'<polyline class="series" fill="none" stroke="{color}" stroke-width="2"{dash} points="{path}"/>')
        for x, y in good:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>')
        out.append(f'<rect x="{ML + 10}" y="{MT + 4 + 14 * i}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{ML + 24}" y="{MT + 13 + 14 * i}" font-size="10">{escape(s.name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(title: str, y_label: str, bars: list[tuple[str, float | None]], limits: dict[str, float | None],
              limit_name: str, threshold: float | None = None) -> str:
    """Bars (one per node) with each bar's own limit (e.g. its link rate) marked over it."""
    out = _frame(title, "node", y_label)
    bars = [(n, v if _ok(v) else None) for n, v in bars]
    limits = {k: (v if _ok(v) else None) for k, v in limits.items()}
    threshold = threshold if _ok(threshold) else None
    values = [v for _n, v in bars if v is not None] + [v for v in limits.values() if v is not None]
    if threshold is not None:
        values.append(threshold)
    if not bars or not values:
        out.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" font-size="13" fill="#a00">'
                   "no data: the measurement produced no valid samples</text></svg>")
        return "\n".join(out)
    ticks = _nice_ticks(0, max(values) * 1.1)
    top = ticks[-1]

    def py(y: float) -> float:
        return H - MB - y / top * (H - MT - MB)

    out.append(f'<line x1="{ML}" y1="{H - MB}" x2="{W - MR}" y2="{H - MB}" stroke="#333"/>')
    for t in ticks:
        out.append(f'<line x1="{ML}" y1="{py(t):.1f}" x2="{W - MR}" y2="{py(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{ML - 6}" y="{py(t) + 4:.1f}" text-anchor="end" font-size="10">{t:g}</text>')
    slot = (W - ML - MR) / len(bars)
    for i, (name, value) in enumerate(bars):
        x = ML + i * slot + slot * 0.2
        bw = slot * 0.6
        if value is not None:
            out.append(f'<rect class="bar" x="{x:.1f}" y="{py(value):.1f}" width="{bw:.1f}" '
                       f'height="{H - MB - py(value):.1f}" fill="{PALETTE[0]}"/>')
            out.append(f'<text x="{x + bw / 2:.1f}" y="{py(value) - 4:.1f}" text-anchor="middle" font-size="10">'
                       f"{value:.4g}</text>")
        else:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{H - MB - 6}" text-anchor="middle" font-size="10" '
                       'fill="#a00">missing</text>')
        limit = limits.get(name)
        if limit is not None:
            out.append(f'<line class="limit" x1="{x - 4:.1f}" y1="{py(limit):.1f}" x2="{x + bw + 4:.1f}" '
                       f'y2="{py(limit):.1f}" stroke="#333" stroke-width="2"/>')
        out.append(f'<text x="{x + bw / 2:.1f}" y="{H - MB + 14}" text-anchor="middle" font-size="11">'
                   f"{escape(name)}</text>")
    if threshold is not None:
        out.append(f'<line class="threshold" x1="{ML}" y1="{py(threshold):.1f}" x2="{W - MR}" y2="{py(threshold):.1f}" '
                   'stroke="#a00" stroke-dasharray="6 3"/>')
    out.append(f'<text x="{ML}" y="{H - MB + 30}" font-size="10">black tick: {escape(limit_name)}; '
               "red dashed: threshold</text>")
    out.append("</svg>")
    return "\n".join(out)
