"""Policy-gradient losses built from per-token terms and a loss mask, plus loss aggregation.

Shapes: N sequences (rows), T completion tokens. ``mask`` [N, T] is 1 on tokens the policy
generated; masked positions must hold finite values. Every loss returns ``(scalar loss, stats)``
with stats as plain floats: ``clip_frac_low`` / ``clip_frac_high`` (the clipped branch is the
active one, so the term has no gradient), ``clip_frac_dual``, ``ratio_mean``, ``approx_kl``
(k3 between the behaviour and current policy), and ``kl`` (to the reference) when penalized.
"""

from __future__ import annotations

from typing import Literal

import torch

from vlagent.algos.kl import KLEstimator, kl_k3, kl_penalty

Aggregation = Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"]
PolicyLossKind = Literal["ppo_clip", "gspo"]


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over positions where ``mask`` is 1 (all tokens of the batch pooled).

    Args:
        values: [N, T] (any shape) values.
        mask: same shape, 1 where counted.
    Returns:
        0-dim mean; 0 when nothing is masked in.
    """
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    mode: Aggregation = "token_mean",
    max_len: int | None = None,
) -> torch.Tensor:
    """Reduce per-token loss terms to a scalar.

    Sequence-level modes average over the sequences with at least one masked token, so a fully
    masked row (e.g. a truncated completion) does not dilute the loss.

    Args:
        per_token: [N, T] loss terms.
        mask: [N, T] 1 on policy tokens.
        mode: "token_mean" = sum / number of masked tokens in the batch (DAPO);
            "seq_mean_token_mean" = mean over sequences of each sequence's token mean (GRPO);
            "seq_mean_token_sum_norm" = mean over sequences of (token sum / max_len) (Dr.GRPO).
        max_len: the constant normalizer of "seq_mean_token_sum_norm" (e.g. max new tokens).
    Returns:
        0-dim loss; 0 (still attached to the graph) when everything is masked.
    """
    if mode == "token_mean":
        return masked_mean(per_token, mask)
    seq_tokens = mask.sum(dim=-1)  # [N]
    seq_sum = (per_token * mask).sum(dim=-1)  # [N]
    if mode == "seq_mean_token_mean":
        seq_loss = seq_sum / seq_tokens.clamp(min=1.0)
    elif mode == "seq_mean_token_sum_norm":
        if max_len is None or max_len <= 0:
            raise ValueError(f"aggregation {mode!r} needs max_len > 0, got {max_len}")
        seq_loss = seq_sum / float(max_len)
    else:
        known = ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"]
        raise ValueError(f"aggregation {mode!r} is unknown; known: {known}")
    return masked_mean(seq_loss, (seq_tokens > 0).to(seq_loss.dtype))


def _check_clip(eps_low: float, eps_high: float, dual_clip: float | None) -> None:
    if not 0.0 <= eps_low < 1.0:
        raise ValueError(f"clip_eps_low must be in [0, 1), got {eps_low}")
    if eps_high < 0.0:
        raise ValueError(f"clip_eps_high must be >= 0, got {eps_high}")
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1 (or None), got {dual_clip}")


def _clipped_terms(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    eps_low: float,
    eps_high: float,
    dual_clip: float | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """-min(ρA, clip(ρ, 1-ε_low, 1+ε_high)A), capped at -c·A for A < 0 when dual-clipping.

    Args:
        ratio: [...] importance ratios ρ.
        adv: advantages broadcastable to ``ratio``.
    Returns:
        ([...] loss terms, [...] bool low-clip active, high-clip active, dual-clip active).
    """
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * adv
    loss = -torch.minimum(unclipped, clipped)
    with torch.no_grad():
        high = (adv > 0) & (ratio > 1.0 + eps_high)
        low = (adv < 0) & (ratio < 1.0 - eps_low)
        dual = (adv < 0) & (ratio > dual_clip) if dual_clip is not None else torch.zeros_like(low)
    if dual_clip is not None:
        loss = torch.where(adv < 0, torch.minimum(loss, -dual_clip * adv), loss)
    return loss, low.expand_as(loss), high.expand_as(loss), dual.expand_as(loss)


def _with_kl(
    per_token: torch.Tensor,
    logp: torch.Tensor,
    mask: torch.Tensor,
    ref_logp: torch.Tensor | None,
    kl_coef: float,
    kl_estimator: KLEstimator,
    stats: dict[str, float],
) -> torch.Tensor:
    if kl_coef == 0.0:
        return per_token
    if ref_logp is None:
        raise ValueError("kl_coef != 0 needs ref_logp")
    kl = kl_penalty(logp, ref_logp, kl_estimator)  # [N, T]
    stats["kl"] = float(masked_mean(kl.detach(), mask))
    return per_token + kl_coef * kl


def ppo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_eps_low: float = 0.2,
    clip_eps_high: float = 0.2,
    dual_clip: float | None = None,
    aggregation: Aggregation = "token_mean",
    max_len: int | None = None,
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    kl_estimator: KLEstimator = "k3",
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO-clip with asymmetric clip range (DAPO clip-higher), optional dual-clip and KL.

    per token: -min(ρA, clip(ρ, 1-ε_low, 1+ε_high)·A), for A < 0 capped at -c·A (dual-clip),
    plus β·KL(π || π_ref); then ``aggregate``. ρ = exp(logp - old_logp).

    Args:
        logp: [N, T] current log-probs (requires grad).
        old_logp: [N, T] behaviour log-probs (no grad).
        advantages: [N] sequence advantages broadcast to every token, or [N, T] per token.
        mask: [N, T] 1 on policy tokens.
        clip_eps_low, clip_eps_high: ε_low, ε_high.
        dual_clip: c > 1, or None for no dual-clip.
        aggregation, max_len: see ``aggregate``.
        ref_logp: [N, T] reference log-probs, needed when ``kl_coef != 0``.
        kl_coef: β.
        kl_estimator: "k1", "k2" or "k3".
    Returns:
        (0-dim loss, stats; token-level fractions and means).
    """
    _check_clip(clip_eps_low, clip_eps_high, dual_clip)
    adv = advantages[:, None] if advantages.dim() == 1 else advantages  # [N, 1] or [N, T]
    ratio = torch.exp(logp - old_logp)  # [N, T]
    per_token, low, high, dual = _clipped_terms(ratio, adv, clip_eps_low, clip_eps_high, dual_clip)
    stats: dict[str, float] = {}
    per_token = _with_kl(per_token, logp, mask, ref_logp, kl_coef, kl_estimator, stats)
    loss = aggregate(per_token, mask, aggregation, max_len)
    with torch.no_grad():
        stats["clip_frac_low"] = float(masked_mean(low.to(ratio.dtype), mask))
        stats["clip_frac_high"] = float(masked_mean(high.to(ratio.dtype), mask))
        stats["clip_frac_dual"] = float(masked_mean(dual.to(ratio.dtype), mask))
        stats["ratio_mean"] = float(masked_mean(ratio, mask))
        stats["approx_kl"] = float(masked_mean(kl_k3(logp, old_logp), mask))
    return loss, stats


