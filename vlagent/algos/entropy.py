"""Per-token entropy of the policy's next-token distribution (logged by every training forward)."""

from __future__ import annotations

import torch


def token_entropy(logits: torch.Tensor, mask: torch.Tensor, *, chunk_rows: int = 4) -> torch.Tensor:
    """Entropy H = -Σ_v p_v log p_v of softmax(logits) at each token, 0 where masked out.

    Only ``chunk_rows`` rows are upcast to float32 and softmaxed at once, so peak extra memory
    is about chunk_rows·T·V floats rather than N·T·V. Differentiable (for an entropy bonus);
    ``-inf`` logits (banned tokens) contribute 0. Average with ``losses.masked_mean``.

    Args:
        logits: [N, T, V] logits of the positions that produced the completion tokens.
        mask: [N, T] 1 on policy tokens.
        chunk_rows: rows per chunk (>= 1).
    Returns:
        [N, T] float32 (or float64 for float64 logits) entropies in nats.
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    dtype = torch.promote_types(logits.dtype, torch.float32)
    chunks = []
    for start in range(0, logits.shape[0], chunk_rows):
        z = logits[start : start + chunk_rows].to(dtype)  # [n, T, V]
        chunks.append(entropy_of_logp(torch.log_softmax(z, dim=-1)))  # [n, T]
    if not chunks:
        return logits.new_zeros(logits.shape[:2], dtype=dtype)
    return torch.cat(chunks) * mask.to(dtype)


def entropy_of_logp(logp: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Entropy -Σ_v p_v log p_v [N, T] of log-distributions ``logp`` [N, T, V] (0 where ``mask``
    is 0; ``-inf`` entries, i.e. banned tokens, contribute 0).

    >>> round(float(entropy_of_logp(torch.log(torch.tensor([[[0.5, 0.5, 0.0]]])))[0, 0]), 4)
    0.6931
    """
    p = logp.exp()
    h = -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(dim=-1)
    return h if mask is None else h * mask.to(h.dtype)
