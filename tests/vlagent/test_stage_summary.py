"""A rung run stage by stage gets the quickstart's per-seed record: each stage's accuracy lands
under its own name, steps and seconds come from the run's last step, and mismatched inputs are
refused rather than averaged."""

from __future__ import annotations

import json

import pytest

from experiments.ladder import level_row, markdown
from experiments.stage_summary import main, read_run, seed_summary

BASE = {"random_element": 0.236, "largest_element": 0.27, "same_colour": 0.78}


def _eval(acc: float, n: int = 500) -> dict:
    return {
        "n": float(n),
        "accuracy": acc,
        "success_ci_low": acc - 0.04,
        "success_ci_high": acc + 0.04,
        "baselines": BASE,
    }


def _write_stage(tmp_path, name, acc, steps, seconds):
    run, ev = tmp_path / name, tmp_path / f"{name}_eval"
    run.mkdir()
    ev.mkdir()
    lines = [
        {"step": s, "train_seconds": seconds * s / steps, "loss": 1.0} for s in range(1, steps + 1)
    ]
    lines.insert(1, {"step": 1, "val/accuracy": 0.3})  # an eval line: no train_seconds
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (ev / "eval_summary.json").write_text(json.dumps(_eval(acc)))
    return f"{run}:{ev}"


def test_read_run_takes_the_last_step(tmp_path):
    _write_stage(tmp_path, "grpo", 0.5, 4, 40.0)
    assert read_run(tmp_path / "grpo") == {"steps": 4, "train_seconds": 40.0}


def test_each_stage_keeps_its_own_accuracy():
    evals = {"before": _eval(0.19), "sft": _eval(0.36), "grpo": _eval(0.50)}
    evals["sft_continued"] = _eval(0.45)
    runs = {k: {"steps": 10, "train_seconds": 5.0} for k in ("sft", "grpo", "sft_continued")}
    s = seed_summary(1, evals, runs, "same_seconds")
    assert s["accuracy"] == {"before": 0.19, "sft": 0.36, "grpo": 0.50, "sft_continued": 0.45}
    assert s["accuracy_ci95"]["grpo"] == [pytest.approx(0.46), pytest.approx(0.54)]
    assert s["seconds"] == 15.0 and s["control"] == "same_seconds"
    row = level_row("shapes", [s])
    assert row["per_seed"][0]["grpo_gain"] == pytest.approx(14.0)
    assert row["best_blind"] == "largest_element"
    assert "(same seconds)" in markdown([row])


def test_mismatched_screen_counts_are_refused():
    evals = {k: _eval(0.4) for k in ("before", "sft", "grpo")}
    evals["sft_continued"] = _eval(0.4, n=200)
    runs = {k: {"steps": 1, "train_seconds": 1.0} for k in ("sft", "grpo", "sft_continued")}
    with pytest.raises(ValueError, match="different screen counts"):
        seed_summary(0, evals, runs, "same_seconds")


def test_missing_stage_and_unknown_control_are_refused():
    evals = {k: _eval(0.4) for k in ("before", "sft", "grpo")}
    runs = {k: {"steps": 1, "train_seconds": 1.0} for k in ("sft", "grpo", "sft_continued")}
    with pytest.raises(ValueError, match="missing stages"):
        seed_summary(0, evals, runs, "same_seconds")
    evals["sft_continued"] = _eval(0.4)
    with pytest.raises(ValueError, match="control"):
        seed_summary(0, evals, runs, "same_time")


def test_ladder_refuses_seeds_with_different_controls():
    evals = {k: _eval(0.4) for k in ("before", "sft", "grpo", "sft_continued")}
    runs = {k: {"steps": 1, "train_seconds": 1.0} for k in ("sft", "grpo", "sft_continued")}
    a = seed_summary(0, evals, runs, "same_seconds")
    b = seed_summary(1, evals, runs, "same_updates_and_sequences")
    with pytest.raises(ValueError, match="different controls"):
        level_row("shapes", [a, b])


def test_cli_writes_one_summary_per_seed(tmp_path):
    before = tmp_path / "before_eval"
    before.mkdir()
    (before / "eval_summary.json").write_text(json.dumps(_eval(0.19)))
    out = tmp_path / "rung.json"
    argv = ["--out", str(out), "--control", "same_seconds"]
    for seed in (0, 1):
        d = tmp_path / f"s{seed}"
        d.mkdir()
        argv += ["--seed", str(seed), "--before", str(before)]
        argv += ["--sft", _write_stage(d, "sft", 0.36 + seed / 100, 6, 12.0)]
        argv += ["--grpo", _write_stage(d, "grpo", 0.50, 20, 60.0)]
        argv += ["--sft-continued", _write_stage(d, "more", 0.55, 30, 60.0)]
    assert main(argv) == 0
    data = json.loads(out.read_text())
    assert [s["seed"] for s in data["summaries"]] == [0, 1]
    assert data["summaries"][1]["accuracy"]["sft"] == pytest.approx(0.37)
    assert data["summaries"][0]["grpo"] == {"steps": 20, "train_seconds": 60.0}
    assert data["summaries"][0]["sft_continued"]["steps"] == 30
    assert data["command"].startswith("python -m experiments.stage_summary")


def test_cli_needs_every_stage_per_seed(tmp_path):
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "x.json"), "--control", "same_seconds", "--seed", "0"])
