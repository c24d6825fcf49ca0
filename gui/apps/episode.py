"""What every app env shares: task choice at reset, reward terms, step info, the budget limit.

Reward (documented once, used by :class:`~gui.apps.env.PhoneEnv` and
:class:`~gui.apps.android_env.AndroidEnvGuiEnv`): ``reward = sum(info["reward_terms"])`` with

- ``success``: ``RewardConfig.success`` on the step where the task checker first says
  success (the episode then terminates), else 0;
- ``invalid_action``: ``RewardConfig.invalid_action`` (<= 0) on every step whose action was
  malformed or could not be executed (unknown app, no focused field, unsupported key), else 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np

from gui.apps.errors import AppEnvError, TaskSuiteError
from gui.apps.suite import TaskSpec, TaskSuite
from gui.apps.tasks import PhoneTask, TaskStatus, make_task

RESET_OPTIONS: frozenset[str] = frozenset({"task_id", "task", "state_seed"})
"""Keys ``reset(options=...)`` accepts (see :func:`resolve_task`)."""


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the reward terms.

    Attributes:
        success: paid once, when the task checker says success (>= 0).
        invalid_action: paid on each invalid step (<= 0, a penalty).
    """

    success: float = 1.0
    invalid_action: float = -0.1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.success) and self.success >= 0):
            raise AppEnvError(f"RewardConfig.success must be finite and >= 0, got {self.success}")
        if not (math.isfinite(self.invalid_action) and self.invalid_action <= 0):
            raise AppEnvError(
                f"RewardConfig.invalid_action must be finite and <= 0, got {self.invalid_action}"
            )

    @classmethod
    def of(cls, value: RewardConfig | Mapping[str, float] | None) -> RewardConfig:
        """A config from itself, a mapping of its fields, or ``None`` (defaults)."""
        if value is None or isinstance(value, RewardConfig):
            return value or cls()
        unknown = set(value) - {"success", "invalid_action"}
        if unknown:
            raise AppEnvError(
                f"reward terms {sorted(unknown)} unknown; known: success, invalid_action"
            )
        return cls(**{k: float(v) for k, v in value.items()})

    def terms(self, success: bool, invalid: bool) -> dict[str, float]:
        """Named reward terms of one step (they sum to its reward)."""
        return {
            "success": self.success if success else 0.0,
            "invalid_action": self.invalid_action if invalid else 0.0,
        }


def resolve_task(
    suite: TaskSuite,
    options: Mapping[str, Any] | None,
    np_random: np.random.Generator,
    split: str | None = None,
) -> PhoneTask:
    """The task an episode runs, from reset options.

    Options:
        ``task_id``: a task of ``suite`` by id.
        ``task``: an ad-hoc task spec mapping (``template``, ``params``, ``seed``, optional
            ``id`` / ``max_steps`` / ``split``), validated like a suite entry.
        ``state_seed``: re-seed the chosen task's initial phone state.
        none: a task drawn with ``np_random`` from ``suite`` (from ``split`` only, if given).

    Raises:
        AppEnvError: unknown options, unknown task id, or an invalid ad-hoc task.
    """
    options = dict(options or {})
    unknown = set(options) - RESET_OPTIONS
    if unknown:
        raise AppEnvError(
            f"reset options {sorted(unknown)} unknown; known: {sorted(RESET_OPTIONS)}"
        )
    try:
        if "task" in options:
            spec = TaskSpec.model_validate({"id": "adhoc", **dict(options["task"])})
            task = make_task(
                spec.id, spec.template, spec.params, spec.seed, spec.max_steps, spec.split
            )
        elif options.get("task_id") is not None:
            task = suite.get(str(options["task_id"]))
        else:
            pool = suite.split(split) if split else suite.tasks
            if not pool:
                raise AppEnvError(f"suite {suite.name!r} has no {split!r} tasks")
            task = pool[int(np_random.integers(len(pool)))]
        seed = options.get("state_seed")
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
                raise AppEnvError(f"options['state_seed'] must be an int >= 0, got {seed!r}")
            params = task.params.model_dump()
            task = make_task(
                task.task_id, task.template.id, params, int(seed), task.max_steps, task.split
            )
    except AppEnvError:
        raise
    except (TaskSuiteError, ValueError) as err:  # ValueError: pydantic's ValidationError
        raise AppEnvError(f"reset options {options!r}: {err}") from err
    return task


def task_info(task: PhoneTask) -> dict[str, Any]:
    """Info keys every reset and step carries."""
    return {
        "task_id": task.task_id,
        "template": task.template.id,
        "feasible": task.feasible,
        "max_steps": task.max_steps,
        "split": task.split,
    }


def step_info(
    base: Mapping[str, Any],
    step: int,
    status: TaskStatus,
    terms: dict[str, float],
    *,
    action: dict[str, Any] | None,
    invalid_reason: str | None,
    noop_reason: str | None = None,
    backend_error: str | None = None,
) -> dict[str, Any]:
    """The ``info`` of one step: ``base`` (e.g. :func:`task_info`) plus the step's outcome.

    Plain values only, so equal steps give equal infos.
    """
    return {
        **base,
        "step": step,
        "status": status.value,
        "success": status is TaskStatus.SUCCESS,
        "reward_terms": dict(terms),
        "action": action,
        "invalid_action": invalid_reason is not None,
        "invalid_reason": invalid_reason,
        "noop_reason": noop_reason,
        "backend_error": backend_error,
    }


class TaskBudgetLimit(gymnasium.wrappers.TimeLimit):
    """gymnasium's ``TimeLimit`` whose budget is each episode's ``info["max_steps"]``.

    Task budgets differ per task, so the limit is read from the reset info instead of being
    fixed at ``make`` time; truncation itself is ``TimeLimit``'s.
    """

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env, max_episode_steps=2**31 - 1)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = super().reset(**kwargs)
        self._max_episode_steps = int(info["max_steps"])
        return obs, info
