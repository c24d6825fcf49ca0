"""Zoom world data: disjoint seed splits, tiny targets, and SFT demonstrations (played by the
world's demonstrator through the runner) that are right in ORIGINAL coordinates after the
zoom (the crop's answer maps back onto the target)."""

from __future__ import annotations

import pytest

from perception_tools.geometry import box_area
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import EpisodeSpec, Limits, run_episodes
from vlagent.worlds import make_world
from vlagent.worlds.zoom import n_tool_calls, zoom_boxes_norm
from vlagent.worlds.zoom_traces import grid_window, panel_window

BASE = ["world=zoom", "task.level=hires_tiny_small", "task.pixel_budget=114688"]


def _world(path, *overrides: str):
    return make_world(load_config(None, [*BASE, *overrides]), load_policy(path))


def _demos(world, keys, limits: Limits):
    return run_episodes(
        world.policy,
        world.adapter(),
        lambda: world.make_env("demo"),
        [EpisodeSpec(k) for k in keys],
        limits,
        demonstrator=world.demonstrator(),
    )


def test_splits_are_disjoint_and_targets_are_tiny(tiny_dir):
    world = _world(tiny_dir)
    keys = {s: set(world.task_ids(s, 0, 2000)) for s in ("train", "demo", "val", "test")}
    assert all(len(v) == 2000 for v in keys.values())
    names = list(keys)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not keys[a] & keys[b], (a, b)
    for key in world.task_ids("test", 0, 20):
        s = world.sample(key)
        h, w = s.image.shape[:2]
        assert w * h > 4 * world.cfg.task.pixel_budget  # the budget view is downscaled > 2x a side
        assert 0 < box_area(s.target_box_norm) < 0.005  # < 0.5 % of the screen


@pytest.mark.parametrize(
    ("trace", "level"),
    [("random", "hires_tiny_small"), ("grid", "hires_tiny_small"), ("panel", "hires_panel")],
)
def test_zoom_demonstrations_answer_right_in_original_coordinates(tiny_dir, trace, level):
    world = _world(
        tiny_dir, "tools.system_prompt=short", f"tools.trace={trace}", f"task.level={level}"
    )
    limits = Limits(max_turns=3, max_turn_tokens=64, max_episode_tokens=160, over_limit="mask")
    keys = world.task_ids("demo", 0, 6)
    trajs = _demos(world, keys, limits)
    for t in trajs:
        assert t.status == "terminated" and t.error is None, (t.status, t.extras)
        assert n_tool_calls(t) >= 1 and t.extras["answer_observation"] >= 1
        assert t.success, (t.task_id, t.extras["answer"].point_norm, t.extras["target_box_norm"])
        terms = t.turns[-1].reward_terms
        assert terms["point_in_box"] == 1.0 and terms["tool_bonus"] > 0  # env + tool terms
        zoom = zoom_boxes_norm(t)[-1]
        x0, y0, x1, y1 = t.extras["target_box_norm"]
        assert zoom[0] <= x0 and zoom[1] <= y0 and zoom[2] >= x1 and zoom[3] >= y1
        assert box_area(zoom) < 0.1  # a real zoom, not the whole screen
    if trace == "grid":  # the grid window holds the target
        tools = world.cfg.tools
        w = grid_window(world.sample(keys[0]), tools.grid_window_w, tools.grid_window_h)
        assert box_area(w) == pytest.approx(tools.grid_window_w * tools.grid_window_h)
    if trace == "panel":  # the zoom is the panel around the target, grown by 6 % a side
        for t in trajs:
            px0, py0, px1, py1 = world.sample(t.task_id).meta["panel_box_norm"]
            want = panel_window(world.sample(t.task_id))
            assert want[0] < px0 and want[2] > px1  # grown, not the bare panel
            assert zoom_boxes_norm(t)[0] == pytest.approx(want, abs=2e-3)  # integer [0, 1000)
    summary = world.summarize(trajs)
    assert summary["accuracy"] == 1.0 and summary["zoom_has_target"] == 1.0


def test_panel_trace_names_the_level_it_needs(tiny_dir):
    world = _world(tiny_dir, "tools.system_prompt=short", "tools.trace=panel")
    with pytest.raises(ValueError, match="panel_frac"):
        panel_window(world.sample(world.task_ids("demo", 0, 1)[0]))


def test_direct_answer_demonstrations_are_right_without_tools(tiny_dir):
    world = _world(tiny_dir, "tools.enabled=false", "loop.max_images=1")
    limits = Limits(max_turns=1, max_turn_tokens=48, max_episode_tokens=48, over_limit="mask")
    trajs = _demos(world, world.task_ids("demo", 0, 6), limits)
    assert all(t.status == "terminated" for t in trajs)
    assert all(len(t.extras["images"]) == 1 and n_tool_calls(t) == 0 for t in trajs)
    assert all(t.extras["answer_observation"] == 0 for t in trajs)
    # the direct answer is rounded in observation_0's space; most still land on the target
    assert sum(t.success for t in trajs) >= 4
