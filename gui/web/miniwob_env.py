"""``MiniWoBEnv``: MiniWoB++ web tasks in headless Chromium, driven by GUI action mappings.

Observation: ``{"image": uint8 (210 * scale, 160 * scale, 3), "instruction": str}``: the
160 x 210 CSS-pixel task area (instruction banner included) and MiniWoB's utterance. After the
episode ends the image is all zeros (MiniWoB's empty observation). ``env.raw_observation`` is
miniwob's own last observation (``utterance``, ``fields``, ``dom_elements`` with CSS-pixel
``left`` / ``top`` / ``width`` / ``height``, ``screenshot``) for scripted oracles; it is not part
of the gymnasium observation.

Action: a :mod:`gui.actions` mapping, points normalized to [0, 1] of the image; ``(x, y)`` goes
to CSS pixel ``(x * 160, y * 210)`` of the page, whatever ``scale``. ``click``,
``double_click``, ``drag`` / ``swipe`` (press, move, release), ``scroll`` up / down, ``type``
(clicking ``point`` first), ``key`` and ``hotkey`` run in the page; ``wait`` only lets
animations settle; ``right_click``, ``long_press``, ``open_app`` and left / right scrolls are
invalid. ``done`` / ``fail`` / ``answer`` end the episode.

Reward: ``sum(info["reward_terms"])`` with ``success = w_s`` on the step MiniWoB ends the
episode with a raw reward above ``success_threshold`` (0: any positive raw reward, MiniWoB's
own convention; partial-credit tasks such as click-checkboxes pay a positive raw reward for a
partly right answer) and ``invalid_action = w_i`` on each invalid step. MiniWoB's wall-clock
episode limit (10-30 s per task) is lifted to 24 h, so results do not depend on machine load:
episodes end on the page's verdict, on ``done`` / ``fail`` / ``answer``, or at ``max_steps``.

Determinism: ``reset(seed=s, options={"task_id": "click-tab/17"})`` reloads the task page (jQuery
UI widgets leak state across episodes of one page: click-tab's border differs by one colour
level), seeds its generator (``Math.seedrandom(17)``) and waits for animations, so one task id
shows one first observation in any browser. The caret does not blink (CSS
``caret-animation: manual``), so steps are reproducible too. Task ids may also be ints (index
into the train ids of :func:`gui.web.suite.task_ids`); without a task id the env draws one from
its ``np_random``. The env keeps one Chromium (:class:`gui.web.browser.MiniWoBBrowser`) across
resets and tasks; ``close()`` quits it.
"""

from __future__ import annotations

import logging
import string
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

import gui.actions as ga
from gui.apps.episode import RewardConfig
from gui.apps.spaces import GuiActionSpace
from gui.web.browser import TASK_HEIGHT, TASK_WIDTH, MiniWoBBrowser, miniwob_config, to_miniwob
from gui.web.errors import WebBackendError, WebTaskError, WebUnavailable, require_web
from gui.web.suite import TEST_SEED_BASE, parse_task_id, resolve_tasks, task_ids

log = logging.getLogger(__name__)

CHARSET = frozenset(string.printable)
"""Characters of the ``instruction`` text (others become ``?``)."""
MAX_INSTRUCTION = 256
"""Longest instruction (miniwob's utterance limit)."""


