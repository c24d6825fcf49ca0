"""The report's category tables, avg@k / pass@k rows, suites table and robot frames, and the
side-by-side ``--compare`` of category tables (A, B, B − A, z, outside 95 %)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from test_report_fixtures import read_page, screen

from vlagent.cli import main
from vlagent.eval.categories import at_k, tables_of
from vlagent.eval.report import two_proportion_z, write_report
from vlagent.eval.stats import wilson_interval
from vlagent.eval.suite_run import suite_row, write_suites
from vlagent.eval.suites import SUITES
from vlagent.io import atomic_write_json
from vlagent.rollout.trajectory import Trajectory, Turn


def _eval_folder(root, outcomes):
    """An eval folder whose summary is built like ``vlagent eval``'s: ``outcomes`` =
    [(task, template, success)]."""
    labels = [{"template": tpl} for _, tpl, _ in outcomes]
    ok = [s for _, _, s in outcomes]
    n, k = len(ok), sum(ok)
    lo, hi = wilson_interval(k, n)
    summary = {"model": "m", "world": "apps", "n": float(n), "success_rate": k / n,
               "success_ci_low": lo, "success_ci_high": hi, "mean_turns": 3.0,
               **at_k([t for t, _, _ in outcomes], ok), "category_tables": tables_of(labels, ok),
               "success/wifi": 0.5}  # fmt: skip
    atomic_write_json(root / "eval_summary.json", summary)
    return root, summary


A = [("t1", "wifi", True), ("t1", "wifi", False), ("t2", "wifi", True), ("t2", "wifi", True),
     ("t3", "contact", False), ("t3", "contact", False)]  # fmt: skip
B = [("t1", "wifi", True), ("t1", "wifi", True), ("t2", "wifi", True), ("t2", "wifi", True),
     ("t3", "contact", True), ("t3", "contact", False), ("t4", "alarm", True),
     ("t4", "alarm", True), ("t5", "wifi", True), ("t5", "wifi", True)]  # fmt: skip


def test_report_shows_category_tables_and_at_k(tmp_path):
    run, summary = _eval_folder(tmp_path / "a", A)
    page = read_page(write_report(run, tmp_path / "rep"))
    assert "per-task" not in page.tables  # the count-less table gives way to category tables
    table = page.tables["category-template"]
    assert list(table) == ["contact", "wifi"]
    for value, want in summary["category_tables"]["template"].items():
        cells = table[value]
        assert float(cells[1][1]) == want["success_rate"]
        assert [float(c[1]) for c in cells[2:4]] == want["ci95"]
        assert [float(c[1]) for c in cells[4:6]] == [want["successes"], want["n"]]
    assert table["wifi"][4:6] == [("3", "3.0"), ("4", "4.0")]
    overall = page.tables["overall"]
    assert overall["pass@k"][0][0] == "pass@k (k=2)"
    assert float(overall["pass@k"][1][1]) == pytest.approx(2 / 3)  # t1, t2 of 3 tasks
    assert [float(c[1]) for c in overall["pass@k"][2:5]] == [*wilson_interval(2, 3), 3.0]
    assert float(overall["avg@k"][1][1]) == pytest.approx(0.5) and "k" not in overall
    assert "success rate per template" in (tmp_path / "rep" / "index.html").read_text()


def test_compare_category_tables_side_by_side(tmp_path, capsys):
    a, _ = _eval_folder(tmp_path / "a", A)
    b, _ = _eval_folder(tmp_path / "b", B)
    assert main(["eval", "--compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    page = read_page(tmp_path / "cmp" / "index.html")
    t = page.tables["compare-category-template"]
    assert list(t) == ["contact", "wifi", "alarm"]
    wifi = t["wifi"]  # A 3/4, B 6/6
    assert [float(c[1]) for c in wifi[1:4]] == [0.75, 1.0, 0.25]
    assert float(wifi[4][1]) == pytest.approx(two_proportion_z(3, 4, 6, 6))
    assert wifi[5] == ("no", "0.0")
    assert t["alarm"][1][0] == "–" and t["alarm"][4:] == [("n/a", None), ("n/a", None)]
    overall = page.tables["compare-overall"]
    pas = overall["pass@k"]  # tasks: A 2/3, B 5/5
    assert float(pas[4][1]) == pytest.approx(two_proportion_z(2, 3, 5, 5))
    avg = overall["avg@k"]  # episodes: A 3/6, B 9/10
    assert float(avg[4][1]) == pytest.approx(two_proportion_z(3, 6, 9, 10))
    # a large gap with large counts is outside the interval
    many_a = [(f"t{i}", "wifi", i < 30) for i in range(100)]
    many_b = [(f"t{i}", "wifi", i < 90) for i in range(150)]
    _eval_folder(tmp_path / "a", many_a)
    _eval_folder(tmp_path / "b", many_b)
    assert main(["eval", "--compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    wifi = read_page(tmp_path / "cmp" / "index.html").tables["compare-category-template"]["wifi"]
    assert wifi[5] == ("yes", "1.0")
    assert float(wifi[4][1]) == pytest.approx(two_proportion_z(30, 100, 90, 150))


def test_suites_table_and_damaged_suites_file(tmp_path):
    root = tmp_path / "suites"
    rows = [
        suite_row(SUITES["phone_apps"], root / "phone_apps",
                  {"world": "apps", "n": 6.0, "success_rate": 0.5, "success_ci_low": 0.1876,
                   "success_ci_high": 0.8124, "mean_turns": 4.0, "k": 2.0, "pass@k": 2 / 3,
                   "avg@k": 0.5, "tasks": 3.0, "generated_tokens": 40.0}),
        {**suite_row(SUITES["miniwob"], root / "miniwob", {}), "error": "WebError: no chromium"},
    ]  # fmt: skip
    write_suites(root, "m", rows)
    page = read_page(write_report(root, tmp_path / "rep"))
    assert page.problems == []
    t = page.tables["suites"]
    assert [c[0] for c in t["phone_apps"][:4]] == ["phone_apps", "apps", "6", "50.0 %"]
    assert float(t["phone_apps"][11][1]) == pytest.approx(2 / 3)
    assert t["miniwob"][-1][0] == "WebError: no chromium"
    (root / "suites.json").write_text(json.dumps({"suites": {"a": 1}}))
    page = read_page(write_report(root, tmp_path / "rep"))
    assert any(p.startswith("suites.json:") and "not a list" in p for p in page.problems)


def _robot_episode(frames):
    turns = [Turn(0, 0, 1, f"<act {i}>", reward_terms={"success": 0.0}) for i in range(3)]
    return Trajectory(task_id=7, turns=turns, instruction="push the red cube",
                      status="truncated", extras={"frames": frames})  # fmt: skip


def test_robot_gif_is_cut_into_per_step_frames(tmp_path):
    """One camera frame per turn; the GIF writer merges the equal 2nd and 3rd frames into one
    longer frame, which the viewer expands back."""
    from vlagent.worlds.robot import RobotWorld

    frames = [screen(1), screen(2), screen(2)]
    folder = tmp_path / "run" / "samples"
    folder.mkdir(parents=True)
    RobotWorld.save_pictures(None, [_robot_episode(frames)], folder, "robot")  # type: ignore[arg-type]
    with Image.open(folder / "robot_00.gif") as im:
        assert im.n_frames == 2  # merged
    index = write_report(tmp_path / "run", tmp_path / "rep")
    (ep,) = read_page(index).scripts["episodes-data"]
    assert ep["gif"].endswith(".gif") and len(ep["steps"]) == 3
    images = [s["image"] for s in ep["steps"]]
    assert images[1] == images[2] != images[0]
    for rel, frame in zip(images, frames, strict=True):
        with Image.open(index.parent / rel) as im:
            got = np.asarray(im.convert("RGB")).astype(int)
        assert got.shape == frame.shape
        assert np.abs(got - frame.astype(int)).mean() < 40  # GIF palette: close, not exact
    # frames that do not match the turns: every step shows the GIF
    RobotWorld.save_pictures(None, [_robot_episode([screen(1), screen(2)])], folder, "robot")  # type: ignore[arg-type]
    (ep,) = read_page(write_report(tmp_path / "run", tmp_path / "rep")).scripts["episodes-data"]
    assert [s["image"] for s in ep["steps"]] == [None] * 3 and ep["gif"]
