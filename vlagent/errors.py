"""Exception types of the vlagent package: each message names what was wrong and where."""

from __future__ import annotations


class VlagentError(Exception):
    """Base class of every error vlagent raises on purpose."""


class ConfigError(VlagentError, ValueError):
    """A config file, key or value is wrong (the message names the field)."""


class ModelError(VlagentError, ValueError):
    """A model family, checkpoint folder or model spec is wrong."""


class CheckpointError(VlagentError):
    """A training checkpoint is missing, incomplete or does not match the run."""
