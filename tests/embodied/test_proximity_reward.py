"""The Gaussian ``proximity`` shaping term of the robot envs: the pure function against hand
values, its potential form (an episode's terms sum to ``proximity(final) - proximity(start)``),
its weight, and that it is off by default."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embodied import RobotEnv
from embodied.robot_actions import DEFAULT_REWARD, PROXIMITY_SCALE, proximity
from embodied.tasks import task_distance
from sim.robot.scene import WORKSPACE_HI, WORKSPACE_LO


def test_proximity_hand_values() -> None:
    assert PROXIMITY_SCALE == 0.03
    assert proximity(0.0) == 1.0
    assert proximity(0.03) == pytest.approx(math.exp(-0.5))  # one standard deviation: 0.6065
    assert proximity(0.01) == pytest.approx(0.9459594689)  # exp(-1/18)
    assert proximity(0.06) == pytest.approx(0.1353352832)  # exp(-2)
    assert proximity(0.02, scale=0.01) == pytest.approx(math.exp(-2.0))
    assert proximity(0.01) > proximity(0.02) > proximity(0.05), "closer scores higher"


def test_proximity_is_off_by_default() -> None:
    assert DEFAULT_REWARD["proximity"] == 0.0
    env = RobotEnv("reach", image_size=8)
    env.reset(seed=1, options={"task_id": 0})
    _, _, _, _, info = env.step(np.array([0.3, -0.2, -0.5, -1.0], dtype=np.float32))
    assert info["reward_terms"]["proximity"] == 0.0
    env.close()


def _goal_action(goal: np.ndarray) -> np.ndarray:
    """The target-frame action naming the world point ``goal`` (m), gripper open."""
    lo, hi = np.asarray(WORKSPACE_LO), np.asarray(WORKSPACE_HI)
    return np.append(2 * (goal - lo) / (hi - lo) - 1, -1.0).astype(np.float32)


def test_proximity_terms_telescope_to_final_minus_start() -> None:
    weight = 2.5
    env = RobotEnv("reach", image_size=8, reward={"proximity": weight}, action_frame="target")
    env.reset(seed=4, options={"task_id": 1})
    start = task_distance(env.scene, env.task)
    cube = env.scene.cube_positions()[env.task.cube]
    total = 0.0
    for offset in (0.08, 0.04, 0.03, 0.025):  # approach, never within the success tolerance
        action = _goal_action(cube + np.array([offset, 0.0, 0.02]))
        _, reward, term, trunc, info = env.step(action)
        total += info["reward_terms"]["proximity"]
        assert reward == pytest.approx(sum(info["reward_terms"].values()))
        assert not term
        if trunc:
            break
    final = task_distance(env.scene, env.task)
    assert abs(total) > 0.1, "the potential must change for the check to mean much"
    assert total == pytest.approx(weight * (proximity(final) - proximity(start)), abs=1e-12)
    env.close()


def test_a_near_miss_outscores_a_far_one() -> None:
    """Two reach episodes from one state: the goal 1 cm off the cube's top beats 5 cm off."""
    returns = []
    for offset in (0.01, 0.05):
        env = RobotEnv(
            "reach",
            image_size=8,
            reward={"success": 0.0, "proximity": 1.0},
            action_frame="target",
            max_step=0.2,
        )
        env.reset(seed=2, options={"task_id": 0})
        cube = env.scene.cube_positions()[env.task.cube]
        goal = cube + np.array([offset, 0.0, 0.02])
        action = _goal_action(goal)
        total = 0.0
        for _ in range(3):  # enough steps to arrive from home
            total += env.step(action)[1]
        returns.append((total, task_distance(env.scene, env.task)))
        env.close()
    (near, d_near), (far, d_far) = returns
    assert d_near < d_far
    assert near > far
