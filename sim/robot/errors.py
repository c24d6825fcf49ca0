"""Exceptions raised by ``sim.robot``."""

from __future__ import annotations

from sim.errors import SimError


class RobotSceneError(SimError, ValueError):
    """A robot-scene argument is invalid (unknown cube, zone or camera, bad size, bad snapshot)."""


class RobotActionError(RobotSceneError):
    """An action is malformed: wrong length, non-numeric, NaN or infinite."""


class RenderBackendError(SimError, RuntimeError):
    """The MuJoCo GL backend (``MUJOCO_GL``) could not create an offscreen context."""
