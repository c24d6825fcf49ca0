"""Agent task: disjoint seed splits, tiny targets, and SFT demonstrations that are right in
ORIGINAL coordinates after the zoom (the crop's answer maps back onto the target)."""

from __future__ import annotations

import numpy as np
import pytest

from perception_tools.geometry import box_area
from rewards.tool_use import ToolRewardConfig
from vlagent.agent.config import AgentSFTConfig, AgentTaskConfig, LoopConfig, ToolsConfig
from vlagent.agent.data import AgentTask, demo_texts, grid_window
from vlagent.agent.loop import AgentRuntime
from vlagent.agent.reward import score_trajectories
from vlagent.models.loading import load_policy


@pytest.fixture(scope="module")
def task():
    return AgentTask(AgentTaskConfig())


def test_splits_are_disjoint_and_targets_are_tiny(task):
    keys = {s: set(task.keys(s, 0, 2000)) for s in ("train", "demo", "val", "test")}
    names = list(keys)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not keys[a] & keys[b], (a, b)
    for key in task.keys("test", 0, 20):
        s = task.sample(key)
        h, w = s.image.shape[:2]
        assert w * h > 4 * task.cfg.pixel_budget  # the budget view is downscaled > 2x a side
        assert 0 < box_area(s.target_box_norm) < 0.005  # < 0.5 % of the screen


@pytest.mark.parametrize("trace", ["random", "grid"])
def test_zoom_demonstrations_answer_right_in_original_coordinates(tiny_dir, task, trace):
    loop = LoopConfig(max_turns=3, max_images=3, max_turn_tokens=64, max_episode_tokens=160)
    tools = ToolsConfig(system_prompt="short")
    rt = AgentRuntime(load_policy(tiny_dir), tools, loop, pixel_budget_px=task.cfg.pixel_budget)
    cfg = AgentSFTConfig(trace=trace)
    keys = task.keys("demo", 0, 6)
    rng = np.random.default_rng(0)
    forced = [demo_texts(rt, task.sample(k), rng, cfg) for k in keys]
    trajs = rt.run([task.spec(k) for k in keys], forced=forced)
    score_trajectories(trajs, task.answer_spec, ToolRewardConfig())
    for t in trajs:
        assert not t.over_limit and t.n_tool_calls >= 1 and t.answer_observation >= 1
        assert t.correct, (t.key, t.answer.point_norm, t.target_box_norm)
        zoom = t.zoom_boxes_norm[-1]
        x0, y0, x1, y1 = t.target_box_norm
        assert zoom[0] <= x0 and zoom[1] <= y0 and zoom[2] >= x1 and zoom[3] >= y1
        assert box_area(zoom) < 0.1  # a real zoom, not the whole screen
    if trace == "grid":  # the grid window holds the target
        s = task.sample(keys[0])
        w = grid_window(s, cfg.grid_window_w, cfg.grid_window_h)
        assert box_area(w) == pytest.approx(cfg.grid_window_w * cfg.grid_window_h)


def test_direct_answer_demonstrations_are_right_without_tools(tiny_dir, task):
    loop = LoopConfig(max_turns=1, max_images=1, max_turn_tokens=48, max_episode_tokens=48)
    tools = ToolsConfig(enabled=False)
    rt = AgentRuntime(load_policy(tiny_dir), tools, loop, pixel_budget_px=task.cfg.pixel_budget)
    keys = task.keys("demo", 0, 6)
    rng = np.random.default_rng(0)
    forced = [demo_texts(rt, task.sample(k), rng, AgentSFTConfig()) for k in keys]
    trajs = rt.run([task.spec(k) for k in keys], forced=forced)
    score_trajectories(trajs, task.answer_spec, ToolRewardConfig())
    assert all(t.n_images == 1 and t.n_tool_calls == 0 for t in trajs)
    # the direct answer is rounded in observation_0's space; most still land on the target
    assert sum(t.correct for t in trajs) >= 4
