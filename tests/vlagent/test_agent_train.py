"""Agent recipes: one multi-turn GRPO step moves the parameters with a finite loss; SFT then
GRPO run end to end through the config loader and write metrics, checkpoints and pictures."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rewards import RewardSpec
from rewards.tool_use import ToolRewardConfig
from vlagent.agent.config import AgentGRPOConfig, AgentTrainConfig, LoopConfig, ToolsConfig
from vlagent.agent.loop import AgentRuntime, EpisodeSpec
from vlagent.agent.reward import advantage_rewards, score_trajectories
from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.train.agent_grpo import agent_grpo_update
from vlagent.train.outputs import read_metrics

ZOOM = '<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [0, 0, 500, 500]}}</tool_call>'


def test_multi_turn_grpo_step_changes_parameters(tiny_dir):
    policy = load_policy(tiny_dir)
    loop = LoopConfig(max_turn_tokens=40, max_episode_tokens=100, over_limit="penalize")
    rt = AgentRuntime(policy, ToolsConfig(system_prompt="short"), loop, pixel_budget_px=128 * 96)
    images = [np.random.default_rng(i).integers(0, 256, (192, 256, 3), np.uint8) for i in range(2)]
    specs = [
        EpisodeSpec(images[g], f"Click icon {g}.", (0.1, 0.1, 0.3, 0.3), key=g, group_id=g)
        for g in range(2)
        for _ in range(3)
    ]
    # half the episodes zoom first (forced), so the batch mixes 1- and 2-image trajectories
    trajs = rt.run(specs, seed=0, forced=[[ZOOM] if i % 2 else [] for i in range(6)])
    assert {t.n_images for t in trajs} == {1, 2}
    score_trajectories(trajs, RewardSpec.from_dict({"point_in_box": 1.0}), ToolRewardConfig())
    for t in trajs:
        assert t.reward == pytest.approx(sum(t.reward_terms.values()))
    adv = torch.tensor([1.0, -0.5, -0.5, 0.8, -1.0, 0.2])  # rewards of random text are all equal
    assert torch.isfinite(advantage_rewards(trajs)).all()
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    stats = agent_grpo_update(rt, trajs, adv, opt, AgentGRPOConfig(micro_batch=4))
    assert math.isfinite(stats["loss"]) and stats["policy_tokens"] > 0
    unchanged = [n for n, p in policy.model.named_parameters() if torch.equal(p, before[n])]
    assert not unchanged, f"parameters not updated by one agent GRPO step: {unchanged}"


def test_config_validation_names_the_field():
    with pytest.raises(ConfigError, match="loop.over_limit"):
        load_config(None, ["loop.over_limit=drop"], schema=AgentTrainConfig)
    with pytest.raises(ConfigError, match="tools.names"):
        load_config(None, ["tools.names=[magnify]"], schema=AgentTrainConfig)
    cfg = load_config("configs/zoom_grpo.yaml", ["grpo.group_size=4"], schema=AgentTrainConfig)
    assert cfg.grpo.group_size == 4 and cfg.tools.names == ["zoom_in"]


@pytest.mark.parametrize("tools", [True, False])
def test_sft_then_grpo_recipes_run(tiny_dir, tmp_path, tools):
    from vlagent.train.agent_grpo import run_agent_grpo
    from vlagent.train.agent_sft import run_agent_sft

    common = [
        f"tools.enabled={str(tools).lower()}",
        "task.pixel_budget=16384",
        "eval.every=2",
        "eval.monitor_screens=2",
        "eval.rollout_pictures=1",
        "run.progress=false",
        "run.samples_every=2",
        "run.checkpoint_every=0",
        "loop.max_turn_tokens=40",
    ]
    sft_cfg = load_config(
        "configs/zoom_sft.yaml",
        [
            *common,
            f"model.path={tiny_dir}",
            f"run.out_dir={tmp_path / 'sft'}",
            "sft.steps=2",
            "sft.batch_size=2",
        ],
        schema=AgentTrainConfig,
    )
    sft = run_agent_sft(sft_cfg)
    assert sft.steps == 2
    rows = read_metrics(tmp_path / "sft" / "metrics.jsonl")
    assert all(math.isfinite(r["loss"]) for r in rows) and "val/accuracy" in rows[-1]
    assert rows[0]["assistant_tokens"] > (30 if tools else 5)
    grpo_cfg = load_config(
        "configs/zoom_grpo.yaml",
        [
            *common,
            f"model.path={sft.final_dir}",
            f"run.out_dir={tmp_path / 'grpo'}",
            "grpo.steps=2",
            "grpo.screens_per_step=1",
            "grpo.group_size=2",
            "loop.over_limit=penalize",
        ],
        schema=AgentTrainConfig,
    )
    grpo = run_agent_grpo(grpo_cfg)
    assert grpo.steps == 2
    rows = read_metrics(tmp_path / "grpo" / "metrics.jsonl")
    assert len(rows) == 2 and all(math.isfinite(r["reward/mean"]) for r in rows)
    assert (tmp_path / "grpo" / "final" / "config.json").is_file()
    assert list((tmp_path / "grpo" / "samples").glob("agent_grpo_train_*.png"))
    assert list((tmp_path / "sft" / "samples").glob("agent_sft_*.png"))


def test_experiment_entry_point_writes_json_with_command_and_pictures(tmp_path):
    """The zoom-vs-no-tools experiment at a tiny budget: both arms, step-bound stages, the
    command line in the JSON, and held-out rollout pictures per stage."""
    import json

    from vlagent.agent.experiment import main

    out = tmp_path / "res.json"
    argv = [
        "--seeds=0",
        f"--out={out}",
        f"--work={tmp_path / 'runs'}",
        "--sft-steps=1",
        "--grpo-steps=1",
        "--eval-screens=2",
        "--pictures=1",
        "--threads=1",
        "--set",
        "sft.batch_size=2",
        "grpo.screens_per_step=1",
        "grpo.group_size=2",
        "task.pixel_budget=16384",
    ]
    main(argv)
    res = json.loads(out.read_text())
    assert res["command"].startswith("python -m vlagent.agent.experiment --seeds=0")
    assert res["setup"]["held_out_screens"] == 2 and res["setup"]["screen_px"] == [1280, 736]
    for arm in ("zoom", "notools"):
        for stage in ("sft", "grpo"):
            assert res["seeds"]["0"][arm][f"{stage}_run"]["stop_reason"] == "steps"
            assert 0.0 <= res["seeds"]["0"][arm][stage]["free"]["accuracy"] <= 1.0
            pics = list(
                (tmp_path / "runs" / "seed_0" / f"{arm}_{stage}" / "samples").glob("heldout_*.png")
            )
            assert len(pics) == 1
    assert "oracle_zoom" in res["seeds"]["0"]["zoom"]["grpo"]
    assert "zoom/grpo/free/accuracy" in res["summary"] and res["wall_seconds"] > 0
