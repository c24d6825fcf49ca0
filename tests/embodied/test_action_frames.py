"""The ``target`` action frame: goal points of the workspace instead of moves.

Pure math against hand-computed cases, then the env (one capped step towards the point, landing
on it when near), the scripted controller through 256-bin quantization, and the config / factory
refusals for suites whose actions are moves.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from embodied.measure import bin_centres
from embodied.robot_actions import point_action, step_towards, target_point

LO = np.array([-0.25, -0.25, 0.02])
HI = np.array([0.25, 0.25, 0.30])


def test_target_point_maps_the_cube_corners_and_centre() -> None:
    assert np.allclose(target_point([-1, -1, -1], LO, HI), LO)
    assert np.allclose(target_point([1, 1, 1], LO, HI), HI)
    assert np.allclose(target_point([0, 0.5, 0], LO, HI), [0.0, 0.125, 0.16])
    assert np.allclose(target_point([3, -7, 0], LO, HI), [0.25, -0.25, 0.16])  # clipped


def test_point_action_inverts_target_point_and_clips() -> None:
    p = np.array([0.1, -0.2, 0.05])
    assert np.allclose(point_action(p, LO, HI), [0.4, -0.8, 2 * 0.03 / 0.28 - 1])
    assert np.allclose(target_point(point_action(p, LO, HI), LO, HI), p)
    assert np.allclose(point_action([1.0, -1.0, 0.0], LO, HI), [1.0, -1.0, -1.0])


def test_step_towards_caps_each_axis_and_keeps_the_direction() -> None:
    ee = np.array([0.0, 0.0, 0.1])
    # 0.2 m in x and 0.1 m in y at 0.05 m per step: x is capped at 1, y scaled to 0.5
    assert np.allclose(step_towards([0.2, 0.1, 0.1], ee, 0.05), [1.0, 0.5, 0.0])
    # within one step: exactly the remaining way (the gripper lands on the point)
    assert np.allclose(step_towards([0.02, -0.01, 0.1], ee, 0.05), [0.4, -0.2, 0.0])
    assert np.allclose(step_towards(ee, ee, 0.05), 0.0)


def test_bin_centres_matches_the_codec() -> None:
    from vlagent.codec.robot_actions import RobotActionCodec

    codec = RobotActionCodec(dims=4, chunk=1, n_bins=256, style="digits")
    a = np.random.default_rng(0).uniform(-1, 1, (50, 4))
    assert np.allclose(bin_centres(a, 256), codec.bins.centres(codec.bins.to_bins(a)))
    assert bin_centres(a, 0) is a


# ------------------------------------------------------------------------------ env level
@pytest.fixture
def mujoco_env():
    os.environ.setdefault("MUJOCO_GL", "egl")
    pytest.importorskip("mujoco")
    from embodied.robot_env import RobotEnv
    from sim.robot import RenderBackendError

    envs = []

    def make(**kw):
        env = RobotEnv(image_size=16, **kw)
        envs.append(env)
        try:
            env.reset(seed=0, options={"task_id": 0})
        except RenderBackendError as exc:
            pytest.skip(f"no offscreen GL here: {exc}")
        return env

    yield make
    for e in envs:
        e.close()


def test_target_frame_heads_to_the_point_and_stops_on_it(mujoco_env) -> None:
    env = mujoco_env(action_frame="target", max_step=0.05)
    start = env.scene.ee_position()  # EE_HOME (0, 0, 0.15)
    goal = np.array([0.2, 0.05, 0.15])
    a = np.array([*point_action(goal, LO, HI), -1.0], np.float32)
    env.step(a)
    # first step: x capped at 0.05 m, y scaled to keep the direction (0.05 * 0.05 / 0.2)
    assert np.allclose(env.scene.ee_position() - start, [0.05, 0.0125, 0.0], atol=1e-6)
    for _ in range(5):
        env.step(a)
    assert np.allclose(env.scene.ee_position(), goal, atol=1e-6)  # arrived and stays


def test_delta_frame_reads_the_same_numbers_as_a_move(mujoco_env) -> None:
    env = mujoco_env(action_frame="delta", max_step=0.05)
    start = env.scene.ee_position()
    env.step(np.array([0.4, -0.2, 0.0, -1.0], np.float32))
    assert np.allclose(env.scene.ee_position() - start, [0.02, -0.01, 0.0], atol=1e-6)


def test_invalid_action_in_the_target_frame_is_a_no_op(mujoco_env) -> None:
    env = mujoco_env(action_frame="target")
    start = env.scene.ee_position()
    *_, info = env.step("move left")
    assert info["invalid_action"] and np.allclose(env.scene.ee_position(), start)


def test_unknown_action_frame_is_named(mujoco_env) -> None:
    from embodied.robot_env import RobotEnv

    with pytest.raises(ValueError, match="action_frame must be one of delta, target"):
        RobotEnv(action_frame="absolute")


@pytest.mark.parametrize("kind", ["reach", "push", "pick_place", "press"])
def test_scripted_controller_solves_in_the_target_frame_through_256_bins(mujoco_env, kind) -> None:
    from embodied.measure import play_policy
    from embodied.scripted import ScriptedController

    env = mujoco_env(task=kind, action_frame="target")
    controller = ScriptedController(env)
    stats = play_policy(env, lambda obs: bin_centres(controller.act(obs), 256), range(1000, 1004))
    assert stats["successes"] == 4, stats


def test_factory_refuses_the_target_frame_for_suites_of_moves() -> None:
    from embodied.factory import make_robot_env

    with pytest.raises(ValueError, match="only available for suite 'own'"):
        make_robot_env(suite="metaworld", task="reach-v3", action_frame="target")


def test_config_refuses_the_target_frame_outside_the_own_suite() -> None:
    from vlagent.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="robot.action_frame"):
        load_config(
            "robot_sft",
            ["robot.suite=metaworld", "robot.task=reach-v3", "robot.action_frame=target"],
        )
    with pytest.raises(ConfigError, match="robot.action_frame"):
        load_config("robot_sft", ["robot.action_frame=absolute"])
    assert load_config("robot_sft", ["robot.action_frame=target"]).robot.action_frame == "target"


def test_system_prompt_says_what_the_numbers_mean_in_each_frame() -> None:
    from vlagent.config import load_config
    from vlagent.worlds.robot import system_prompt

    delta = system_prompt(load_config("robot_sft", []).robot)
    target = system_prompt(load_config("robot_sft", ["robot.action_frame=target"]).robot)
    assert "dx dy dz gripper" in delta and "no motion" in delta
    assert "x y z gripper" in target and "moves to" in target and "dx" not in target


def test_measure_cli_records_the_frame_and_bins(mujoco_env, tmp_path) -> None:
    import json

    from embodied.measure import main

    mujoco_env()  # skips without offscreen GL
    out = tmp_path / "m.json"
    args = ["--episodes", "2", "--kinds", "reach", "--image-size", "8", "--out", str(out)]
    assert main([*args, "--action-frame", "target", "--bins", "256"]) == 0
    report = json.loads(out.read_text())
    assert report["config"]["action_frame"] == "target" and report["config"]["bins"] == 256
    assert report["results"]["reach"]["scripted"]["successes"] == 2
