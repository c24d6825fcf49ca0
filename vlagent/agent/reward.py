"""Trajectory rewards: the final answer scored in ORIGINAL coordinates plus tool-use terms.

reward = answer terms (``rewards.score`` of the answer mapped back to the original image)
       + ``rewards.tool_use.episode_reward`` terms (tool bonus only when right, per-extra-call
         penalty, optional zoom evidence, optional curiosity)
       + ``over_limit`` (−penalty) for an over-limit episode when ``loop.over_limit=penalize``.
The terms sum to the reward. A masked over-limit episode (``over_limit=mask``) is still scored
for the logs, but ``advantage_rewards`` gives it NaN so it gets advantage 0 and stays out of its
group's statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from rewards import Prediction, RewardSpec, episode_reward, group_tool_rates, point_in_box, score
from rewards.tool_use import ToolRewardConfig
from vlagent.agent.trajectory import Trajectory
from vlagent.codec import Answer


def _prediction(traj: Trajectory) -> Prediction:
    if traj.answer is None:
        reason = traj.limit_reason or "no answer"
        return Prediction(point=None, box=None, format_ok=False, error=reason)
    return traj.answer.to_prediction()


def score_trajectories(
    trajectories: Sequence[Trajectory],
    answer_spec: RewardSpec,
    tool_cfg: ToolRewardConfig,
    over_limit: str = "mask",
    over_limit_penalty: float = 0.0,
) -> None:
    """Fill ``reward`` and ``reward_terms`` of every trajectory (in place).

    Args:
        trajectories: finished episodes with ``target_box_norm`` set; their ``group_id`` groups
            them for the curiosity term's group tool rate.
        answer_spec: weighted answer terms (point_in_box, format, ...).
        tool_cfg: tool-use weights.
        over_limit: "mask" or "penalize" (adds the ``over_limit`` term).
        over_limit_penalty: size of that term.
    """
    rates = group_tool_rates(
        [t.n_tool_calls for t in trajectories], [t.group_id for t in trajectories]
    )
    for traj, rate in zip(trajectories, rates, strict=True):
        if traj.target_box_norm is None:
            raise ValueError(f"trajectory of key {traj.key} has no target_box_norm to score")
        pred = _prediction(traj)
        answer = score(answer_spec, pred, traj.target_box_norm)
        correct = point_in_box(pred.point, traj.target_box_norm).value > 0.0
        result = episode_reward(
            answer,
            traj.n_tool_calls,
            traj.zoom_boxes_norm,
            traj.target_box_norm,
            tool_cfg,
            correct=correct,
            group_tool_rate=float(rate),
        )
        terms = dict(result.terms)
        if traj.over_limit and over_limit == "penalize":
            terms["over_limit"] = -float(over_limit_penalty)
        traj.reward_terms = terms
        traj.reward = float(sum(terms.values()))
        traj.correct = correct


def advantage_rewards(trajectories: Sequence[Trajectory]) -> torch.Tensor:
    """[N] rewards for the advantage estimator: NaN for masked (over-limit) trajectories."""
    return torch.tensor(
        [float("nan") if t.masked else t.reward for t in trajectories], dtype=torch.float32
    )


def summarize(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Means over episodes: reward, accuracy, tool calls, turns, over-limit, generated tokens,
    and each reward term."""
    n = max(1, len(trajectories))
    out: dict[str, Any] = {
        "reward/mean": sum(t.reward for t in trajectories) / n,
        "accuracy": sum(t.correct for t in trajectories) / n,
        "tool_calls": sum(t.n_tool_calls for t in trajectories) / n,
        "tool_errors": sum(x.kind == "tool_error" for t in trajectories for x in t.turns) / n,
        "turns": sum(len(t.turns) for t in trajectories) / n,
        "over_limit_frac": sum(t.over_limit for t in trajectories) / n,
        "format_rate": sum(isinstance(t.answer, Answer) for t in trajectories) / n,
        "generated_tokens": sum(t.n_generated for t in trajectories) / n,
    }
    names = sorted({k for t in trajectories for k in t.reward_terms})
    for k in names:
        out[f"reward_terms/{k}"] = sum(t.reward_terms.get(k, 0.0) for t in trajectories) / n
    return out
