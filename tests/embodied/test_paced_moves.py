"""Paced moves (``RobotEnv(paced=True)``, ``robot.paced``): a long action runs over more MuJoCo
substeps, so the gripper keeps the delta frame's top speed (0.05 m per axis per 80 ms).

What it must do: leave where a free move ends unchanged (only its duration changes), let one
``target``-frame action at ``max_step`` 0.2 carry a push (the scripted push solves one-cube,
one-zone tasks that it fails without pacing, where the cube is flung), and be refused with the
setting's name where it does not apply.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
pytest.importorskip("mujoco")

from embodied.robot_env import SUBSTEPS, RobotEnv  # noqa: E402
from embodied.tasks import RobotTaskError  # noqa: E402
from sim.robot import RenderBackendError  # noqa: E402


def _reset(env: RobotEnv, tid: int) -> None:
    try:
        env.reset(seed=tid, options={"task_id": tid})
    except RenderBackendError as exc:
        pytest.skip(f"no offscreen GL here: {exc}")


def test_substeps_grow_with_the_longest_axis() -> None:
    env = RobotEnv(max_step=0.2, paced=True, image_size=16)
    try:
        # 0.2 m on the longest axis is 4 x 0.05 m: 4 x SUBSTEPS; short moves keep SUBSTEPS
        assert env._substeps(np.array([0.3, -1.0, 0.0, 1.0])) == 4 * SUBSTEPS
        assert env._substeps(np.array([0.1, 0.0, 0.2, 1.0])) == SUBSTEPS
        assert env._substeps(np.array([0.0, 0.75, 0.0, -1.0])) == 3 * SUBSTEPS
        _reset(env, 0)
        with pytest.raises(ValueError, match="substeps must be"):
            env.scene.apply(np.zeros(4), substeps=0)
    finally:
        env.close()


def test_a_paced_free_move_ends_where_an_unpaced_one_does_and_takes_longer() -> None:
    ends, times = [], []
    for paced in (False, True):
        env = RobotEnv(
            task="reach", image_size=16, max_step=0.2, action_frame="target", paced=paced
        )
        try:
            _reset(env, 3)
            t0 = env.scene.data.time
            env.step(np.array([0.9, -0.8, 0.5, -1.0], np.float32))
            ends.append(env.scene.ee_position().copy())
            times.append(env.scene.data.time - t0)
        finally:
            env.close()
    np.testing.assert_allclose(ends[0], ends[1], atol=1e-9)
    assert times[1] > 2.5 * times[0]  # a move of > 0.15 m on its longest axis


def _scripted_push_wins(paced: bool, tasks: int) -> int:
    from embodied.measure import bin_centres
    from embodied.scripted import ScriptedController

    env = RobotEnv(
        task="push",
        image_size=16,
        max_step=0.2,
        action_frame="target",
        paced=paced,
        cubes=1,
        zones=1,
        max_steps=12,
    )
    try:
        ctl, wins = ScriptedController(env), 0
        for tid in range(tasks):
            _reset(env, tid)
            for _ in range(env.task.max_steps):
                _, _, done, trunc, info = env.step(bin_centres(ctl.act(None), 256))
                if done or trunc:
                    break
            wins += bool(info["success"])
        return wins
    finally:
        env.close()


def test_paced_target_moves_carry_a_push_that_unpaced_ones_fling() -> None:
    paced, unpaced = _scripted_push_wins(True, 12), _scripted_push_wins(False, 12)
    assert paced >= 11, paced
    assert unpaced <= 8, unpaced


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_bad_paced_values_are_refused(bad: object) -> None:
    with pytest.raises(RobotTaskError, match="paced must be a bool"):
        RobotEnv(paced=bad)  # type: ignore[arg-type]


def test_config_factory_and_world_handle_paced() -> None:
    from types import SimpleNamespace

    from embodied.factory import make_robot_env
    from vlagent.config import ConfigError, load_config
    from vlagent.robot_config import RobotConfig
    from vlagent.worlds.robot import RobotWorld

    assert RobotConfig().paced is False
    with pytest.raises(ConfigError, match="robot.paced"):
        RobotConfig(suite="metaworld", task="reach-v3", paced=True)
    with pytest.raises(ConfigError, match="robot.paced"):
        RobotConfig(paced=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="paced is only available"):
        make_robot_env(suite="metaworld", task="reach-v3", paced=True)
    cfg = load_config(None, ["world=robot", "robot.task=push", "robot.paced=true"])
    env = RobotWorld._build_env(SimpleNamespace(cfg=cfg))  # type: ignore[arg-type]
    try:
        assert env.unwrapped.paced is True
    finally:
        env.close()
