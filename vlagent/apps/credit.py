"""Trajectory rewards and turn-level credit for multi-step GRPO.

Episode reward (``TrajectoryRewardConfig``)::

    R = success·[task succeeded] + format·mean_t[turn t parsed] + invalid_action·#invalid turns

Its per-turn split ``r_t`` (format and invalid terms on their turn, success on the last turn)
sums to R. Credit: every turn of an episode gets the episode's group-relative advantage
(GRPO over the G episodes of its task); with ``gigpo_weight`` ω > 0 each turn also gets ω times
a step-level advantage among turns of the same group that acted on an equal observation
(GiGPO anchor states), computed on discounted step returns. Episodes that crashed (backend
error) get a NaN reward: they take part in no statistic and contribute no rows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch

from vlagent.algos.advantages import discounted_returns, gigpo_advantages, grpo_advantages
from vlagent.apps.config import AppsGRPOConfig, TrajectoryRewardConfig
from vlagent.apps.rollout import Episode


def turn_rewards(ep: Episode, cfg: TrajectoryRewardConfig) -> list[float]:
    """Per-turn rewards r_t of an episode (they sum to its episode reward)."""
    n = len(ep.turns)
    out = [
        cfg.format * float(t.format_ok) / n + cfg.invalid_action * float(t.invalid)
        for t in ep.turns
    ]
    if ep.success and out:
        out[-1] += cfg.success
    return out


def score_episodes(episodes: Sequence[Episode], cfg: TrajectoryRewardConfig) -> None:
    """Fill ``reward`` and ``reward_terms`` of each episode (NaN reward if it crashed)."""
    for ep in episodes:
        n = len(ep.turns)
        fmt = sum(t.format_ok for t in ep.turns) / n if n else 0.0
        terms = {
            "success": cfg.success * float(ep.success),
            "format": cfg.format * fmt,
            "invalid_action": cfg.invalid_action * sum(t.invalid for t in ep.turns),
        }
        ep.reward_terms = terms
        ep.reward = float("nan") if ep.error is not None or n == 0 else float(sum(terms.values()))


@dataclasses.dataclass(frozen=True)
class TurnCredit:
    """Advantages of the trainable turn rows.

    Attributes:
        rows: (episode index, turn index) of each row, in episode then turn order.
        advantages: [N] advantage of each row (episode + ω·step).
        episode: [N] the episode-level part (equal on every turn of an episode).
        step: [N] the step-level part (0 unless GiGPO is on).
        step_group: [N] dense id of each row's (group, anchor) step group.
    """

    rows: list[tuple[int, int]]
    advantages: torch.Tensor
    episode: torch.Tensor
    step: torch.Tensor
    step_group: torch.Tensor


def turn_credit(
    episodes: Sequence[Episode], cfg: AppsGRPOConfig, reward: TrajectoryRewardConfig
) -> TurnCredit:
    """Advantages for every turn of every scored, non-crashed episode.

    Args:
        episodes: scored episodes (``score_episodes``), groups tagged by ``spec.group_id``.
        cfg: ``scale_by_std``, ``gigpo_weight`` and ``gamma``.
        reward: the reward weights (for the per-turn split GiGPO uses).
    """
    rows, ep_ids, groups, step_r, ep_r, keys = [], [], [], [], [], []
    for e, ep in enumerate(episodes):
        if not math.isfinite(ep.reward):
            continue
        for t, (turn, r) in enumerate(zip(ep.turns, turn_rewards(ep, reward), strict=True)):
            rows.append((e, t))
            ep_ids.append(e)
            groups.append(ep.spec.group_id)
            step_r.append(r)
            ep_r.append(ep.reward)
            keys.append(turn.obs_key)
    if not rows:
        empty = torch.zeros(0)
        return TurnCredit([], empty, empty, empty, torch.zeros(0, dtype=torch.long))
    episode_ids = torch.tensor(ep_ids)  # [N]
    group_ids = torch.tensor(groups)  # [N]
    if cfg.gigpo_weight > 0:
        returns = discounted_returns(torch.tensor(step_r), episode_ids, cfg.gamma)  # [N]
        g = gigpo_advantages(
            returns,
            episode_ids,
            group_ids,
            keys,
            episode_returns=torch.tensor(ep_r),
            step_weight=cfg.gigpo_weight,
            scale_by_std=cfg.scale_by_std,
        )
        return TurnCredit(rows, g.combined.float(), g.episode.float(), g.step.float(), g.step_group)
    first = {}  # one reward per episode: GRPO over episodes, not over turns
    for i, e in enumerate(ep_ids):
        first.setdefault(e, i)
    idx = torch.tensor(list(first.values()))  # [E]
    ep_adv = grpo_advantages(
        torch.tensor(ep_r)[idx], group_ids[idx], scale_by_std=cfg.scale_by_std
    ).float()  # [E]
    dense = {e: k for k, e in enumerate(first)}
    adv = ep_adv[torch.tensor([dense[e] for e in ep_ids])]  # [N] broadcast to every turn
    return TurnCredit(rows, adv, adv.clone(), torch.zeros_like(adv), torch.arange(len(rows)))
