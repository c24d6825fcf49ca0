"""Exceptions raised by the ``gui`` package (GUI environments and their task sources)."""

from __future__ import annotations


class GuiError(Exception):
    """Base class of every error raised by ``gui``."""


class GroundingDataError(GuiError, ValueError):
    """A grounding annotation file, record or image is missing or malformed.

    Messages name the annotation file, the record index, the field and the offending value.
    """


class GroundingEnvError(GuiError, ValueError):
    """A grounding environment was built or reset with bad arguments (source, task id, kwargs)."""
