"""Exceptions of the OSWorld task runner (:mod:`gui.osworld`).

Every error is a :class:`ValueError` (bad data, not a bug): a task file that does not follow
OSWorld's schema, a metric called with values it cannot score.
"""

from __future__ import annotations

from gui.errors import GuiError


class OSWorldError(GuiError, ValueError):
    """Base class of every error raised by :mod:`gui.osworld`."""


class TaskFileError(OSWorldError):
    """An OSWorld task file (JSON) is unreadable or breaks the schema.

    The message names the file and the dotted path of the field, e.g.
    ``foo.json: evaluator.result.type: unknown getter 'vm_foo'; known: ...`` or
    ``foo.json: config[2].parameters.command: required``.

    Built as ``TaskFileError(where, field, problem)`` (``field`` may be ``""`` for a
    whole-file problem) or, like any exception, from one ready message.
    """

    def __init__(self, where: str, field: str | None = None, problem: str | None = None) -> None:
        self.where = where
        self.field = field or ""
        self.problem = problem or ""
        if problem is None:
            message = where
        elif self.field:
            message = f"{where}: {self.field}: {problem}"
        else:
            message = f"{where}: {problem}"
        super().__init__(message)


class MetricError(OSWorldError):
    """A metric cannot score its inputs.

    Raised for an unknown metric name, and wherever OSWorld's own metric raises (e.g.
    ``is_utc_0`` on an output of fewer than four lines, ``exact_match`` without ``rules``): in
    OSWorld such an evaluation errors out rather than scoring 0, so the runner should record
    it as an evaluator error, not as a failure of the agent.
    """
