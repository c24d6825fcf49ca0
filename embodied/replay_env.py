"""``ReplayEnv``: recorded demonstrations (:class:`~embodied.demo_files.DemoEpisode`) as an env.

A recording cannot react, so an action changes nothing: ``step`` records it, advances one frame
and reports what the file recorded there (``info["recorded_action"]``). A trainer's
demonstrator writes :func:`recorded_action` of the current frame, the same way it would write a
scripted controller's action on :class:`~embodied.robot_env.RobotEnv`.

Observation (``Dict``), like RobotEnv's:
    image: uint8 (S, S, 3), the episode's frame resized to S x S (PIL bilinear) when needed.
    proprio: float32 (P,), the episode's proprio row, zeros for an episode without one; only
        with ``proprio=True``. P is the episodes' common proprio width (4 when none has one).
    instruction: str, the episode's instruction.
Action: ``Box(-1, 1, (D,))``, D the episodes' common action width (4 after
:func:`~embodied.demo_files.to_ee_delta4`). An action that is not D finite numbers is a no-op
with ``info["invalid_action"] = True`` and its reason.

Episodes: ``reset(options={"task_id": k})`` starts episode ``k % n`` at frame 0 (without it the
id is drawn from the seeded generator). Step t (0-based) pairs frame t with recorded action t;
afterwards the observation is frame t + 1, and the episode is truncated after its last action
(T steps; the last observation repeats the last frame). ``info["success"]`` is always False (a
recording does not say); ``reward_terms`` are ``success`` (0) and ``invalid_action``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from PIL import Image

from embodied.demo_files import DemoEpisode
from embodied.suites import reward_weights

BASE_CHARSET = string.ascii_letters + string.digits + " .,'-_"  # RobotEnv's instruction charset
MAX_INSTRUCTION = 128
MAX_SIDE = 640
DEFAULT_REWARD: dict[str, float] = {"success": 1.0, "invalid_action": 0.0}


class ReplayEnvError(ValueError):
    """A ReplayEnv got bad arguments (episodes, sizes, reset options) or was misused."""


def _common_width(arrays: Sequence[np.ndarray | None], what: str, default: int) -> int:
    widths = {a.shape[1] for a in arrays if a is not None}
    if len(widths) > 1:
        raise ReplayEnvError(f"episodes disagree on the {what} width: {sorted(widths)}")
    return widths.pop() if widths else default


class ReplayEnv(gymnasium.Env[dict[str, Any], np.ndarray]):
    """Replays a list of recorded episodes frame by frame (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(
        self,
        episodes: Sequence[DemoEpisode],
        image_size: int = 128,
        proprio: bool = True,
        reward: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        """Args:
        episodes: at least one :class:`DemoEpisode`, all with one action width D.
        image_size: side S of the square observation images, pixels, in [1, 640].
        proprio: add ``proprio`` (the episode's, or zeros when it has none).
        reward: weights over :data:`DEFAULT_REWARD` (``invalid_action`` <= 0, a penalty).
        render_mode: None or ``rgb_array`` (``render()`` returns the ``image`` view).
        """
        episodes = list(episodes) if isinstance(episodes, Sequence) else episodes
        if not isinstance(episodes, list) or not episodes:
            raise ReplayEnvError("ReplayEnv needs a non-empty sequence of DemoEpisode")
        for i, ep in enumerate(episodes):
            if not isinstance(ep, DemoEpisode):
                raise ReplayEnvError(f"episodes[{i}] is a {type(ep).__name__}, not a DemoEpisode")
        if isinstance(image_size, bool) or not isinstance(image_size, int | np.integer):
            raise ReplayEnvError(f"image_size must be an int, got {image_size!r}")
        if not 1 <= int(image_size) <= MAX_SIDE:
            raise ReplayEnvError(f"image_size must be in [1, {MAX_SIDE}], got {image_size}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ReplayEnvError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.episodes = episodes
        self.image_size = int(image_size)
        self.proprio = bool(proprio)
        self.render_mode = render_mode
        try:
            self.weights = reward_weights(reward, DEFAULT_REWARD)
        except ValueError as exc:
            raise ReplayEnvError(str(exc)) from exc
        self.action_dims = _common_width([e.actions for e in episodes], "action", 4)
        self.proprio_dims = _common_width([e.proprio for e in episodes], "proprio", 4)
        self.episode: DemoEpisode | None = None
        self.task_id, self.steps = -1, 0
        s = self.image_size
        chars = "".join(sorted(set(BASE_CHARSET).union(*(e.instruction for e in episodes))))
        longest = max(MAX_INSTRUCTION, *(len(e.instruction) for e in episodes))
        obs: dict[str, spaces.Space[Any]] = {
            "image": spaces.Box(0, 255, (s, s, 3), np.uint8),
            "instruction": spaces.Text(longest, min_length=1, charset=chars),
        }
        if self.proprio:
            rows = [e.proprio for e in episodes if e.proprio is not None]
            data = np.concatenate([np.zeros((1, self.proprio_dims), np.float32), *rows])
            obs["proprio"] = spaces.Box(data.min(0), data.max(0), (self.proprio_dims,), np.float32)
        self.observation_space = spaces.Dict(obs)
        self.action_space = spaces.Box(-1.0, 1.0, (self.action_dims,), np.float32)

    # ----------------------------------------------------------------------------- episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start episode ``options["task_id"] % n`` at frame 0. Returns (obs, info)."""
        super().reset(seed=seed)
        options = {} if options is None else options
        if not isinstance(options, Mapping) or set(options) - {"task_id"}:
            raise ReplayEnvError(f"reset options may only hold 'task_id', got {options!r}")
        task_id = options.get("task_id")
        if task_id is None:
            task_id = int(self.np_random.integers(len(self.episodes)))
        if isinstance(task_id, bool) or not isinstance(task_id, int | np.integer):
            raise ReplayEnvError(f"task_id must be an int, got {task_id!r}")
        self.task_id, self.steps = int(task_id), 0
        self.episode = self.episodes[self.task_id % len(self.episodes)]
        return self.observation(), self._info()

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Record ``action``, advance one frame; see the module docstring."""
        ep = self._require_episode()
        if self.steps >= len(ep):
            raise ReplayEnvError("the recording is over (truncated); call reset()")
        reason = parse_action(action, self.action_dims)
        recorded = ep.actions[self.steps].copy()
        self.steps += 1
        terms = {
            "success": 0.0,
            "invalid_action": self.weights["invalid_action"] * float(bool(reason)),
        }
        info = self._info()
        info.update(
            reward_terms=terms,
            invalid_action=bool(reason),
            invalid_reason=reason,
            recorded_action=recorded,
        )
        truncated = self.steps >= len(ep)
        return self.observation(), float(sum(terms.values())), False, truncated, info

    # --------------------------------------------------------------------------- reading
    def observation(self) -> dict[str, Any]:
        """The observation at the current frame (the last frame once the recording is over)."""
        ep = self._require_episode()
        t = min(self.steps, len(ep) - 1)
        obs: dict[str, Any] = {"image": self._image(ep, t), "instruction": ep.instruction}
        if self.proprio:
            row = np.zeros(self.proprio_dims, np.float32) if ep.proprio is None else ep.proprio[t]
            obs["proprio"] = np.array(row, dtype=np.float32)
        return obs

    def render(self) -> np.ndarray | None:
        """With ``render_mode="rgb_array"``: the ``image`` view, uint8 (S, S, 3); else None."""
        if self.render_mode != "rgb_array":
            return None
        ep = self._require_episode()
        return self._image(ep, min(self.steps, len(ep) - 1))

    def _image(self, ep: DemoEpisode, t: int) -> np.ndarray:
        frame = ep.frames[t]
        s = self.image_size
        if frame.shape[:2] == (s, s):
            return frame.copy()
        return np.asarray(Image.fromarray(frame).resize((s, s), Image.BILINEAR), dtype=np.uint8)

    def _info(self) -> dict[str, Any]:
        ep = self._require_episode()
        return {
            "success": False,
            "task_id": self.task_id,
            "episode": ep.source,
            "instruction": ep.instruction,
            "steps": self.steps,
            "max_steps": len(ep),
            "invalid_action": False,
            "invalid_reason": "",
        }

    def _require_episode(self) -> DemoEpisode:
        if self.episode is None:
            raise ReplayEnvError("ReplayEnv: call reset() before step() or observation()")
        return self.episode

    def close(self) -> None:
        """Nothing to free (frames stay in memory); safe to call more than once."""
        self.episode = None


def parse_action(action: Any, dims: int) -> str:
    """``""`` when ``action`` is ``dims`` finite real numbers, else the reason it is invalid."""
    if isinstance(action, str | bytes):
        return f"action is a string ({action[:40]!r}), not {dims} numbers"
    try:
        arr = np.asarray(action)
    except (TypeError, ValueError) as exc:
        return f"action is not an array of {dims} numbers: {exc}"
    if arr.dtype.kind not in "iuf":
        return f"action must be {dims} real numbers, got dtype {arr.dtype}"
    if arr.shape != (dims,):
        return f"action must have shape ({dims},), got {arr.shape}"
    if not np.isfinite(arr).all():
        return f"action has non-finite values: {arr.tolist()}"
    return ""


def recorded_action(env: gymnasium.Env) -> np.ndarray:
    """The action the file recorded at ``env``'s current frame, float32 (D,) (a copy).

    ``env`` is a :class:`ReplayEnv` or a wrapper of one. Raises :class:`ReplayEnvError` before
    ``reset`` or once the recording is over."""
    inner = getattr(env, "unwrapped", env)
    if not isinstance(inner, ReplayEnv):
        raise ReplayEnvError(f"recorded_action needs a ReplayEnv, got {type(inner).__name__}")
    ep = inner._require_episode()
    if inner.steps >= len(ep):
        raise ReplayEnvError("the recording is over (truncated); call reset()")
    return ep.actions[inner.steps].copy()
