"""Table-top task kinds (reach, push, pick_place, press): instructions, step budgets, checkers.

A task is a pure function of ``(kind, task_id)``: the id picks the named cube (and zone), or
for ``press`` the named button; the scene layout comes from the seed given to ``reset``.
Success reads physics state only (:class:`sim.robot.RobotScene`, world frame, metres).

Step budgets (``BASE_MAX_STEPS``) are set for ``DEFAULT_MAX_STEP`` metres per action from the
scripted controller's step counts (``python -m embodied.measure``, seeds 0-199): reach takes
at most 4 steps (mean 3.2), so 12 leaves a learned policy room for corrections; pick_place at
most 17 (mean 13.3), budget 30; push has a long tail from re-approaches after the cube slides
off the fingers (mean 12.4, at most 28; over 1,000 seeds 98.8 % finish within 25 steps and
99.8 % within 30), budget 30; press at most 5 (mean 4.3), budget 15 (reach's slack). Budgets
stay short because every step is a model call. At another ``max_step`` the budget scales with
``DEFAULT_MAX_STEP / max_step`` (travel dominates the step count), rounded up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.robot import BUTTONS, CUBES, ZONES, RobotScene
from sim.robot.mjcf import CUBE_HALF, FINGER_TIP

KINDS: tuple[str, ...] = ("reach", "push", "pick_place", "press")
DEFAULT_MAX_STEP = 0.05  # metres per action at |a| = 1
BASE_MAX_STEPS: dict[str, int] = {"reach": 12, "push": 30, "pick_place": 30, "press": 15}
REACH_TOLERANCE = 0.015  # m; every pose this close to the cube's top lies in the grasp region
REST_SPEED = 0.05  # m/s; a placed cube slower than this counts as resting
PRESS_DEPTH = 0.012  # m; a button counts as pressed once its cap is this far down (about half
# of its BUTTON_TRAVEL of 0.025 m: a finger resting on the cap, or grazing it, does not count)


class RobotTaskError(ValueError):
    """A robot task or env argument is invalid (unknown kind, bad task id, bad option)."""


@dataclass(frozen=True)
class RobotTask:
    """One task: the named cube (and target zone) or button, its instruction and step budget.

    Attributes:
        kind: one of ``KINDS``.
        cube: the cube to act on, one of ``sim.robot.CUBES``; ``None`` for press.
        zone: the target zone (one of ``sim.robot.ZONES``), ``None`` for reach and press.
        instruction: the natural-language instruction shown to the policy.
        max_steps: env steps before the episode is truncated.
        button: the button to press (one of ``sim.robot.scene.BUTTONS``), ``None`` otherwise.
    """

    kind: str
    cube: str | None
    zone: str | None
    instruction: str
    max_steps: int
    button: str | None = None


def n_tasks(kind: str) -> int:
    """Size of ``kind``'s task-id space (ids cycle modulo this): 3 cubes (reach), 3 cubes x 2
    zones (push, pick_place) or 3 buttons (press)."""
    _check_kind(kind)
    if kind == "press":
        return len(BUTTONS)
    return len(CUBES) if kind == "reach" else len(CUBES) * len(ZONES)


def make_task(kind: str, task_id: int, max_step: float = DEFAULT_MAX_STEP) -> RobotTask:
    """The task of ``kind`` with id ``task_id`` (an int >= 0; ids cycle through ``n_tasks``).

    ``max_step`` (metres per action) scales the step budget, see the module docstring.

    >>> make_task("push", 4).instruction
    'push the green cube onto the blue square'
    >>> make_task("reach", 5).instruction
    'move the gripper to the blue cube'
    >>> make_task("press", 1).instruction
    'press the purple button'
    """
    _check_kind(kind)
    if isinstance(task_id, bool) or not isinstance(task_id, int | np.integer) or task_id < 0:
        raise RobotTaskError(f"task_id must be an int >= 0, got {task_id!r}")
    if not (isinstance(max_step, int | float) and math.isfinite(max_step) and max_step > 0):
        raise RobotTaskError(f"max_step must be a finite number of metres > 0, got {max_step!r}")
    i = int(task_id) % n_tasks(kind)
    budget = max(math.ceil(BASE_MAX_STEPS[kind] * DEFAULT_MAX_STEP / max_step - 1e-9), 1)
    if kind == "press":
        button = BUTTONS[i]
        return RobotTask(kind, None, None, f"press the {button} button", budget, button)
    cube = CUBES[i % len(CUBES)]
    zone = None if kind == "reach" else ZONES[i // len(CUBES)]
    if kind == "reach":
        text = f"move the gripper to the {cube} cube"
    elif kind == "push":
        text = f"push the {cube} cube onto the {zone} square"
    else:
        text = f"put the {cube} cube on the {zone} square"
    return RobotTask(kind, cube, zone, text, budget)


def reach_error(scene: RobotScene, cube: str) -> float:
    """Distance (m) from the end effector to the centre of ``cube``'s top face, world xyz."""
    top = scene.cube_positions()[cube] + np.array([0.0, 0.0, CUBE_HALF])
    return float(np.linalg.norm(scene.ee_position() - top))


