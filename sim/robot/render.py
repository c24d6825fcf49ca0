"""Offscreen rendering of a MuJoCo model, fast settings (no shadows, no reflections).

``MUJOCO_GL`` defaults to ``egl`` (headless GPU or Mesa EGL). Fallback: ``MUJOCO_GL=osmesa``
(software, needs libOSMesa). Either must be set before ``mujoco`` is first imported.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from sim.robot.errors import RenderBackendError, RobotSceneError  # noqa: E402

MAX_SIDE = 640  # matches <global offwidth/offheight> in the scene MJCF


class OffscreenRenderer:
    """Renders RGB frames of ``model``/``data``; one GL context per (width, height)."""

    def __init__(self, model: mujoco.MjModel) -> None:
        self._model = model
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}

    def _get(self, width: int, height: int) -> mujoco.Renderer:
        key = (width, height)
        if key not in self._renderers:
            try:
                renderer = mujoco.Renderer(self._model, height=height, width=width)
            except Exception as exc:  # the GL backend reports failures with several types
                backend = os.environ.get("MUJOCO_GL", "<unset>")
                raise RenderBackendError(
                    f"MuJoCo could not create an offscreen GL context with MUJOCO_GL={backend}: "
                    f"{exc}. MUJOCO_GL is read when mujoco is first imported, so set it before any "
                    "`import mujoco`; try MUJOCO_GL=egl, or MUJOCO_GL=osmesa (apt-get install "
                    "libosmesa6) for software rendering."
                ) from exc
            renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
            renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
            renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = False
            self._renderers[key] = renderer
        return self._renderers[key]

    def render(self, data: mujoco.MjData, width: int, height: int, camera: str) -> np.ndarray:
        """Return a uint8 array of shape (height, width, 3), RGB, row 0 at the image top."""
        for label, value in (("width", width), ("height", height)):
            if not isinstance(value, int | np.integer) or not 1 <= int(value) <= MAX_SIDE:
                raise RobotSceneError(
                    f"render {label} must be an int in [1, {MAX_SIDE}], got {value!r}"
                )
        renderer = self._get(int(width), int(height))
        renderer.update_scene(data, camera=camera)
        return renderer.render().copy()

    def close(self) -> None:
        """Free every GL context."""
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()
