"""The quickstart's continued-SFT control is matched to GRPO by steps and sequences, not time."""

from __future__ import annotations

from vlagent.config import load_config
from vlagent.quickstart import control_sft_config


def test_control_matches_grpo_updates_and_sequences() -> None:
    cfg = load_config("quickstart")
    ctl = control_sft_config(cfg.sft, cfg.grpo)
    assert ctl.steps == cfg.grpo.steps == 500
    # 8 prompts x 8 samples per GRPO update -> 64 demo sequences per SFT update
    assert ctl.batch_size == cfg.grpo.prompts_per_step * cfg.grpo.group_size == 64
    assert ctl.max_seconds == 0  # a step budget: no time cap
    assert ctl.plateau_patience == 0 and ctl.stop_accuracy == 0.0  # never stops early
    assert ctl.lr == cfg.sft.lr and ctl.num_demos == cfg.sft.num_demos  # same demos, same lr


def test_quickstart_recipe_has_step_budgets_and_eight_prompts() -> None:
    """The shipped recipe's fix for stalled seeds (docs/RESULTS.md §1b) and its step budgets."""
    cfg = load_config("quickstart")
    assert cfg.grpo.prompts_per_step == 8
    assert cfg.grpo.max_seconds == 0 and cfg.sft.max_seconds == 0
