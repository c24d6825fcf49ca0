"""GRPO math as pure tensor functions (the recipes' stable entry points).

Shapes: N sampled sequences (rows), T completion tokens. ``group_ids`` [N] says which prompt a
row belongs to; groups may have different sizes (ragged) and need not be contiguous. The general
versions live in ``advantages``, ``losses`` and ``kl``; these keep their original signatures.
"""

from __future__ import annotations

import torch

from vlagent.algos.advantages import grpo_advantages
from vlagent.algos.kl import kl_k3
from vlagent.algos.losses import masked_mean, ppo_loss

__all__ = ["group_advantages", "kl_k3", "masked_mean", "ppo_clip_loss"]


def group_advantages(
    rewards: torch.Tensor, group_ids: torch.Tensor, *, scale_by_std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """Group-relative advantages: (r - mean_group) / (std_group + eps).

    Args:
        rewards: [N] scalar reward per sequence; NaN marks an unscorable sample.
        group_ids: [N] integer group id per sequence.
        scale_by_std: divide by the group's std (population std, as in the GRPO paper's code);
            False gives Dr.GRPO's mean-centred advantages.
        eps: added to the std.
    Returns:
        [N] float32 advantages; NaN rewards get advantage 0 and are excluded from their group's
        statistics; a group whose rewards are all equal gets zeros.
    """
    return grpo_advantages(rewards.float(), group_ids, scale_by_std=scale_by_std, eps=eps)


def ppo_clip_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_eps: float = 0.2,
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO-clip policy loss with token-level mean aggregation (+ optional k3 KL penalty).

    loss = mean_tokens( -min(ρ·A, clip(ρ, 1-ε, 1+ε)·A) + β·k3 ),  ρ = exp(logp - old_logp).
    The symmetric case of ``losses.ppo_loss``.

    Args:
        logp: [N, T] current log-probs (requires grad).
        old_logp: [N, T] behaviour log-probs (no grad).
        advantages: [N] sequence advantages, broadcast to every token.
        mask: [N, T] 1 on policy tokens.
        clip_eps: ε.
        ref_logp: [N, T] reference log-probs, needed when ``kl_coef > 0``.
        kl_coef: β (ignored unless > 0).
    Returns:
        (scalar loss, stats: ``clip_frac`` = fraction of tokens whose ratio lies outside
        [1-ε, 1+ε] with A != 0, ``ratio_mean``, and ``kl`` when ``kl_coef > 0``).
    """
    if kl_coef > 0.0 and ref_logp is None:
        raise ValueError("kl_coef > 0 needs ref_logp")
    loss, general = ppo_loss(
        logp,
        old_logp,
        advantages,
        mask,
        clip_eps_low=clip_eps,
        clip_eps_high=clip_eps,
        ref_logp=ref_logp,
        kl_coef=max(kl_coef, 0.0),
        kl_estimator="k3",
    )
    stats: dict[str, float] = {}
    if "kl" in general:
        stats["kl"] = general["kl"]
    with torch.no_grad():
        ratio = torch.exp(logp - old_logp)  # [N, T]
        outside = (ratio < 1.0 - clip_eps) | (ratio > 1.0 + clip_eps)
        was_clipped = outside & (advantages[:, None] != 0)  # [N, T]
        stats["clip_frac"] = float(masked_mean(was_clipped.float(), mask))
    stats["ratio_mean"] = general["ratio_mean"]
    return loss, stats
