"""GRPO math as pure tensor functions.

Shapes: N sampled sequences (rows), T completion tokens. ``group_ids`` [N] says which prompt a
row belongs to; groups may have different sizes (ragged) and need not be contiguous.
"""

from __future__ import annotations

import torch


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
        [N] advantages; NaN rewards get advantage 0 and are excluded from their group's
        statistics; a group whose rewards are all equal gets zeros.
    """
    rewards = rewards.float()
    valid = torch.isfinite(rewards)
    r = torch.where(valid, rewards, torch.zeros_like(rewards))
    _, inverse = torch.unique(group_ids, return_inverse=True)  # [N] → dense group index
    n_groups = int(inverse.max().item()) + 1 if inverse.numel() else 0
    count = torch.zeros(n_groups).index_add_(0, inverse, valid.float())  # [G]
    total = torch.zeros(n_groups).index_add_(0, inverse, r)
    mean = total / count.clamp(min=1)  # [G]
    centred = torch.where(valid, r - mean[inverse], torch.zeros_like(r))  # [N]
    if not scale_by_std:
        return centred
    var = torch.zeros(n_groups).index_add_(0, inverse, centred**2) / count.clamp(min=1)
    denom = var.sqrt()[inverse] + eps  # [N]
    return torch.where(denom > 0, centred / denom.clamp(min=1e-30), torch.zeros_like(centred))


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over positions where ``mask`` is 1 (all tokens of the batch pooled)."""
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(π || π_ref) per token: exp(ref - logp) - (ref - logp) - 1.

    Args:
        logp, ref_logp: [N, T] log-probs of the sampled tokens under policy and reference.
    Returns:
        [N, T] non-negative per-token estimates.
    """
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


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

    Args:
        logp: [N, T] current log-probs (requires grad).
        old_logp: [N, T] behaviour log-probs (no grad).
        advantages: [N] sequence advantages, broadcast to every token.
        mask: [N, T] 1 on policy tokens.
        clip_eps: ε.
        ref_logp: [N, T] reference log-probs, needed when ``kl_coef > 0``.
        kl_coef: β.
    Returns:
        (scalar loss, stats with clip fraction, mean ratio and KL).
    """
    adv = advantages[:, None]  # [N, 1]
    ratio = torch.exp(logp - old_logp)  # [N, T]
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    per_token = -torch.minimum(unclipped, clipped)  # [N, T]
    stats: dict[str, float] = {}
    if kl_coef > 0.0:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs ref_logp")
        kl = kl_k3(logp, ref_logp)
        per_token = per_token + kl_coef * kl
        stats["kl"] = float(masked_mean(kl.detach(), mask))
    loss = masked_mean(per_token, mask)
    with torch.no_grad():
        was_clipped = (unclipped != clipped).float()
        stats["clip_frac"] = float(masked_mean(was_clipped, mask))
        stats["ratio_mean"] = float(masked_mean(ratio, mask))
    return loss, stats
