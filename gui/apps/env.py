"""``PhoneEnv``: multi-step tasks on the synthetic phone OS (:mod:`sim.phone`).

Observation: ``{"image": uint8 (H, W, 3), "instruction": str, "a11y": str}`` where ``a11y`` is
the accessibility tree as compact text (one element per line with its normalized bounds).
Action: a GUI action mapping (:mod:`gui.actions`), points normalized to [0, 1].
Reward: see :mod:`gui.apps.episode`. Termination: the task succeeds, or the agent sends
``done`` / ``fail`` / ``answer``, or the simulator raises (``info["backend_error"]``).
Truncation: :class:`~gui.apps.episode.TaskBudgetLimit` at the task's step budget.

``reset(seed=s, options={"task_id": id})`` is deterministic: the initial state comes from the
task's own seed, so envs reset with one task show one first observation (GRPO groups).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from gui.actions import (
    TERMINAL_TYPES,
    BaseAction,
    Click,
    DoubleClick,
    Drag,
    Hotkey,
    InvalidAction,
    Key,
    LongPress,
    OpenApp,
    RightClick,
    Scroll,
    Swipe,
    Type,
    Wait,
    parse_action,
)
from gui.apps.episode import RewardConfig, TaskBudgetLimit, resolve_task, step_info, task_info
from gui.apps.errors import AppEnvError
from gui.apps.spaces import GuiActionSpace, observation_space
from gui.apps.suite import BUILTIN_SUITES, TaskSuite, load_suites
from gui.apps.tasks import PhoneTask, TaskStatus
from sim.phone import APPS, Outcome, Phone, PhoneConfig

SuiteArg = str | Path | TaskSuite | Iterable[str | Path | TaskSuite]


def execute_on_phone(phone: Phone, action: BaseAction) -> Outcome:
    """Run a non-terminal GUI action on the phone (points normalized to [0, 1]).

    ``right_click`` acts as a long press and ``drag`` as a swipe; hotkeys are not supported.
    """
    match action:
        case Click(point=p):
            return phone.tap(p)
        case DoubleClick(point=p):
            return phone.double_tap(p)
        case LongPress(point=p) | RightClick(point=p):
            return phone.long_press(p)
        case Swipe(start=a, end=b) | Drag(start=a, end=b):
            return phone.swipe(a, b)
        case Scroll(point=p, direction=d):
            return phone.scroll(p, d)
        case Type(text=text, point=p):
            if p is not None:
                phone.tap(p)
            return phone.type_text(text)
        case Key(key=key):
            return phone.press_key(key)
        case Hotkey(keys=keys):
            return Outcome(False, f"hotkeys are not supported on the phone: {'+'.join(keys)}", True)
        case OpenApp(name=name):
            return phone.open_app(name)
        case Wait():
            return Outcome(False, "waited")
    return Outcome(False, f"{action.type} actions are not executed on the phone", True)


class PhoneEnv(gymnasium.Env[dict[str, Any], dict[str, Any]]):
    """Multi-step phone tasks with state-reading checkers.

    Args:
        suite: builtin suite names, suite file paths or :class:`TaskSuite` s (merged).
        desktop: use the desktop-like form factor (sidebar of apps) instead of the handset.
        width: screen width in pixels (``None``: the form factor's default).
        height: screen height in pixels.
        split: draw tasks only from this split when ``reset`` gets no task.
        reward: :class:`RewardConfig` or a mapping of its fields.
        render_mode: ``None`` or ``"rgb_array"`` (the current screenshot).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        suite: SuiteArg = BUILTIN_SUITES,
        *,
        desktop: bool = False,
        width: int | None = None,
        height: int | None = None,
        split: str | None = None,
        reward: RewardConfig | Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise AppEnvError(f"PhoneEnv: render_mode {render_mode!r} is not None or 'rgb_array'")
        if split not in (None, "train", "test"):
            raise AppEnvError(f"PhoneEnv: split {split!r} is not None, 'train' or 'test'")
        self.suite = load_suites(suite)
        self.split = split
        self.reward_config = RewardConfig.of(reward)
        self.render_mode = render_mode
        self.phone = Phone(PhoneConfig(desktop=desktop, width=width, height=height))
        self.observation_space = observation_space(self.phone.config.size)
        self.action_space = GuiActionSpace(apps=APPS)
        self._task: PhoneTask | None = None
        self._steps = 0
        self._ended = False
        self._last_obs: dict[str, Any] | None = None

    @property
    def task(self) -> PhoneTask | None:
        """The current episode's task."""
        return self._task

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode (task choice: :func:`gui.apps.episode.resolve_task`)."""
        super().reset(seed=seed)
        self._task = resolve_task(self.suite, options, self.np_random, self.split)
        self.phone.set_state(self._task.initial)
        self._steps, self._ended = 0, False
        obs = self._obs()
        return obs, {**task_info(self._task), "step": 0}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Execute one GUI action; never raises for a bad action or a crashing simulator.

        Raises:
            gymnasium.error.ResetNeeded: before ``reset`` or after the episode terminated.
        """
        task = self._task
        if task is None or self._ended:
            raise gymnasium.error.ResetNeeded("PhoneEnv.step() needs reset() first")
        self._steps += 1
        parsed = parse_action(action)
        invalid = noop = error = None
        ending = None
        if isinstance(parsed, InvalidAction):
            invalid = parsed.reason
        elif parsed.type in TERMINAL_TYPES:
            ending = parsed
        else:
            try:
                outcome = execute_on_phone(self.phone, parsed)
            except Exception as err:  # the simulator crashed: end the episode, keep the rollout
                error = f"{type(err).__name__}: {err}"
            else:
                invalid = outcome.reason if outcome.invalid else None
                noop = outcome.reason if not outcome.invalid else None
        obs, status = None, TaskStatus.RUNNING
        if error is None:
            try:
                status = task.evaluate(self.phone.state, ending)
                obs = self._obs()
            except Exception as err:  # a checker or renderer failure is a backend error too
                error = f"{type(err).__name__}: {err}"
        if error is not None:
            status = TaskStatus.FAILURE
            assert self._last_obs is not None
            obs = {
                k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self._last_obs.items()
            }
        terminated = status is not TaskStatus.RUNNING
        self._ended = terminated
        terms = self.reward_config.terms(status is TaskStatus.SUCCESS, invalid is not None)
        info = step_info(
            task_info(task),
            self._steps,
            status,
            terms,
            action=None if isinstance(parsed, InvalidAction) else parsed.to_dict(),
            invalid_reason=invalid,
            noop_reason=noop,
            backend_error=error,
        )
        return obs, float(sum(terms.values())), terminated, False, info

    def _obs(self) -> dict[str, Any]:
        assert self._task is not None
        obs = {
            "image": self.phone.screenshot().copy(),
            "instruction": self._task.instruction,
            "a11y": self.phone.a11y_text(),
        }
        self._last_obs = obs
        return {**obs, "image": obs["image"].copy()}

    def render(self) -> np.ndarray | None:
        """The current screenshot (``uint8 (H, W, 3)``) in ``rgb_array`` mode."""
        if self.render_mode != "rgb_array" or self._task is None:
            return None
        return self.phone.screenshot().copy()

    def close(self) -> None:
        """End the episode and drop the task; safe to call more than once."""
        self._task = None
        self._last_obs = None
        self._ended = True


def make_phone_env(**kwargs: Any) -> gymnasium.Env:
    """Entry point of ``vlagent/Phone-v0``: :class:`PhoneEnv` under :class:`TaskBudgetLimit`."""
    return TaskBudgetLimit(PhoneEnv(**kwargs))


def make_phone_desktop_env(**kwargs: Any) -> gymnasium.Env:
    """Entry point of ``vlagent/PhoneDesktop-v0``: the desktop-like form factor."""
    return TaskBudgetLimit(PhoneEnv(desktop=True, **kwargs))
