"""Exceptions raised by :mod:`sim.android` (android-env simulators, loader and touch plans)."""

from __future__ import annotations

from sim.errors import SimError


class AndroidSimError(SimError):
    """Base class of every error raised by ``sim.android``."""


class AndroidConfigError(AndroidSimError, ValueError):
    """An android-env config, task file or emulator setting is missing or malformed."""
