"""Scripted controllers that solve the table-top tasks from privileged state (SFT demos, and the
proof that each task's success checker can be met: ``python -m embodied.measure``).

Each ``act`` reads the scene (end effector, cube and zone positions in world metres) and returns
one action ``(dx, dy, dz, gripper)`` in [-1, 1] (in the env's ``target`` frame, the waypoint
itself: ``(x, y, z, gripper)``); the controller keeps no memory between calls,
so it picks up from any state (after a restore, or mid-episode from a policy's actions).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodied.robot_actions import point_action, step_towards
from embodied.robot_env import RobotEnv
from embodied.tasks import PRESS_DEPTH, is_holding, press_point
from sim.robot.mjcf import BUTTON_TOP, CUBE_HALF, FINGER_TIP, ZONE_HALF
from sim.robot.scene import WORKSPACE_HI, WORKSPACE_LO

OPEN, CLOSE = -1.0, 1.0
CARRY_Z = 0.09  # m, end effector height while carrying: the held cube clears the other cubes
LIFT_Z = 0.065  # m, above this a held cube may move sideways
RELEASE_Z = 0.025  # m, end effector height at which a carried cube is let go
SAFE_Z = 0.07  # m, the pusher's travel height: its fingers (1 cm below it) clear every cube
PUSH_Z = float(WORKSPACE_LO[2])  # m, the pusher's height while pushing (fingers at cube height)
BEHIND_LOW = 0.03  # m, behind the cube by this much the pusher may re-align without rising
BEHIND = 0.06  # m, where the pusher descends behind a cube: clear of the cube at any yaw
LATERAL_TOL = 0.012  # m, off-line distance beyond which the pusher re-approaches the cube
AT = 1e-3  # m, "arrived" tolerance of a waypoint
HOVER_Z = BUTTON_TOP + FINGER_TIP + 0.012  # m, end effector height with fingers above all caps
PRESS_Z = BUTTON_TOP - PRESS_DEPTH - 0.004 + FINGER_TIP  # m, 4 mm deeper than the threshold
OVER_BUTTON = 0.01  # m, xy distance from the cap centre within which the presser descends


class ScriptedController:
    """Privileged scripted policy for the env's current task (reach, push, pick_place, press)."""

    def __init__(self, env: RobotEnv) -> None:
        if not isinstance(env, RobotEnv):
            raise TypeError(f"ScriptedController needs a RobotEnv (env.unwrapped), got {env!r}")
        self.env = env

    def act(self, obs: Any = None) -> np.ndarray:
        """The next action, float32 (4,) in [-1, 1]; ``obs`` is unused (state is privileged)."""
        task = self.env.task
        if task is None:
            raise RuntimeError("ScriptedController.act: reset the env first")
        if task.kind == "reach":
            top = self._cube() + np.array([0.0, 0.0, CUBE_HALF])
            return self._toward(top, OPEN)
        if task.kind == "press":
            return self._press()
        return self._push() if task.kind == "push" else self._pick_place()

    # ---------------------------------------------------------------------------- helpers
    def _cube(self) -> np.ndarray:
        assert self.env.task is not None
        return self.env.scene.cube_positions()[self.env.task.cube]

    def _zone(self) -> np.ndarray:
        assert self.env.task is not None and self.env.task.zone is not None
        return self.env.scene.zone_positions()[self.env.task.zone]

    def _toward(self, target: Any, grip: float) -> np.ndarray:
        """A straight step towards ``target`` (world m): at most one max_step per axis, scaled
        as a whole so that the direction is kept. In the env's ``target`` frame the action is
        the point itself (the env takes the same step)."""
        if self.env.action_frame == "target":
            return np.array([*point_action(target, WORKSPACE_LO, WORKSPACE_HI), grip], np.float32)
        delta = step_towards(target, self.env.scene.ee_position(), self.env.max_step)
        return np.array([*delta, grip], dtype=np.float32)

    def _stay(self, grip: float) -> np.ndarray:
        """No motion, the gripper set to ``grip``."""
        return self._toward(self.env.scene.ee_position(), grip)

    # ----------------------------------------------------------------------------- press
    def _press(self) -> np.ndarray:
        """Fly above the named cap with the fingers clear of every cap, then push straight
        down (a low gripper away from the cap first rises, so it never swipes a cap)."""
        assert self.env.task is not None and self.env.task.button is not None
        ee = self.env.scene.ee_position()
        cap = press_point(self.env.scene, self.env.task.button)
        if np.linalg.norm(ee[:2] - cap[:2]) <= OVER_BUTTON:
            return self._toward([cap[0], cap[1], PRESS_Z], OPEN)
        if ee[2] < HOVER_Z - AT:
            return self._toward([ee[0], ee[1], HOVER_Z], OPEN)
        return self._toward([cap[0], cap[1], HOVER_Z], OPEN)

    # ------------------------------------------------------------------------ pick_place
    def _pick_place(self) -> np.ndarray:
        scene, ee = self.env.scene, self.env.scene.ee_position()
        cube, zone = self._cube(), self._zone()
        assert self.env.task is not None
        if is_holding(scene, self.env.task):
            over_zone = np.max(np.abs(ee[:2] - zone[:2])) <= AT
            if not over_zone and ee[2] < LIFT_Z:
                return self._toward([ee[0], ee[1], CARRY_Z], CLOSE)  # lift first
            if not over_zone:
                return self._toward([zone[0], zone[1], CARRY_Z], CLOSE)
            if ee[2] > RELEASE_Z + AT:
                return self._toward([zone[0], zone[1], RELEASE_Z], CLOSE)
            return self._stay(OPEN)  # let go
        placed = np.max(np.abs(cube[:2] - zone[:2])) <= ZONE_HALF and cube[2] < 2 * CUBE_HALF
        if placed:
            return self._stay(OPEN)  # wait for it to rest
        if scene.closed:
            return self._toward(cube, OPEN)  # a failed grasp: open on the way back
        if np.max(np.abs(ee - cube)) <= AT:
            return self._toward([ee[0], ee[1], CARRY_Z], CLOSE)  # grasp (before moving) + lift
        return self._toward(cube, OPEN)  # the gripper passes through cubes: go straight there

    # ------------------------------------------------------------------------------ push
    def _push(self) -> np.ndarray:
        ee, cube, zone = self.env.scene.ee_position(), self._cube(), self._zone()
        offset = zone[:2] - cube[:2]
        u = offset / max(float(np.linalg.norm(offset)), 1e-9)
        perp = np.array([-u[1], u[0]])
        rel = ee[:2] - cube[:2]
        along, lateral = float(rel @ u), float(rel @ perp)
        if along < -CUBE_HALF and abs(lateral) < LATERAL_TOL and ee[2] <= PUSH_Z + AT:
            # pushing: keep the pusher's distance behind the cube, steer onto the cube-zone
            # line, and drive towards the spot that leaves the cube's centre at the zone's
            goal = zone[:2] + u * along
            return self._toward([goal[0], goal[1], PUSH_Z], OPEN)
        pre = np.clip(cube[:2] - u * BEHIND, WORKSPACE_LO[:2] + AT, WORKSPACE_HI[:2] - AT)
        if np.max(np.abs(ee[:2] - pre)) > AT:
            if ee[2] <= PUSH_Z + AT and along < -BEHIND_LOW:
                return self._toward([pre[0], pre[1], PUSH_Z], OPEN)  # still behind: stay low
            if ee[2] < SAFE_Z - AT:
                return self._toward([ee[0], ee[1], SAFE_Z], OPEN)  # rise clear of the cubes
            return self._toward([pre[0], pre[1], SAFE_Z], OPEN)
        return self._toward([pre[0], pre[1], PUSH_Z], OPEN)  # descend behind the cube
