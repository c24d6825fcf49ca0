"""The experiment drivers under ``experiments/`` import (they are not run by the suite, so a
renamed or moved API would otherwise break them unnoticed) and parse their default arguments."""

from __future__ import annotations

import importlib
import json
import pkgutil
from typing import Any

import pytest

import experiments

MODULES = sorted(m.name for m in pkgutil.iter_modules(experiments.__path__))


def test_there_are_experiments():
    assert {"phone_chains", "phone_sft_vs_grpo", "reward_shape"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_driver_imports_and_parses_defaults(name):
    mod = importlib.import_module(f"experiments.{name}")
    parse = getattr(mod, "_args", None) or getattr(mod, "parse_args", None)
    if parse is not None:
        parse([])


def _zoom_args(**kw):
    import argparse

    base = dict(
        work="/tmp/zv",
        curriculum="",
        sft_steps=7,
        grpo_steps=3,
        sft_seconds=0,
        grpo_seconds=0,
        threads=1,
        set=[],
        grpo_set=[],
        curriculum_stop=0.0,
        grpo_name="grpo",
    )
    return argparse.Namespace(**{**base, **kw})


def test_zoom_curriculum_chains_stages_and_shares_the_direct_ones():
    """The zoom experiment's SFT curriculum: each stage starts from the previous stage's final
    weights, a shared stage trains direct answers (tools off) in one folder for both arms, the
    arm's own stages train its format, and GRPO starts from the last SFT stage."""
    from experiments.zoom_vs_notools import arm_config, sft_stages

    args = _zoom_args(curriculum="hires_dot_big:5:shared,hires_dot_mid:6")
    assert [(s.level, s.steps, s.shared) for s in sft_stages(args)] == [
        ("hires_dot_big", 5, True),
        ("hires_dot_mid", 6, False),
        (None, 7, False),
    ]
    c0 = arm_config("zoom", "sft", 3, args, 0)
    assert (c0.model.build_tiny, c0.tools.enabled, c0.task.level) == (True, False, "hires_dot_big")
    assert c0.run.out_dir.endswith("seed_3/direct_sft_c0") and c0.sft.steps == 5
    assert arm_config("notools", "sft", 3, args, 0).run.out_dir == c0.run.out_dir
    c1 = arm_config("zoom", "sft", 3, args, 1)
    assert c1.model.path.endswith("seed_3/direct_sft_c0/final") and not c1.model.build_tiny
    assert (c1.tools.enabled, c1.task.level, c1.sft.steps) == (True, "hires_dot_mid", 6)
    c2 = arm_config("zoom", "sft", 3, args, 2)
    assert c2.model.path.endswith("seed_3/zoom_sft_c1/final")
    assert c2.run.out_dir.endswith("seed_3/zoom_sft") and c2.task.level == "hires_tiny_small"
    stop = _zoom_args(curriculum="hires_dot_big:5:shared", curriculum_stop=0.9)
    assert arm_config("zoom", "sft", 3, stop, 0).sft.stop_accuracy == 0.9
    assert arm_config("zoom", "sft", 3, stop, 1).sft.stop_accuracy == 0.0  # the task's level
    g = arm_config(
        "notools",
        "grpo",
        3,
        _zoom_args(curriculum="hires_dot_big:5:shared", grpo_set=["grpo.lr=3e-5"]),
    )
    assert g.model.path.endswith("seed_3/notools_sft/final") and not g.tools.enabled
    assert g.grpo.lr == 3e-5 and g.grpo.steps == 3 and g.run.out_dir.endswith("notools_grpo")
    abl = _zoom_args(curriculum="hires_dot_big:5:shared", grpo_name="grpo_noev")
    assert arm_config("zoom", "grpo", 3, abl).run.out_dir.endswith("seed_3/zoom_grpo_noev")


@pytest.mark.parametrize("bad", ["hires_dot_big", "hires_dot_big:0", "a:5:own", "a:5,b:5:shared"])
def test_zoom_curriculum_refuses_malformed_stages(bad):
    from experiments.zoom_vs_notools import sft_stages

    with pytest.raises(ValueError, match="--curriculum"):
        sft_stages(_zoom_args(curriculum=bad))


def test_zoom_table_reads_the_recorded_json():
    """``--table`` prints each seed's accuracies with Wilson intervals over the held-out
    screens (seed 2's no-tools SFT hit 1 of 200 screens in the recorded run)."""
    from pathlib import Path

    from experiments.zoom_vs_notools import table

    root = Path(__file__).resolve().parents[1]
    text = table([str(root / "docs/results/zoom_vs_notools.json")])
    assert (
        "| 2 | 0.0 [0.0, 1.9] | 0.0 [0.0, 1.9] | 0.5 [0.1, 2.8] | 0.0 [0.0, 1.9] | +0.0 |" in text
    )
    assert "| 0 | sft | 1.00 | 23.0 | 0.0 | 4.0 | 0.0 / 0.0 |" in text


def test_zoom_reuse_grpo_evaluates_the_existing_checkpoint(tmp_path, monkeypatch):
    """``--reuse-grpo`` evaluates ``<arm>_<grpo-name>/final`` without training it again;
    without the flag GRPO trains and its own final folder is evaluated."""
    import types

    import experiments.zoom_vs_notools as zv
    import vlagent.train.grpo
    import vlagent.train.sft

    root = tmp_path / "seed_0"
    for d in ("notools_sft", "notools_grpo"):
        (root / d / "final").mkdir(parents=True)
    monkeypatch.setattr(vlagent.train.sft, "run_sft", lambda cfg: pytest.fail("trained SFT"))
    monkeypatch.setattr(vlagent.train.grpo, "run_grpo", lambda cfg: pytest.fail("trained GRPO"))
    seen: list[str] = []

    def fake_eval(folder, cfg, keys, oracle, pictures=0):
        seen.append(folder)
        return {"free": {"accuracy": 0.5}}

    monkeypatch.setattr(zv, "evaluate_stage", fake_eval)
    kw = dict(work=str(tmp_path), arms="notools", reuse_sft=True, pictures=0)
    out = zv.run_seed(0, _zoom_args(**kw, reuse_grpo=True), [1, 2])
    grpo_final = str(root / "notools_grpo" / "final")
    assert seen == [str(root / "notools_sft" / "final"), grpo_final]
    assert out["notools"]["grpo_run"] == {"steps": 3, "reused": grpo_final}

    trained = types.SimpleNamespace(
        final_dir="/elsewhere/final", steps=3, train_seconds=1.0, stop_reason="steps"
    )
    monkeypatch.setattr(vlagent.train.grpo, "run_grpo", lambda cfg: trained)
    seen.clear()
    out = zv.run_seed(0, _zoom_args(**kw, reuse_grpo=False), [1, 2])
    assert seen[-1] == "/elsewhere/final" and out["notools"]["grpo_run"]["steps"] == 3


def test_zoom_table_merges_the_arms_of_a_seed_across_files(tmp_path):
    """``--arms`` runs write one arm per file; the table joins them by seed (the gap column
    needs both) and refuses an arm recorded twice."""
    import json

    from experiments.zoom_vs_notools import table

    def arm(acc_sft, acc_grpo):
        free = dict(tool_calls=1.0, zoom_has_target=0.5, format_rate=1.0, over_limit_frac=0.0)
        return {
            "sft": {"free": {**free, "accuracy": acc_sft}},
            "grpo": {"free": {**free, "accuracy": acc_grpo}},
        }

    def write(name, arms):
        path = tmp_path / name
        path.write_text(json.dumps({"setup": {"held_out_screens": 100}, "seeds": {"4": arms}}))
        return str(path)

    zoom = write("z.json", {"zoom": arm(0.2, 0.3)})
    notools = write("n.json", {"notools": arm(0.05, 0.1)})
    text = table([zoom, notools])
    assert "| 4 | 20.0 [" in text and "| 10.0 [" in text and "| +20.0 |" in text
    with pytest.raises(ValueError, match="seed 4 .* repeats an arm"):
        table([zoom, write("z2.json", {"zoom": arm(0.1, 0.1)})])


def _fake_stages(monkeypatch, sv, sft, grpo, held_out) -> None:
    """Replace ``experiments.sft_vs_grpo``'s training, scoring and model building with fakes."""
    monkeypatch.setattr(sv, "run_sft", sft)
    monkeypatch.setattr(sv, "run_grpo", grpo)
    monkeypatch.setattr(sv, "held_out", held_out)
    monkeypatch.setattr(sv, "ensure_model", lambda cfg: cfg.path)


def test_sft_vs_grpo_chains_warmup_sft_grpo_and_scores_both(tmp_path, monkeypatch):
    """Which checkpoint each stage starts from, which overrides reach which stage, and which
    checkpoints are scored: a one-line slip (GRPO from the warm-up, the SFT overrides in GRPO)
    breaks it."""
    from types import SimpleNamespace

    import experiments.sft_vs_grpo as sv

    calls: list[tuple[str, str, dict]] = []

    def fake_sft(cfg):
        calls.append(("sft", cfg.model.path, {"cubes": cfg.robot.cubes, "out": cfg.run.out_dir}))
        return SimpleNamespace(steps=5, final_dir=cfg.run.out_dir + "/final")

    def fake_grpo(cfg):
        calls.append(("grpo", cfg.model.path, {"cubes": cfg.robot.cubes, "lr": cfg.grpo.lr}))
        return SimpleNamespace(steps=3, final_dir=cfg.run.out_dir + "/final")

    scored: list[str] = []

    def fake_held_out(path, cfg, n):
        scored.append(path)
        ok = 0.5 if path.endswith("grpo/final") else 0.2
        return {"n": n, "success": ok, "ci_low": 0.0, "ci_high": 1.0}

    _fake_stages(monkeypatch, sv, fake_sft, fake_grpo, fake_held_out)
    out = tmp_path / "r.json"
    argv = ["--sft-recipe", "robot_sft", "--grpo-recipe", "robot_grpo", "--seeds", "4",
            "--episodes", "7", "--out", str(tmp_path), "--json", str(out),
            "--warmup-set", "robot.cubes=1", "--sft-set", "robot.cubes=2",
            "--grpo-set", "grpo.lr=0.5", "--", "robot.task=reach", "robot.cubes=3"]  # fmt: skip
    assert sv.main(argv) == 0
    root = str(tmp_path / "seed_4")
    assert [(c[0], c[1]) for c in calls] == [
        ("sft", root + "/model"),
        ("sft", root + "/warmup/final"),
        ("grpo", root + "/sft/final"),
    ]
    assert [c[2]["cubes"] for c in calls] == [1, 2, 3]  # each stage's own overrides only
    assert calls[2][2]["lr"] == 0.5
    assert scored == [root + "/sft/final", root + "/grpo/final"]
    import json

    rec = json.loads(out.read_text())
    assert rec["rows"][0]["sft"]["success"] == 0.2 and rec["rows"][0]["grpo"]["success"] == 0.5
    assert abs(rec["mean_gain"] - 0.3) < 1e-9 and rec["warmup_set"] == ["robot.cubes=1"]


def test_sft_vs_grpo_anneal_stage_sits_between_sft_and_grpo(tmp_path, monkeypatch):
    """--anneal-set: the anneal starts from SFT's checkpoint with SFT's overrides then its own,
    on training tasks after SFT's, never stopped early; GRPO starts from the anneal, whose
    score is the row's sft (SFT's own score kept beside it)."""
    from types import SimpleNamespace

    import experiments.sft_vs_grpo as sv

    calls: list[tuple[str, Any]] = []

    def fake_sft(cfg):
        calls.append(("sft", cfg))
        return SimpleNamespace(steps=5, final_dir=cfg.run.out_dir + "/final")

    def fake_grpo(cfg):
        calls.append(("grpo", cfg))
        return SimpleNamespace(steps=3, final_dir=cfg.run.out_dir + "/final")

    def fake_held_out(path, cfg, n):
        ok = {"sft": 0.1, "anneal": 0.3, "grpo": 0.6}[path.split("/")[-2]]
        return {"n": n, "success": ok, "ci_low": 0.0, "ci_high": 1.0}

    _fake_stages(monkeypatch, sv, fake_sft, fake_grpo, fake_held_out)
    argv = ["--sft-recipe", "robot_sft", "--grpo-recipe", "robot_grpo", "--seeds", "2",
            "--out", str(tmp_path), "--json", str(tmp_path / "r.json"),
            "--sft-set", "sft.batch_size=4", "sft.stop_accuracy=0.3", "robot.cubes=2",
            "--anneal-set", "sft.steps=9", "sft.lr_schedule=linear"]  # fmt: skip
    assert sv.main(argv) == 0
    root = str(tmp_path / "seed_2")
    (_, sft), (_, anneal), (_, grpo) = calls
    assert (sft.model.path, anneal.model.path, grpo.model.path) == (
        root + "/model", root + "/sft/final", root + "/anneal/final")  # fmt: skip
    assert anneal.robot.cubes == 2 and anneal.sft.batch_size == 4  # SFT's overrides
    assert (anneal.sft.steps, anneal.sft.lr_schedule, anneal.sft.stop_accuracy) == (9, "linear", 0)
    assert anneal.task.train_seed_offset == sft.task.train_seed_offset + 5 * 4  # after SFT's
    row = json.loads((tmp_path / "r.json").read_text())["rows"][0]
    assert row["sft_before_anneal"]["success"] == 0.1 and row["anneal_steps"] == 5
    assert row["sft"]["success"] == 0.3 and row["grpo"]["success"] == 0.6
    assert "control" not in row


def test_sft_vs_grpo_control_stage_continues_sft_from_grpos_start(tmp_path, monkeypatch):
    """--control-set: after GRPO, SFT continues from GRPO's own start (the anneal) with SFT's
    overrides then its own (not the anneal's decay), on training tasks after the SFT's and the
    anneal's, never stopped early, scored on the same held-out tasks as the row's control."""
    from types import SimpleNamespace

    import experiments.sft_vs_grpo as sv

    calls: list[tuple[str, Any]] = []
    steps = {"sft": 7, "anneal": 5, "control": 11}

    def fake_sft(cfg):
        calls.append(("sft", cfg))
        name = cfg.run.out_dir.split("/")[-1]
        return SimpleNamespace(steps=steps[name], final_dir=cfg.run.out_dir + "/final")

    def fake_grpo(cfg):
        calls.append(("grpo", cfg))
        return SimpleNamespace(steps=3, final_dir=cfg.run.out_dir + "/final")

    scored: list[tuple[str, int]] = []

    def fake_held_out(path, cfg, n):
        scored.append((path.split("/")[-2], n))
        ok = {"sft": 0.1, "anneal": 0.3, "grpo": 0.6, "control": 0.4}[path.split("/")[-2]]
        return {"n": n, "success": ok, "ci_low": 0.0, "ci_high": 1.0}

    _fake_stages(monkeypatch, sv, fake_sft, fake_grpo, fake_held_out)
    argv = ["--sft-recipe", "robot_sft", "--grpo-recipe", "robot_grpo", "--seeds", "2",
            "--episodes", "9", "--out", str(tmp_path), "--json", str(tmp_path / "r.json"),
            "--sft-set", "sft.batch_size=4", "sft.stop_accuracy=0.3", "robot.cubes=2",
            "task.train_seed_offset=100", "--anneal-set", "sft.steps=5", "sft.lr_schedule=linear",
            "--control-set", "sft.steps=11", "sft.lr=1e-4"]  # fmt: skip
    assert sv.main(argv) == 0
    root = str(tmp_path / "seed_2")
    (_, sft), (_, anneal), (_, grpo), (_, ctl) = calls
    assert (grpo.model.path, ctl.model.path) == (root + "/anneal/final", root + "/anneal/final")
    assert ctl.run.out_dir == root + "/control"
    assert ctl.robot.cubes == 2 and ctl.sft.batch_size == 4  # SFT's overrides
    assert (ctl.sft.steps, ctl.sft.lr, ctl.sft.lr_schedule) == (11, 1e-4, "constant")
    assert (ctl.sft.stop_accuracy, ctl.sft.plateau_patience) == (0, 0)
    assert anneal.task.train_seed_offset == 100 + 7 * 4
    assert ctl.task.train_seed_offset == 100 + 7 * 4 + 5 * 4  # after SFT's and the anneal's
    assert scored == [("sft", 9), ("anneal", 9), ("grpo", 9), ("control", 9)]
    rec = json.loads((tmp_path / "r.json").read_text())
    row = rec["rows"][0]
    assert row["control"]["success"] == 0.4 and row["control_steps"] == 11
    assert abs(rec["mean_control_gain"] - 0.1) < 1e-9 and rec["control_set"][0] == "sft.steps=11"
    # the table takes the row's own control when no --control template is given
    from experiments.sft_vs_grpo_table import merge

    merged = merge([str(tmp_path / "r.json")], None)
    assert abs(merged["rows"][0]["control_gain"] - 0.1) < 1e-9
    assert abs(merged["mean_control_gain"] - 0.1) < 1e-9


def test_sft_vs_grpo_table_pairs_each_seed_with_its_own_control(tmp_path):
    """The merged reach table: rows sorted by seed, GRPO and control gains against that seed's
    SFT start, each control read from its own seed's folder, a seed without one marked 'not
    run', a seed in two sources refused. Swapping seeds or signs in the merge breaks it."""
    import json

    from experiments.sft_vs_grpo_table import main, merge, table

    def score(p):
        return {"n": 200, "success": p, "ci_low": p - 0.05, "ci_high": p + 0.05}

    def source(name, *rows):
        path = tmp_path / name
        path.write_text(json.dumps({"command": name, "rows": list(rows)}))
        return str(path)

    def row(seed, sft, grpo):
        return {"seed": seed, "sft_steps": 1400, "sft": score(sft), "grpo": score(grpo)}

    for seed, ok in ((1, 0.495), (2, 0.445)):
        d = tmp_path / f"seed_{seed}" / "ctl"
        d.mkdir(parents=True)
        summary = {"n": 200, "success_rate": ok, "success_ci_low": ok - 0.07,
                   "success_ci_high": ok + 0.07, "format_rate": 1.0}  # fmt: skip
        (d / "eval_summary.json").write_text(json.dumps(summary))
    a = source("a.json", row(2, 0.505, 0.675))
    b = source("b.json", row(1, 0.345, 0.465), row(0, 0.065, 0.1))
    merged = merge([a, b], str(tmp_path / "seed_{seed}" / "ctl"))
    assert [r["seed"] for r in merged["rows"]] == [0, 1, 2]
    r0, r1, r2 = merged["rows"]
    assert "control" not in r0 and abs(r0["gain"] - 0.035) < 1e-9
    assert abs(r1["gain"] - 0.12) < 1e-9 and abs(r1["control_gain"] - 0.15) < 1e-9
    assert abs(r2["gain"] - 0.17) < 1e-9 and abs(r2["control_gain"] + 0.06) < 1e-9
    assert abs(merged["mean_control_gain"] - 0.045) < 1e-9
    text = table(merged)
    assert "| 0 | 1,400 | 6.5 [1.5, 11.5] | 10.0 [5.0, 15.0] | +3.5 | not run | – |" in text
    assert (
        "| 2 | 1,400 | 50.5 [45.5, 55.5] | 67.5 [62.5, 72.5] | +17.0 | 44.5 [37.5, 51.5] | -6.0 |"
        in text
    )
    out = tmp_path / "m.json"
    assert main(["--out", str(out), "--control", str(tmp_path / "seed_{seed}/ctl"), a, b]) == 0
    assert json.loads(out.read_text())["rows"][1]["control"]["success"] == 0.495
    with pytest.raises(ValueError, match="seed 2 appears in more than one source"):
        merge([a, source("c.json", row(2, 0.1, 0.2))], None)
    # a table written before (its run folders gone) plus a new seed with its own control
    d = tmp_path / "new" / "seed_3" / "ctl"
    d.mkdir(parents=True)
    (d / "eval_summary.json").write_text(json.dumps({"n": 200, "success_rate": 0.3,
        "success_ci_low": 0.25, "success_ci_high": 0.35}))  # fmt: skip
    grown = merge(
        [str(out), source("d.json", row(3, 0.2, 0.4))], str(tmp_path / "new/seed_{seed}/ctl")
    )
    assert [r["seed"] for r in grown["rows"]] == [0, 1, 2, 3]
    assert [r.get("control", {}).get("success") for r in grown["rows"]] == [None, 0.495, 0.445, 0.3]
    assert abs(grown["rows"][2]["control_gain"] + 0.06) < 1e-9
    assert abs(grown["rows"][3]["control_gain"] - 0.1) < 1e-9
    assert grown["source_commands"] == ["a.json", "b.json", "d.json"]
    assert grown["sources"] == [a, b, str(tmp_path / "d.json")]


def test_sft_vs_grpo_table_shows_an_anneal_stage():
    """Rows from ``--anneal-set`` runs: the decaying steps after SFT's and SFT's score before
    the decay get their own cells; the after-SFT column is the annealed score."""
    from experiments.sft_vs_grpo_table import table

    def score(p):
        return {"n": 200, "success": p, "ci_low": p - 0.05, "ci_high": p + 0.05}

    row = {"seed": 1, "sft_steps": 1400, "anneal_steps": 300, "sft_before_anneal": score(0.345),
           "sft": score(0.565), "grpo": score(0.6), "gain": 0.035}  # fmt: skip
    text = table({"rows": [row]})
    assert "| seed | SFT steps | before the decay | after SFT |" in text
    assert "| 1 | 1,400 + 300 decaying | 34.5 [29.5, 39.5] | 56.5 [51.5, 61.5] | 60.0" in text
    assert text.splitlines()[1].count("|") == text.splitlines()[2].count("|")
