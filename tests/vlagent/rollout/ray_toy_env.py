"""A torch-free multi-step toy env for the Ray env-worker tests.

It lives in a module (not a test function) so Ray workers can import it by name.
"""

from __future__ import annotations

import string
import time
from typing import Any

import gymnasium
import numpy as np

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 220)}
SIZE = 56
"""Screen side in pixels (the tiny model's processor takes 56 × 56 images)."""


class ColourSteps(gymnasium.Env):
    """Name the colour of each of ``length`` screens; the screens follow from (seed, task_id).

    Observation: ``image`` (SIZE, SIZE, 3) uint8, a colour plus seeded noise; ``instruction``.
    Action: a colour word. Step reward terms: ``right`` (1 for the screen's colour) and
    ``format`` (0.1 for any colour word); ``info["answer"]`` is the colour of the screen the
    next action answers (a demonstrator reads it). For failure tests the action ``"raise"``
    raises ``ValueError`` inside the env and ``"hang"`` sleeps ``hang_s`` seconds.
    """

    def __init__(self, length: int = 3, hang_s: float = 30.0) -> None:
        self.length, self.hang_s = length, hang_s
        self.observation_space = gymnasium.spaces.Dict(
            {
                "image": gymnasium.spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8),
                "instruction": gymnasium.spaces.Text(64, charset=string.ascii_letters + " ?"),
            }
        )
        self.action_space = gymnasium.spaces.Text(16, charset=string.ascii_letters)
        self._rng = np.random.default_rng(0)
        self._answer, self._t = "red", 0

    def _screen(self) -> dict[str, Any]:
        self._answer = list(COLOURS)[int(self._rng.integers(len(COLOURS)))]
        noise = self._rng.integers(-25, 26, (SIZE, SIZE, 3))
        image = np.clip(np.array(COLOURS[self._answer]) + noise, 0, 255).astype(np.uint8)
        return {"image": image, "instruction": "Which colour is this?"}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        task = int((options or {}).get("task_id", 0))
        self._rng = np.random.default_rng([task, int(self.np_random.integers(2**31))])
        self._t = 0
        obs = self._screen()
        return obs, {"answer": self._answer, "task_id": task}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if action == "raise":
            raise ValueError("the toy env was asked to raise")
        if action == "hang":
            time.sleep(self.hang_s)
        said = action.strip().lower() if isinstance(action, str) else ""
        right = said == self._answer
        terms = {"right": float(right), "format": 0.1 * (said in COLOURS)}
        self._t += 1
        obs = self._screen()
        info = {
            "reward_terms": terms,
            "success": right,
            "invalid_action": not isinstance(action, str),
            "answer": self._answer,
        }
        return obs, float(sum(terms.values())), self._t >= self.length, False, info
