"""`vlagent eval` on the shipped ScreenSpot-v2 desktop annotations with stand-in images prints
the per-platform x text/icon table and writes it (JSON + Markdown) next to the summary."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import torch

from vlagent.cli import main

FIXTURE = (
    Path(__file__).resolve().parents[2]
    / "fixtures"
    / "screenspot_v2"
    / "screenspot_desktop_v2.json"
)
N = 20  # > 16, so some episodes drop their inputs (release_inputs) before the table is made


def test_eval_prints_and_writes_the_screenspot_table(tiny_dir, tmp_path, capsys):
    threads = torch.get_num_threads()
    out = tmp_path / "out"
    argv = [
        "eval",
        "--model",
        str(tiny_dir),
        "--config",
        "screenspot_eval",
        "--standin-images",
        str(tmp_path / "standins"),
        "--out",
        str(out),
        f"task.annotation_file={FIXTURE}",
        f"eval.num_screens={N}",
        "eval.max_new_tokens=4",
    ]
    assert main(argv) == 0
    torch.set_num_threads(threads)  # the CLI may set its own thread count
    printed = capsys.readouterr().out
    assert "| domain | Text | Icon | Avg | 95 % CI of Avg |" in printed
    assert "| Mobile Text | Mobile Icon | Desktop Text | Desktop Icon |" in printed

    # what the table must count, straight from the annotation file
    records = json.loads(FIXTURE.read_text())[:N]
    by_type = Counter(r["ui_type"] for r in records)
    by_source = Counter((r["platform"], r["ui_type"]) for r in records)
    assert {r["group"] for r in records} == {"desktop"}

    table = json.loads((out / "eval_table.json").read_text())
    summary = json.loads((out / "eval_summary.json").read_text())
    assert table["benchmark"] == "screenspot" and table["n"] == N == summary["n"]
    assert table["hits"] == round(summary["success_rate"] * N)
    dom = table["tables"]["domain"]
    assert dom["rows"] == ["desktop"]
    for ui, count in by_type.items():
        assert dom["cells"]["desktop"][ui]["n"] == count
    src = table["tables"]["source"]
    assert sorted(src["rows"]) == sorted({p for p, _ in by_source})
    for (platform, ui), count in by_source.items():
        assert src["cells"][platform][ui]["n"] == count
    assert sum(src["row_totals"][p]["n"] for p in src["rows"]) == N
    md = (out / "eval_table.md").read_text()
    assert md in printed and "| desktop | " in md
    assert summary["world"] == "grounding" and "baselines" in summary


def test_out_must_be_a_folder_and_standins_need_screenspot(tmp_path, capsys):
    assert main(["eval", "--model", "x", "--out", str(tmp_path / "r.json")]) == 2
    assert "--out is the report folder" in capsys.readouterr().err
    argv = ["eval", "--model", "x", "--out", str(tmp_path), "--standin-images", str(tmp_path)]
    assert main(argv) == 2
    assert "--standin-images needs task.source=screenspot" in capsys.readouterr().err


def test_make_standins_command(tmp_path, capsys):
    argv = ["make-standins", str(FIXTURE), str(tmp_path / "s"), "--limit", "3"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    ann = tmp_path / "s" / "screenspot_desktop_v2.standin.json"
    assert str(ann) in printed and len(json.loads(ann.read_text())) == 3
    assert main(["make-standins", str(tmp_path / "missing.json"), str(tmp_path / "s")]) == 2
    assert "annotation file does not exist" in capsys.readouterr().err
