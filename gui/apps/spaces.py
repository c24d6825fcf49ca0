"""Gymnasium spaces of the app envs: screenshot + text observations, GUI-action dicts."""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from gui.actions import InvalidAction, parse_action

TEXT_CHARSET = frozenset(string.printable)
"""Characters of instructions and accessibility text (printable ASCII and whitespace)."""
MAX_INSTRUCTION = 1024
MAX_A11Y = 16384

_WORDS = ("Ana", "Lima", "555-0101", "7", "30", "hello", "Trip", "notes", "wifi", "Bob")
_KEYS = ("back", "home", "enter", "backspace", "tab", "f13")
_APPS = ("Phone", "Camera", "Mail", "Browser")
_KINDS = ("click", "long_press", "double_click", "right_click", "swipe", "drag", "scroll", "type",
          "key", "hotkey", "open_app", "wait", "answer", "done", "fail")  # fmt: skip
_WEIGHTS = np.array([40, 5, 3, 2, 6, 2, 8, 10, 7, 1, 8, 2, 2, 2, 2], dtype=float)
_WEIGHTS /= _WEIGHTS.sum()


def observation_space(image_size: tuple[int, int]) -> spaces.Dict:
    """``Dict(image=Box(uint8 (H, W, 3)), instruction=Text, a11y=Text)``.

    Args:
        image_size: ``(width, height)`` of the screenshots in pixels.
    """
    width, height = image_size
    return spaces.Dict(
        {
            "image": spaces.Box(0, 255, (height, width, 3), np.uint8),
            "instruction": spaces.Text(MAX_INSTRUCTION, min_length=1, charset=TEXT_CHARSET),
            "a11y": spaces.Text(MAX_A11Y, min_length=0, charset=TEXT_CHARSET),
        }
    )


class GuiActionSpace(spaces.Space[dict[str, Any]]):
    """GUI action mappings (:mod:`gui.actions`); ``sample()`` is a random GUI policy.

    Samples are valid actions: mostly clicks at uniform points, some gestures, typing of
    task-like words, keys, app launches (installed apps and missing ones) and, rarely, the
    episode-ending ``done`` / ``fail`` / ``answer``.

    Args:
        apps: app names ``open_app`` samples from (plus a few that are not installed).
        seed: seed of the sampler.
    """

    def __init__(
        self, apps: Sequence[str] = (), seed: int | np.random.Generator | None = None
    ) -> None:
        self.apps = tuple(apps) + _APPS
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Actions are variable-shape mappings."""
        return False

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> dict[str, Any]:
        """A random valid action mapping."""
        if mask is not None or probability is not None:
            raise ValueError("GuiActionSpace.sample takes no mask or probability")
        rng = self.np_random
        kind = str(_KINDS[int(rng.choice(len(_KINDS), p=_WEIGHTS))])

        def point() -> list[float]:
            return [round(float(v), 4) for v in rng.random(2)]

        def word() -> str:
            return str(_WORDS[int(rng.integers(len(_WORDS)))])

        if kind in ("click", "long_press", "double_click", "right_click"):
            return {"type": kind, "point": point()}
        if kind in ("swipe", "drag"):
            return {"type": kind, "start": point(), "end": point()}
        if kind == "scroll":
            direction = ("up", "down", "left", "right")[int(rng.integers(4))]
            return {"type": kind, "point": point(), "direction": direction}
        if kind in ("type", "answer"):
            return {"type": kind, "text": word()}
        if kind == "key":
            return {"type": kind, "key": _KEYS[int(rng.integers(len(_KEYS)))]}
        if kind == "hotkey":
            return {"type": kind, "keys": ["ctrl", "a"]}
        if kind == "open_app":
            return {"type": kind, "name": self.apps[int(rng.integers(len(self.apps)))]}
        return {"type": kind}

    def contains(self, x: Any) -> bool:
        """Whether ``x`` parses as a valid GUI action."""
        return not isinstance(parse_action(x), InvalidAction)

    def __repr__(self) -> str:
        return "GuiActionSpace()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GuiActionSpace) and other.apps == self.apps
