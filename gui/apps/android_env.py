"""``AndroidEnvGuiEnv``: an android-env environment behind our GUI action schema.

android-env (its coordinator, task manager and adb call parser) drives the device; this env
translates each GUI action into TOUCH / LIFT steps or adb requests
(:mod:`gui.apps.android_actions`), observes ``pixels`` and scores the episode:

- on our synthetic phone (:class:`sim.android.simulator.SyntheticPhoneSimulator`) with the
  task checkers of :mod:`gui.apps.tasks`, reward terms ``success`` + ``invalid_action``
  (see :mod:`gui.apps.episode`), exactly like :class:`gui.apps.env.PhoneEnv`;
- on any other simulator with android-env's task reward: terms ``task_reward`` (the rewards
  android-env reported during the step) + ``invalid_action``; success means android-env ended
  the episode (termination) with a positive total task reward.

Observation: ``{"image": pixels, "instruction": str, "a11y": str}`` (``a11y`` is the synthetic
phone's accessibility text, ``""`` on other simulators).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from android_env import environment
from android_env.components import config_classes
from android_env.components.simulators import base_simulator
from android_env.proto import adb_pb2

from gui.actions import TERMINAL_TYPES, InvalidAction, parse_action
from gui.apps.android_actions import PlanConfig, plan_action
from gui.apps.env import SuiteArg
from gui.apps.episode import RewardConfig, TaskBudgetLimit, resolve_task, step_info, task_info
from gui.apps.errors import AppEnvError
from gui.apps.spaces import GuiActionSpace, observation_space
from gui.apps.suite import BUILTIN_SUITES, TaskSuite, load_suites
from gui.apps.tasks import PhoneTask, TaskStatus
from sim.android.loader import build, read_task, task_config
from sim.android.simulator import (
    ACTIVITIES,
    SeededFakeSimulator,
    SeededFakeSimulatorConfig,
    SyntheticPhoneConfig,
    SyntheticPhoneSimulator,
)

_OK = adb_pb2.AdbResponse.Status.OK
_LOG = logging.getLogger(__name__)


class AndroidEnvGuiEnv(gymnasium.Env[dict[str, Any], dict[str, Any]]):
    """GUI-action env over an android-env ``AndroidEnv``.

    Args:
        android_env: the android-env environment (built by the caller).
        simulator: its simulator; a :class:`SyntheticPhoneSimulator` enables suite tasks and
            checkers, a :class:`SeededFakeSimulator` is reseeded at every reset.
        suite: tasks (required with the synthetic phone, ignored otherwise).
        plan: how actions become TOUCH / LIFT steps and adb requests.
        reward: :class:`RewardConfig` or a mapping of its fields.
        split: draw tasks from this split only when ``reset`` gets no task.
        task: ``{"id", "instruction", "max_steps"}`` of the single android-env task (other
            simulators).
        render_mode: ``None`` or ``"rgb_array"``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        android_env: environment.AndroidEnv,
        simulator: base_simulator.BaseSimulator | None,
        *,
        suite: TaskSuite | None = None,
        plan: PlanConfig | None = None,
        reward: RewardConfig | Mapping[str, float] | None = None,
        split: str | None = None,
        task: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise AppEnvError(
                f"AndroidEnvGuiEnv: render_mode {render_mode!r} is not None or 'rgb_array'"
            )
        self._env = android_env
        self.simulator = simulator
        self.synthetic = isinstance(simulator, SyntheticPhoneSimulator)
        if self.synthetic and suite is None:
            raise AppEnvError("AndroidEnvGuiEnv: the synthetic phone needs a task suite (suite=)")
        self.suite, self.split, self.render_mode = suite, split, render_mode
        self.plan = plan or PlanConfig()
        self.reward_config = RewardConfig.of(reward)
        self._android_task = {
            "id": "android",
            "instruction": "Operate the device.",
            "max_steps": 20,
        }
        self._android_task.update(dict(task or {}))
        h, w, _ = android_env.observation_spec()["pixels"].shape
        self.observation_space = observation_space((int(w), int(h)))
        self.action_space = GuiActionSpace(apps=tuple(self.plan.activities))
        self._task: PhoneTask | None = None
        self._pixels: np.ndarray | None = None
        self._steps, self._ended, self._started, self._closed = 0, False, False, False
        self._task_return = 0.0

    @property
    def task(self) -> PhoneTask | None:
        """The current suite task (synthetic phone only)."""
        return self._task

    def _base_info(self) -> dict[str, Any]:
        if self._task is not None:
            return task_info(self._task)
        t = self._android_task
        return {
            "task_id": t["id"],
            "template": "android_task",
            "feasible": True,
            "max_steps": int(t["max_steps"]),
            "split": "test",
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode: restore the task's phone state (synthetic) or reseed (fake)."""
        super().reset(seed=seed)
        if self._closed:
            raise AppEnvError("AndroidEnvGuiEnv.reset() after close()")
        sim = self.simulator
        if isinstance(sim, SyntheticPhoneSimulator):
            assert self.suite is not None
            self._task = resolve_task(self.suite, options, self.np_random, self.split)
            sim.phone.set_state(self._task.initial)
            sim.cancel_gesture()
        else:
            unknown = set(options or {}) - {"task_id"}
            if unknown:
                raise AppEnvError(f"reset options {sorted(unknown)} unknown here; known: task_id")
            if isinstance(sim, SeededFakeSimulator):
                sim.reseed(int(self.np_random.integers(2**31)))
        timestep = self._env.reset()
        self._pixels = np.asarray(timestep.observation["pixels"])
        self._steps, self._ended, self._started, self._task_return = 0, False, True, 0.0
        return self._obs(), {**self._base_info(), "step": 0}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Execute one GUI action on the device; never raises for bad actions or device errors.

        Raises:
            gymnasium.error.ResetNeeded: before ``reset`` or after the episode ended.
        """
        if not self._started or self._ended:
            raise gymnasium.error.ResetNeeded("AndroidEnvGuiEnv.step() needs reset() first")
        self._steps += 1
        parsed = parse_action(action)
        invalid = noop = error = end = ending = None
        task_reward = 0.0
        if isinstance(parsed, InvalidAction):
            invalid = parsed.reason
        elif parsed.type in TERMINAL_TYPES:
            ending = parsed
        else:
            steps = plan_action(parsed, self.plan)
            if isinstance(steps, InvalidAction):
                invalid = steps.reason
            else:
                try:
                    task_reward, end, invalid, noop = self._run(steps)
                except Exception as err:  # the device or android-env crashed: end, keep the rollout
                    _LOG.debug("android-env failed on %s", parsed.type, exc_info=True)
                    error = f"{type(err).__name__}: {err}"
        self._task_return += task_reward
        status = self._status(ending, end, error)
        terminated = status is not TaskStatus.RUNNING
        truncated = end == "truncation" and not terminated
        self._ended = terminated or truncated
        terms = self.reward_config.terms(status is TaskStatus.SUCCESS, invalid is not None)
        if not self.synthetic:
            terms = {"task_reward": task_reward, "invalid_action": terms["invalid_action"]}
        info = step_info(
            self._base_info(),
            self._steps,
            status,
            terms,
            action=None if isinstance(parsed, InvalidAction) else parsed.to_dict(),
            invalid_reason=invalid,
            noop_reason=noop,
            backend_error=error,
        )
        info["android_episode_end"] = end
        return self._obs(), float(sum(terms.values())), terminated, truncated, info

    def _run(self, steps: list[Any]) -> tuple[float, str | None, str | None, str | None]:
        """Send a plan; returns (task reward, android-env episode end, invalid, no-op reason)."""
        sim = self.simulator if isinstance(self.simulator, SyntheticPhoneSimulator) else None
        if sim is not None:
            sim.clear_outcome()
        reward, end, adb_error = 0.0, None, None
        for step in steps:
            if isinstance(step, adb_pb2.AdbRequest):
                response = self._env.execute_adb_call(step)
                if response.status != _OK:
                    adb_error = f"adb {step.WhichOneof('command')} failed: {response.error_message}"
                continue
            timestep = self._env.step(step)
            reward += float(timestep.reward or 0.0)
            self._pixels = np.asarray(timestep.observation["pixels"])
            if timestep.last():
                end = "termination" if timestep.discount == 0 else "truncation"
                break
        outcome = sim.last_outcome if sim is not None else None
        if outcome is not None and outcome.invalid:
            return reward, end, outcome.reason, None
        if adb_error is not None:
            return reward, end, adb_error, None
        return reward, end, None, outcome.reason if outcome is not None else None

    def _status(self, ending: Any, end: str | None, error: str | None) -> TaskStatus:
        if error is not None:
            return TaskStatus.FAILURE
        if self._task is not None and isinstance(self.simulator, SyntheticPhoneSimulator):
            status = self._task.evaluate(self.simulator.phone.state, ending)
            if status is TaskStatus.RUNNING and end == "termination":
                return TaskStatus.FAILURE
            return status
        if ending is not None:
            return TaskStatus.FAILURE
        if end == "termination":
            return TaskStatus.SUCCESS if self._task_return > 0 else TaskStatus.FAILURE
        return TaskStatus.RUNNING

    def _obs(self) -> dict[str, Any]:
        assert self._pixels is not None
        if self._task is not None:
            instruction = self._task.instruction
        else:
            instruction = str(self._android_task["instruction"])
        sim = self.simulator
        a11y = sim.phone.a11y_text() if isinstance(sim, SyntheticPhoneSimulator) else ""
        return {
            "image": np.array(self._pixels, dtype=np.uint8),
            "instruction": instruction,
            "a11y": a11y,
        }

    def render(self) -> np.ndarray | None:
        """The last screenshot in ``rgb_array`` mode."""
        if self.render_mode != "rgb_array" or self._pixels is None:
            return None
        return np.array(self._pixels, dtype=np.uint8)

    def close(self) -> None:
        """Close android-env (its threads and simulator); safe to call more than once."""
        if not self._closed:
            self._closed, self._ended = True, True
            self._env.close()


def make_android_synthetic_env(
    suite: SuiteArg = BUILTIN_SUITES,
    *,
    desktop: bool = False,
    width: int | None = None,
    height: int | None = None,
    task_path: str | Path | None = None,
    long_press_touches: int = 3,
    swipe_moves: int = 5,
    **kwargs: Any,
) -> gymnasium.Env:
    """Entry point of ``vlagent/AndroidSynthetic-v0``: our phone under android-env.

    Args:
        suite: task suites (as for :class:`gui.apps.env.PhoneEnv`).
        desktop / width / height: the phone's form factor and screen size.
        task_path: android-env task textproto (default ``sim/android/tasks/phone.textproto``).
        long_press_touches / swipe_moves: gesture shapes (see :class:`PlanConfig`).
        **kwargs: ``reward``, ``split``, ``render_mode`` of :class:`AndroidEnvGuiEnv`.
    """
    sim_config = SyntheticPhoneConfig(
        desktop=desktop, width=width, height=height, long_press_touches=long_press_touches
    )
    config = config_classes.AndroidEnvConfig(task=task_config(task_path), simulator=sim_config)
    android, simulator = build(config)
    plan = PlanConfig(True, ACTIVITIES, long_press_touches, swipe_moves)
    env = AndroidEnvGuiEnv(android, simulator, suite=load_suites(suite), plan=plan, **kwargs)
    return TaskBudgetLimit(env)


def make_android_fake_env(
    *,
    width: int = 180,
    height: int = 320,
    task_path: str | Path | None = None,
    max_steps: int = 20,
    adb: bool = True,
    **kwargs: Any,
) -> gymnasium.Env:
    """Entry point of ``vlagent/AndroidFake-v0``: android-env's fake simulator (seeded noise).

    Args:
        width / height: screen size in pixels.
        task_path: android-env task textproto (its ``id`` / ``description`` name the task).
        max_steps: step budget of the episode.
        adb: whether text, keys and app launches may use the fake's adb controller.
        **kwargs: ``reward``, ``render_mode`` of :class:`AndroidEnvGuiEnv`.
    """
    tc = task_config(task_path)
    proto = read_task(tc)
    sim_config = SeededFakeSimulatorConfig(screen_dimensions=(height, width))
    android, simulator = build(config_classes.AndroidEnvConfig(task=tc, simulator=sim_config))
    task = {
        "id": proto.id or "android",
        "instruction": proto.description or "Operate the device.",
        "max_steps": max_steps,
    }
    env = AndroidEnvGuiEnv(android, simulator, plan=PlanConfig(adb=adb), task=task, **kwargs)
    return TaskBudgetLimit(env)


def make_android_emulator_env(
    emulator: config_classes.EmulatorConfig,
    *,
    task_path: str | Path | None = None,
    activities: Mapping[str, str] | None = None,
    max_steps: int = 20,
    **kwargs: Any,
) -> gymnasium.Env:
    """A real emulator through android-env's own loader, unchanged (not registered: needs an SDK).

    Args:
        emulator: e.g. :func:`sim.android.loader.emulator_config` ``("Pixel_6_API_33")``.
        task_path: android-env task textproto.
        activities: app name -> ``package/.Activity`` for ``open_app``.
        max_steps: step budget of the episode.
        **kwargs: ``reward``, ``render_mode`` of :class:`AndroidEnvGuiEnv`.
    """
    from sim.android.loader import load

    tc = task_config(task_path)
    proto = read_task(tc)
    android = load(config_classes.AndroidEnvConfig(task=tc, simulator=emulator))
    task = {
        "id": proto.id or "android",
        "instruction": proto.description or "Operate the device.",
        "max_steps": max_steps,
    }
    plan = PlanConfig(adb=True, activities=dict(activities or {}))
    return TaskBudgetLimit(AndroidEnvGuiEnv(android, None, plan=plan, task=task, **kwargs))