def cube_speed(scene: RobotScene, cube: str) -> float:
    """Linear speed (m/s) of ``cube``'s centre (its free joint's first three dofs)."""
    adr = int(scene.model.jnt_dofadr[scene.model.joint(f"cube_{cube}").id])
    return float(np.linalg.norm(scene.data.qvel[adr : adr + 3]))


def press_point(scene: RobotScene, button: str) -> np.ndarray:
    """Where the end effector is when its fingertips touch ``button``'s cap top now: the cap's
    top-face centre raised by ``FINGER_TIP``, world xyz, m, shape (3,)."""
    return scene.button_tops()[button] + np.array([0.0, 0.0, FINGER_TIP])


def press_terms(scene: RobotScene, button: str) -> tuple[float, float]:
    """``(gripper distance, remaining depth)`` in m: end effector to :func:`press_point`, and
    ``PRESS_DEPTH`` minus the cap's travel (0 once pressed)."""
    gap = float(np.linalg.norm(scene.ee_position() - press_point(scene, button)))
    return gap, max(0.0, PRESS_DEPTH - scene.button_travel(button))


def task_distance(scene: RobotScene, task: RobotTask) -> float:
    """The shaping distance (m) whose decrease is the ``distance`` reward signal.

    reach: end effector to the cube's top. push and pick_place: end effector to the cube centre
    (xyz) plus cube centre to zone centre (xy), so approaching the cube and then carrying or
    pushing it both count as progress. press: the sum of :func:`press_terms`, so approaching the
    cap and then pushing it down both count (the fingers ride the cap down, so the first term
    stays near 0 while the second falls).
    """
    if task.button is not None:
        return sum(press_terms(scene, task.button))
    assert task.cube is not None
    if task.zone is None:
        return reach_error(scene, task.cube)
    cube = scene.cube_positions()[task.cube]
    zone = scene.zone_positions()[task.zone]
    return float(np.linalg.norm(scene.ee_position() - cube) + np.linalg.norm(cube[:2] - zone[:2]))


def is_holding(scene: RobotScene, task: RobotTask) -> bool:
    """Whether the gripper holds the task's cube (its grasp weld is on); False for press."""
    return task.cube is not None and scene.held == CUBES.index(task.cube)


def is_success(scene: RobotScene, task: RobotTask) -> bool:
    """The task checker, from physics state only.

    reach: the end effector within ``REACH_TOLERANCE`` of the cube's top-face centre (xyz).
    push: ``scene.in_zone(cube, zone)``: the cube's centre over the zone, on the table, not held.
    pick_place: the same and the cube resting (speed below ``REST_SPEED``), so a cube dropped
    from above, or still bouncing, does not count until it has come to rest.
    press: the named button's cap at least ``PRESS_DEPTH`` below its rest height (another
    button pressed does not count).
    """
    if task.button is not None:
        return scene.button_travel(task.button) >= PRESS_DEPTH
    assert task.cube is not None
    if task.kind == "reach":
        return reach_error(scene, task.cube) <= REACH_TOLERANCE
    assert task.zone is not None
    if not scene.in_zone(task.cube, task.zone):
        return False
    return task.kind == "push" or cube_speed(scene, task.cube) <= REST_SPEED


def _check_kind(kind: object) -> None:
    if kind not in KINDS:
        raise RobotTaskError(f"unknown task kind {kind!r}; kinds are {', '.join(KINDS)}")
