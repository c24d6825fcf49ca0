"""Errors and import helpers shared by the standard-suite envs (Meta-World, LIBERO).

The suites' own packages are optional extras: ``pip install 'vlagent[metaworld]'`` and
``pip install 'vlagent[libero]'``. They are imported lazily, when an env is built, and a missing
package becomes :class:`EmbodiedSuiteMissing` naming the package and the install command.
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import numpy as np


class EmbodiedSuiteError(ValueError):
    """A suite env got a bad argument (unknown task, camera, size, reset option) or was misused."""


class EmbodiedSuiteMissing(ImportError):
    """A standard suite's package (or its data) is not installed; the message says how to fix it."""


def install_hint(extra: str) -> str:
    """The install command of one of vlagent's extras, e.g. ``pip install 'vlagent[metaworld]'``."""
    return f"pip install 'vlagent[{extra}]'"


def import_suite(module: str, package: str, extra: str, why: str = "") -> ModuleType:
    """Import ``module`` of the optional package ``package`` or raise a message that fixes it.

    Args:
        module: the import name (``metaworld``, ``libero.libero``).
        package: the PyPI distribution to install (``metaworld``, ``libero``).
        extra: vlagent's extra that pins it with a working ``mujoco``.
        why: what needs it, for the message (``"MetaWorldEnv"``).

    Raises:
        EmbodiedSuiteMissing: the module cannot be imported (absent, or its own imports fail).
    """
    os.environ.setdefault("MUJOCO_GL", "egl")  # before the suite's first `import mujoco`
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        user = f"{why} needs" if why else "This needs"
        raise EmbodiedSuiteMissing(
            f"{user} the PyPI package {package!r} (import {module!r} failed: {exc}). "
            f"Install it with: {install_hint(extra)}  "
            f"(docs/EMBODIED_SUITES.md lists the versions that work together)."
        ) from exc


def reward_weights(
    reward: Mapping[str, float] | None, defaults: Mapping[str, float]
) -> dict[str, float]:
    """``defaults`` updated by ``reward``: known names only, finite, ``invalid_action`` <= 0 (a
    penalty) and every other weight >= 0.

    Raises:
        EmbodiedSuiteError: an unknown term or a weight outside its range.
    """
    weights = {k: float(v) for k, v in defaults.items()}
    unknown = set(reward or {}) - set(weights)
    if unknown:
        raise EmbodiedSuiteError(
            f"reward terms {sorted(unknown)} unknown; known: {sorted(weights)}"
        )
    weights.update({k: float(v) for k, v in (reward or {}).items()})
    if not all(math.isfinite(v) for v in weights.values()):
        raise EmbodiedSuiteError(f"reward weights must be finite, got {weights}")
    if weights.get("invalid_action", 0.0) > 0 or any(
        v < 0 for k, v in weights.items() if k != "invalid_action"
    ):
        raise EmbodiedSuiteError(
            f"need invalid_action <= 0 and every other weight >= 0, got {weights}"
        )
    return weights


def parse_action(action: Any, last_grip: float) -> tuple[np.ndarray, bool]:
    """``(float64 (4,) action clipped to [-1, 1], invalid)`` from (dx, dy, dz, gripper).

    An action that is not 4 finite numbers is invalid and becomes the no-op
    ``(0, 0, 0, last_grip)``: hold still, keep the last gripper command.
    """
    try:
        a = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape != (4,) or not np.all(np.isfinite(a)):
        return np.array([0.0, 0.0, 0.0, float(last_grip)]), True
    return np.clip(a, -1.0, 1.0), False
