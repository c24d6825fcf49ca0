"""The ``press`` task (buttons in the scene) and the wrist camera of ``embodied.RobotEnv``: task
ids, the checker on constructed states, press physics, the scripted controller, seeded
layouts and images, the env contract with the wrist view (64 px renders)."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # before the first `import mujoco`
mujoco = pytest.importorskip("mujoco")

import gymnasium  # noqa: E402
from gymnasium.envs.registration import EnvSpec  # noqa: E402

from embodied.factory import make_robot_env  # noqa: E402
from embodied.measure import play_policy  # noqa: E402
from embodied.robot_env import RobotEnv  # noqa: E402
from embodied.scripted import ScriptedController  # noqa: E402
from embodied.tasks import (  # noqa: E402
    PRESS_DEPTH,
    RobotTaskError,
    is_holding,
    is_success,
    make_task,
    n_tasks,
    press_terms,
    task_distance,
)
from sim.robot import RenderBackendError, RobotScene, RobotSceneError  # noqa: E402
from sim.robot.mjcf import BUTTON_TOP, BUTTON_TRAVEL  # noqa: E402
from sim.robot.scene import BUTTONS  # noqa: E402
from tests.env_contract import check_contract, same_obs  # noqa: E402

S = 64
HELD_OUT = range(5000, 5020)  # not among measure's seeds 0..199


@pytest.fixture(autouse=True)
def _needs_gl() -> None:
    env = RobotEnv("press", image_size=8)
    try:
        env.reset(seed=0)
    except RenderBackendError as exc:
        pytest.skip(f"no offscreen GL here: {exc}")
    finally:
        env.close()


def _set_travel(scene: RobotScene, button: str, travel: float) -> None:
    """Hold ``button``'s cap ``travel`` m below rest (a constructed state, no contact)."""
    joint = scene.model.joint(f"button_{button}").id
    scene.data.qpos[scene.model.jnt_qposadr[joint]] = -travel
    mujoco.mj_forward(scene.model, scene.data)


def test_press_task_ids_name_each_button_and_cycle() -> None:
    assert n_tasks("press") == len(BUTTONS) >= 2
    tasks = [make_task("press", i) for i in range(len(BUTTONS))]
    assert [t.button for t in tasks] == list(BUTTONS)
    for i, t in enumerate(tasks):
        assert t.instruction == f"press the {t.button} button"
        assert t.cube is None and t.zone is None and t.kind == "press"
        assert make_task("press", i + 5 * len(BUTTONS)) == t
    assert make_task("press", 0).max_steps == 15 and make_task("press", 0, 0.025).max_steps == 30


def test_checker_reads_the_named_buttons_travel() -> None:
    scene = RobotScene(buttons=True)
    scene.reset(3)
    task = make_task("press", BUTTONS.index("purple"))
    assert not is_success(scene, task) and scene.button_travel("purple") == 0.0
    _set_travel(scene, "purple", PRESS_DEPTH - 1e-4)
    assert not is_success(scene, task), "just short of the threshold"
    _set_travel(scene, "purple", PRESS_DEPTH + 1e-4)
    assert is_success(scene, task)
    assert scene.button_tops()["purple"][2] == pytest.approx(BUTTON_TOP - PRESS_DEPTH - 1e-4)
    _set_travel(scene, "purple", 0.0)
    for other in BUTTONS:
        if other != "purple":
            _set_travel(scene, other, BUTTON_TRAVEL)  # every other button fully down
    assert not is_success(scene, task), "pressing another button does not count"
    assert not is_holding(scene, task)
    gap, depth = press_terms(scene, "purple")
    assert depth == PRESS_DEPTH and gap > 0.05
    assert task_distance(scene, task) == pytest.approx(gap + depth)
    with pytest.raises(RobotSceneError, match="unknown button 'pink'"):
        scene.button_travel("pink")
    plain = RobotScene()
    with pytest.raises(RobotSceneError, match="buttons=True"):
        plain.button_travel("purple")
    assert plain.button_tops() == {}


def test_fingers_press_caps_but_pass_through_cubes() -> None:
    scene = RobotScene(max_step=0.05, substeps=40, buttons=True)
    scene.reset(11)
    top = scene.button_tops()["cyan"]
    cubes = scene.cube_positions()
    scene.data.mocap_pos[0] = [top[0], top[1], 0.07]
    for z in (0.05, 0.029, 0.029):
        scene.apply([0, 0, (z - scene.ee_position()[2]) / scene.max_step, -1])
    assert PRESS_DEPTH < scene.button_travel("cyan") < BUTTON_TRAVEL
    assert all(scene.button_travel(b) == 0.0 for b in BUTTONS if b != "cyan")
    for _ in range(3):  # lift: the spring brings the cap back up
        scene.apply([0, 0, 1, -1])
    assert scene.button_travel("cyan") < 1e-3
    red = cubes["red"]
    scene.data.mocap_pos[0] = [red[0] - 0.1, red[1], 0.03]  # sweep through the red cube
    for _ in range(4):
        scene.apply([1, 0, 0, -1])
    np.testing.assert_allclose(scene.cube_positions()["red"], red, atol=1e-3)
    assert np.isfinite(scene.data.qpos).all() and scene.data.warning.number.sum() == 0


