"""``vlagent quickstart --level NAME`` runs the story on another level; the table reports the
best instruction-blind element baseline beside the accuracies."""

from __future__ import annotations

from vlagent.quickstart import best_element_baseline, format_table


def _summary(baselines):
    acc = {"before": 0.0, "sft": 0.2, "grpo": 0.5, "sft_continued": 0.25}
    return {"seed": 3, "accuracy": acc, "baselines": baselines, "seconds": 10, "peak_rss_mb": 1}


def test_table_names_the_best_element_baseline():
    base = {"random_click": 0.01, "center_click": 0.0, "random_element": 0.23}
    base |= {"largest_element": 0.22, "same_colour": 0.79, "same_shape": 0.69, "same_kind": 0.23}
    line = format_table([_summary(base)]).splitlines()[2]
    assert line.startswith(
        "| 3 | 0.0 | 20.0 | 50.0 | 25.0 | +30.0 | 1.0 | 0.0 | 79.0 (same_colour) |"
    )
    assert best_element_baseline({"random_click": 0.5}) == "-"


def test_level_flag_overrides_the_task_level(monkeypatch, tmp_path):
    import vlagent.quickstart as qs
    from vlagent import cli

    seen = {}

    def fake_run(cfg, control="same_updates_and_sequences"):
        seen["level"] = cfg.task.level
        return _summary({"random_click": 0.0, "center_click": 0.0})

    monkeypatch.setattr(qs, "run_quickstart", fake_run)
    cli.main(["quickstart", "--level", "shapes", f"run.out_dir={tmp_path}"])
    assert seen["level"] == "shapes"


def test_init_flag_starts_from_that_checkpoint(monkeypatch, tmp_path):
    import vlagent.quickstart as qs
    from vlagent import cli

    seen = {}

    def fake_run(cfg, control="same_updates_and_sequences"):
        seen["model"] = (cfg.model.path, cfg.model.build_tiny)
        return _summary({"random_click": 0.0, "center_click": 0.0})

    monkeypatch.setattr(qs, "run_quickstart", fake_run)
    cli.main(["quickstart", "--init", "runs/basic2/final", f"run.out_dir={tmp_path}"])
    assert seen["model"] == ("runs/basic2/final", False)


def test_start_model_is_the_checkpoint_only_without_build_tiny(tmp_path):
    import dataclasses

    import pytest

    from vlagent.config import load_config
    from vlagent.errors import ConfigError
    from vlagent.quickstart import start_model_config

    cfg = load_config("quickstart", ["run.seed=4"])
    fresh = start_model_config(cfg, tmp_path)
    assert (fresh.path, fresh.tiny_seed) == (str(tmp_path / "model"), 4)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    init = dataclasses.replace(cfg.model, path=str(ckpt), build_tiny=False)
    with pytest.raises(ConfigError, match="no config.json"):
        start_model_config(dataclasses.replace(cfg, model=init), tmp_path)
    (ckpt / "config.json").write_text("{}")
    assert start_model_config(dataclasses.replace(cfg, model=init), tmp_path).path == str(ckpt)


def test_accuracy_plot_takes_every_baseline_of_an_element_level(tmp_path):
    """Element levels report 7 baselines; the plot must draw them all (it ran out of styles
    after 3 and crashed the end of ``quickstart --level shapes``)."""
    from vlagent.viz import plot_accuracy

    base = {"random_click": 0.03, "center_click": 0.05, "random_element": 0.24}
    base |= {"largest_element": 0.27, "same_colour": 0.78, "same_shape": 0.73, "same_kind": 0.24}
    stages = {"before": 0.19, "sft": 0.26, "grpo": 0.31, "sft_continued": 0.26}
    out = plot_accuracy(stages, base, tmp_path / "accuracy.png", "shapes")
    assert out.stat().st_size > 1000


def test_seeds_from_a_shared_checkpoint_train_on_their_own_screens():
    """From ``--init`` every seed starts from the same weights: unless the training screens
    move with the seed, fresh-label SFT is the same run on every seed."""
    import dataclasses

    from vlagent.config import load_config
    from vlagent.quickstart import SEED_STRIDE, seeded_task

    def task(seed, build_tiny):
        cfg = load_config("quickstart", [f"run.seed={seed}"])
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, build_tiny=build_tiny))
        return seeded_task(cfg)

    base = load_config("quickstart", []).task
    init2 = task(2, False)
    assert init2.train_seed_offset == base.train_seed_offset + 2 * SEED_STRIDE
    assert init2.demo_seed_offset == base.demo_seed_offset + 2 * SEED_STRIDE
    fresh2 = task(2, True)  # the recorded quickstart seeds keep their training screens
    assert fresh2.train_seed_offset == base.train_seed_offset
    assert fresh2.demo_seed_offset == base.demo_seed_offset + 2 * SEED_STRIDE
    assert task(0, False) == base
