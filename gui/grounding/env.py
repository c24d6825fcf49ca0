"""``GroundingEnv``: one screenshot, one instruction, one click (or box), one reward.

Each episode is a single step: ``reset`` shows a sample, ``step`` scores the answer with a
:class:`rewards.RewardSpec` and terminates. Coordinates are normalized at this boundary.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from gui.errors import GroundingEnvError
from gui.grounding.actions import parse_action
from gui.grounding.sources import (
    GroundingSample,
    GroundingSource,
    ScreenSpotSource,
    SyntheticSource,
)
from gui.grounding.spaces import action_space, observation_space
from perception_tools.geometry import box_center, point_in_box
from rewards import Prediction, RewardSpec, RewardTarget, score
from sim.screens import ScreenLevel

DEFAULT_REWARD: dict[str, float] = {"point_in_box": 1.0, "format": 0.1}
"""Reward terms of the registered envs unless a ``reward`` kwarg says otherwise."""
_SEED_SPACE = 2**31


class GroundingEnv(gymnasium.Env[dict[str, Any], dict[str, Any]]):
    """Single-step GUI grounding env over a :class:`~gui.grounding.sources.GroundingSource`.

    Observation: ``{"image": uint8 (H, W, 3), "instruction": str}``.
    Action: ``{"point": (x, y)}`` and / or ``{"box": (x0, y0, x1, y1)}`` normalized, or
    ``{"parse_error": reason}``. Invalid actions score 0 and set ``info["invalid_action"]``.

    ``reset(seed=s)`` picks the sample from ``s`` alone, so envs reset with one seed show one
    screen (GRPO groups); ``options={"task_id": k}`` picks it directly: ``k`` is the source key
    (the screen seed of a synthetic source, the record index of a finite one) or a sample id
    ``"<source name>:<key>"``.

    Info (reset and step): ``target_box_norm``, ``image_size`` ``(w, h)``, ``sample_id``,
    ``elements``, ``meta``; step adds ``reward_terms`` (summing to the reward), ``success``
    (the point, or else the box centre, lies in the target box), ``invalid_action``,
    ``invalid_reason``, ``prediction`` and ``reward_errors`` (custom reward terms that failed on
    this sample and scored 0, as ``"name: reason"``).

    The reward reads the sample's ground truth as a :class:`rewards.RewardTarget`: the target
    box, and ``meta["action_type"]`` / ``meta["text"]`` when the data has them.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}

    def __init__(
        self,
        source: GroundingSource,
        reward_spec: RewardSpec,
        *,
        max_instruction_length: int = 2048,
        render_mode: str | None = None,
    ) -> None:
        if not isinstance(reward_spec, RewardSpec):
            raise GroundingEnvError(
                f"GroundingEnv: reward_spec must be a RewardSpec, got {reward_spec!r}"
            )
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise GroundingEnvError(
                f"GroundingEnv: render_mode {render_mode!r} is not None or 'rgb_array'"
            )
        self.source = source
        self.reward_spec = reward_spec
        self._needs_elements = any(t.name == "attribute_match" for t in reward_spec.terms)
        self.render_mode = render_mode
        self.observation_space = observation_space(
            source.image_size, source.charset, max_instruction_length
        )
        self.action_space = action_space()
        self._sample: GroundingSample | None = None
        self._prediction: Prediction | None = None
        self._terminated = False

    def _key(self, task_id: Any) -> int:
        """Source key of ``task_id``, or one drawn from the env's seeded generator."""
        n = self.source.num_samples
        if task_id is None:
            return int(self.np_random.integers(_SEED_SPACE if n is None else n))
        if isinstance(task_id, str):
            prefix, _, key = task_id.rpartition(":")
            if key.isdecimal() and prefix in ("", self.source.name):
                task_id = int(key)
        if isinstance(task_id, bool) or not isinstance(task_id, (int, np.integer)) or task_id < 0:
            raise GroundingEnvError(
                f"options['task_id'] must be a non-negative int or a sample id "
                f"'{self.source.name}:<int>', got {task_id!r}"
            )
        if n is not None and task_id >= n:
            raise GroundingEnvError(f"options['task_id'] {task_id} is out of range [0, {n})")
        return int(task_id)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Show a new sample (see the class docstring for how it is chosen)."""
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"task_id"}
        if unknown:
            raise GroundingEnvError(f"reset options {sorted(unknown)} are unknown; known: task_id")
        self._sample = self.source.sample(self._key(options.get("task_id")))
        if self._needs_elements and not (
            self._sample.elements and isinstance(self._sample.meta.get("target_index"), int)
        ):
            raise GroundingEnvError(
                f"reward term 'attribute_match' needs the screen's elements and target index "
                f"(synthetic screens); sample {self._sample.sample_id!r} has none"
            )
        self._prediction = None
        self._terminated = False
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Score ``action`` against the target; always terminates the episode.

        Raises:
            gymnasium.error.ResetNeeded: before ``reset`` or after the episode terminated.
        """
        if self._sample is None:
            raise gymnasium.error.ResetNeeded("GroundingEnv.step() called before reset()")
        if self._terminated:
            raise gymnasium.error.ResetNeeded(
                "GroundingEnv episode has terminated; call reset() first"
            )
        answer = self._sample.meta.get("describe_answer")
        if isinstance(answer, str):
            return self._step_describe(action, answer)
        prediction, reason = parse_action(action)
        target = self._sample.target_box_norm
        result = score(self.reward_spec, prediction, self.reward_target())
        probe = prediction.point
        if probe is None and prediction.box is not None:
            probe = box_center(prediction.box)
        info = self._info()
        info.update(
            reward_terms=dict(result.terms),
            success=bool(probe is not None and point_in_box(probe, target)),
            invalid_action=reason is not None,
            invalid_reason=reason,
            prediction={"point": prediction.point, "box": prediction.box},
            reward_errors=list(result.errors),
        )
        self._prediction = prediction
        self._terminated = True
        return self._obs(), float(result.value), True, False, info

    def _step_describe(
        self, action: Any, answer: str
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Score a describe task (``meta["describe_answer"]``, see
        :class:`~gui.grounding.sources.SyntheticSource`): reward 1 when the reply, the action's
        ``"completion"``, names the element as ``answer`` does (case, spacing and a final
        full stop ignored), else 0; a reply without text is an invalid action."""
        text = action.get("completion") if isinstance(action, Mapping) else None
        said = _phrase(text) if isinstance(text, str) else None
        success = said is not None and said == _phrase(answer)
        info = self._info()
        info.update(
            reward_terms={"describe": float(success)},
            success=success,
            invalid_action=said is None,
            invalid_reason=None if said is not None else "a describe task needs the reply text",
            prediction={"point": None, "box": None, "text": text},
            reward_errors=[],
        )
        self._terminated = True
        return self._obs(), float(success), True, False, info

    def reward_target(self) -> RewardTarget:
        """The current sample's ground truth for the reward (box, action type, text, ...)."""
        sample = self._sample
        assert sample is not None
        meta = sample.meta
        action_type, text = meta.get("action_type"), meta.get("text")
        index = meta.get("target_index")
        return RewardTarget(
            box=sample.target_box_norm,
            action_type=action_type if isinstance(action_type, str) else None,
            text=text if isinstance(text, str) else None,
            instruction=sample.instruction,
            sample_id=sample.sample_id,
            meta=dict(meta),
            elements=sample.elements,
            target_index=index if isinstance(index, int) else None,
        )

    def _obs(self) -> dict[str, Any]:
        assert self._sample is not None
        return {"image": self._sample.image.copy(), "instruction": self._sample.instruction}

    def _info(self) -> dict[str, Any]:
        sample = self._sample
        assert sample is not None
        return {
            "target_box_norm": sample.target_box_norm,
            "image_size": sample.image_size,
            "sample_id": sample.sample_id,
            "elements": sample.elements,
            "meta": dict(sample.meta),
        }

    def render(self) -> np.ndarray | None:
        """``uint8 (H, W, 3)`` screenshot with the target and the last prediction drawn."""
        if self.render_mode != "rgb_array" or self._sample is None:
            return None
        from perception_tools.annotate import draw_prediction

        p = self._prediction
        return draw_prediction(
            self._sample.image,
            self._sample.target_box_norm,
            point_norm=None if p is None else p.point,
            box_norm=None if p is None else p.box,
        )

    def close(self) -> None:
        """Release the sample; safe to call more than once."""
        self._sample = None
        self._prediction = None


def _phrase(text: str) -> str:
    """``text`` compared as a describe answer: lower case, single spaces, no final stop."""
    return " ".join(text.casefold().split()).rstrip(".").strip()


def _reward_spec(reward: RewardSpec | Mapping[str, Any] | None) -> RewardSpec:
    if isinstance(reward, RewardSpec):
        return reward
    return RewardSpec.from_dict(DEFAULT_REWARD if reward is None else reward)


def make_synthetic_env(
    level: ScreenLevel | str = "basic",
    reward: RewardSpec | Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> GroundingEnv:
    """Entry point of ``vlagent/GroundingSynthetic-v0``.

    Args:
        level: a :class:`~sim.screens.ScreenLevel` or preset name (``basic``, ``widgets``, ...).
        reward: a RewardSpec or ``RewardSpec.from_dict`` mapping; default :data:`DEFAULT_REWARD`.
        **kwargs: passed to :class:`GroundingEnv` (``max_instruction_length``, ``render_mode``).
    """
    return GroundingEnv(SyntheticSource(level), _reward_spec(reward), **kwargs)


def make_screenspot_env(
    annotation_file: str | Path | None = None,
    image_dir: str | Path | None = None,
    version: str | None = None,
    reward: RewardSpec | Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> GroundingEnv:
    """Entry point of ``vlagent/GroundingScreenSpot-v0``.

    Args:
        annotation_file: ScreenSpot JSON list (required).
        image_dir: directory of the screenshots (required).
        version: ``"v1"``, ``"v2"``, ``"pro"`` or ``None`` to detect the bbox convention.
        reward: a RewardSpec or ``RewardSpec.from_dict`` mapping; default :data:`DEFAULT_REWARD`.
        **kwargs: passed to :class:`GroundingEnv`.
    """
    if annotation_file is None or image_dir is None:
        raise GroundingEnvError(
            "vlagent/GroundingScreenSpot-v0 needs annotation_file= and image_dir= kwargs, e.g. "
            "gymnasium.make('vlagent/GroundingScreenSpot-v0', annotation_file='ss.json', image_dir='imgs')"
        )
    source = ScreenSpotSource(annotation_file, image_dir, version=version)  # type: ignore[arg-type]
    return GroundingEnv(source, _reward_spec(reward), **kwargs)
