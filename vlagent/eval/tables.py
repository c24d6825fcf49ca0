"""ScreenSpot v1 / v2 / Pro result tables: accuracy by platform (or group) x text / icon, with counts.

Pure functions over per-episode rows (a sample's ``meta`` plus whether the click hit); no model.

What the releases store (checked against public copies of the data and the evaluation scripts):

- ScreenSpot v1 (SeeClick, ``njucckevin/SeeClick`` ``pretrain/screenspot_test.py``): one file per
  split ``screenspot_{mobile,desktop,web}.json``; records carry ``data_type`` (``text`` /
  ``icon``; the script counts anything not ``text`` as icon) and ``data_source`` (``ios``,
  ``android``, ``windows``, ``macos``, ``gitlab``, ``shop``, ``forum``, ``tool``), bbox
  ``[x, y, w, h]`` pixels; the script reports text and icon accuracy per split, which is the
  paper's Mobile / Desktop / Web x Text / Icon table (plus an average). Split sizes 502 / 334 /
  436 (text 273 / 194 / 230, icon 229 / 140 / 206), as the benchmark's public description
  lists them; the shipped desktop v2 file counts the same 194 text / 140 icon.
- ScreenSpot v2 (OS-Atlas, ``HongxinLi/ScreenSpot_v2``): the same ``data_type`` /
  ``data_source`` fields. GUI-Actor's evaluation (``microsoft/GUI-Actor``
  ``eval/screenSpot_v2.py``) maps ``data_source`` to the domain with exactly
  :data:`SOURCE_DOMAIN` and reports domain x type, per-domain average, All-text / All-icon and
  All-average, every average over samples (micro). GUI-Actor's rewrite of the v2 files, shipped
  here as ``tests/fixtures/screenspot_v2/screenspot_desktop_v2.json``, renames the fields
  Pro-style: ``ui_type`` (text / icon), ``platform`` (the old data source: ``windows``,
  ``macos``, and 28 ``shop`` records in the desktop file) and ``group`` (the domain:
  ``desktop``); its verifier script groups by ``group``. So the domain is read from ``group``
  when it names a domain, else from ``data_source`` / ``platform`` through SOURCE_DOMAIN.
- ScreenSpot-Pro (``likaixin2000/ScreenSpot-Pro-GUI-Grounding`` ``eval_screenspot_pro.py``):
  records carry ``ui_type`` (text / icon), ``group``, ``platform`` (windows / macos / linux),
  ``application`` and ``img_size`` (a public record: ``application: origin, platform:
  windows, img_size: [3840, 2160], ui_type: icon, group: Scientific``). The group names listed
  in :data:`PRO_GROUPS` (Dev, Creative, CAD, Scientific, Office, OS) only order the rows: only
  ``Scientific`` was seen verbatim, and any other group value gets its own row; the script
  reports text_acc / icon_acc / action_acc per group ("leaderboard simple style"), per
  application, and overall action_acc = correct / total, i.e. a micro average (the leaderboard
  page also calls its score a micro average).

Averages. ``avg_micro`` is hits / samples over the whole table (ScreenSpot-Pro's and GUI-Actor's
"Avg"); each row's and column's total is micro too. ``avg_macro`` is the unweighted mean of the
non-empty cells' accuracies (row x type), the other reading of a paper's "Avg" column; the stored
copies did not show which one the SeeClick paper used, so both are reported, labelled.
Intervals are 95 % Wilson intervals of each cell / total (none for macro averages).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlagent.eval.stats import wilson_interval
from vlagent.io import atomic_write_text

DOMAINS = ("mobile", "desktop", "web")
SOURCE_DOMAIN = {
    "ios": "mobile",
    "android": "mobile",
    "windows": "desktop",
    "macos": "desktop",
    "gitlab": "web",
    "shop": "web",
    "forum": "web",
    "tool": "web",
}
"""ScreenSpot ``data_source`` -> domain (as GUI-Actor's v2 evaluation maps it)."""
PRO_GROUPS = ("Dev", "Creative", "CAD", "Scientific", "Office", "OS")
PRO_PLATFORMS = ("windows", "macos", "linux")
UI_TYPES = ("text", "icon")
UNKNOWN = "unknown"
"""Category of a sample whose meta lacks the field."""
BENCHMARKS = ("screenspot", "screenspot_pro")
LAYOUTS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "screenspot": (("domain", DOMAINS), ("source", ())),
    "screenspot_pro": (("group", PRO_GROUPS), ("platform", PRO_PLATFORMS), ("application", ())),
}
"""Per benchmark: the tables (row key, standard row order), each crossed with ``ui_type``."""
TITLES = {"screenspot": "ScreenSpot", "screenspot_pro": "ScreenSpot-Pro"}


