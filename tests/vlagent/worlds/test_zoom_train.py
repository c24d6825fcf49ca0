"""Zoom world training: one multi-turn GRPO step (credit from the env + tool terms, the one
update) moves the parameters with a finite loss; GRPO in the zoom world moves them too; SFT
then GRPO run end to end through the packaged recipes and write metrics, checkpoints and
pictures."""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import group_specs
from vlagent.train.common import Timer
from vlagent.train.credit import episode_rewards, turn_advantages
from vlagent.train.grpo import train_step
from vlagent.train.outputs import read_metrics
from vlagent.worlds import make_world

ZOOM = '<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [0, 0, 500, 500]}}</tool_call>'


class ZoomFirstInOddEpisodes:
    """Demonstrator: the 2nd, 4th, ... episode (in spec order) zooms first; all else samples."""

    def __init__(self) -> None:
        self.order: dict[int, int] = {}

    def text(self, traj, obs, info):
        index = self.order.setdefault(id(traj), len(self.order))
        return ZOOM if index % 2 and not traj.turns else None


def test_multi_turn_grpo_step_changes_parameters(tiny_dir):
    policy = load_policy(tiny_dir)
    cfg = load_config(
        None,
        [
            "world=zoom",
            "task.level=basic",
            f"task.pixel_budget={128 * 96}",
            "tools.system_prompt=short",
            "tools.reward.free_calls=0",  # each call costs: the zoomed half earns less
            "loop.max_turns=4",
            "loop.max_episode_tokens=100",
            "loop.over_limit=penalize",
        ],
    )
    world = make_world(cfg, policy)
    trajs = world.episodes(
        policy,
        "train",
        group_specs(world.task_ids("train", 0, 2), 3),
        40,
        seed=0,
        demonstrator=ZoomFirstInOddEpisodes(),
    )
    # half the episodes zoom first, so the batch mixes 1- and 2-image trajectories
    assert [len(t.extras["images"]) for t in trajs] == [1, 2, 1, 2, 1, 2]
    assert [t.group_id for t in trajs] == [0, 0, 0, 1, 1, 1]
    for t in trajs:
        assert t.error is None and t.done
        assert t.reward == pytest.approx(sum(t.reward_terms.values()))
    assert torch.isfinite(episode_rewards(trajs)).all()
    g = GRPOConfig(micro_batch_size=4, max_new_tokens=40)
    adv = turn_advantages(trajs, g)
    assert all(len(set(a)) == 1 for a in adv)  # every turn gets its episode's advantage
    assert any(a[0] != 0 for a in adv)  # the call cost spreads rewards inside each group
    rows = build_rows(trajs, adv, policy.tokenizer.pad_token_id)
    assert sum(bool(im) for im in rows.images) == 3  # zoom images ride in the continuations
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3, weight_decay=0.0)
    stats = train_step(policy, trajs, g, opt, None, None, 0, Timer())
    assert math.isfinite(stats["loss"]) and stats["grad_norm"] > 0
    assert stats["optimizer_steps"] == 1 and stats["adv_abs_mean"] > 0
    unchanged = [n for n, p in policy.model.named_parameters() if torch.equal(p, before[n])]
    assert not unchanged, f"parameters not updated by one multi-turn GRPO step: {unchanged}"


def test_config_validation_names_the_field():
    with pytest.raises(ConfigError, match="loop.over_limit"):
        load_config(None, ["world=zoom", "loop.over_limit=drop"])
    with pytest.raises(ConfigError, match="tools.names"):
        load_config(None, ["world=zoom", "tools.names=[magnify]"])
    cfg = load_config("zoom_grpo", ["grpo.group_size=4"])
    assert cfg.world == "zoom" and cfg.recipe == "grpo"
    assert cfg.grpo.group_size == 4 and cfg.tools.names == ["zoom_in"]


def test_zoom_grpo_run_changes_parameters(sft_dir, tmp_path):
    """run_grpo in the zoom world (tools on, up to 3 turns) from the grounding SFT model,
    whose answers parse, so rewards vary inside groups and the update moves the weights."""
    from vlagent.train.grpo import run_grpo

    cfg = load_config(
        None,
        [
            "world=zoom",
            "recipe=grpo",
            f"model.path={sft_dir}",
            "model.build_tiny=false",
            f"run.out_dir={tmp_path}",
            "task.level=basic",
            "tools.system_prompt=none",  # the prompt the SFT model was trained on
            "loop.max_turns=3",
            "grpo.steps=2",
            "grpo.prompts_per_step=2",
            "grpo.group_size=4",
            "grpo.max_new_tokens=16",
            "grpo.lr=1e-3",
            "eval.every=0",
            "eval.rollout_pictures=0",
            "run.progress=false",
            "run.samples_every=0",
            "run.checkpoint_every=0",
        ],
    )
    result = run_grpo(cfg)
    assert result.steps == 2
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert len(rows) == 2 and all(math.isfinite(r["loss"]) for r in rows)
    assert max(r["reward/std"] for r in rows) > 0 and max(r["adv_abs_mean"] for r in rows) > 0
    assert all("tool_calls" in r and "accuracy" in r for r in rows)  # the zoom world's metrics
    before = load_policy(sft_dir).model.state_dict()
    after = load_policy(result.final_dir).model.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert len(changed) > len(before) // 2, f"only {len(changed)} of {len(before)} changed"


@pytest.mark.parametrize("tools", [True, False])
def test_sft_then_grpo_recipes_run(tiny_dir, tmp_path, tools):
    from vlagent.train.grpo import run_grpo
    from vlagent.train.sft import run_sft

    common = [
        f"tools.enabled={str(tools).lower()}",
        "task.pixel_budget=16384",
        "eval.every=2",
        "eval.monitor_screens=2",
        "eval.rollout_pictures=1",
        "eval.max_new_tokens=40",
        "run.progress=false",
        "run.samples_every=2",
        "run.checkpoint_every=0",
        "grpo.max_new_tokens=40",
    ]
    sft_cfg = load_config(
        "zoom_sft",
        [
            *common,
            f"model.path={tiny_dir}",
            f"run.out_dir={tmp_path / 'sft'}",
            "sft.steps=2",
            "sft.batch_size=2",
        ],
    )
    assert sft_cfg.world == "zoom" and sft_cfg.recipe == "sft"
    sft = run_sft(sft_cfg)
    assert sft.steps == 2
    rows = read_metrics(tmp_path / "sft" / "metrics.jsonl")
    assert all(math.isfinite(r["loss"]) for r in rows) and "val/accuracy" in rows[-1]
    assert rows[0]["tokens"] > (30 if tools else 5)  # a zoom trace is longer than an answer
    grpo_cfg = load_config(
        "zoom_grpo",
        [
            *common,
            f"model.path={sft.final_dir}",
            f"run.out_dir={tmp_path / 'grpo'}",
            "grpo.steps=2",
            "grpo.prompts_per_step=1",
            "grpo.group_size=2",
            "loop.over_limit=penalize",
        ],
    )
    grpo = run_grpo(grpo_cfg)
    assert grpo.steps == 2
    rows = read_metrics(tmp_path / "grpo" / "metrics.jsonl")
    assert len(rows) == 2 and all(math.isfinite(r["reward/mean"]) for r in rows)
    assert "val/accuracy" in rows[-1] and "val/tool_calls" in rows[-1]
    assert (tmp_path / "grpo" / "final" / "config.json").is_file()
    assert list((tmp_path / "grpo" / "samples").glob("grpo_step_*.png"))
    assert list((tmp_path / "sft" / "samples").glob("sft_val_*.png"))
