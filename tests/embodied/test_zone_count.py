"""Fewer target zones on the table (``RobotEnv(zones=k)``, ``robot.zones``): one-zone push and
pick_place.

The named zone is always on the table and sits where it sits in the full scene of that seed;
the other lies on the floor off camera (the one-zone image is the full scene's with that zone
drawn transparent); the choice is seeded, on a stream of its own, so a GRPO group's envs agree
and the cubes' places and choice and the buttons' places do not change; bad values are refused
with the setting's name.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
pytest.importorskip("mujoco")

from embodied.robot_env import RobotEnv, zones_on_table  # noqa: E402
from embodied.tasks import RobotTaskError  # noqa: E402
from sim.robot import ZONES, RenderBackendError, RobotScene  # noqa: E402
from sim.robot.errors import RobotSceneError  # noqa: E402
from sim.robot.mjcf import FLOOR_Z  # noqa: E402


def _on_table(scene: RobotScene) -> set[str]:
    return {z for z, p in scene.zone_positions().items() if p[2] > 0}


def test_zones_on_table_keeps_the_named_zone_and_is_seeded() -> None:
    for seed in range(40):
        for named in ZONES:
            for n in (1, 2):
                got = zones_on_table(named, n, seed)
                assert named in got and len(got) == n
                assert got == zones_on_table(named, n, seed)
        assert len(zones_on_table(None, 1, seed)) == 1  # reach and press name no zone
    # reach / press draw their one zone from the layout seed, on the zones' own stream (not
    # the cubes' [seed, 1]): pinned, so a change of stream shows
    drawn = "".join(zones_on_table(None, 1, s)[0][0] for s in range(16))
    assert drawn == "bbbbgbbgggbgbgbb"


def test_scene_parks_the_zones_it_leaves_off_the_table() -> None:
    scene = RobotScene()
    try:
        scene.reset(7)
        full_zones, full_cubes = scene.zone_positions(), scene.cube_positions()
        scene.reset(7, zones=("blue",))
        part = scene.zone_positions()
        assert _on_table(scene) == {"blue"}
        assert np.array_equal(part["blue"], full_zones["blue"])  # its full-scene place
        assert part["green"][2] == pytest.approx(FLOOR_Z + 0.0005)  # on the floor
        for c, p in scene.cube_positions().items():  # the cubes' draws do not move
            assert np.array_equal(p, full_cubes[c]), c
        # a parked zone is just far away: no cube, on the table or parked, is over it
        scene.reset(7, cubes=("red",), zones=("blue",))
        assert not any(scene.in_zone(c, "green") for c in scene.cube_positions())
        for _ in range(5):  # the parked zone stays where it is
            scene.apply([0.0, 0.0, 0.0, -1.0])
        assert np.array_equal(scene.zone_positions()["green"], part["green"])
        with pytest.raises(RobotSceneError, match="zones must be distinct names"):
            scene.reset(7, zones=("green", "green"))
        with pytest.raises(RobotSceneError, match="zones must be distinct names"):
            scene.reset(7, zones=("pink",))
    finally:
        scene.close()


def test_buttons_keep_their_places() -> None:
    """Buttons keep clear of the zones' drawn places, parked or not: same places as with every
    zone on the table."""
    scene = RobotScene(buttons=True)
    try:
        for seed in range(6):
            scene.reset(seed)
            full = scene.button_tops()
            for z in ZONES:
                scene.reset(seed, zones=(z,))
                for b, top in scene.button_tops().items():
                    assert np.array_equal(top, full[b]), (seed, z, b)
    finally:
        scene.close()


def test_one_zone_image_is_the_full_one_without_the_other_zone() -> None:
    """Each fixed camera's image of the one-zone scene equals the full scene's with the other
    zone drawn fully transparent: the parked zone is out of view and nothing else moved."""
    scene = RobotScene()
    try:
        m = scene.model
        for seed in range(3):
            for keep in ZONES:
                gone = m.geom(f"zone_{next(z for z in ZONES if z != keep)}").id
                for cam in ("front", "top"):
                    scene.reset(seed, zones=(keep,))
                    try:
                        part = scene.render(64, 64, cam)
                    except RenderBackendError as exc:
                        pytest.skip(f"no offscreen GL here: {exc}")
                    scene.reset(seed)
                    full = scene.render(64, 64, cam)
                    # the check can see the zone (else the equality below proves nothing)
                    assert not np.array_equal(part, full), (seed, keep, cam)
                    m.geom_rgba[gone, 3] = 0.0
                    hidden = scene.render(64, 64, cam)
                    m.geom_rgba[gone, 3] = 1.0
                    assert np.array_equal(part, hidden), (seed, keep, cam)
    finally:
        scene.close()


@pytest.mark.parametrize("kind", ["reach", "push", "pick_place", "press"])
def test_env_keeps_the_named_zone_at_its_full_scene_place(kind: str) -> None:
    env = RobotEnv(task=kind, image_size=16, zones=1)
    twin = RobotEnv(task=kind, image_size=16, zones=1)
    full = RobotEnv(task=kind, image_size=16)
    try:
        for tid in range(6):
            try:
                env.reset(seed=tid, options={"task_id": tid})
            except RenderBackendError as exc:
                pytest.skip(f"no offscreen GL here: {exc}")
            twin.reset(seed=tid, options={"task_id": tid})
            full.reset(seed=tid, options={"task_id": tid})
            on = _on_table(env.scene)
            assert len(on) == 1
            assert on == _on_table(twin.scene)  # a GRPO group's members agree
            if env.task.zone is not None:
                assert on == {env.task.zone}
            z = next(iter(on))
            assert np.array_equal(env.scene.zone_positions()[z], full.scene.zone_positions()[z])
            for c, p in env.scene.cube_positions().items():  # cubes untouched by zones
                assert np.array_equal(p, full.scene.cube_positions()[c]), (tid, c)
            if kind == "press":  # the buttons too
                tops, ref = env.scene.button_tops(), full.scene.button_tops()
                assert all(np.array_equal(tops[b], ref[b]) for b in tops), tid
    finally:
        for e in (env, twin, full):
            e.close()


def test_scripted_controller_solves_one_zone_push() -> None:
    from embodied.scripted import ScriptedController

    env = RobotEnv(task="push", image_size=16, zones=1)
    try:
        wins = 0
        for tid in range(6):  # every cube x zone pair once
            try:
                env.reset(seed=tid, options={"task_id": tid})
            except RenderBackendError as exc:
                pytest.skip(f"no offscreen GL here: {exc}")
            assert _on_table(env.scene) == {env.task.zone}
            ctl = ScriptedController(env)
            for _ in range(env.task.max_steps):
                _, _, done, trunc, info = env.step(ctl.act(None))
                if done or trunc:
                    break
            wins += bool(info["success"])
        assert wins == 6
    finally:
        env.close()


@pytest.mark.parametrize("bad", [0, 3, True, 1.5])
def test_bad_zone_counts_are_refused(bad: object) -> None:
    with pytest.raises(RobotTaskError, match="zones must be an int"):
        RobotEnv(zones=bad)  # type: ignore[arg-type]


def test_config_factory_and_world_handle_zones() -> None:
    from types import SimpleNamespace

    from embodied.factory import make_robot_env
    from vlagent.config import ConfigError, load_config
    from vlagent.robot_config import RobotConfig

    assert RobotConfig(zones=1).zones == 1
    for bad in ("0", "3"):
        with pytest.raises(ConfigError, match="robot.zones"):
            load_config(None, ["world=robot", f"robot.zones={bad}"])
    with pytest.raises(ConfigError, match="robot.zones"):
        RobotConfig(zones=True)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="robot.zones"):
        RobotConfig(suite="metaworld", task="reach-v3", zones=1)
    with pytest.raises(ValueError, match="zones is only available"):
        make_robot_env(suite="metaworld", task="reach-v3", zones=1)
    env = make_robot_env(task="push", image_size=16, zones=1)
    assert env.n_zones == 1
    env.close()
    # the robot world builds its envs with robot.zones
    from vlagent.worlds.robot import RobotWorld

    cfg = load_config(None, ["world=robot", "robot.task=push", "robot.zones=1"])
    env = RobotWorld._build_env(SimpleNamespace(cfg=cfg))  # type: ignore[arg-type]
    try:
        assert env.unwrapped.n_zones == 1
    finally:
        env.close()
