"""Inline SVG charts drawn by hand (no plotting library): line charts of metrics over steps and
horizontal bar charts of rates. Output is an ``<svg>`` string for direct inclusion in HTML."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
W, H = 520, 260
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 28, 36


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def line_chart(title: str, series: dict[str, Sequence[tuple[float, float]]], key: str = "") -> str:
    """A line chart of named ``(step, value)`` series sharing the axes.

    Args:
        title: shown above the plot.
        series: name -> points (x: training step, y: value); empty series are left out.
        key: the ``data-key`` attribute of the ``<svg>`` (the metric name).

    Returns:
        ``<svg class="chart" data-key=... data-points=N>`` with axes, min / max tick labels,
        one ``<polyline>`` (plus dots) per series and a legend.
    """
    series = {k: list(v) for k, v in series.items() if v}
    pts = [p for v in series.values() for p in v]
    head = (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" '
        f'width="{W}" height="{H}" data-key="{escape(key)}" data-points="{len(pts)}" role="img">'
        f'<title>{escape(title)}</title><text x="{W / 2}" y="16" class="ct">{escape(title)}</text>'
    )
    if not pts:
        return head + f'<text x="{W / 2}" y="{H / 2}" class="ct">no data</text></svg>'
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return TOP + (1 - (y - y0) / (y1 - y0)) * ph

    parts = [
        head,
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="frame"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 4}" class="yt">{_fmt(y1)}</text>',
        f'<text x="{LEFT - 4}" y="{TOP + ph}" class="yt">{_fmt(y0)}</text>',
        f'<text x="{LEFT}" y="{H - 18}" class="xt">{_fmt(x0)}</text>',
        f'<text x="{LEFT + pw}" y="{H - 18}" class="xt" text-anchor="end">{_fmt(x1)}</text>',
        f'<text x="{LEFT + pw / 2}" y="{H - 4}" class="ct">step</text>',
    ]
    for i, (name, vals) in enumerate(series.items()):
        c = COLORS[i % len(COLORS)]
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in vals)
        parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{c}" stroke-width="1.6" '
            f'data-series="{escape(name)}"/>'
        )
        if len(vals) <= 60:
            parts += [
                f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2" fill="{c}">'
                f"<title>{escape(name)} step {_fmt(x)}: {_fmt(y)}</title></circle>"
                for x, y in vals
            ]
        parts.append(
            f'<text x="{LEFT + 6}" y="{TOP + 14 + 13 * i}" fill="{c}" class="lg">'
            f"{escape(name)}</text>"
        )
    return "".join(parts) + "</svg>"


def bar_chart(title: str, bars: dict[str, float], key: str = "", rate: bool = True) -> str:
    """Horizontal bars, one per name (rates as percent of a 0..1 axis, else scaled to the
    largest absolute value); ``data-key`` = ``key``."""
    h = TOP + 22 * len(bars) + 10
    head = (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {h}" '
        f'width="{W}" height="{h}" data-key="{escape(key)}" data-points="{len(bars)}" role="img">'
        f'<title>{escape(title)}</title><text x="{W / 2}" y="16" class="ct">{escape(title)}</text>'
    )
    top = 1.0 if rate else max([abs(v) for v in bars.values()] + [1e-12])
    label_w, pw = 170, W - 170 - 70
    parts = [head]
    for i, (name, v) in enumerate(bars.items()):
        y = TOP + 22 * i
        width = max(0.0, min(1.0, abs(v) / top)) * pw
        shown = f"{100 * v:.1f} %" if rate else _fmt(v)
        fill = COLORS[0] if v >= 0 else COLORS[1]
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 14}" class="yt">{escape(name[:28])}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{width:.1f}" height="15" fill="{fill}">'
            f"<title>{escape(name)}: {shown}</title></rect>"
            f'<text x="{label_w + width + 4:.1f}" y="{y + 14}" class="lg">{shown}</text>'
        )
    return "".join(parts) + "</svg>"
