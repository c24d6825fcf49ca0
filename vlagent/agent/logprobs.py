"""Teacher-forced log-probs of whole multi-turn trajectories (for the policy loss and SFT).

A batch of B trajectories is right padded to L tokens and run through the model once with all of
its images (``pixel_values`` in row order, ``image_grid_thw`` [sum I, 3]). No cache and no
position ids are passed, so the model recomputes the 3-D (M-RoPE) positions from ``input_ids``,
``mm_token_type_ids``, ``image_grid_thw`` and the attention mask, exactly as at the sampler's
prefill.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from vlagent.agent.trajectory import Trajectory, pack
from vlagent.batching import mask_logits

_MODEL_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids", "pixel_values", "image_grid_thw")


def token_logprobs(
    model: Any,
    batch: dict[str, torch.Tensor],
    temperature: float = 1.0,
    forbidden: Sequence[int] | None = None,
) -> torch.Tensor:
    """Per-token log-probs of a packed (right padded) batch at its loss positions.

    Args:
        model: a Qwen-VL ``*ForConditionalGeneration``.
        batch: ``pack(trajectories, pad_id, side="right")`` (tensors on the model's device).
        temperature: logits are divided by it (the sampler's temperature).
        forbidden: ids excluded from the distribution, as the sampler excluded them.

    Returns:
        [B, L] where entry t is log p(ids[t] | ids[<t]) for ``loss_mask[:, t] == 1``, else 0.
    """
    mask = batch["loss_mask"]  # [B, L]
    ids = batch["input_ids"]  # [B, L]
    b, length = ids.shape
    cols = torch.nonzero(mask.sum(dim=0) > 0).flatten()
    out = torch.zeros(b, length, device=ids.device)
    if cols.numel() == 0:
        return out
    first = int(cols[0])  # earliest scored token; logits before first - 1 are never needed
    keep = length - first + 1
    kwargs = {k: batch[k] for k in _MODEL_KEYS}
    logits = model(**kwargs, logits_to_keep=keep, use_cache=False).logits  # [B, keep, V]
    logits = mask_logits(logits[:, :-1, :].float(), forbidden) / temperature  # [B, L-first, V]
    logp = torch.log_softmax(logits, dim=-1)
    tok = logp.gather(-1, ids[:, first:].unsqueeze(-1)).squeeze(-1)  # [B, L-first]
    # where, not a product: observation tokens include image pads, whose log-prob is -inf.
    tok = torch.where(mask[:, first:] > 0, tok, torch.zeros_like(tok))
    return torch.cat([out[:, :first], tok], dim=1)


def trajectory_logprobs(
    model: Any,
    trajectories: list[Trajectory],
    pad_id: int,
    temperature: float = 1.0,
    forbidden: Sequence[int] | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Teacher-forced log-probs of ``trajectories`` (one forward pass).

    Returns:
        (logp [B, L] as in ``token_logprobs``, the packed batch on the model's device with
        ``loss_mask`` [B, L] and ``behaviour_logprobs`` [B, L]).
    """
    device = next(model.parameters()).device
    batch = {k: v.to(device) for k, v in pack(trajectories, pad_id, side="right").items()}
    return token_logprobs(model, batch, temperature, forbidden), batch