def test_layout_is_seeded_and_adds_buttons_after_the_other_objects() -> None:
    with_buttons, plain = RobotScene(buttons=True), RobotScene()
    for seed in range(60):
        with_buttons.reset(seed)
        plain.reset(seed)
        for a, b in ((with_buttons.cube_positions(), plain.cube_positions()),
                     (with_buttons.zone_positions(), plain.zone_positions())):  # fmt: skip
            assert all(np.array_equal(a[k], b[k]) for k in a), "other objects moved"
        tops = [p[:2] for p in with_buttons.button_tops().values()]
        others = [p[:2] for p in with_buttons.cube_positions().values()]
        others += [p[:2] for p in with_buttons.zone_positions().values()]
        gaps = [np.max(np.abs(t - o)) for t in tops for o in others]
        assert min(gaps) >= 0.07, "a button overlaps a cube or a zone"
        assert min(np.max(np.abs(a - b)) for i, a in enumerate(tops) for b in tops[:i]) >= 0.08
    first = with_buttons.button_tops()
    with_buttons.reset(59)
    assert all(np.array_equal(v, first[k]) for k, v in with_buttons.button_tops().items())


def test_scripted_controller_presses_the_named_button() -> None:
    env = RobotEnv("press", image_size=8, reward={"distance": 1.0})
    stats = play_policy(env, ScriptedController(env).act, HELD_OUT)
    assert stats["successes"] >= 0.95 * len(HELD_OUT), stats
    assert stats["max_steps_success"] <= 6
    env.reset(seed=3, options={"task_id": 2})
    distances = []
    while True:
        obs, reward, terminated, truncated, info = env.step(ScriptedController(env).act(None))
        distances.append(info["reward_terms"]["distance"])
        if terminated or truncated:
            break
    assert terminated and info["button"] == "cyan" and info["button_travel"] >= PRESS_DEPTH
    assert all(d > 0 for d in distances), "every scripted step makes progress"
    assert obs["proprio"][3] == 0.0, "the presser stays open"
    env.close()


def test_random_policy_rarely_presses() -> None:
    env = RobotEnv("press", image_size=8)
    rng = np.random.default_rng(0)
    stats = play_policy(env, lambda _obs: rng.uniform(-1, 1, 4), range(20))
    assert stats["successes"] <= 3 and stats["mean_steps"] > 12
    env.close()


@pytest.mark.parametrize("kind", ["press", "push"])
def test_env_contract_with_the_wrist_view(kind: str) -> None:
    spec = EnvSpec(f"vlagent/Test-{kind}-v0", "embodied.robot_env:RobotEnv", kwargs={"task": kind})
    valid = [np.zeros(4, np.float32), [0.5, -0.2, -1.0, 1.0]]
    invalid = [[0, 0, np.nan, 0], "press", np.zeros(3)]
    check_contract(lambda: gymnasium.make(spec, image_size=S, wrist_view=True), valid, invalid)


def test_wrist_image_rides_on_the_gripper_and_is_seeded() -> None:
    env = RobotEnv("press", image_size=S, wrist_view=True)
    obs, info = env.reset(seed=4, options={"task_id": 0})
    assert set(obs) == {"image", "wrist_image", "proprio", "instruction"}
    assert obs in env.observation_space and obs["wrist_image"].shape == (S, S, 3)
    assert obs["wrist_image"].dtype == np.uint8
    assert not np.array_equal(obs["wrist_image"], obs["image"])
    twin = RobotEnv("press", image_size=S, wrist_view=True)
    assert same_obs(twin.reset(seed=4, options={"task_id": 0})[0], obs), "same seed, same images"
    assert not same_obs(twin.reset(seed=5, options={"task_id": 0})[0], obs)
    moved, *_ = env.step([1, 0, 0, -1])
    assert not np.array_equal(moved["wrist_image"], obs["wrist_image"])
    fingers = moved["wrist_image"][S // 2 :, S // 4 : 3 * S // 4].reshape(-1, 3).astype(int)
    grey = (np.ptp(fingers, axis=1) < 12) & (fingers.mean(axis=1) < 110)
    assert grey.mean() > 0.05, "the dark-grey fingers are in the lower half of the wrist view"
    default = RobotEnv("press", image_size=S)
    assert "wrist_image" not in default.reset(seed=4)[0], "the default observation is unchanged"
    for e in (env, twin, default):
        e.close()


def test_wrist_options_are_checked() -> None:
    with pytest.raises(RobotTaskError, match="unknown camera 'wrist'.*wrist_view=True"):
        RobotEnv("press", camera="wrist")
    with pytest.raises(RobotTaskError, match="wrist_view must be a bool"):
        RobotEnv("press", wrist_view="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wrist_view is only available for suite 'own'"):
        make_robot_env("metaworld", "reach-v3", wrist_view=True)
    env = make_robot_env("own", "press", image_size=16, wrist_view=True)
    assert env.reset(seed=0)[0]["wrist_image"].shape == (16, 16, 3)
    env.close()


def test_snapshot_restore_brings_back_a_pressed_cap() -> None:
    env = RobotEnv("press", image_size=S, wrist_view=True)
    env.reset(seed=8, options={"task_id": 1})
    controller = ScriptedController(env)
    while env.scene.button_travel("purple") < 0.005:  # part-way down, not yet a success
        env.step(controller.act(None) * np.array([1, 1, 0.3, 1], np.float32))
    snap, travel = env.snapshot(), env.scene.button_travel("purple")
    after = env.step(controller.act(None))
    env.reset(seed=0, options={"task_id": 0})
    again = env.restore(snap)
    assert env.scene.button_travel("purple") == travel
    assert np.array_equal(again["wrist_image"], env.observation()["wrist_image"])
    redo = env.step(controller.act(None))
    assert np.array_equal(redo[0]["wrist_image"], after[0]["wrist_image"]) and redo[1:] == after[1:]
    env.close()
