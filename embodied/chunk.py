"""``ActionChunk``: one ``(k, 4)`` action runs as k env steps (a VLA's action chunk per call)."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from embodied.tasks import RobotTaskError

MAX_CHUNK = 64


class ActionChunk(gymnasium.Wrapper[dict[str, Any], np.ndarray, dict[str, Any], np.ndarray]):
    """Run a chunk of ``k`` actions, ``Box(-1, 1, (k, d))``, one inner step per row.

    The chunk stops early when the inner env terminates or truncates. The returned observation
    and info are the last inner step's, with: ``reward_terms`` summed name by name over the
    steps run (the reward is their sum), ``invalid_action`` true when any step's was (its
    ``invalid_reason`` prefixed with the row), and ``steps_run``. A chunk that is not a
    ``(k, d)`` array of numbers runs as k invalid no-op steps (the robot holds still for the
    chunk's duration) with the chunk's own reason.
    """

    def __init__(self, env: gymnasium.Env[Any, Any], k: int) -> None:
        super().__init__(env)
        inner = env.action_space
        if not isinstance(inner, spaces.Box) or len(inner.shape) != 1:
            raise RobotTaskError(f"ActionChunk needs a 1-d Box action space, got {inner}")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CHUNK:
            raise RobotTaskError(f"chunk length k must be an int in [1, {MAX_CHUNK}], got {k!r}")
        self.k = k
        low = np.broadcast_to(inner.low, (k, *inner.shape))
        high = np.broadcast_to(inner.high, (k, *inner.shape))
        self.action_space = spaces.Box(low, high, (k, *inner.shape), inner.dtype)

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Run the chunk's rows in order; see the class docstring for the merged result."""
        rows, chunk_reason = self._rows(action)
        terms: dict[str, float] = {}
        invalid, reason, steps_run = False, "", 0
        obs: Any = None
        info: dict[str, Any] = {}
        terminated = truncated = False
        # an inner env that can step without rendering (``RobotEnv.advance``) renders only the
        # frame this chunk returns, not k - 1 frames nobody reads
        advance = getattr(self.env, "advance", None)
        observe = getattr(self.env, "observation", None)
        blind = callable(advance) and callable(observe)
        for j, row in enumerate(rows):
            if blind and j < len(rows) - 1:
                _, terminated, truncated, info = advance(row)  # type: ignore[misc]
                obs = None
            else:
                obs, _, terminated, truncated, info = self.env.step(row)
            steps_run += 1
            for name, value in info.get("reward_terms", {}).items():
                terms[name] = terms.get(name, 0.0) + float(value)
            if info.get("invalid_action") and not invalid:
                invalid = True
                reason = chunk_reason or f"row {j}: {info.get('invalid_reason', '')}"
            if terminated or truncated:
                break
        if obs is None:  # the chunk ended on a row stepped without rendering
            obs = observe()  # type: ignore[misc]
        info = dict(info)
        info.update(
            reward_terms=terms, invalid_action=invalid, invalid_reason=reason, steps_run=steps_run
        )
        return obs, float(sum(terms.values())), terminated, truncated, info

    def _rows(self, action: Any) -> tuple[list[Any], str]:
        """The k rows to run and ``""``, or k all-NaN (invalid) rows and why the chunk is bad."""
        shape = self.action_space.shape
        if isinstance(action, str | bytes):
            got = f"a string {action[:40]!r}"
        else:
            try:
                arr = np.asarray(action)
            except (TypeError, ValueError):  # ragged nesting
                got = f"a ragged {type(action).__name__}"
            else:
                if arr.dtype.kind in "iuf" and arr.shape == shape:
                    return list(arr), ""
                got = f"dtype {arr.dtype}, shape {arr.shape}"
        why = f"action chunk must be {shape[0]} rows of {shape[1]} numbers {shape}, got {got}"
        noop = np.full(shape[1:], np.nan, dtype=np.float32)
        return [noop] * self.k, why
