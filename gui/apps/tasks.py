"""Concrete phone tasks: a template (:mod:`gui.apps.templates`) bound to parameters and a seed.

Checkers read the phone's state, never its pixels. A task answers ``success``, ``failure`` or
``still running``; infeasible tasks succeed only when the agent ends with ``fail``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from gui.actions import Answer, BaseAction, Fail
from gui.apps.errors import TaskSuiteError
from gui.apps.templates import TEMPLATES, TaskStatus, TaskTemplate, ToggleKey
from sim.phone import PhoneState, digits, initial_state
from sim.phone.state import Ui

__all__ = ["TEMPLATES", "PhoneTask", "TaskStatus", "TaskTemplate", "ToggleKey", "make_task"]


@dataclass(frozen=True, eq=False)
class PhoneTask:
    """One concrete task: template + parameters + seeded initial state + step budget.

    Attributes:
        task_id: unique id within its suite.
        template: the :class:`TaskTemplate`.
        params: validated parameters (the template's ``Params`` model).
        seed: seed of the initial phone state.
        max_steps: step budget (episodes are truncated after it).
        split: ``"train"`` or ``"test"``.
        instruction: what the agent is told.
        initial: the initial phone state (on the launcher); do not mutate.
    """

    task_id: str
    template: TaskTemplate
    params: Any
    seed: int
    max_steps: int
    split: str
    instruction: str
    initial: PhoneState

    @property
    def feasible(self) -> bool:
        """Whether the task can be done on this phone (else the right ending is ``fail``)."""
        return self.template.feasible

    def evaluate(self, state: PhoneState, ending: BaseAction | None = None) -> TaskStatus:
        """Judge the episode given the current state and its ending action, if any.

        Args:
            state: the phone's current state.
            ending: the ``done`` / ``fail`` / ``answer`` action that ends the episode, or
                ``None`` while it runs.
        """
        t = self.template
        if not t.feasible:
            if ending is None:
                return TaskStatus.RUNNING
            return TaskStatus.SUCCESS if isinstance(ending, Fail) else TaskStatus.FAILURE
        if t.answers:
            if not isinstance(ending, Answer):
                return TaskStatus.RUNNING if ending is None else TaskStatus.FAILURE
            expected = t.expected_answer(self.initial, self.params)
            right = digits(ending.text) == digits(expected) and digits(expected) != ""
            return TaskStatus.SUCCESS if right else TaskStatus.FAILURE
        if t.goal(self.initial, state, self.params):
            return TaskStatus.SUCCESS
        return TaskStatus.RUNNING if ending is None else TaskStatus.FAILURE


def make_task(
    task_id: str,
    template: str,
    params: Mapping[str, Any],
    seed: int,
    max_steps: int | None = None,
    split: str = "train",
) -> PhoneTask:
    """Validate ``params`` against the template and build the task's initial state.

    Raises:
        TaskSuiteError: unknown template, or ``params.<field>: <problem>`` for bad parameters.
    """
    if template not in TEMPLATES:
        raise TaskSuiteError(f"template {template!r} is unknown; known: {', '.join(TEMPLATES)}")
    t = TEMPLATES[template]
    try:
        p = t.Params.model_validate(dict(params))
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(x) for x in ("params", *first["loc"]))
        raise TaskSuiteError(f"{loc}: {first['msg']} (got {first.get('input')!r})") from err
    state = initial_state(seed)
    t.setup(state, p, np.random.default_rng([seed, 1]))
    state.ui = Ui()
    return PhoneTask(task_id, t, p, seed, max_steps or t.budget, split, t.instruction(p), state)
