"""``DesktopEnv``: OSWorld-format tasks on a local Xvfb desktop, one sandboxed home per task.

Observation: ``{"image": uint8 (H, W, 3), "instruction": str, "a11y": str}`` — the screenshot
of the whole X screen, the task's instruction, and the window list as text (one window per
line: ``title | x y width height`` in pixels). Action: a GUI action mapping (:mod:`gui.actions`,
points normalized to [0, 1] of the screenshot), run through xdotool
(:mod:`gui.osworld.execute`).

An episode: ``reset`` gives the session a fresh home, runs the task's ``config`` steps
(:mod:`gui.osworld.setup`) and waits for the screen to settle. It ends when the agent sends
``done`` / ``fail`` / ``answer`` or after ``max_steps`` actions (truncated); then the task's
evaluator runs (``postconfig``, getters, metrics, ``conj``), as OSWorld's ``evaluate`` does:
an ``infeasible`` task succeeds only when the agent's last action is ``fail``, and a feasible
task the agent ``fail``-ed scores 0. Reward terms: ``success`` (weight × verdict, at the end)
and ``invalid_action`` (weight per action that could not run).

Never scored as the agent's failure: a task whose setup cannot run here
(:class:`~gui.osworld.setup.SetupUnavailable`, raised by ``reset``; check first with
:meth:`DesktopEnv.unavailable`) and a task whose evaluator has no function or needs a getter
this runner lacks (``info["evaluator_unavailable"]`` at the end).

A command that runs past ``step_timeout`` (an app that hangs, a getter that never returns) is
killed with its process group and the step raises :class:`EpisodeError`: the rollout runner
records the episode as an error.
"""

from __future__ import annotations

import logging
import string
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from gui.actions import TERMINAL_TYPES, BaseAction, InvalidAction, parse_action
from gui.apps.spaces import GuiActionSpace, observation_space
from gui.osworld.errors import OSWorldError
from gui.osworld.execute import APP_ALIASES, execute
from gui.osworld.getters import GetterUnavailable, get, windows_text
from gui.osworld.setup import SetupUnavailable, run_steps, task_unavailable, unavailable_reason
from gui.osworld.suites import load_suite

log = logging.getLogger(__name__)

TERMINAL_LOG = "/home/user/.cache/vlagent/terminal.log"
"""Where the terminal logs its output inside the sandbox (read by ``vm_terminal_output``)."""

_PRINTABLE = frozenset(string.printable)


class EpisodeError(OSWorldError):
    """A step or the evaluation ran past its timeout; the hung processes were killed."""


def _printable(text: str) -> str:
    return "".join(c if c in _PRINTABLE else "?" for c in text)


