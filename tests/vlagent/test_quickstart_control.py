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


def _results(sft_steps: int = 600, grpo_seconds: float = 1234.5):
    from vlagent.train.grpo import GRPOResult
    from vlagent.train.sft import SFTResult

    sft = SFTResult("runs/x/sft/final", sft_steps, 100.0, 0.4, "steps")
    return sft, GRPOResult("runs/x/grpo/final", 3000, grpo_seconds, "steps")


def test_same_seconds_control_runs_sft_for_grpo_training_seconds(tmp_path) -> None:
    from vlagent.quickstart import SAME_SECONDS_MAX_STEPS, control_phase_cfg

    cfg = load_config("quickstart", ["sft.num_demos=0"])  # fresh labels
    sft, grpo = _results()
    c = control_phase_cfg(cfg, tmp_path, sft, grpo, "same_seconds")
    assert c.sft.max_seconds == 1234.5  # GRPO's training seconds, not its steps
    assert c.sft.steps == SAME_SECONDS_MAX_STEPS  # time stops it, not steps
    assert c.sft.batch_size == cfg.sft.batch_size and c.sft.lr == cfg.sft.lr  # SFT's own recipe
    assert c.sft.plateau_patience == 0 and c.sft.stop_accuracy == 0.0
    assert c.model.path == "runs/x/sft/final"  # continues from the SFT stage
    assert c.run.out_dir == str(tmp_path / "sft_continued") and c.recipe == "sft"
    # fresh labels: screens after the 600 x batch the SFT stage read
    assert c.task.train_seed_offset == cfg.task.train_seed_offset + 600 * cfg.sft.batch_size
    assert c.task.demo_seed_offset == cfg.task.demo_seed_offset


def test_controls_keep_their_screens_where_they_should(tmp_path) -> None:
    from vlagent.quickstart import control_phase_cfg

    cfg = load_config("quickstart")  # a fixed demo set: the control trains on the same demos
    assert cfg.sft.num_demos > 0
    sft, grpo = _results()
    same_s = control_phase_cfg(cfg, tmp_path, sft, grpo, "same_seconds")
    assert same_s.task == cfg.task
    fresh = load_config("quickstart", ["sft.num_demos=0"])
    steps = control_phase_cfg(fresh, tmp_path, sft, grpo, "same_updates_and_sequences")
    assert steps.task == fresh.task  # the recorded steps-matched control is unchanged
    assert steps.sft.steps == fresh.grpo.steps and steps.sft.max_seconds == 0


def test_bad_controls_are_config_errors() -> None:
    import pytest

    from vlagent.errors import ConfigError

    cfg = load_config("quickstart")
    with pytest.raises(ConfigError, match="same_seconds control needs GRPO's training seconds"):
        control_sft_config(cfg.sft, cfg.grpo, "same_seconds", 0.0)
    with pytest.raises(ConfigError, match="control 'same_time'"):
        control_sft_config(cfg.sft, cfg.grpo, "same_time", 10.0)


def test_cli_control_flag_reaches_the_quickstart_and_is_recorded(monkeypatch, tmp_path) -> None:
    import vlagent.quickstart as qs
    from experiments.ladder import CONTROL_DEFAULT
    from experiments.stage_summary import CONTROLS
    from vlagent import cli

    assert CONTROLS == qs.CONTROLS and qs.CONTROLS[0] == CONTROL_DEFAULT
    seen = []

    def fake_run(cfg, control="unset"):
        seen.append(control)
        acc = {"before": 0.0, "sft": 0.2, "grpo": 0.5, "sft_continued": 0.25}
        base = {"random_click": 0.0, "center_click": 0.0}
        return {
            "seed": 0,
            "accuracy": acc,
            "baselines": base,
            "seconds": 1,
            "peak_rss_mb": 1,
            "control": control,
        }

    monkeypatch.setattr(qs, "run_quickstart", fake_run)
    cli.main(["quickstart", "--control", "same_seconds", f"run.out_dir={tmp_path}"])
    cli.main(["quickstart", f"run.out_dir={tmp_path}"])
    assert seen == ["same_seconds", "same_updates_and_sequences"]
    row = qs.format_table([fake_run(None, "same_seconds")]).splitlines()[2]
    assert "| 25.0 (same seconds) | +30.0 |" in row
