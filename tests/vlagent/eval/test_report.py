"""The HTML report: every table holds the numbers of the JSON it was made from (read back with
html.parser), curves have every logged point, the viewer has every episode with its pictures,
the folder is self-contained and written atomically, and damaged run folders give a report
whose "Problems" section names what is missing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image
from test_report_fixtures import (
    EVAL_SUMMARY,
    eval_dir,
    metrics_rows,
    read_page,
    samples_dir,
    train_dir,
)

import vlagent.eval.report.write as report_write
from vlagent.errors import VlagentError
from vlagent.eval.report import write_report
from vlagent.io import atomic_write_json


def _v(cell: tuple[str, str | None]) -> float:
    assert cell[1] is not None, cell
    return float(cell[1])


@pytest.fixture
def full_run(tmp_path):
    run = eval_dir(tmp_path / "run")
    train_dir(run)
    samples_dir(run)
    return run


def test_overall_table_holds_the_eval_summary(full_run, tmp_path):
    page = read_page(write_report(full_run, tmp_path / "rep"))
    rows = page.tables["overall"]
    rate = rows["success_rate"]
    assert _v(rate[1]) == EVAL_SUMMARY["success_rate"] and rate[1][0] == "33.3 %"
    assert _v(rate[2]) == EVAL_SUMMARY["success_ci_low"] and rate[2][0] == "6.1 %"
    assert _v(rate[3]) == EVAL_SUMMARY["success_ci_high"] and rate[3][0] == "79.2 %"
    assert _v(rate[4]) == 3 and rate[4][0] == "3"
    plain = {k: v for k, v in EVAL_SUMMARY.items() if isinstance(v, float) and "/" not in k}
    plain = {k: v for k, v in plain.items() if not k.startswith(("success_", "n"))}
    assert set(rows) - {"success_rate"} == set(plain)
    for key, value in plain.items():
        assert _v(rows[key][1]) == value and rows[key][1][0] == f"{value:.4g}"
    terms = page.tables["reward-terms"]
    assert {k: _v(c[1]) for k, c in terms.items()} == {
        "format": EVAL_SUMMARY["reward_terms/format"],
        "point_in_box": EVAL_SUMMARY["reward_terms/point_in_box"],
    }
    base = page.tables["baselines"]
    assert {k: _v(c[1]) for k, c in base.items()} == EVAL_SUMMARY["baselines"]
    assert page.problems == []


def test_screenspot_tables_hold_eval_table_json(full_run, tmp_path):
    page = read_page(write_report(full_run, tmp_path / "rep"))
    tables = json.loads((full_run / "eval_table.json").read_text())["tables"]
    assert set(tables) == {"domain", "source"}
    for key, t in tables.items():
        shown = page.tables[f"screenspot-{key}"]
        assert list(shown) == [*t["rows"], "all"]
        for r in t["rows"]:
            cells = shown[r]
            for j, c in enumerate(t["cols"], 1):
                want = t["cells"][r][c]
                if want["n"]:
                    assert _v(cells[j]) == want["accuracy"]
                    assert cells[j][0].endswith(f"({want['hits']}/{want['n']})")
                else:
                    assert cells[j] == ("–", None)
            tot = t["row_totals"][r]
            k = len(t["cols"]) + 1
            assert _v(cells[k]) == tot["accuracy"]
            assert [_v(cells[k + 1]), _v(cells[k + 2])] == tot["ci95"]
        assert _v(shown["all"][len(t["cols"]) + 1]) == t["overall"]["accuracy"]


def test_per_task_and_stage_tables(tmp_path):
    run = tmp_path / "apps"
    summary = {"n": 10.0, "success_rate": 0.6, "success_ci_low": 0.31, "success_ci_high": 0.83,
               "success/toggle_wifi": 0.75, "success/open_app": 1 / 3}  # fmt: skip
    atomic_write_json(run / "eval_summary.json", summary)
    page = read_page(write_report(run, tmp_path / "rep"))
    per = page.tables["per-task"]
    assert {k: _v(c[1]) for k, c in per.items()} == {"open_app": 1 / 3, "toggle_wifi": 0.75}
    assert per["toggle_wifi"][1][0] == "75.0 %"

    qs = tmp_path / "qs"
    quick = {"seed": 0, "accuracy": {"before": 0.1, "sft": 0.45, "grpo": 0.7},
             "accuracy_ci95": {"before": [0.05, 0.2], "sft": [0.35, 0.55], "grpo": [0.6, 0.78]},
             "format_rate": {"before": 0.0, "sft": 1.0, "grpo": 1.0}, "eval_screens": 100}  # fmt: skip
    atomic_write_json(qs / "summary.json", quick)
    stages = read_page(write_report(qs, tmp_path / "rep2")).tables["stages"]
    assert list(stages) == ["before", "sft", "grpo"]
    for s, cells in stages.items():
        assert _v(cells[1]) == quick["accuracy"][s]
        assert [_v(cells[2]), _v(cells[3])] == quick["accuracy_ci95"][s]
        assert _v(cells[4]) == 100 and _v(cells[5]) == quick["format_rate"][s]


def test_training_run_without_summary_shows_last_validation(tmp_path):
    run = train_dir(tmp_path / "train", steps=5)
    page = read_page(write_report(run, tmp_path / "rep"))
    last = page.tables["last-val"]
    assert _v(last["metrics.jsonl:val/success_rate"][3]) == 4 / 15  # step 4: last val row
    assert last["metrics.jsonl:val/success_rate"][1][0] == "4"
    assert page.problems == []


def test_learning_curves_have_every_point(full_run, tmp_path):
    html = write_report(full_run, tmp_path / "rep").read_text()
    rows = metrics_rows()
    for key in ("val/success_rate", "success_rate", "reward/mean", "loss"):
        m = re.search(
            rf'<svg class="chart"[^>]*data-key="{re.escape(key)}" data-points="(\d+)"', html
        )
        assert m is not None, key
        assert int(m.group(1)) == sum(key in r for r in rows)
    terms = re.search(r'data-key="reward_terms:metrics.jsonl" data-points="(\d+)"', html)
    assert terms is not None and int(terms.group(1)) == 2 * len(rows)
    lines = re.findall(r'<polyline points="([^"]+)"[^>]*data-series="metrics.jsonl · grpo"', html)
    assert [len(p.split()) for p in lines] == [3, 6, 6, 6]


def test_viewer_holds_every_episode_with_its_pictures(full_run, tmp_path):
    index = write_report(full_run, tmp_path / "rep")
    episodes = read_page(index).scripts["episodes-data"]
    lines = [json.loads(x) for x in (full_run / "trajectories.jsonl").read_text().splitlines()]
    assert len(episodes) == len(lines) + 3
    for ep, rec in zip(episodes, lines, strict=False):
        (step,) = ep["steps"]
        assert step["text"] == rec["completion"] and ep["success"] == rec["success"]
        assert step["reward_terms"] == rec["reward_terms"]
        assert step["overlay"]["target"] == rec["target_box_norm"]
        assert step["overlay"]["point"] == rec["point_norm"]
        assert json.loads(step["action"])["parse_error"] == rec["parse_error"]
        with (
            Image.open(index.parent / step["image"]) as im,
            Image.open(full_run / rec["image"]) as src,
        ):
            assert im.size == src.size
    apps = [e for e in episodes if e["task"] == "toggle_wifi"]
    assert [len(e["steps"]) for e in apps] == [2, 2] and [e["success"] for e in apps] == [
        True,
        False,
    ]
    assert json.loads(apps[1]["steps"][1]["action"])["type"] == "invalid"
    for step in apps[0]["steps"]:
        with Image.open(index.parent / step["image"]) as im:
            assert im.size == (24, 40 + 28)  # one screen (24 x 40) + its caption strip
    (robot,) = [e for e in episodes if e["task"] == "pick_red"]
    assert robot["gif"].endswith(".gif") and (index.parent / robot["gif"]).is_file()
    assert robot["steps"][0]["image"] is None


def test_report_folder_is_self_contained(full_run, tmp_path):
    index = write_report(full_run, tmp_path / "rep")
    page = read_page(index)
    assert page.links, "no pictures linked"
    for link in page.links:
        assert link.startswith("data:") or (index.parent / link).is_file(), link
    html = index.read_text()
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert '<link rel="stylesheet"' not in html and "@import" not in html


def test_report_is_written_atomically(full_run, tmp_path, monkeypatch):
    out = tmp_path / "rep"
    first = write_report(full_run, out).read_text()
    (full_run / "eval_summary.json").write_text(json.dumps({**EVAL_SUMMARY, "n": 4.0}))
    write_report(full_run, out)
    assert 'data-value="4.0"' in (out / "index.html").read_text()

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(report_write, "page", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        write_report(full_run, out)
    assert (out / "index.html").read_text() != first  # the previous report, whole
    assert 'data-value="4.0"' in (out / "index.html").read_text()
    assert len(list((out / "assets" / "img").iterdir())) > 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "run"]  # no temp folder left


def test_missing_run_folder_is_a_clear_error(tmp_path):
    with pytest.raises(VlagentError, match="does not exist"):
        write_report(tmp_path / "nope", tmp_path / "rep")


def _truncate_metrics(run: Path) -> None:
    path = train_dir(run) / "metrics.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) - 25])


def _corrupt_image(run: Path) -> None:
    eval_dir(run)
    png = next((run / "images").glob("*.png"))
    png.write_bytes(png.read_bytes()[:60])  # cut mid-file: the header still opens


def _delete_image(run: Path) -> None:
    eval_dir(run)
    for p in (run / "images").glob("*.png"):
        p.unlink()


def _bad_summary(run: Path) -> None:
    eval_dir(run)
    (run / "eval_summary.json").write_text('{"n": 3, "success_rate": 0.3')


def _list_summary(run: Path) -> None:
    eval_dir(run)
    (run / "eval_summary.json").write_text("[1, 2]")


def _no_summary(run: Path) -> None:
    eval_dir(run)
    (run / "eval_summary.json").unlink()


def _bad_trajectory_line(run: Path) -> None:
    eval_dir(run)
    with (run / "trajectories.jsonl").open("a") as f:
        f.write('{"image": "images/x.png", "completion"\n["a list"]\n')


def _record_without_picture(run: Path) -> None:
    samples_dir(run)
    (run / "samples" / "grpo_step_000002_00.png").unlink()
    train_dir(run)


def _empty_metrics(run: Path) -> None:
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text("")


def _empty_folder(run: Path) -> None:
    run.mkdir(parents=True)


HOSTILE = {
    "truncated metrics line": (_truncate_metrics, "metrics.jsonl", "line 6 is not valid JSON (the last line"),
    "unreadable image": (_corrupt_image, "images/", "is not a readable image"),
    "missing images": (_delete_image, "images/", "is missing"),
    "summary not JSON": (_bad_summary, "eval_summary.json", "not readable as JSON"),
    "summary a list": (_list_summary, "eval_summary.json", "holds a JSON list"),
    "summary missing": (_no_summary, "eval_summary.json", "missing or unreadable"),
    "bad trajectory lines": (_bad_trajectory_line, "trajectories.jsonl", "line 4 is not valid JSON"),
    "record without picture": (_record_without_picture, "samples/grpo_step_000002_00.json", "no .png or .gif"),
    "empty metrics": (_empty_metrics, "metrics.jsonl", "no readable rows"),
    "empty folder": (_empty_folder, ".", "nothing to summarize"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(HOSTILE))
def test_damaged_run_folder_gives_a_report_that_says_what_is_missing(case, tmp_path):
    damage, file, phrase = HOSTILE[case]
    run = tmp_path / "run"
    damage(run)
    page = read_page(write_report(run, tmp_path / "rep"))
    hits = [p for p in page.problems if p.startswith(file) and phrase in p]
    assert hits, page.problems
    assert page.by_id["problems"].get("data-count") == str(len(page.problems))


def test_damage_keeps_the_readable_rest(tmp_path):
    run = tmp_path / "run"
    _truncate_metrics(run)
    _corrupt_image(run)
    _bad_trajectory_line(run)
    bad = next((run / "images").glob("*.png")).relative_to(run).as_posix()
    lines = [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()[:3]]
    page = read_page(write_report(run, tmp_path / "rep"))
    html = (tmp_path / "rep" / "index.html").read_text()
    assert 'data-key="loss" data-points="5"' in html  # 6 rows, the cut one dropped
    episodes = page.scripts["episodes-data"]
    assert len(episodes) == 3
    no_picture = [s["image"] is None for e in episodes for s in e["steps"]]
    assert no_picture == [rec["image"] == bad for rec in lines] and any(no_picture)
    assert any("line 5 is a JSON list" in p for p in page.problems)
    assert _v(page.tables["overall"]["success_rate"][1]) == EVAL_SUMMARY["success_rate"]


def test_a_picture_folder_given_twice_is_read_once(tmp_path) -> None:
    """``vlagent eval --pictures-dir OUT/samples --report``: the folder is both found and given."""
    from vlagent.eval.report.load import load_run

    (tmp_path / "samples").mkdir()
    data = load_run(tmp_path, extra_sample_dirs=(tmp_path / "samples", tmp_path / "." / "samples"))
    assert data.sample_dirs == [tmp_path / "samples"]
