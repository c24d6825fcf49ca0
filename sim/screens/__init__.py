"""Procedural synthetic GUI screens with grounding instructions (numpy + PIL, no rewards).

``ScreenLevel`` / ``LEVELS`` / ``Screen`` / ``Element`` import without PIL; ``generate_screen``
loads the renderer (PIL) on first use.

>>> from sim.screens import generate_screen
>>> generate_screen("basic", seed=3).image.shape
(224, 224, 3)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sim.screens.level import LEVELS, ScreenLevel, get_level
from sim.screens.screen import Element, Screen

if TYPE_CHECKING:
    from sim.screens.generator import generate_screen

__all__ = ["LEVELS", "Element", "Screen", "ScreenLevel", "generate_screen", "get_level"]


def __getattr__(name: str) -> Any:
    if name == "generate_screen":
        from sim.screens.generator import generate_screen

        return generate_screen
    raise AttributeError(f"module 'sim.screens' has no attribute {name!r}")
