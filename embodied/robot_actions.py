"""Reading a ``(dx, dy, dz, gripper)`` action and the reward weights of the robot envs.

Nothing here raises on a bad action: :func:`parse_action` returns ``None`` and the reason, and
the env turns that into a recorded no-op step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from embodied.tasks import RobotTaskError

ACTION_DIMS: tuple[str, ...] = ("dx", "dy", "dz", "gripper")
ACTION_FRAMES: tuple[str, ...] = ("delta", "target")
"""How ``action[:3]`` is read. ``delta``: a move of ``action * max_step`` metres per axis.
``target``: a goal point of the workspace (-1 = ``lo``, +1 = ``hi`` per axis) that the end
effector moves towards by at most ``max_step`` per axis (an absolute end-effector position
command, as in position-controlled arms)."""
REWARD_TERMS: tuple[str, ...] = ("success", "distance", "proximity", "grasp", "invalid_action")
DEFAULT_REWARD: dict[str, float] = {
    "success": 1.0,
    "distance": 0.0,
    "proximity": 0.0,
    "grasp": 0.0,
    "invalid_action": 0.0,
}
"""Weights of the reward terms. Each term is ``weight * signal``: success 1 / 0; distance the
decrease of :func:`embodied.tasks.task_distance` over the step (m); proximity the increase of
:func:`proximity` of that distance over the step (a Gaussian potential: an episode's terms sum
to ``proximity(final) - proximity(start)``, so near misses score far above far ones, GUI-G²'s
Gaussian point reward carried to 3-D); grasp +1 when the named cube becomes held, -1 when it is
let go; invalid_action 1 on an invalid action (so a penalty is a negative weight)."""

PROXIMITY_SCALE = 0.03
"""m, the Gaussian's standard deviation in :func:`proximity`: two reach tolerances, so a miss by
1 cm scores 0.95, by 3 cm 0.61, by 6 cm 0.14."""


def proximity(distance: float, scale: float = PROXIMITY_SCALE) -> float:
    """``exp(-distance² / (2 scale²))``, in (0, 1]: 1 on the goal. ``distance`` and ``scale`` in m."""
    return math.exp(-0.5 * (float(distance) / scale) ** 2)


def parse_action(action: Any) -> tuple[np.ndarray | None, str]:
    """``(float64 (4,) array, "")`` for a valid action, else ``(None, reason)``.

    Valid: anything numpy reads as 4 finite real numbers (int or float dtype). Values outside
    [-1, 1] stay valid; the scene clips them. Strings, bools, objects, NaN, inf and any other
    shape are invalid.
    """
    if isinstance(action, str | bytes):
        return None, f"action is a string ({action[:40]!r}), not 4 numbers"
    try:
        arr = np.asarray(action)
    except (TypeError, ValueError) as exc:  # ragged sequences
        return None, f"action is not an array of 4 numbers: {exc}"
    if arr.dtype.kind not in "iuf":
        return None, f"action must be 4 real numbers, got dtype {arr.dtype} ({type(action)})"
    if arr.shape != (len(ACTION_DIMS),):
        return None, f"action must have shape (4,) = (dx, dy, dz, gripper), got {arr.shape}"
    arr = arr.astype(np.float64)
    bad = [f"{ACTION_DIMS[i]}={arr[i]}" for i in range(len(arr)) if not np.isfinite(arr[i])]
    if bad:
        return None, f"action has non-finite values: {', '.join(bad)}"
    return arr, ""


def target_point(action_xyz: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The workspace point (m, shape (3,)) that a ``target``-frame ``action[:3]`` names:
    ``lo + (a + 1) / 2 * (hi - lo)`` with ``a`` clipped to [-1, 1]."""
    a = np.clip(np.asarray(action_xyz, dtype=np.float64), -1.0, 1.0)
    return np.asarray(lo, dtype=np.float64) + (a + 1.0) / 2.0 * (np.asarray(hi) - np.asarray(lo))


def point_action(point: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Inverse of :func:`target_point`: the ``target``-frame action (3,) in [-1, 1] of a point
    (m), the point clipped to the workspace first."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    p = np.clip(np.asarray(point, dtype=np.float64), lo, hi)
    return 2.0 * (p - lo) / (hi - lo) - 1.0


def step_towards(goal: np.ndarray, ee: np.ndarray, max_step: float) -> np.ndarray:
    """The ``delta``-frame move (3,) in [-1, 1] that heads from ``ee`` to ``goal`` (both m):
    at most ``max_step`` metres on every axis, scaled as a whole so the direction is kept
    (it lands on ``goal`` when that is within one step)."""
    delta = (np.asarray(goal, dtype=np.float64) - np.asarray(ee, dtype=np.float64)) / max_step
    return delta / max(1.0, float(np.max(np.abs(delta))))


def reward_weights(reward: Mapping[str, float] | None) -> dict[str, float]:
    """``DEFAULT_REWARD`` updated by ``reward``; unknown names or non-finite weights raise."""
    weights = dict(DEFAULT_REWARD)
    if reward is None:
        return weights
    if not isinstance(reward, Mapping):
        raise RobotTaskError(f"reward must be a mapping of term -> weight, got {reward!r}")
    unknown = sorted(str(k) for k in reward if k not in REWARD_TERMS)
    if unknown:
        raise RobotTaskError(f"unknown reward terms {unknown}; terms are {', '.join(REWARD_TERMS)}")
    for name, value in reward.items():
        ok = isinstance(value, int | float | np.number) and not isinstance(value, bool)
        if not ok or not math.isfinite(float(value)):
            raise RobotTaskError(f"reward weight {name!r} must be a finite number, got {value!r}")
        weights[name] = float(value)
    return weights
