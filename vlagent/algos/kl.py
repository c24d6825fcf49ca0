"""Per-token KL estimators between the policy and a reference, in the loss or in the reward.

Shapes: N sequences, T tokens. All estimators are of KL(π || π_ref) from tokens sampled by π
(Schulman, "Approximating KL Divergence", 2020): with d = logp - ref_logp,
k1 = d (unbiased, can be negative), k2 = d²/2, k3 = exp(-d) + d - 1 (unbiased, >= 0).
"""

from __future__ import annotations

from typing import Literal

import torch

KLEstimator = Literal["k1", "k2", "k3"]


def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k1 = logp - ref_logp per token.

    Args:
        logp, ref_logp: [N, T] log-probs of the sampled tokens under policy and reference.
    Returns:
        [N, T] estimates (may be negative).
    """
    return logp - ref_logp


def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k2 = ½ (logp - ref_logp)² per token.

    Args:
        logp, ref_logp: [N, T] log-probs of the sampled tokens under policy and reference.
    Returns:
        [N, T] non-negative estimates.
    """
    return 0.5 * (logp - ref_logp) ** 2


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 = exp(ref - logp) - (ref - logp) - 1 per token.

    Args:
        logp, ref_logp: [N, T] log-probs of the sampled tokens under policy and reference.
    Returns:
        [N, T] non-negative estimates.
    """
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


_ESTIMATORS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}


def kl_penalty(
    logp: torch.Tensor, ref_logp: torch.Tensor, kind: KLEstimator = "k3"
) -> torch.Tensor:
    """Per-token KL estimate of the chosen kind (differentiable in ``logp``).

    Args:
        logp, ref_logp: [N, T] log-probs of the sampled tokens under policy and reference.
        kind: "k1", "k2" or "k3".
    Returns:
        [N, T] per-token estimates.
    """
    if kind not in _ESTIMATORS:
        raise ValueError(f"KL estimator {kind!r} is unknown; known: {sorted(_ESTIMATORS)}")
    return _ESTIMATORS[kind](logp, ref_logp)


def kl_in_reward(
    rewards: torch.Tensor,
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    coef: float,
    kind: KLEstimator = "k1",
) -> torch.Tensor:
    """Sequence reward minus coef · (sum over the sequence's masked tokens of the KL estimate).

    The penalty is a reward, so no gradient flows through it.

    Args:
        rewards: [N] sequence rewards (NaN stays NaN).
        logp: [N, T] behaviour/policy log-probs of the sampled tokens.
        ref_logp: [N, T] reference log-probs.
        mask: [N, T] 1 on policy tokens.
        coef: β.
        kind: "k1", "k2" or "k3".
    Returns:
        [N] penalized rewards.
    """
    with torch.no_grad():
        kl = kl_penalty(logp.detach(), ref_logp.detach(), kind)  # [N, T]
        kl_seq = (kl * mask).sum(dim=-1)  # [N]
        return rewards.to(torch.promote_types(rewards.dtype, kl_seq.dtype)) - coef * kl_seq