class MiniWoBEnv(gymnasium.Env[dict[str, Any], dict[str, Any]]):
    """MiniWoB++ tasks as a GUI env (see the module docstring for spaces and reward).

    Args:
        tasks: a suite name (``"miniwob"``), one task name or a list of task names.
        max_steps: step budget of every task (``None``: each task's suite budget).
        reward: ``{"success": w_s >= 0, "invalid_action": w_i <= 0}`` (defaults 1.0, -0.1).
        headless: run Chromium headless (``False`` needs an X display).
        scale: device pixels per CSS pixel of the image (1: miniwob's 160 x 210 image).
        success_threshold: success iff MiniWoB's raw reward exceeds this (in [0, 1)).
        render_mode: ``None`` or ``"rgb_array"`` (the last image).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        tasks: Sequence[str] | str = "miniwob",
        max_steps: int | None = None,
        reward: Mapping[str, float] | None = None,
        headless: bool = True,
        scale: int = 1,
        success_threshold: float = 0.0,
        render_mode: str | None = None,
    ) -> None:
        self.budgets = resolve_tasks(tasks)
        self.task_names = tuple(self.budgets)
        if max_steps is not None and (
            isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
        ):
            raise WebTaskError(f"max_steps must be an int >= 1 or None, got {max_steps!r}")
        if isinstance(scale, bool) or not isinstance(scale, int) or not 1 <= scale <= 4:
            raise WebTaskError(f"scale must be an int in 1..4, got {scale!r}")
        if not 0.0 <= float(success_threshold) < 1.0:
            raise WebTaskError(f"success_threshold must be in [0, 1), got {success_threshold!r}")
        if render_mode not in (None, "rgb_array"):
            raise WebTaskError(f"render_mode {render_mode!r} is not None or 'rgb_array'")
        try:
            self.reward_config = RewardConfig.of(reward)
        except ValueError as err:
            raise WebTaskError(str(err)) from err
        require_web()
        self.max_steps, self.headless, self.scale = max_steps, bool(headless), scale
        self.success_threshold = float(success_threshold)
        self.render_mode = render_mode
        self.observation_space = spaces.Dict(
            {
                "image": spaces.Box(0, 255, (TASK_HEIGHT * scale, TASK_WIDTH * scale, 3), np.uint8),
                "instruction": spaces.Text(MAX_INSTRUCTION, min_length=0, charset=CHARSET),
            }
        )
        self.action_space = GuiActionSpace()
        self._browser: MiniWoBBrowser | None = None
        self._raw: dict[str, Any] | None = None
        self._obs: dict[str, Any] | None = None
        self.task_id: str | None = None
        self._steps, self._budget, self._ended = 0, 0, True

    @property
    def raw_observation(self) -> dict[str, Any] | None:
        """miniwob's last observation dict (DOM in CSS pixels), for scripted oracles."""
        return self._raw

    @property
    def browser(self) -> MiniWoBBrowser | None:
        """The running browser (``None`` before the first reset and after ``close``)."""
        return self._browser

    @property
    def task_name(self) -> str | None:
        """Task name of the current episode."""
        return None if self.task_id is None else self.task_id.split("/")[0]

    def _resolve(self, options: Mapping[str, Any] | None) -> tuple[str, int]:
        options = dict(options or {})
        unknown = set(options) - {"task_id"}
        if unknown:
            raise WebTaskError(f"reset options {sorted(unknown)} unknown; known: task_id")
        task_id = options.get("task_id")
        if task_id is None:
            task = self.task_names[int(self.np_random.integers(len(self.task_names)))]
            return task, int(self.np_random.integers(TEST_SEED_BASE))
        if isinstance(task_id, (int, np.integer)) and not isinstance(task_id, bool):
            if task_id < 0:
                raise WebTaskError(f"int task_id must be >= 0, got {task_id}")
            task_id = task_ids("train", int(task_id), 1, self.task_names)[0]
        task, seed = parse_task_id(task_id)
        if task not in self.budgets:
            raise WebTaskError(f"task {task!r} is not one of {', '.join(self.task_names)}")
        return task, seed

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode of ``options["task_id"]`` (see the module docstring)."""
        super().reset(seed=seed)
        task, page_seed = self._resolve(options)
        for attempt in (1, 2):  # a dead browser is replaced once
            try:
                if self._browser is None:
                    self._browser = MiniWoBBrowser(task, self.headless, self.scale)
                else:  # a fresh page per episode: widgets leak state across episodes
                    self._browser.goto(task)
                self._raw = self._browser.start_episode(page_seed)
                break
            except WebUnavailable:
                raise
            except Exception as err:
                self.close()
                if attempt == 2:
                    raise WebBackendError(f"{task}: episode did not start: {err}") from err
                log.warning("MiniWoB browser failed (%s); starting a new one", err)
        assert self._raw is not None
        self.task_id = f"{task}/{page_seed}"
        self._steps, self._ended = 0, False
        self._budget = self.max_steps or self.budgets[task]
        self._obs = self._make_obs(self._raw, self._raw["utterance"])
        info = {"task_id": self.task_id, "task": task, "seed": page_seed, "step": 0}
        info["max_steps"] = self._budget
        return self._copy_obs(), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Run one GUI action; bad actions and browser failures never raise.

        Raises:
            gymnasium.error.ResetNeeded: before ``reset`` or after the episode ended.
        """
        browser = self._browser
        if browser is None or self._ended or self._obs is None:
            raise gymnasium.error.ResetNeeded("MiniWoBEnv.step() needs reset() first")
        self._steps += 1
        parsed = ga.parse_action(action)
        commands: list[dict[str, Any]] = []
        invalid = error = None
        if isinstance(parsed, ga.InvalidAction):
            invalid = parsed.reason
        elif parsed.type not in ga.TERMINAL_TYPES:
            converted = to_miniwob(parsed)
            invalid = converted if isinstance(converted, str) else None
            commands = [] if isinstance(converted, str) else converted
        done, raw, reason = False, 0.0, None
        try:
            for command in commands:
                browser.inst.perform(command, miniwob_config())
            browser.settle()
            meta = browser.inst.get_metadata()
            done = bool(meta["done"])
            if done:
                raw = float(meta["raw_reward"])
                reason = None if meta.get("reason") is None else str(meta["reason"])
                self._raw = browser.inst.get_empty_observation()
            else:
                self._raw = browser.observe()
        except Exception as err:  # a crashed browser ends the episode, not the rollout
            error = f"{type(err).__name__}: {err}".splitlines()[0]
            log.warning("MiniWoB browser failed on %s: %s", self.task_id, error)
            self.close()
        ending = isinstance(parsed, ga.BaseAction) and parsed.type in ga.TERMINAL_TYPES
        terminated = done or ending or error is not None
        success = done and raw > self.success_threshold
        instruction = self._obs["instruction"]
        if error is None:
            self._obs = self._make_obs(self._raw, self._raw["utterance"] or instruction)
        truncated = not terminated and self._steps >= self._budget
        self._ended = terminated or truncated
        terms = self.reward_config.terms(success, invalid is not None)
        info = {
            "task_id": self.task_id,
            "step": self._steps,
            "success": bool(success),
            "raw_reward": raw,
            "miniwob_reason": reason,
            "invalid_action": invalid is not None,
            "invalid_reason": invalid,
            "reward_terms": terms,
            "action": None if isinstance(parsed, ga.InvalidAction) else parsed.to_dict(),
            "backend_error": error,
        }
        return self._copy_obs(), float(sum(terms.values())), terminated, truncated, info

    def _make_obs(self, raw: Mapping[str, Any], utterance: str) -> dict[str, Any]:
        text = "".join(c if c in CHARSET else "?" for c in utterance)[:MAX_INSTRUCTION]
        shape = self.observation_space["image"].shape
        image = np.asarray(raw["screenshot"], dtype=np.uint8)
        if image.shape != shape:  # miniwob's empty observation is 160 x 210 at any scale
            image = np.zeros(shape, np.uint8)
        return {"image": image, "instruction": text}

    def _copy_obs(self) -> dict[str, Any]:
        assert self._obs is not None
        return {"image": self._obs["image"].copy(), "instruction": self._obs["instruction"]}

    def render(self) -> np.ndarray | None:
        """The last image (``uint8 (H, W, 3)``) in ``rgb_array`` mode."""
        if self.render_mode != "rgb_array" or self._obs is None:
            return None
        return self._obs["image"].copy()

    def close(self) -> None:
        """Quit the browser (a later ``reset`` starts a new one); safe to call twice."""
        if self._browser is not None:
            self._browser.close()
            self._browser = None
        self._ended = True
