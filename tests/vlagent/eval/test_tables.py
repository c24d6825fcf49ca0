"""ScreenSpot result tables: hand-computed counts, accuracies, totals, micro vs macro, Markdown."""

from __future__ import annotations

import json
import math

import pytest

from vlagent.eval.stats import wilson_interval
from vlagent.eval.tables import (
    benchmark_tables,
    category_table,
    detect_benchmark,
    episode_row,
    render_markdown,
    write_tables,
)

# ScreenSpot v1 style records: (data_source, data_type, hit)
V1 = [
    ("ios", "text", True),
    ("android", "text", False),
    ("ios", "icon", True),
    ("android", "icon", False),
    ("android", "icon", False),
    ("windows", "text", True),
    ("macos", "text", True),
    ("windows", "icon", False),
    ("gitlab", "text", True),
    ("shop", "icon", True),
    ("forum", "icon", False),
]
METAS = [{"data_source": s, "data_type": t, "index": i} for i, (s, t, _) in enumerate(V1)]
HITS = [h for _, _, h in V1]


def _acc(c):
    return c["hits"], c["n"]


def test_screenspot_domain_table_by_hand():
    report = benchmark_tables(METAS, HITS)
    assert report["benchmark"] == "screenspot" and report["n"] == 11 and report["hits"] == 6
    t = report["tables"]["domain"]
    assert t["rows"] == ["mobile", "desktop", "web"] and t["cols"] == ["text", "icon"]
    cells = {(r, c): _acc(t["cells"][r][c]) for r in t["rows"] for c in t["cols"]}
    assert cells == {
        ("mobile", "text"): (1, 2),
        ("mobile", "icon"): (1, 3),
        ("desktop", "text"): (2, 2),
        ("desktop", "icon"): (0, 1),
        ("web", "text"): (1, 1),
        ("web", "icon"): (1, 2),
    }
    assert {r: _acc(c) for r, c in t["row_totals"].items()} == {
        "mobile": (2, 5),
        "desktop": (2, 3),
        "web": (2, 3),
    }
    assert {c: _acc(v) for c, v in t["col_totals"].items()} == {"text": (4, 5), "icon": (2, 6)}
    assert _acc(t["overall"]) == (6, 11)
    assert t["cells"]["mobile"]["icon"]["accuracy"] == pytest.approx(1 / 3)
    # micro = over samples, macro = mean of the six cell accuracies; they differ here
    assert t["avg_micro"] == pytest.approx(6 / 11)
    assert t["avg_macro"] == pytest.approx((0.5 + 1 / 3 + 1 + 0 + 1 + 0.5) / 6)
    assert t["macro_cells"] == 6
    assert t["col_macro"]["text"] == pytest.approx((0.5 + 1 + 1) / 3)
    assert t["col_macro"]["icon"] == pytest.approx((1 / 3 + 0 + 0.5) / 3)
    assert t["cells"]["mobile"]["icon"]["ci95"] == list(wilson_interval(1, 3))
    assert t["overall"]["ci95"] == list(wilson_interval(6, 11))
    src = report["tables"]["source"]
    assert _acc(src["row_totals"]["android"]) == (0, 3) and _acc(src["row_totals"]["ios"]) == (2, 2)


def test_markdown_has_the_papers_columns_and_counts():
    md = render_markdown(benchmark_tables(METAS, HITS))
    assert "| domain | Text | Icon | Avg | 95 % CI of Avg |" in md
    lo, hi = wilson_interval(2, 5)
    assert (
        f"| mobile | 50.0 (1/2) | 33.3 (1/3) | 40.0 (2/5) | {100 * lo:.1f}–{100 * hi:.1f} |" in md
    )
    assert "| desktop | 100.0 (2/2) | 0.0 (0/1) | 66.7 (2/3) |" in md
    assert "| **All (micro)** | 80.0 (4/5) | 33.3 (2/6) | 54.5 (6/11) |" in md
    assert "| Macro (mean of cells) | 83.3 | 27.8 | 55.6 (over 6 cells) | – |" in md
    head = "| Mobile Text | Mobile Icon | Desktop Text | Desktop Icon | Web Text | Web Icon |"
    assert head in md
    assert "| 50.0 | 33.3 | 100.0 | 0.0 | 100.0 | 50.0 | 54.5 | 55.6 |" in md


