"""Exceptions raised by :mod:`sim.phone` (the synthetic phone OS)."""

from __future__ import annotations

from sim.errors import SimError


class PhoneError(SimError):
    """Base class of every error raised by ``sim.phone``."""


class PhoneConfigError(PhoneError, ValueError):
    """A :class:`sim.phone.PhoneConfig` field is out of range."""


class PhoneStateError(PhoneError, ValueError):
    """A snapshot or state mapping cannot be restored (malformed, wrong version, bad field)."""
