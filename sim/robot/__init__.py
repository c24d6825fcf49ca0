"""Robot manipulation scenes we own (MuJoCo), independent of ``vlagent``.

Importing this package sets ``MUJOCO_GL=egl`` unless the user already chose a backend, so
offscreen rendering works without a display. If EGL is unavailable, run with
``MUJOCO_GL=osmesa`` (needs the OSMesa library, e.g. ``apt-get install libosmesa6``). The
variable must be set before ``mujoco`` is first imported anywhere in the process.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

from sim.robot.errors import RenderBackendError, RobotActionError, RobotSceneError  # noqa: E402
from sim.robot.scene import BUTTONS, CUBES, ZONES, RobotScene, SceneSnapshot  # noqa: E402

__all__ = [
    "BUTTONS",
    "CUBES",
    "ZONES",
    "RenderBackendError",
    "RobotActionError",
    "RobotScene",
    "RobotSceneError",
    "SceneSnapshot",
]
