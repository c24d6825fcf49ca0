"""The ladder table's aggregation: which stage is subtracted from which, which baselines count
as instruction-blind, and when "GRPO gains on every seed" holds."""

from __future__ import annotations

import pytest

from experiments.ladder import level_row, markdown, mean_ci95


def _summary(seed, sft, grpo, cont):
    acc = {"before": 0.1, "sft": sft, "grpo": grpo, "sft_continued": cont}
    return {
        "seed": seed,
        "accuracy": acc,
        "accuracy_ci95": {k: [v - 0.05, v + 0.05] for k, v in acc.items()},
        "baselines": {
            "random_click": 0.05,
            "center_click": 0.0,
            "random_element": 0.236,
            "largest_element": 0.27,
            "same_colour": 0.783,
            "same_shape": 0.727,
        },
        "eval_screens": 500,
        "sft": {"steps": 1500, "num_demos": 1024},
        "grpo": {"steps": 500},
        "sft_continued": {"steps": 500},
        "seconds": 100.0,
    }


def test_gain_is_grpo_minus_sft_per_seed():
    row = level_row("shapes", [_summary(0, 0.40, 0.55, 0.42), _summary(1, 0.30, 0.38, 0.41)])
    assert [s["grpo_gain"] for s in row["per_seed"]] == [15.0, 8.0]
    assert row["mean"]["grpo"] == pytest.approx(46.5)
    assert row["grpo_gain_mean_ci95"][0] == pytest.approx(11.5)
    assert row["grpo_gain_every_seed"] is True
    assert row["grpo_beats_more_sft_every_seed"] is False  # seed 1: 38 < 41


def test_a_loss_on_one_seed_breaks_every_seed():
    row = level_row("shapes", [_summary(0, 0.40, 0.55, 0.42), _summary(1, 0.30, 0.29, 0.2)])
    assert row["grpo_gain_every_seed"] is False


def test_best_blind_baseline_ignores_the_partial_ones():
    row = level_row("shapes", [_summary(0, 0.40, 0.54, 0.42)])
    assert row["best_blind"] == "largest_element"
    assert row["grpo_over_best_blind"] == pytest.approx(2.0)
    assert row["baselines_partial"] == {"same_colour": 78.3, "same_shape": 72.7}
    assert "27.0 (largest_element)" in markdown([row])


def test_duplicate_seed_is_refused():
    with pytest.raises(ValueError, match="seed listed twice"):
        level_row("shapes", [_summary(0, 0.4, 0.5, 0.4), _summary(0, 0.4, 0.5, 0.4)])


def test_t_interval_hand_computed():
    m, lo, hi = mean_ci95([10.0, 14.0])  # sd 2.828, se 2, t(1) 12.706
    assert (m, lo, hi) == (12.0, pytest.approx(12 - 25.412), pytest.approx(12 + 25.412))


def test_readme_ladder_quotes_the_stored_table():
    """README's ladder rows are the means in docs/results/ladder.json (a rerun must update both)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    for row in json.loads((root / "docs/results/ladder.json").read_text())["levels"]:
        m = row["mean"]
        cells = (
            f"| {len(row['seeds'])} | {m['sft']:.1f} | {m['grpo']:.1f} | {m['sft_continued']:.1f} |"
        )
        assert cells in readme, f"{row['level']}: README lacks {cells}"