def gspo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_eps_low: float = 3e-4,
    clip_eps_high: float = 4e-4,
    dual_clip: float | None = None,
    aggregation: Aggregation = "seq_mean_token_mean",
    max_len: int | None = None,
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    kl_estimator: KLEstimator = "k3",
) -> tuple[torch.Tensor, dict[str, float]]:
    """GSPO: PPO-clip on the sequence ratio s_i = exp(mean_t(logp - old_logp)) over masked tokens.

    Each sequence's term -min(s_i A_i, clip(s_i, 1-ε_low, 1+ε_high)·A_i) is placed on each of
    its tokens; the gradient reaches every token through the sequence mean. With the default
    "seq_mean_token_mean" aggregation the loss is the mean over sequences, as in the paper
    (whose clip ranges are the defaults here).

    Args:
        logp: [N, T] current log-probs (requires grad).
        old_logp: [N, T] behaviour log-probs (no grad).
        advantages: [N] sequence advantages.
        mask: [N, T] 1 on policy tokens.
        clip_eps_low, clip_eps_high: ε_low, ε_high of the sequence ratio.
        dual_clip: c > 1, or None.
        aggregation, max_len: see ``aggregate``.
        ref_logp, kl_coef, kl_estimator: per-token KL penalty, as in ``ppo_loss``.
    Returns:
        (0-dim loss, stats; clip fractions and ratio mean over non-empty sequences).
    """
    _check_clip(clip_eps_low, clip_eps_high, dual_clip)
    if advantages.dim() != 1:
        raise ValueError(f"gspo_loss needs sequence advantages [N], got {tuple(advantages.shape)}")
    seq_tokens = mask.sum(dim=-1)  # [N]
    seq_log_ratio = ((logp - old_logp) * mask).sum(dim=-1) / seq_tokens.clamp(min=1.0)  # [N]
    seq_ratio = torch.exp(seq_log_ratio)  # [N]
    seq_loss, low, high, dual = _clipped_terms(
        seq_ratio, advantages, clip_eps_low, clip_eps_high, dual_clip
    )
    per_token = seq_loss[:, None].expand_as(logp)  # [N, T]
    stats: dict[str, float] = {}
    per_token = _with_kl(per_token, logp, mask, ref_logp, kl_coef, kl_estimator, stats)
    loss = aggregate(per_token, mask, aggregation, max_len)
    with torch.no_grad():
        seqs = (seq_tokens > 0).to(seq_ratio.dtype)  # [N]
        stats["clip_frac_low"] = float(masked_mean(low.to(seqs.dtype), seqs))
        stats["clip_frac_high"] = float(masked_mean(high.to(seqs.dtype), seqs))
        stats["clip_frac_dual"] = float(masked_mean(dual.to(seqs.dtype), seqs))
        stats["ratio_mean"] = float(masked_mean(seq_ratio, seqs))
        stats["approx_kl"] = float(masked_mean(kl_k3(logp, old_logp), mask))
    return loss, stats


def policy_loss(
    kind: PolicyLossKind,
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    **opts: object,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Dispatch to ``ppo_loss`` ("ppo_clip") or ``gspo_loss`` ("gspo"); shapes as there."""
    fns = {"ppo_clip": ppo_loss, "gspo": gspo_loss}
    if kind not in fns:
        raise ValueError(f"policy loss {kind!r} is unknown; known: {sorted(fns)}")
    return fns[kind](logp, old_logp, advantages, mask, **opts)  # type: ignore[arg-type]
