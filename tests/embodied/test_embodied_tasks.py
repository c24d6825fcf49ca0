"""embodied.tasks: task ids, instructions, budgets; success checkers on hand-built states."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # before the first `import mujoco`
mujoco = pytest.importorskip("mujoco")

from embodied.tasks import (  # noqa: E402
    BASE_MAX_STEPS,
    DEFAULT_MAX_STEP,
    KINDS,
    REACH_TOLERANCE,
    REST_SPEED,
    RobotTask,
    RobotTaskError,
    is_success,
    make_task,
    n_tasks,
)
from sim.robot import CUBES, ZONES, RobotScene  # noqa: E402
from sim.robot.mjcf import CUBE_HALF, ZONE_HALF  # noqa: E402


@pytest.fixture(scope="module")
def scene() -> RobotScene:
    s = RobotScene()
    yield s
    s.close()


def place_cube(scene: RobotScene, cube: str, xyz, velocity=(0.0, 0.0, 0.0)) -> None:
    """Put ``cube``'s centre at ``xyz`` (world m), upright, with linear ``velocity`` (m/s)."""
    m, d = scene.model, scene.data
    joint = m.joint(f"cube_{cube}").id
    q, v = int(m.jnt_qposadr[joint]), int(m.jnt_dofadr[joint])
    d.qpos[q : q + 7] = [*xyz, 1.0, 0.0, 0.0, 0.0]
    d.qvel[v : v + 6] = [*velocity, 0.0, 0.0, 0.0]
    mujoco.mj_forward(m, d)


def place_ee(scene: RobotScene, xyz) -> None:
    m = scene.model
    scene.data.mocap_pos[m.body_mocapid[m.body("gripper").id]] = xyz
    mujoco.mj_forward(m, scene.data)


def test_task_ids_pick_cube_and_zone_and_cycle() -> None:
    assert n_tasks("reach") == len(CUBES)
    assert n_tasks("push") == n_tasks("pick_place") == len(CUBES) * len(ZONES)
    for kind in (k for k in KINDS if k != "press"):  # press: tests/embodied/test_press_task.py
        tasks = [make_task(kind, i) for i in range(n_tasks(kind))]
        assert len({(t.cube, t.zone) for t in tasks}) == n_tasks(kind)  # every pair once
        for i, t in enumerate(tasks):
            assert make_task(kind, i + 2 * n_tasks(kind)) == t  # ids cycle
            assert make_task(kind, i) == t  # deterministic
            assert t.kind == kind and t.cube in t.instruction
            assert (t.zone is None) == (kind == "reach") and t.button is None
            if t.zone is not None:
                assert f"{t.zone} square" in t.instruction


def test_instructions_read_naturally() -> None:
    assert make_task("reach", 0).instruction == "move the gripper to the red cube"
    assert make_task("push", 0).instruction == "push the red cube onto the green square"
    assert make_task("pick_place", 5).instruction == "put the blue cube on the blue square"


def test_budgets_scale_with_the_step_size() -> None:
    for kind in KINDS:
        assert make_task(kind, 0).max_steps == BASE_MAX_STEPS[kind]
        assert make_task(kind, 0, DEFAULT_MAX_STEP / 2).max_steps == 2 * BASE_MAX_STEPS[kind]
    assert make_task("reach", 0, 0.04).max_steps == 15  # 12 * 0.05 / 0.04, rounded up


@pytest.mark.parametrize("kind", ["Reach", "pick-place", "", None, 3])
def test_unknown_kind_lists_the_kinds(kind) -> None:
    with pytest.raises(ValueError, match="unknown task kind.*reach, push, pick_place"):
        make_task(kind, 0)


@pytest.mark.parametrize("task_id", [-1, 1.5, True, "3", None])
def test_bad_task_id_is_named(task_id) -> None:
    with pytest.raises(RobotTaskError, match="task_id must be an int >= 0"):
        make_task("push", task_id)


def test_bad_max_step_is_named() -> None:
    for bad in (0, -0.1, float("nan"), "0.05"):
        with pytest.raises(RobotTaskError, match="max_step"):
            make_task("reach", 0, bad)


