"""Sequence- and step-level advantages as pure tensor functions.

Shapes: N rows (sampled sequences / episodes), S step rows. ``group_ids`` [N] says which prompt
or task a row belongs to; groups may be ragged and ids need not be contiguous. A non-finite
reward (NaN marks an unscorable sample) gets advantage 0 and is left out of every statistic.
Std is the population std (divide by n), as in the existing GRPO code and the GRPO paper's code.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal, NamedTuple

import torch

from vlagent.algos.groups import dense_index, float_values, group_stats, safe_divide

AdvantageKind = Literal["grpo", "dr_grpo", "rloo", "reinforce_pp"]
StdLevel = Literal["group", "batch", "none"]


def grpo_advantages(
    rewards: torch.Tensor,
    group_ids: torch.Tensor,
    *,
    scale_by_std: bool = True,
    std_level: StdLevel = "group",
    eps: float = 1e-6,
    min_std: float = 1e-5,
) -> torch.Tensor:
    """GRPO advantages: (r - mean_group) / (std + eps), the std taken per group or per batch.

    Args:
        rewards: [N] scalar reward per sequence; non-finite marks an unscorable sample.
        group_ids: [N] integer group id per sequence.
        scale_by_std: divide by a std at all; False (or ``std_level="none"``) gives centring only.
        std_level: "group" divides by each group's std (GRPO); "batch" divides the group-centred
            values by the std of the valid rewards over the whole batch (group mean, batch std);
            "none" centres only.
        eps: added to the std; a zero denominator gives advantage 0.
        min_std: a spread (group or batch std) below this is float noise, not signal (e.g.
            KL-in-reward at a policy equal to its reference gives rewards ~1e-8 apart, which
            dividing by std would blow up to advantages of order 1): those advantages are 0.
    Returns:
        [N] advantages; 0 for invalid rewards and for groups whose rewards are all equal (or
        closer than ``min_std``).
    """
    if std_level not in ("group", "batch", "none"):
        raise ValueError(f"std_level must be 'group', 'batch' or 'none', got {std_level!r}")
    r = float_values(rewards)
    stats = group_stats(r, group_ids)
    centred = stats.centred  # [N]
    if not scale_by_std or std_level == "none":
        return centred
    if std_level == "group":
        std = stats.std[stats.inverse]  # [N]
    else:
        batch = group_stats(r, torch.zeros_like(r, dtype=torch.long))  # the batch as one group
        std = batch.std.expand_as(centred)  # [N]
    out = safe_divide(centred, std + eps)
    return torch.where(std < min_std, torch.zeros_like(out), out)


def dr_grpo_advantages(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """Dr.GRPO advantages: r - mean_group, no std scaling.

    Args:
        rewards: [N] rewards (non-finite → advantage 0, excluded from the mean).
        group_ids: [N] integer group ids.
    Returns:
        [N] mean-centred advantages.
    """
    return grpo_advantages(rewards, group_ids, scale_by_std=False)


def rloo_advantages(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """RLOO advantages: r_i - mean_{j≠i} r_j over the valid members of i's group.

    Args:
        rewards: [N] rewards (non-finite → advantage 0, not part of any baseline).
        group_ids: [N] integer group ids.
    Returns:
        [N] advantages; 0 for a row with no other valid member in its group.
    """
    stats = group_stats(rewards, group_ids)
    k = stats.count[stats.inverse]  # [N] valid members in the row's group
    # r_i - (k·mean - r_i)/(k - 1) = k/(k - 1)·(r_i - mean); exact 0 for constant groups
    return stats.centred * k / (k - 1).clamp(min=1)


def reinforce_pp_advantages(
    rewards: torch.Tensor,
    group_ids: torch.Tensor | None = None,
    *,
    group_baseline: bool = False,
    eps: float = 1e-6,
) -> torch.Tensor:
    """REINFORCE++ advantages: (x - mean_batch(x)) / (std_batch(x) + eps).

    x = r, or x = r - mean_group(r) when ``group_baseline`` (REINFORCE++-baseline).

    Args:
        rewards: [N] rewards (non-finite → advantage 0, excluded from every statistic).
        group_ids: [N] integer group ids; needed only with ``group_baseline``.
        group_baseline: subtract the group mean before normalizing over the batch.
        eps: added to the batch std; a zero denominator gives advantage 0.
    Returns:
        [N] batch-normalized advantages.
    """
    x = float_values(rewards)
    valid = torch.isfinite(x)
    if group_baseline:
        if group_ids is None:
            raise ValueError("reinforce_pp_advantages: group_baseline=True needs group_ids")
        x = torch.where(valid, dr_grpo_advantages(x, group_ids), x)  # keeps NaN rows invalid
    batch = group_stats(x, torch.zeros_like(x, dtype=torch.long))  # the batch as one group
    return safe_divide(batch.centred, (batch.std + eps).expand_as(batch.centred))


def compute_advantages(
    kind: AdvantageKind, rewards: torch.Tensor, group_ids: torch.Tensor, **opts: object
) -> torch.Tensor:
    """Dispatch to one advantage estimator by name.

    Args:
        kind: "grpo" (opts: scale_by_std, std_level, eps), "dr_grpo", "rloo",
            "reinforce_pp" (opts: group_baseline, eps).
        rewards: [N] rewards.
        group_ids: [N] integer group ids.
        **opts: keyword options of the chosen estimator.
    Returns:
        [N] advantages.
    """
    fns = {
        "grpo": grpo_advantages,
        "dr_grpo": dr_grpo_advantages,
        "rloo": rloo_advantages,
        "reinforce_pp": reinforce_pp_advantages,
    }
    if kind not in fns:
        raise ValueError(f"advantage kind {kind!r} is unknown; known: {sorted(fns)}")
    return fns[kind](rewards, group_ids, **opts)  # type: ignore[operator]


def discounted_returns(
    rewards: torch.Tensor, episode_ids: torch.Tensor, gamma: float
) -> torch.Tensor:
    """Discounted return from each step: G_t = r_t + γ·G_{t+1} within the step's episode.

    Args:
        rewards: [S] per-step rewards.
        episode_ids: [S] integer episode id per step; an episode's steps appear in time order
            but may be interleaved with other episodes' steps.
        gamma: discount γ in [0, 1].
    Returns:
        [S] returns (a non-finite reward makes its own and earlier steps' returns non-finite).
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"discounted_returns: gamma must be in [0, 1], got {gamma}")
    r = float_values(rewards)
    if r.numel() == 0:
        return r.clone()
    ep, n_eps = dense_index(episode_ids)
    order = torch.sort(ep, stable=True).indices  # [S] rows grouped by episode, time order kept
    counts = torch.bincount(ep, minlength=n_eps)  # [E]
    starts = torch.cumsum(counts, 0) - counts  # [E]
    pos = torch.empty_like(ep)
    pos[order] = torch.arange(ep.numel(), device=ep.device) - starts[ep[order]]  # [S] time idx
    padded = r.new_zeros(n_eps, int(counts.max()) + 1)  # [E, L+1], last column is G_{L} = 0
    padded[ep, pos] = r
    for t in range(padded.shape[1] - 2, -1, -1):  # vectorized over episodes
        padded[:, t] = padded[:, t] + gamma * padded[:, t + 1]
    return padded[ep, pos]


