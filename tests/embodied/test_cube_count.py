"""Fewer cubes on the table (``RobotEnv(cubes=k)``, ``robot.cubes``): the curriculum's first rung.

The named cube is always on the table and sits where it sits in the full scene of that seed;
the others rest off camera (no fixed camera sees their colour); the choice is seeded, so a
GRPO group's envs agree; bad values are refused with the setting's name.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
pytest.importorskip("mujoco")

from embodied.robot_env import RobotEnv, cubes_on_table  # noqa: E402
from embodied.tasks import RobotTaskError  # noqa: E402
from sim.robot import CUBES, RenderBackendError, RobotScene  # noqa: E402
from sim.robot.errors import RobotSceneError  # noqa: E402


def _on_table(scene: RobotScene) -> set[str]:
    return {c for c, p in scene.cube_positions().items() if p[2] > 0}


def test_cubes_on_table_keeps_the_named_cube_and_is_seeded() -> None:
    for seed in range(40):
        for named in CUBES:
            for n in (1, 2, 3):
                got = cubes_on_table(named, n, seed)
                assert named in got and len(got) == n
                assert got == cubes_on_table(named, n, seed)
    # the distractor of a two-cube scene varies with the layout seed
    assert len({cubes_on_table("red", 2, s) for s in range(40)}) == 2
    assert len(cubes_on_table(None, 2, 3)) == 2  # press names no cube


def test_scene_parks_the_cubes_it_leaves_off_the_table() -> None:
    scene = RobotScene()
    try:
        scene.reset(7)
        full = scene.cube_positions()
        scene.reset(7, cubes=("green",))
        part = scene.cube_positions()
        assert _on_table(scene) == {"green"}
        assert np.allclose(part["green"], full["green"])  # same place as in the full scene
        for _ in range(10):  # parked cubes rest where they are
            scene.apply([0.0, 0.0, 0.0, -1.0])
        assert np.allclose(scene.cube_positions()["red"], part["red"], atol=1e-3)
        with pytest.raises(RobotSceneError, match="distinct names"):
            scene.reset(7, cubes=("green", "green"))
        with pytest.raises(RobotSceneError, match="distinct names"):
            scene.reset(7, cubes=("pink",))
    finally:
        scene.close()


def test_no_fixed_camera_sees_a_parked_cube() -> None:
    """Parked cubes add nothing to a fixed camera's image: it equals the image with them drawn
    fully transparent."""
    scene = RobotScene()
    try:
        m = scene.model
        geoms = [m.geom(f"cube_{c}").id for c in ("green", "blue")]
        for seed in range(4):
            for cam in ("front", "top"):
                scene.reset(seed, cubes=("red",))
                try:
                    part = scene.render(96, 96, cam)
                except RenderBackendError as exc:
                    pytest.skip(f"no offscreen GL here: {exc}")
                alpha = m.geom_rgba[geoms, 3].copy()
                m.geom_rgba[geoms, 3] = 0.0
                hidden = scene.render(96, 96, cam)
                m.geom_rgba[geoms, 3] = alpha
                assert np.array_equal(part, hidden), (seed, cam)
        # the check can see a cube at all (else the equality above proves nothing)
        scene.reset(0)
        full = scene.render(96, 96, "front")
        m.geom_rgba[geoms, 3] = 0.0
        assert not np.array_equal(full, scene.render(96, 96, "front"))
        m.geom_rgba[geoms, 3] = 1.0
    finally:
        scene.close()


@pytest.mark.parametrize("kind", ["reach", "push", "press"])
def test_env_shows_the_named_cube_and_k_minus_one_others(kind: str) -> None:
    env = RobotEnv(task=kind, image_size=16, cubes=2)
    twin = RobotEnv(task=kind, image_size=16, cubes=2)
    try:
        for tid in range(6):
            try:
                env.reset(seed=tid, options={"task_id": tid})
            except RenderBackendError as exc:
                pytest.skip(f"no offscreen GL here: {exc}")
            twin.reset(seed=tid, options={"task_id": tid})
            on = _on_table(env.scene)
            assert len(on) == 2
            if env.task.cube is not None:
                assert env.task.cube in on
            assert on == _on_table(twin.scene)  # a GRPO group's members agree
    finally:
        env.close()
        twin.close()


def test_scripted_controller_solves_one_cube_reach() -> None:
    from embodied.scripted import ScriptedController

    env = RobotEnv(task="reach", image_size=16, cubes=1, action_frame="target", max_step=0.2)
    try:
        wins = 0
        for tid in range(10):
            try:
                env.reset(seed=tid, options={"task_id": tid})
            except RenderBackendError as exc:
                pytest.skip(f"no offscreen GL here: {exc}")
            ctl = ScriptedController(env)
            for _ in range(env.task.max_steps):
                _, _, done, trunc, info = env.step(ctl.act())
                if done or trunc:
                    break
            wins += bool(info["success"])
        assert wins == 10
    finally:
        env.close()


@pytest.mark.parametrize("bad", [0, 4, True, 1.5])
def test_bad_cube_counts_are_refused(bad: object) -> None:
    with pytest.raises(RobotTaskError, match="cubes"):
        RobotEnv(cubes=bad)  # type: ignore[arg-type]


def test_config_and_factory_refuse_cubes_off_the_own_suite() -> None:
    from embodied.factory import make_robot_env
    from vlagent.config import ConfigError
    from vlagent.robot_config import RobotConfig

    assert RobotConfig(cubes=1).cubes == 1
    with pytest.raises(ConfigError, match="robot.cubes"):
        RobotConfig(cubes=0)
    with pytest.raises(ConfigError, match="robot.cubes"):
        RobotConfig(suite="metaworld", task="reach-v3", cubes=1)
    with pytest.raises(ValueError, match="cubes is only available"):
        make_robot_env(suite="metaworld", task="reach-v3", cubes=2)