def test_category_table_generic_keys_and_unknowns():
    rows = [
        {"platform": "a", "data_type": "text", "hit": 1},
        {"platform": "a", "hit": 0},
        {"platform": None, "data_type": "icon", "hit": 1},
    ]
    t = category_table(rows)
    assert t["by"] == ["platform", "data_type"]
    assert t["rows"] == ["a", "unknown"] and t["cols"] == ["text", "icon", "unknown"]
    assert _acc(t["cells"]["a"]["unknown"]) == (0, 1)
    assert _acc(t["cells"]["unknown"]["icon"]) == (1, 1)
    empty = t["cells"]["a"]["icon"]
    assert empty["n"] == 0 and empty["accuracy"] is None
    assert t["macro_cells"] == 3 and t["avg_macro"] == pytest.approx(2 / 3)


PRO = [
    # group, platform, application, ui_type, hit
    ("Dev", "macos", "vscode", "text", True),
    ("Dev", "macos", "pycharm", "icon", False),
    ("CAD", "windows", "autocad", "text", False),
    ("CAD", "windows", "autocad", "text", True),
    ("Office", "windows", "word", "icon", True),
    ("OS", "linux", "linux_common", "text", False),
]


def test_pro_layout_groups_platforms_applications():
    metas = [
        {"group": g, "platform": p, "application": a, "ui_type": u, "img_size": [3840, 2160]}
        for g, p, a, u, _ in PRO
    ]
    report = benchmark_tables(metas, [h for *_, h in PRO])
    assert report["benchmark"] == "screenspot_pro"
    g = report["tables"]["group"]
    assert g["rows"] == ["Dev", "CAD", "Office", "OS"]  # the papers' order, absent groups left out
    assert _acc(g["cells"]["CAD"]["text"]) == (1, 2) and g["cells"]["CAD"]["icon"]["n"] == 0
    assert _acc(g["row_totals"]["Dev"]) == (1, 2) and _acc(g["overall"]) == (3, 6)
    p = report["tables"]["platform"]
    assert p["rows"] == ["windows", "macos", "linux"]
    assert _acc(p["row_totals"]["windows"]) == (2, 3)
    assert _acc(report["tables"]["application"]["row_totals"]["autocad"]) == (1, 2)
    md = render_markdown(report)
    assert "| group | Text | Icon | Avg | 95 % CI of Avg |" in md
    assert "| CAD | 50.0 (1/2) | – | 50.0 (1/2) |" in md
    assert "| Dev Text | Dev Icon | Creative Text | Creative Icon | CAD Text |" in md


def test_detection_reads_the_meta_keys():
    # GUI-Actor's v2 rewrite (the shipped fixture): ui_type, platform = data source, group = domain
    gui_actor = {"ui_type": "icon", "platform": "shop", "group": "desktop"}
    assert detect_benchmark([gui_actor]) == "screenspot"
    row = episode_row(gui_actor, True)
    assert row["domain"] == "desktop" and row["source"] == "shop" and row["ui_type"] == "icon"
    assert episode_row({"data_type": "Text", "data_source": "android"}, False)["domain"] == "mobile"
    assert detect_benchmark([{"ui_type": "text", "group": "Creative"}]) == "screenspot_pro"
    assert detect_benchmark([{"level": "basic", "seed": 3}]) is None
    assert benchmark_tables([{"seed": 1}], [True]) is None
    with pytest.raises(ValueError, match="2 metas but 1 hits"):
        benchmark_tables([{}, {}], [True])


def test_write_tables_json_and_markdown(tmp_path):
    report = benchmark_tables(METAS, HITS)
    json_path, md_path = write_tables(report, tmp_path / "run")
    back = json.loads(json_path.read_text())
    assert back["tables"]["domain"]["cells"]["web"]["icon"]["hits"] == 1
    assert math.isclose(back["avg_micro"], 6 / 11)
    assert md_path.read_text() == render_markdown(report)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "eval_table.json",
        "eval_table.md",
    ]
