"""Exceptions raised by the ``sim`` package (simulators and renderers, I/O only)."""

from __future__ import annotations


class SimError(Exception):
    """Base class of every error raised by ``sim``."""


class ScreenLevelError(SimError, ValueError):
    """A :class:`sim.screens.ScreenLevel` knob is out of range or unknown."""


class ScreenGenerationError(SimError):
    """The synthetic screen generator could not build a screen that satisfies its level."""