class DesktopEnv(gymnasium.Env):
    """OSWorld-format tasks on a local desktop (see the module docstring).

    Args:
        tasks: a bundled suite name (``local``, ``os``), a folder or file of task JSON, or
            loaded tasks.
        width, height: the X screen in pixels (also the screenshot size).
        max_steps: actions per episode before truncation.
        reward: weights of ``success`` and ``invalid_action``.
        step_timeout: seconds one action, getter or evaluator command may take.
        setup_timeout: seconds one setup command may take.
        settle: seconds to wait after an action before the screenshot is taken.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        tasks: str | Path | Sequence[Any] = "local",
        width: int = 1024,
        height: int = 768,
        max_steps: int = 15,
        reward: Mapping[str, float] | None = None,
        step_timeout: float = 10.0,
        setup_timeout: float = 60.0,
        settle: float = 0.4,
    ) -> None:
        self.tasks = list(load_suite(tasks) if isinstance(tasks, (str, Path)) else tasks)
        if not self.tasks:
            raise OSWorldError("DesktopEnv: no tasks")
        self._by_id = {t.id: t for t in self.tasks}
        self.size = (int(width), int(height))
        self.max_steps = int(max_steps)
        weights = {"success": 1.0, "invalid_action": -0.1, **dict(reward or {})}
        unknown = set(weights) - {"success", "invalid_action"}
        if unknown:
            raise OSWorldError(f"reward: unknown terms {sorted(unknown)}")
        self.weights = weights
        self.step_timeout, self.setup_timeout, self.settle = step_timeout, setup_timeout, settle
        self.observation_space = observation_space(self.size)
        self.action_space = GuiActionSpace(sorted(set(APP_ALIASES.values())))
        self._session: Any = None
        self._task: Any = None
        self._steps = 0
        self._last: BaseAction | None = None
        self._closed = False

    # --- tasks -----------------------------------------------------------------------------
    def task(self, task_id: Any) -> Any:
        """The task with id ``task_id`` (a string) or at index ``task_id`` (an int)."""
        if isinstance(task_id, (int, np.integer)) and not isinstance(task_id, bool):
            return self.tasks[int(task_id) % len(self.tasks)]
        if task_id not in self._by_id:
            raise OSWorldError(f"unknown task id {task_id!r} ({len(self.tasks)} tasks loaded)")
        return self._by_id[task_id]

    def unavailable(self, task_id: Any) -> str | None:
        """Why task ``task_id`` cannot run here (setup or evaluator), or None."""
        return task_unavailable(self.task(task_id))

    # --- gymnasium ---------------------------------------------------------------------------
    @property
    def session(self) -> Any:
        """The desktop session (display, sandbox, input), started on first use."""
        if self._session is None:
            from sim.desktop import DesktopSession

            self._session = DesktopSession(*self.size)
        return self._session

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id", 0)
        task = self.task(task_id)
        reason = unavailable_reason(task.config)
        if reason is not None:
            raise SetupUnavailable(f"task {task.id}: setup unavailable: {reason}")
        self._task, self._steps, self._last = task, 0, None
        session = self.session
        session.reset_home()
        session.sandbox.host_path(TERMINAL_LOG).parent.mkdir(parents=True, exist_ok=True)
        try:
            setup_log = run_steps(session, task.config, TERMINAL_LOG, self.setup_timeout)
        except SetupUnavailable as exc:
            raise SetupUnavailable(f"task {task.id}: setup unavailable: {exc}") from exc
        obs = self._observe()
        return obs, {"task_id": task.id, "setup_log": setup_log}

    def _observe(self) -> dict[str, Any]:
        image = self._stable_screenshot()
        return {
            "image": image,
            "instruction": _printable(self._task.instruction) or "?",
            "a11y": _printable(windows_text(self.session))[:16384],
        }

    def _stable_screenshot(self) -> np.ndarray:
        """A screenshot once two taken 0.1 s apart agree (at most ~2 s after ``settle``)."""
        time.sleep(self.settle)
        prev = self.session.screenshot()
        for _ in range(20):
            time.sleep(0.1)
            cur = self.session.screenshot()
            if np.array_equal(cur, prev):
                return cur
            prev = cur
        return prev

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self._task is None:
            raise OSWorldError("step() before reset()")
        from sim.desktop import CommandTimeout

        parsed = action if isinstance(action, BaseAction) else parse_action(action)
        self._steps += 1
        invalid_reason: str | None = None
        terminated = False
        if isinstance(parsed, InvalidAction):
            invalid_reason = parsed.reason
        elif parsed.type in TERMINAL_TYPES:
            terminated = True
            self._last = parsed
        else:
            self._last = parsed
            try:
                invalid_reason = execute(self.session, parsed, TERMINAL_LOG)
            except CommandTimeout as exc:
                self._kill_apps()
                raise EpisodeError(f"task {self._task.id}: step {self._steps}: {exc}") from exc
        truncated = not terminated and self._steps >= self.max_steps
        info: dict[str, Any] = {
            "invalid_action": invalid_reason is not None,
            "status": "invalid" if invalid_reason else "ok",
        }
        if invalid_reason:
            info["invalid_reason"] = invalid_reason
        success = False
        if terminated or truncated:
            success = self._evaluate(info)
        terms = {
            "success": self.weights["success"] * float(success),
            "invalid_action": self.weights["invalid_action"] * float(invalid_reason is not None),
        }
        info.update(success=success, reward_terms=terms, steps=self._steps)
        return self._observe(), float(sum(terms.values())), terminated, truncated, info

    def _kill_apps(self) -> None:
        try:
            self.session.reset_home()  # kills every process of the sandbox, fresh home
        except Exception:  # noqa: BLE001 - best effort after a timeout; close() cleans up
            log.exception("killing the sandbox's apps failed")

    # --- evaluation --------------------------------------------------------------------------
    def _evaluate(self, info: dict[str, Any]) -> bool:
        """Run the task's evaluator; fills ``info`` (``evaluator_unavailable``, ``eval_error``,
        ``score``) and returns the verdict."""
        from gui.osworld.errors import MetricError
        from gui.osworld.metrics import combine, score
        from sim.desktop import CommandTimeout

        ev = self._task.evaluator
        failed = self._last is not None and self._last.type == "fail"
        if ev.infeasible:
            info["score"] = float(failed)
            return failed
        if ev.empty:
            info["evaluator_unavailable"] = "the task file has no evaluator (func is empty)"
            return False
        if failed:  # OSWorld: a feasible task the agent declared infeasible scores 0
            info["score"] = 0.0
            return False
        try:
            run_steps(self.session, ev.postconfig, TERMINAL_LOG, self.step_timeout)
            scores = []
            for i, func in enumerate(ev.funcs):
                result = get(self.session, ev.results[i], TERMINAL_LOG, self.step_timeout)
                expected = get(self.session, ev.expected[i], TERMINAL_LOG, self.step_timeout)
                scores.append(score(func, result, expected, **dict(ev.options[i] or {})))
            total = combine(scores, ev.conj)
        except MetricError as exc:  # OSWorld's own function raises on this result: score 0
            info["eval_error"] = str(exc)
            info["score"] = 0.0
            return False
        except (GetterUnavailable, SetupUnavailable) as exc:
            info["evaluator_unavailable"] = str(exc)
            return False
        except CommandTimeout as exc:
            self._kill_apps()
            raise EpisodeError(f"task {self._task.id}: evaluation: {exc}") from exc
        info["score"] = float(total)
        return total >= 1.0

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        self._closed = True