def _text(value: Any) -> str | None:
    return str(value).strip() if value is not None and str(value).strip() else None


def ui_type(meta: Mapping[str, Any]) -> str | None:
    """``text`` / ``icon`` (lower-cased) from ``data_type`` (v1 / v2) or ``ui_type`` (Pro,
    GUI-Actor's v2); ``None`` when neither is there."""
    raw = _text(meta.get("data_type", meta.get("ui_type")))
    return raw.lower() if raw else None


def domain(meta: Mapping[str, Any]) -> str | None:
    """mobile / desktop / web: ``group`` when it names a domain, else the domain of
    ``data_source`` or ``platform`` (:data:`SOURCE_DOMAIN`, or the value itself when it is one)."""
    for key in ("group", "data_source", "platform"):
        raw = _text(meta.get(key))
        if raw is None:
            continue
        low = raw.lower()
        if low in DOMAINS:
            return low
        if key != "group" and low in SOURCE_DOMAIN:
            return SOURCE_DOMAIN[low]
    return None


def detect_benchmark(metas: Sequence[Mapping[str, Any]]) -> str | None:
    """``screenspot_pro`` when samples carry ``application`` or a ``group`` that is not a
    domain, ``screenspot`` when they carry a UI type otherwise, ``None`` when no sample has a
    UI type (not ScreenSpot-style data: no table)."""
    if not any(ui_type(m) for m in metas):
        return None
    for m in metas:
        group = _text(m.get("group"))
        if _text(m.get("application")) or (group and group.lower() not in DOMAINS):
            return "screenspot_pro"
    return "screenspot"


def episode_row(meta: Mapping[str, Any], hit: bool) -> dict[str, Any]:
    """One sample's categories (``unknown`` where its meta lacks them) and ``hit``."""
    source = _text(meta.get("data_source", meta.get("platform")))
    return {
        "hit": bool(hit),
        "ui_type": ui_type(meta) or UNKNOWN,
        "domain": domain(meta) or UNKNOWN,
        "source": source.lower() if source else UNKNOWN,
        "group": _text(meta.get("group")) or UNKNOWN,
        "platform": (_text(meta.get("platform")) or UNKNOWN).lower(),
        "application": _text(meta.get("application")) or UNKNOWN,
    }


def cell(hits: int, n: int) -> dict[str, Any]:
    """``{n, hits, accuracy, ci95}``; accuracy is ``None`` for an empty cell."""
    lo, hi = wilson_interval(hits, n)
    return {"n": n, "hits": hits, "accuracy": hits / n if n else None, "ci95": [lo, hi]}


