"""Exceptions raised by :mod:`sim.desktop` (virtual X display, xdotool input, bwrap sandbox)."""

from __future__ import annotations

from sim.errors import SimError


class DesktopError(SimError, RuntimeError):
    """Base class of every error raised by ``sim.desktop``."""


class DesktopUnavailable(DesktopError):
    """A binary or Python module the desktop backend needs is missing, or the X server failed
    to start. The message names what is missing and the command that installs it."""


class CommandTimeout(DesktopError):
    """A subprocess (xdotool, a sandboxed command) or a wait (for a window, for the display)
    ran past its time limit. The message names the command or the awaited thing."""