# ------------------------------------------------------------------------ success checkers
def test_reach_success_is_within_tolerance_of_the_named_cube_top(scene: RobotScene) -> None:
    scene.reset(0)
    task = make_task("reach", CUBES.index("green"))
    top = scene.cube_positions()["green"] + [0, 0, CUBE_HALF]
    place_ee(scene, top)
    assert is_success(scene, task)
    for direction in ([1, 0, 0], [0, -1, 0], [0, 0, 1], [1, 1, 1]):
        unit = np.asarray(direction, float) / np.linalg.norm(direction)
        place_ee(scene, top + 0.9 * REACH_TOLERANCE * unit)
        assert is_success(scene, task), direction
        place_ee(scene, top + 1.1 * REACH_TOLERANCE * unit)
        assert not is_success(scene, task), direction
    place_ee(scene, top + [0, 0, 0.1])  # right above, too high
    assert not is_success(scene, task)
    other = scene.cube_positions()["red"] + [0, 0, CUBE_HALF]
    place_ee(scene, other)  # at another cube
    assert not is_success(scene, task)


def test_reach_tolerance_lies_inside_the_grasp_region(scene: RobotScene) -> None:
    """A reach success is a pose from which closing the gripper grasps the cube."""
    for direction in ([1, 1, -1], [-1, 1, -1], [0, 0, 1], [0, 0, -1], [1, 1, 1]):
        scene.reset(3)
        cube = scene.cube_positions()["blue"]
        unit = np.asarray(direction, float) / np.linalg.norm(direction)
        place_ee(scene, cube + [0, 0, CUBE_HALF] + 0.999 * REACH_TOLERANCE * unit)
        assert is_success(scene, make_task("reach", CUBES.index("blue")))
        scene.apply([0, 0, 0, 1])
        assert scene.held == CUBES.index("blue"), direction


def test_push_success_is_the_named_cube_centre_over_the_named_zone(scene: RobotScene) -> None:
    scene.reset(1)
    task = make_task("push", CUBES.index("red") + len(CUBES) * ZONES.index("blue"))
    assert (task.cube, task.zone) == ("red", "blue")
    assert not is_success(scene, task)  # seeded layouts keep cubes off the zones
    zone = scene.zone_positions()["blue"]
    place_cube(scene, "red", [zone[0], zone[1], CUBE_HALF])
    assert is_success(scene, task)
    inside = ZONE_HALF - 0.002
    place_cube(scene, "red", [zone[0] + inside, zone[1] - inside, CUBE_HALF])
    assert is_success(scene, task)
    place_cube(scene, "red", [zone[0] + ZONE_HALF + 0.003, zone[1], CUBE_HALF])
    assert not is_success(scene, task)
    place_cube(scene, "red", [zone[0], zone[1], 0.08])  # in the air over the zone
    assert not is_success(scene, task)
    green_zone = scene.zone_positions()["green"]
    place_cube(scene, "red", [green_zone[0], green_zone[1], CUBE_HALF])  # the other zone
    assert not is_success(scene, task)


def test_pick_place_success_needs_the_cube_at_rest(scene: RobotScene) -> None:
    scene.reset(2)
    task = make_task("pick_place", CUBES.index("green"))
    push = make_task("push", CUBES.index("green"))
    zone = scene.zone_positions()[task.zone]
    place_cube(scene, "green", [zone[0], zone[1], CUBE_HALF])
    assert is_success(scene, task) and is_success(scene, push)
    place_cube(scene, "green", [zone[0], zone[1], CUBE_HALF], velocity=(3 * REST_SPEED, 0, 0))
    assert not is_success(scene, task), "a sliding cube is not placed"
    assert is_success(scene, push), "push counts the centre over the zone"
    place_cube(scene, "green", [zone[0], zone[1], CUBE_HALF], velocity=(0, 0.5 * REST_SPEED, 0))
    assert is_success(scene, task)


def test_a_held_cube_over_the_zone_is_not_placed(scene: RobotScene) -> None:
    scene.reset(4)
    task = make_task("pick_place", CUBES.index("blue") + len(CUBES))  # blue on blue
    cube = scene.cube_positions()["blue"]
    place_ee(scene, cube)
    scene.apply([0, 0, 0, 1])  # grasp
    assert scene.held == CUBES.index("blue")
    zone = scene.zone_positions()["blue"]
    for _ in range(20):  # carry it over the zone, low, still closed
        target = np.array([zone[0], zone[1], 0.025])
        step = np.clip((target - scene.ee_position()) / scene.max_step, -1, 1)
        scene.apply([*step, 1])
    assert np.max(np.abs(scene.cube_positions()["blue"][:2] - zone[:2])) < ZONE_HALF
    assert not is_success(scene, task)
    for _ in range(10):
        scene.apply([0, 0, 0, -1])  # let go, let it settle
    assert is_success(scene, task)


def test_robot_task_is_frozen() -> None:
    task = make_task("reach", 0)
    assert isinstance(task, RobotTask)
    with pytest.raises(AttributeError):
        task.cube = "blue"  # type: ignore[misc]
