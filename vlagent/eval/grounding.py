"""Held-out click accuracy of a policy, with the random-click and centre-click baselines."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from perception_tools.geometry import box_area, point_in_box
from vlagent.batching import encode_prompts
from vlagent.rollout.hf import generate
from vlagent.tasks import GroundingTask


@dataclasses.dataclass
class EvalRecord:
    """One evaluated sample: the key, the model text, the parsed point, and the verdict."""

    key: int
    text: str
    point_norm: tuple[float, float] | None
    box_norm: tuple[float, float, float, float] | None
    hit: bool
    reward: float
    error: str | None


@dataclasses.dataclass
class EvalReport:
    """Accuracy (point-in-box) over ``n`` samples, the valid-answer rate and the mean reward.

    ``format_rate`` counts answers that parsed *and* were executable (on-screen, finite).
    """

    n: int
    accuracy: float
    format_rate: float
    mean_reward: float
    records: list[EvalRecord]

    def summary(self) -> dict[str, float]:
        return {
            "accuracy": self.accuracy,
            "format_rate": self.format_rate,
            "mean_reward": self.mean_reward,
            "n": self.n,
        }


def evaluate_policy(
    policy: Any,
    task: GroundingTask,
    keys: Sequence[int],
    *,
    batch_size: int = 64,
    max_new_tokens: int = 24,
) -> EvalReport:
    """Greedy-decode one answer per sample and score it.

    Args:
        policy: a loaded ``Policy``.
        task: the task (codec, reward, samples).
        keys: source keys of the samples to evaluate.
    """
    records: list[EvalRecord] = []
    for start in range(0, len(keys), batch_size):
        chunk = list(keys[start : start + batch_size])
        samples = [task.sample(k) for k in chunk]
        prompts = encode_prompts(
            policy.processor, [s.image for s in samples], [s.instruction for s in samples]
        )
        rollout = generate(policy, prompts, greedy=True, max_new_tokens=max_new_tokens)
        for k, text, frame in zip(chunk, rollout.texts, prompts.frames, strict=True):
            reward, info = task.score(text, k, frame)
            ans = info["answer"]
            records.append(
                EvalRecord(
                    key=k,
                    text=text,
                    point_norm=getattr(ans, "point_norm", None),
                    box_norm=getattr(ans, "box_norm", None),
                    hit=bool(info["success"]),
                    reward=float(reward),
                    error=info["invalid_reason"],
                )
            )
    n = max(len(records), 1)
    return EvalReport(
        n=len(records),
        accuracy=sum(r.hit for r in records) / n,
        format_rate=sum(r.error is None for r in records) / n,
        mean_reward=sum(r.reward for r in records) / n,
        records=records,
    )


def baselines(task: GroundingTask, keys: Sequence[int]) -> dict[str, float]:
    """Accuracy of policies that ignore the screen, on the same samples.

    Returns:
        ``random_click``: the exact expected accuracy of a uniformly random click (the mean
        target area fraction); ``center_click``: accuracy of always clicking (0.5, 0.5).
    """
    boxes = [task.sample(k).target_box_norm for k in keys]
    return {
        "random_click": float(np.mean([box_area(b) for b in boxes])),
        "center_click": float(np.mean([point_in_box((0.5, 0.5), b) for b in boxes])),
    }
