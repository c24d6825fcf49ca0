"""HTML of the report page: tables, charts, problems, viewer; one string, no external resource.

Numbers in tables carry ``data-value`` (the exact float read from the JSON); rows carry
``data-key``; every table has an ``id`` (``overall``, ``per-task``, ``screenspot-domain`` …).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from vlagent.eval.report.assets import CSS, JS
from vlagent.eval.report.load import MetricsFile, Problem, finite
from vlagent.eval.report.svg import bar_chart, line_chart
from vlagent.eval.report.tables import Table

CURVE_KEYS = ("val/success_rate", "val/accuracy", "success_rate", "reward/mean", "loss")
"""Metrics drawn as learning curves when a metrics file has them (one chart each)."""


def table_html(t: Table) -> str:
    """``<table id=...>``: header row, then one ``<tr data-key>`` per row; numeric cells get
    ``data-value`` with ``repr`` of the float."""
    head = "".join(f"<th>{escape(c)}</th>" for c in t.columns)
    rows = []
    for key, cells in t.rows:
        tds = []
        for i, c in enumerate(cells):
            if c.value is None:
                cls = ' class="l"' if i == 0 else ""
                tds.append(f"<td{cls}>{escape(c.text)}</td>")
            else:
                tds.append(f'<td data-value="{c.value!r}">{escape(c.text)}</td>')
        rows.append(f'<tr data-key="{escape(key)}">{"".join(tds)}</tr>')
    note = f'<p class="note">{escape(t.note)}</p>' if t.note else ""
    return (
        f'<h3>{escape(t.title)}</h3><table id="{escape(t.id)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{note}"
    )


def problems_html(problems: Sequence[Problem]) -> str:
    """The always-present problems section (``#problems``; class ``none`` when empty)."""
    if not problems:
        return '<section id="problems" class="none"><h2>Problems</h2><p>none: every file read.</p></section>'
    items = "".join(
        f'<li data-file="{escape(p.file)}"><code>{escape(p.file)}</code>: {escape(p.message)}</li>'
        for p in problems
    )
    return (
        f'<section id="problems" data-count="{len(problems)}"><h2>Problems ({len(problems)})</h2>'
        f"<p>Parts of this report are missing because:</p><ul>{items}</ul></section>"
    )


def _series(m: MetricsFile, key: str) -> dict[str, list[tuple[float, float]]]:
    """(step, value) points of ``key`` in one metrics file, per phase."""
    out: dict[str, list[tuple[float, float]]] = {}
    for r in m.rows:
        x, y = finite(r.get("step")), finite(r.get(key))
        if x is not None and y is not None:
            out.setdefault(f"{m.rel} · {r.get('phase', '?')}", []).append((x, y))
    return out


def curves_html(metrics: Sequence[MetricsFile]) -> str:
    """Learning curves (one chart per :data:`CURVE_KEYS` entry found) and, per metrics file,
    the ``reward_terms/*`` curves in one chart."""
    charts = []
    for key in CURVE_KEYS:
        series: dict[str, list[tuple[float, float]]] = {}
        for m in metrics:
            series.update(_series(m, key))
        if series:
            charts.append(line_chart(key, series, key))
    for m in metrics:
        terms = sorted({k for r in m.rows for k in r if k.startswith("reward_terms/")})
        series = {}
        for k in terms:
            for name, pts in _series(m, k).items():
                series[f"{k.removeprefix('reward_terms/')} ({name.split(' · ')[-1]})"] = pts
        if series:
            charts.append(line_chart(f"reward terms · {m.rel}", series, f"reward_terms:{m.rel}"))
    if not charts:
        return '<p class="note">No metrics.jsonl with steps in this folder: no learning curves.</p>'
    return f'<div class="charts" id="curves">{"".join(charts)}</div>'


def viewer_html(episodes: list[dict[str, Any]]) -> str:
    """The trajectory viewer: controls, a body the script fills, and the episodes as JSON."""
    if not episodes:
        return (
            '<p class="note" id="no-episodes">No trajectories or sample records in this folder.</p>'
        )
    tasks = sorted({ep["task"] for ep in episodes})
    options = '<option value="">all tasks</option>' + "".join(
        f'<option value="{escape(t)}">{escape(t)}</option>' for t in tasks
    )
    payload = json.dumps(episodes, ensure_ascii=True).replace("</", "<\\/")
    n_failed = sum(not ep["success"] for ep in episodes)
    return (
        f'<div id="viewer" data-episode="0" data-step="0" data-episodes="{len(episodes)}">'
        '<div class="vbar"><button id="prev-ep">↑ episode</button>'
        '<button id="prev-step">← step</button><button id="next-step">step →</button>'
        '<button id="next-ep">episode ↓</button>'
        f'<label><input type="checkbox" id="failed-only"> failed only ({n_failed})</label>'
        f'<select id="task-filter">{options}</select><span id="viewer-count"></span></div>'
        '<p class="note">Keys: ←/→ step, ↑/↓ or k/j episode. Overlay: green = target box, '
        "red circle = clicked point, blue = predicted box.</p>"
        '<div id="viewer-body"></div></div>'
        f'<script type="application/json" id="episodes-data">{payload}</script>'
    )


def gallery_html(gallery: list[dict[str, str]]) -> str:
    if not gallery:
        return ""
    imgs = "".join(
        f'<figure><img src="{escape(g["image"])}" alt="{escape(g["caption"])}">'
        f"<figcaption>{escape(g['caption'])}</figcaption></figure>"
        for g in gallery
    )
    return f'<h2>Sample pictures</h2><div class="gallery">{imgs}</div>'


def bars_html(bars: dict[str, dict[str, float]]) -> str:
    """Bar charts: ``title -> {name: value}``; titles with "rate"/"accuracy" use a 0..1 axis."""
    out = [
        bar_chart(title, vals, title, rate="reward" not in title)
        for title, vals in bars.items()
        if vals
    ]
    return f'<div class="charts" id="bars">{"".join(out)}</div>' if out else ""


def page(title: str, sections: Sequence[tuple[str, str]], problems: Sequence[Problem]) -> str:
    """The whole document: ``sections`` are (heading, html) in order, problems first."""
    body = "".join(
        f'<section id="sec-{i}"><h2>{escape(h)}</h2>{html}</section>'
        for i, (h, html) in enumerate(sections)
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>{problems_html(problems)}{body}"
        f"<script>{JS}</script></body></html>\n"
    )
