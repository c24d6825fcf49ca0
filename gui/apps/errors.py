"""Exceptions raised by :mod:`gui.apps` (interactive app tasks, suites and their envs)."""

from __future__ import annotations

from gui.errors import GuiError


class AppsError(GuiError):
    """Base class of every error raised by ``gui.apps``."""


class TaskSuiteError(AppsError, ValueError):
    """A task-suite file or task spec is malformed.

    Messages name the file, the task index, the field and the problem, e.g.
    ``phone_basic.json: tasks[3].params.phone: String should match pattern ...``.
    """


class AppEnvError(AppsError, ValueError):
    """An app env was built or reset with bad arguments (suite, task id, options, kwargs)."""