def _order(values: set[str], standard: Sequence[str]) -> list[str]:
    head = [v for v in standard if v in values]
    return head + sorted(values - set(head) - {UNKNOWN}) + ([UNKNOWN] if UNKNOWN in values else [])


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def category_table(
    rows: Sequence[Mapping[str, Any]],
    by: tuple[str, str] = ("platform", "data_type"),
    *,
    row_order: Sequence[str] = (),
    col_order: Sequence[str] = UI_TYPES,
    hit_key: str = "hit",
) -> dict[str, Any]:
    """Counts and accuracies of ``rows`` crossed by two keys.

    Args:
        rows: one mapping per sample, with the two ``by`` keys and a truthy ``hit_key``.
        by: (row key, column key); a missing value counts as ``unknown``.
        row_order / col_order: values listed first, in this order (others follow sorted,
            ``unknown`` last); a listed value that no row has is left out.

    Returns:
        JSON-ready dict: ``by``, ``rows``, ``cols``, ``cells[row][col]``, ``row_totals``,
        ``col_totals``, ``overall`` (each a :func:`cell`), ``avg_micro`` (overall accuracy),
        ``avg_macro`` (mean accuracy of the non-empty cells), ``macro_cells`` (their number),
        ``col_macro[col]`` (mean over rows of that column's non-empty cells).
    """
    rk, ck = by
    keyed = [
        (str(r.get(rk) or UNKNOWN), str(r.get(ck) or UNKNOWN), bool(r.get(hit_key))) for r in rows
    ]
    row_vals = _order({r for r, _, _ in keyed}, row_order)
    col_vals = _order({c for _, c, _ in keyed}, col_order)
    counts = {(r, c): [0, 0] for r in row_vals for c in col_vals}
    for r, c, hit in keyed:
        counts[r, c][0] += hit
        counts[r, c][1] += 1
    cells = {r: {c: cell(*counts[r, c]) for c in col_vals} for r in row_vals}

    def total(keys: list[tuple[str, str]]) -> dict[str, Any]:
        return cell(sum(counts[k][0] for k in keys), sum(counts[k][1] for k in keys))

    filled = [counts[k][0] / counts[k][1] for k in counts if counts[k][1]]
    overall = total(list(counts))
    return {
        "by": [rk, ck],
        "rows": row_vals,
        "cols": col_vals,
        "cells": cells,
        "row_totals": {r: total([(r, c) for c in col_vals]) for r in row_vals},
        "col_totals": {c: total([(r, c) for r in row_vals]) for c in col_vals},
        "overall": overall,
        "avg_micro": overall["accuracy"],
        "avg_macro": _mean(filled),
        "macro_cells": len(filled),
        "col_macro": {
            c: _mean([cells[r][c]["accuracy"] for r in row_vals if cells[r][c]["n"]])
            for c in col_vals
        },
    }


