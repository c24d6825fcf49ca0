"""Tests of sim.robot.RobotScene: seeding, snapshots, actions, grasping, rendering, validation."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # must precede the first `import mujoco`
mujoco = pytest.importorskip("mujoco")

from sim.robot import CUBES, RenderBackendError, RobotActionError, RobotScene  # noqa: E402
from sim.robot.scene import BUTTONS, CAMERAS, WORKSPACE_HI  # noqa: E402


@pytest.fixture(scope="module")
def scene() -> RobotScene:
    s = RobotScene()
    yield s
    s.close()


def _full_state(s: RobotScene) -> np.ndarray:
    snap = s.snapshot()
    return np.concatenate([snap.state, snap.eq_data.ravel(), [snap.closed, snap.held]])


def _move_to(s: RobotScene, target: np.ndarray, grip: float, tol: float = 1e-6) -> None:
    """Scripted controller: full-speed steps towards ``target`` (world m) with gripper ``grip``."""
    for _ in range(200):
        delta = (np.asarray(target) - s.ee_position()) / s.max_step
        if np.max(np.abs(delta)) < tol:
            return
        s.apply([*np.clip(delta, -1, 1), grip])
    raise AssertionError(f"end effector did not reach {target}")


def _settle(s: RobotScene, grip: float, n: int = 10) -> None:
    for _ in range(n):
        s.apply([0, 0, 0, grip])


def test_reset_is_seeded(scene: RobotScene) -> None:
    scene.reset(7)
    a = _full_state(scene)
    scene.apply([1, 0, 0, -1])
    scene.reset(7)
    assert np.array_equal(_full_state(scene), a)
    scene.reset(8)
    assert not np.array_equal(_full_state(scene), a)
    for seed in range(20):  # placements never overlap
        scene.reset(seed)
        xy = [p[:2] for p in scene.cube_positions().values()]
        gaps = [np.max(np.abs(xy[i] - xy[j])) for i in range(3) for j in range(i)]
        assert min(gaps) >= 0.08


def test_snapshot_restore_is_bit_identical(scene: RobotScene) -> None:
    scene.reset(3)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, size=(30, 4))
    for a in actions[:10]:
        scene.apply(a)
    snap = scene.snapshot()
    for a in actions[10:]:
        scene.apply(a)
    first = _full_state(scene)
    scene.reset(99)  # wander off, then come back
    scene.restore(snap)
    for a in actions[10:]:
        scene.apply(a)
    assert np.array_equal(_full_state(scene), first)


def test_restore_while_holding_a_cube_restores_the_grasp(scene: RobotScene) -> None:
    scene.reset(0)
    red = scene.cube_positions()["red"]
    _move_to(scene, [red[0], red[1], red[2]], -1)
    _settle(scene, 1, 2)
    snap = scene.snapshot()  # red cube welded to the gripper
    path = [[0.3, -0.2, 1, 1]] * 5 + [[0.5, 0.5, 0, 1]] * 5 + [[0, 0, 0, -1]] * 5
    for a in path:
        scene.apply(a)
    first = _full_state(scene)
    scene.reset(5)
    scene.restore(snap)
    assert scene.held == CUBES.index("red")
    for a in path:
        scene.apply(a)
    assert np.array_equal(_full_state(scene), first)


def test_action_moves_in_commanded_direction_and_respects_workspace(scene: RobotScene) -> None:
    scene.reset(0)
    p0 = scene.ee_position()
    scene.apply([1, -0.5, 0, -1])
    step = scene.ee_position() - p0
    np.testing.assert_allclose(step, [scene.max_step, -0.5 * scene.max_step, 0], atol=1e-12)
    scene.apply([5, 0, 0, -1])  # out-of-range values are clipped to 1
    np.testing.assert_allclose(scene.ee_position()[0] - p0[0], 2 * scene.max_step, atol=1e-12)
    for _ in range(100):
        scene.apply([1, 1, 1, -1])
    np.testing.assert_allclose(scene.ee_position(), WORKSPACE_HI, atol=1e-12)


def test_scripted_pick_and_place_puts_red_in_green_zone(scene: RobotScene) -> None:
    for seed in (0, 1, 2):
        scene.reset(seed)
        red = scene.cube_positions()["red"]
        zone = scene.zone_positions()["green"]
        assert not scene.in_zone("red", "green")
        _move_to(scene, [red[0], red[1], 0.12], -1)
        _move_to(scene, [red[0], red[1], red[2]], -1)
        _settle(scene, 1, 2)  # close
        assert scene.held == CUBES.index("red")
        _move_to(scene, [red[0], red[1], 0.12], 1)
        assert scene.cube_positions()["red"][2] > 0.09, "cube was not lifted"
        _move_to(scene, [zone[0], zone[1], 0.12], 1)
        _move_to(scene, [zone[0], zone[1], 0.025], 1)
        _settle(scene, 1, 5)  # the welded cube catches up with the gripper
        assert scene.cube_positions()["red"][2] < 0.03  # low enough to count as resting...
        assert not scene.in_zone("red", "green"), "...but a held cube is not placed"
        _settle(scene, -1, 20)  # open and let it fall
        _move_to(scene, [zone[0], zone[1], 0.12], -1)
        assert scene.in_zone("red", "green"), scene.cube_positions()["red"]
        assert not scene.in_zone("blue", "green")


def test_closing_away_from_cubes_grasps_nothing(scene: RobotScene) -> None:
    scene.reset(0)
    before = scene.cube_positions()
    _settle(scene, 1, 2)
    _move_to(scene, [0.0, 0.0, 0.25], 1)
    assert scene.held == -1
    for name, pos in scene.cube_positions().items():
        np.testing.assert_allclose(pos, before[name], atol=1e-3)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ([0, 0, float("nan"), 1], "non-finite values.*dz=nan"),
        ([0, 0, 0, float("inf")], "non-finite values.*gripper=inf"),
        ([0, 0, 0], "exactly 4 values.*shape \\(3,\\)"),
        ([[0, 0, 0, 0]], "exactly 4 values"),
        (["a", 0, 0, 0], "must be 4 numbers"),
    ],
)
def test_bad_actions_raise_clear_value_error(scene: RobotScene, action: list, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        scene.apply(action)
    assert isinstance(info.value, RobotActionError)


def test_unknown_names_raise(scene: RobotScene) -> None:
    with pytest.raises(ValueError, match="unknown cube 'pink'"):
        scene.in_zone("pink", "green")
    with pytest.raises(ValueError, match="unknown zone 'red'"):
        scene.in_zone("red", "red")
    with pytest.raises(ValueError, match="unknown camera 'side'"):
        scene.render(32, 32, "side")


def _render_or_skip(scene: RobotScene, *args: object) -> np.ndarray:
    try:
        return scene.render(*args)
    except RenderBackendError as exc:
        pytest.skip(f"GL backend unavailable for offscreen rendering: {exc}")


def _red_mask(img: np.ndarray) -> np.ndarray:
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return (r > 100) & (r > g + 60) & (r > b + 60)


def test_render_shape_dtype_red_cube_and_change(scene: RobotScene) -> None:
    scene.reset(1)
    img = _render_or_skip(scene, 160, 120, "front")
    assert img.shape == (120, 160, 3) and img.dtype == np.uint8
    top = _render_or_skip(scene, 64, 64, "top")
    assert top.shape == (64, 64, 3)
    mask = _red_mask(img)
    assert mask.sum() > 20, "red cube not visible"
    cols_before = np.nonzero(mask)[1].mean()
    a = scene._qadr[CUBES.index("red")]
    scene.data.qpos[a] += 0.1  # slide the red cube 10 cm along +x (right in the front view)
    mujoco.mj_forward(scene.model, scene.data)
    moved = _render_or_skip(scene, 160, 120, "front")
    assert not np.array_equal(moved, img)
    assert np.nonzero(_red_mask(moved))[1].mean() > cols_before + 5


def test_wrist_camera_rides_on_the_gripper(scene: RobotScene) -> None:
    assert CAMERAS == ("front", "top", "wrist")
    scene.reset(2)
    wrist = _render_or_skip(scene, 64, 64, "wrist")
    front = _render_or_skip(scene, 64, 64, "front")
    assert wrist.shape == (64, 64, 3) and not np.array_equal(wrist, front)
    scene.apply([1, 0, -1, -1])
    moved = _render_or_skip(scene, 64, 64, "wrist")
    assert not np.array_equal(moved, wrist), "the wrist view follows the gripper"
    scene.reset(2)
    assert np.array_equal(_render_or_skip(scene, 64, 64, "wrist"), wrist), "seeded"


def test_button_scene_snapshot_restores_a_pressed_cap() -> None:
    s = RobotScene(max_step=0.05, substeps=40, buttons=True)
    assert s.buttons == BUTTONS and RobotScene().buttons == ()
    s.reset(6)
    top = s.button_tops()["yellow"]
    _move_to(s, [top[0], top[1], 0.06], -1)
    path = [[0, 0, -0.5, -1]] * 3 + [[0, 0, 1, -1]] * 2
    s.apply(path[0])
    snap = s.snapshot()
    assert s.button_travel("yellow") > 0.0, "the fingers are on the cap"
    for a in path[1:]:
        s.apply(a)
    first = _full_state(s)
    s.reset(0)
    s.restore(snap)
    for a in path[1:]:
        s.apply(a)
    assert np.array_equal(_full_state(s), first)
    with pytest.raises(ValueError, match="SceneSnapshot"):
        RobotScene().restore(snap)  # a scene without buttons has a smaller state
