"""Credit assignment: env rewards of whole episodes → an advantage for every policy turn.

Rewards come from the envs (each turn's ``info["reward_terms"]``, summed over the episode);
this module only assigns credit. Episode level: the configured group-relative estimator
(``grpo.advantage``: grpo | dr_grpo | rloo | reinforce_pp) over the G episodes of each group,
broadcast to every turn. With ``grpo.gigpo_weight`` ω > 0, each turn also gets ω times a
step-level advantage among turns of its group that acted on an equal observation (GiGPO anchor
states), on discounted step returns (``grpo.gamma``); ``grpo.episode_weight`` scales the episode
part then (0: step groups only). A masked or crashed episode has reward
NaN: advantage 0 on all its turns and no part in any statistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from vlagent.algo_config import GRPOConfig
from vlagent.algos.advantages import compute_advantages, discounted_returns, gigpo_advantages
from vlagent.rollout.trajectory import Trajectory


def episode_rewards(trajectories: Sequence[Trajectory]) -> torch.Tensor:
    """[E] episode rewards for the advantage estimator (NaN: masked, crashed or empty)."""
    return torch.tensor(
        [math.nan if t.masked else t.reward for t in trajectories], dtype=torch.float32
    )


def estimator_options(g: GRPOConfig) -> dict[str, Any]:
    """Keyword options of ``compute_advantages`` for ``g.advantage``."""
    if g.advantage == "grpo":
        return {"scale_by_std": g.scale_by_std, "std_level": g.std_level}
    if g.advantage == "reinforce_pp":
        return {"group_baseline": g.reinforce_group_baseline}
    return {}


def turn_advantages(
    trajectories: Sequence[Trajectory], g: GRPOConfig, rewards: torch.Tensor | None = None
) -> list[list[float]]:
    """Per trajectory, one advantage per turn.

    Args:
        trajectories: finished episodes, grouped by ``group_id``.
        g: the estimator, ``gigpo_weight`` and ``gamma``.
        rewards: [E] episode rewards (default ``episode_rewards``; e.g. with KL folded in).
    """
    rewards = episode_rewards(trajectories) if rewards is None else rewards
    groups = torch.tensor([t.group_id for t in trajectories], dtype=torch.long)
    if len(trajectories) == 0:
        return []
    if g.gigpo_weight <= 0:
        adv = compute_advantages(g.advantage, rewards, groups, **estimator_options(g))  # [E]
        return [[float(adv[i])] * len(t.turns) for i, t in enumerate(trajectories)]
    step_r, ep_ids, grp, keys, ep_r = [], [], [], [], []
    for e, t in enumerate(trajectories):
        if not math.isfinite(float(rewards[e])):
            continue
        for turn in t.turns:
            step_r.append(turn.reward)
            ep_ids.append(e)
            grp.append(t.group_id)
            keys.append(turn.obs_key)
            ep_r.append(float(rewards[e]))
    out = [[0.0] * len(t.turns) for t in trajectories]
    if not step_r:
        return out
    episode_ids = torch.tensor(ep_ids)
    returns = discounted_returns(torch.tensor(step_r), episode_ids, g.gamma)  # [S]
    res = gigpo_advantages(
        returns,
        episode_ids,
        torch.tensor(grp),
        keys,
        episode_returns=torch.tensor(ep_r),
        step_weight=g.gigpo_weight,
        scale_by_std=g.scale_by_std,
    )
    cursor: dict[int, int] = {}
    for row, e in enumerate(ep_ids):
        k = cursor.get(e, 0)
        out[e][k] = float(g.episode_weight * res.episode[row] + g.gigpo_weight * res.step[row])
        cursor[e] = k + 1
    return out