def benchmark_tables(
    metas: Sequence[Mapping[str, Any]], hits: Sequence[bool], benchmark: str | None = None
) -> dict[str, Any] | None:
    """Every table of the benchmark's layout (:data:`LAYOUTS`), or ``None`` for data that is
    not ScreenSpot-style.

    Args:
        metas: each episode's sample meta (``traj.extras["meta"]``), in episode order.
        hits: whether each episode's click hit its target (``traj.success``).
        benchmark: ``screenspot`` / ``screenspot_pro``; ``None`` detects it from the meta keys.

    Returns:
        ``{"benchmark", "n", "hits", "avg_micro", "tables": {row key: category_table}}``.
    """
    if len(metas) != len(hits):
        raise ValueError(f"benchmark_tables: {len(metas)} metas but {len(hits)} hits")
    benchmark = benchmark or detect_benchmark(metas)
    if benchmark is None:
        return None
    if benchmark not in LAYOUTS:
        raise ValueError(f"benchmark {benchmark!r} is unknown; known: {', '.join(LAYOUTS)}")
    rows = [episode_row(m, h) for m, h in zip(metas, hits, strict=True)]
    tables = {
        key: category_table(rows, (key, "ui_type"), row_order=order)
        for key, order in LAYOUTS[benchmark]
    }
    n, k = len(rows), sum(r["hit"] for r in rows)
    return {
        "benchmark": benchmark,
        "n": n,
        "hits": k,
        "avg_micro": k / n if n else None,
        "tables": tables,
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _cell_md(c: Mapping[str, Any]) -> str:
    return "–" if not c["n"] else f"{_pct(c['accuracy'])} ({c['hits']}/{c['n']})"


def table_markdown(table: Mapping[str, Any], title: str) -> str:
    """One table as Markdown: a row per category, columns Text / Icon / ... / Avg (micro) and
    its 95 % interval; cells ``accuracy % (hits/n)``; then the micro and macro total rows."""
    cols = list(table["cols"])
    head = [table["by"][0], *(c.capitalize() for c in cols), "Avg", "95 % CI of Avg"]
    lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def ci(c: Mapping[str, Any]) -> str:
        return "–" if not c["n"] else f"{_pct(c['ci95'][0])}–{_pct(c['ci95'][1])}"

    for r in table["rows"]:
        tot = table["row_totals"][r]
        cells = [_cell_md(table["cells"][r][c]) for c in cols]
        lines.append(f"| {r} | " + " | ".join([*cells, _cell_md(tot), ci(tot)]) + " |")
    all_cells = [_cell_md(table["col_totals"][c]) for c in cols]
    overall = table["overall"]
    lines.append("| **All (micro)** | " + " | ".join([*all_cells, _cell_md(overall), ci(overall)]))
    lines[-1] += " |"
    macro = [_pct(table["col_macro"][c]) for c in cols]
    k = table["macro_cells"]
    lines.append(f"| Macro (mean of cells) | {' | '.join(macro)} | {_pct(table['avg_macro'])} "
                 f"(over {k} cells) | – |")  # fmt: skip
    return "\n".join(lines)


def paper_row(table: Mapping[str, Any], standard: Sequence[str]) -> str:
    """The paper's one-line layout: ``<Row> Text | <Row> Icon`` for every standard row (``–``
    where this run has no samples) and the other rows, then Avg (micro) and Avg (macro)."""
    rows = [*standard, *(r for r in table["rows"] if r not in standard)]
    cols = [c for c in UI_TYPES if c in table["cols"]] or list(table["cols"])
    head, vals = [], []
    for r in rows:
        for c in cols:
            head.append(f"{r.capitalize() if r.islower() else r} {c.capitalize()}")
            got = table["cells"].get(r, {}).get(c)
            vals.append(_pct(got["accuracy"]) if got and got["n"] else "–")
    head += ["Avg (micro)", "Avg (macro)"]
    vals += [_pct(table["avg_micro"]), _pct(table["avg_macro"])]
    return "\n".join(
        ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), "| " + " | ".join(vals) + " |"]
    )


def render_markdown(report: Mapping[str, Any]) -> str:
    """Every table of :func:`benchmark_tables` output, then the paper-layout row of the first."""
    bench = report["benchmark"]
    name = TITLES[bench]
    parts = [
        f"### {name} results: {report['hits']}/{report['n']} hits, "
        f"accuracy {_pct(report['avg_micro'])} %",
        "",
        "Cells: accuracy % (hits/n). Avg = hits / samples of the row (micro); "
        "Macro = unweighted mean of the cell accuracies.",
    ]
    for key, _ in LAYOUTS[bench]:
        parts += ["", table_markdown(report["tables"][key], f"{name}: {key} x UI type")]
    key, standard = LAYOUTS[bench][0]
    parts += [
        "",
        f"**Paper layout ({key}, accuracy %)**",
        "",
        paper_row(report["tables"][key], standard),
    ]
    return "\n".join(parts) + "\n"


def write_tables(report: Mapping[str, Any], folder: str | Path) -> tuple[Path, Path]:
    """Write ``eval_table.json`` and ``eval_table.md`` into ``folder`` (atomically); their paths."""
    folder = Path(folder)
    json_path, md_path = folder / "eval_table.json", folder / "eval_table.md"
    atomic_write_text(json_path, json.dumps(report, indent=2) + "\n")
    atomic_write_text(md_path, render_markdown(report))
    return json_path, md_path
