"""A reward function of the user's, named by import path: it scores the sample it belongs to,
moves the advantages, is logged under its name, and a failing one costs a sample, not the run."""

from __future__ import annotations

import logging
import math
import textwrap

import pytest
import torch
import yaml

from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import group_specs
from vlagent.train.credit import turn_advantages
from vlagent.train.grpo import run_grpo
from vlagent.train.outputs import read_metrics
from vlagent.world_config import TaskConfig
from vlagent.worlds import make_world

SMALL = [
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=20",
    "eval.every=0",
    "eval.monitor_screens=0",
    "run.progress=false",
    "run.samples_every=0",
]

MODULE = '''
def left_half(prediction, target, bonus=1.0):
    """bonus when the answer's point lies in the left half of the screen."""
    if prediction.point is None:
        return 0.0
    return bonus if prediction.point[0] < 0.5 else 0.0


def boom(prediction, target):
    raise RuntimeError("cannot score")


def not_a_number(prediction, target):
    return "high"
'''


@pytest.fixture
def user_rewards(tmp_path, monkeypatch):
    """A module ``user_rewards_mod`` on sys.path, as a user's package would be."""
    (tmp_path / "user_rewards_mod.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "user_rewards_mod"


def _episodes(policy, cfg, seed=0):
    world = make_world(cfg, policy)
    return world.episodes(
        policy,
        "train",
        group_specs(world.task_ids("train", 0, 4), 4),
        cfg.grpo.max_new_tokens,
        seed=seed,
    )


def test_custom_reward_scores_its_own_sample_and_makes_advantages(sft_dir, user_rewards):
    """Built-in terms at weight 0 make every reward 0 (no advantage); the custom term alone
    pays weight 0.5 x bonus 2.0 exactly to the episodes whose own answer points left of centre."""
    reward = {"point_in_box": 0.0, "format": 0.0}
    cfg0 = load_config(None, [*SMALL, f"model.path={sft_dir}", "model.build_tiny=false"])
    cfg0.task.reward = dict(reward)
    policy = load_policy(sft_dir)
    base = _episodes(policy, cfg0)
    assert all(t.reward == 0.0 for t in base)
    assert all(a == 0.0 for adv in turn_advantages(base, cfg0.grpo) for a in adv)

    cfg = load_config(None, [*SMALL, f"model.path={sft_dir}", "model.build_tiny=false"])
    cfg.task.reward = {**reward, f"{user_rewards}:left_half": {"weight": 0.5, "bonus": 2.0}}
    trajs = _episodes(policy, cfg)
    lefts = 0
    for t in trajs:
        point = getattr(t.extras["answer"], "point_norm", None)
        expected = 1.0 if point is not None and point[0] < 0.5 else 0.0
        lefts += expected > 0
        assert t.reward_terms["left_half"] == expected
        assert t.reward == expected
    assert 0 < lefts < len(trajs), "the tiny policy should point both left and right"
    adv = torch.tensor([a[0] for a in turn_advantages(trajs, cfg.grpo)])
    rewards = torch.tensor([t.reward for t in trajs])
    assert adv.abs().sum() > 0
    # the sign follows the sample's own reward within its group
    for g in {t.group_id for t in trajs}:
        idx = [i for i, t in enumerate(trajs) if t.group_id == g]
        mean = rewards[idx].mean()
        for i in idx:
            assert torch.sign(adv[i]) == torch.sign(rewards[i] - mean)


def test_failing_custom_reward_scores_zero_counts_and_names_the_sample(
    sft_dir, user_rewards, caplog
):
    cfg = load_config(None, [*SMALL, f"model.path={sft_dir}", "model.build_tiny=false"])
    cfg.task.reward = {"point_in_box": 1.0, f"{user_rewards}:boom": 1.0}
    policy = load_policy(sft_dir)
    with caplog.at_level(logging.WARNING, logger="rewards.composite"):
        trajs = _episodes(policy, cfg)
    world = make_world(cfg, policy)
    assert world.summarize(trajs)["reward_errors"] == len(trajs)
    for t in trajs:
        assert t.reward_terms["boom"] == 0.0
        assert t.reward == t.reward_terms["point_in_box"]
        (err,) = t.turns[-1].info["reward_errors"]
        assert err.startswith("boom: raised RuntimeError")
    ids = {t.turns[-1].info["sample_id"] for t in trajs}
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert all(sid in logged for sid in ids)


def test_custom_reward_returning_a_non_number_is_an_error_not_a_crash(sft_dir, user_rewards):
    cfg = load_config(None, [*SMALL, f"model.path={sft_dir}", "model.build_tiny=false"])
    cfg.task.reward = {"format": 0.1, f"{user_rewards}:not_a_number": 1.0}
    trajs = _episodes(load_policy(sft_dir), cfg)
    for t in trajs:
        assert t.reward_terms["not_a_number"] == 0.0
        assert "returned str" in t.turns[-1].info["reward_errors"][0]


def test_run_with_custom_reward_and_stages_logs_them_by_name(tmp_path, sft_dir, user_rewards):
    """The whole path: a YAML config naming the function and a reward stage, a GRPO run, and
    in metrics.jsonl the custom term under its name, the error count, and the stage's weights
    at step 0 (format 1.0, point_in_box 0) giving way to the reward's at step 1."""
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(
        yaml.safe_dump(
            {
                "model": {"path": str(sft_dir), "build_tiny": False},
                "task": {
                    "reward": {
                        "point_in_box": 1.0,
                        "format": 0.1,
                        "mine": {"weight": 0.5, "fn": f"{user_rewards}:left_half"},
                    },
                    "reward_stages": [
                        {"until_step": 1, "weights": {"format": 1.0, "point_in_box": 0.0}}
                    ],
                },
                "grpo": {"steps": 2},
                "run": {"out_dir": str(tmp_path / "run")},
            }
        )
    )
    run_grpo(load_config(cfg_file, SMALL))
    rows = read_metrics(tmp_path / "run" / "metrics.jsonl", "grpo")
    assert [r["step"] for r in rows] == [1, 2]  # logged after the step
    for r in rows:
        assert "reward_terms/mine" in r and math.isfinite(r["reward_terms/mine"])
        assert r["reward_errors"] == 0.0
    first, second = rows
    assert first["format_rate"] > 0 and second["format_rate"] > 0
    assert first["reward_terms/point_in_box"] == 0.0
    assert first["reward_terms/format"] == pytest.approx(first["format_rate"])
    assert second["reward_terms/format"] == pytest.approx(0.1 * second["format_rate"])
    assert second["reward_terms/point_in_box"] == pytest.approx(second["accuracy"])


@pytest.mark.parametrize(
    ("reward", "message"),
    [
        ({"no_such_mod_xyz:fn": 1.0}, "cannot import module 'no_such_mod_xyz'"),
        ({"user_rewards_mod:missing": 1.0}, "has no 'missing'"),
        ({"iou": {"weight": 1.0, "fn": "user_rewards_mod:left_half"}}, "built-in term"),
        ({"point_in_box": "lots"}, "weight must be a finite number"),
    ],
)
def test_bad_reward_config_fails_at_load_naming_the_field(user_rewards, reward, message):
    with pytest.raises(ConfigError, match=r"task\.reward: .*" + message):
        TaskConfig(reward=reward)


def test_staged_schedule_switches_training_weights_not_eval(sft_dir):
    cfg = load_config(None, [*SMALL, f"model.path={sft_dir}", "model.build_tiny=false"])
    cfg.task.reward = {"point_in_box": 1.0, "format": 0.1}
    cfg.task.reward_stages = [{"until_step": 3, "weights": {"format": 1.0, "point_in_box": 0.0}}]
    world = make_world(cfg, load_policy(sft_dir))
    weights = {}
    for step in (0, 2, 3, 10):
        world.on_step(step)
        env = world.make_env("train")
        weights[step] = {t.name: t.weight for t in env.reward_spec.terms}
        held_out = world.make_env("test")
        assert {t.name: t.weight for t in held_out.reward_spec.terms} == {
            "point_in_box": 1.0,
            "format": 0.1,
        }
    assert weights[0] == weights[2] == {"point_in_box": 0.0, "format": 1.0}
    assert weights[3] == weights[10] == {"point_in_box": 1.0, "format": 0.1}


def test_bad_reward_stage_is_a_config_error():
    with pytest.raises(ConfigError, match=r"task\.reward_stages: reward stage 0: terms \['iou'\]"):
        TaskConfig(
            reward={"point_in_box": 1.0}, reward_stages=[{"until_step": 5, "weights": {"iou": 1}}]
        )