class GiGPOAdvantages(NamedTuple):
    """GiGPO advantages per step row: combined = episode + ω·step."""

    combined: torch.Tensor  # [S]
    episode: torch.Tensor  # [S] episode-level GRPO advantage broadcast to the episode's steps
    step: torch.Tensor  # [S] step-level advantage within the anchor-state group
    step_group: torch.Tensor  # [S] dense id of the (group id, anchor key) step group


def gigpo_advantages(
    step_returns: torch.Tensor,
    episode_ids: torch.Tensor,
    group_ids: torch.Tensor,
    anchor_keys: Sequence[Hashable],
    *,
    episode_returns: torch.Tensor | None = None,
    step_weight: float = 1.0,
    scale_by_std: bool = True,
    eps: float = 1e-6,
) -> GiGPOAdvantages:
    """GiGPO: episode-level GRPO plus step-level advantages over repeated anchor states.

    Step groups are the steps with the same group id and the same anchor key (equal keys mean
    the same environment state, across or within episodes). Step advantage is
    (R_step - mean_stepgroup) / (std_stepgroup + eps), 0 in a singleton step group. Episode
    advantage is GRPO over one return per episode (each episode counted once, not per step).

    Args:
        step_returns: [S] discounted return from each step (see ``discounted_returns``).
        episode_ids: [S] integer episode id per step.
        group_ids: [S] integer GRPO group (task) id per step; constant within an episode.
        anchor_keys: S hashable observation keys, one per step.
        episode_returns: [S] the episode's return on each of its steps (constant within an
            episode); default: the step return of the episode's first row.
        step_weight: ω.
        scale_by_std: divide by the std at both levels (False: centring only).
        eps: added to the stds.
    Returns:
        GiGPOAdvantages of [S] tensors.
    """
    n = step_returns.numel()
    if len(anchor_keys) != n or episode_ids.numel() != n or group_ids.numel() != n:
        raise ValueError(
            f"gigpo_advantages: step_returns, episode_ids, group_ids and anchor_keys need the "
            f"same length, got {n}, {episode_ids.numel()}, {group_ids.numel()}, {len(anchor_keys)}"
        )
    ep, n_eps = dense_index(episode_ids)
    first = torch.full((n_eps,), n, dtype=torch.long, device=ep.device)
    first = first.scatter_reduce(0, ep, torch.arange(n, device=ep.device), "amin")  # [E]
    ep_group = group_ids[first]  # [E]
    if not bool((ep_group[ep] == group_ids).all()):
        raise ValueError("gigpo_advantages: an episode's steps carry different group_ids")
    source = step_returns if episode_returns is None else episode_returns
    ep_return = float_values(source)[first]  # [E]
    if episode_returns is not None:
        same = (ep_return[ep] == float_values(source)) | ~torch.isfinite(ep_return[ep])
        if not bool(same.all()):
            raise ValueError("gigpo_advantages: episode_returns vary within an episode")
    episode_adv = grpo_advantages(ep_return, ep_group, scale_by_std=scale_by_std, eps=eps)[ep]
    index: dict[tuple[int, Hashable], int] = {}
    pairs = zip(group_ids.tolist(), anchor_keys, strict=True)
    keys = [index.setdefault(pair, len(index)) for pair in pairs]  # (group, anchor) -> dense id
    step_group = torch.tensor(keys, dtype=torch.long, device=ep.device)  # [S]
    step_adv = grpo_advantages(step_returns, step_group, scale_by_std=scale_by_std, eps=eps)
    return GiGPOAdvantages(episode_adv + step_weight * step_adv, episode_adv, step_adv, step_group)
