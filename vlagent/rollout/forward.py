"""Teacher-forced log-probs of row continuations under the current policy (training forward).

Two paths with the same math:
    shared   rows whose continuation is text only and whose prompts repeat (a GRPO group)
             prefill each distinct prompt once and expand the KV cache (``rollout/prefix.py``);
    full     every row runs prompt + continuation in one forward (left-padded prompts,
             right-padded continuations, continuation images in row order). Used for rows
             with tool images, with gradient checkpointing, or when sharing is switched off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from vlagent.algos.entropy import entropy_of_logp
from vlagent.batching import mask_logits
from vlagent.rollout.prefix import completion_logprobs_shared
from vlagent.rollout.rows import RowBatch, batch_prompts


def full_inputs(batch: RowBatch, pad_id: int) -> dict[str, torch.Tensor]:
    """Model inputs [n, P + T] of every row: its prompt (left padded) then its continuation."""
    n, _ = batch.ids.shape
    width = max(len(batch.prompts[int(i)]) for i in batch.row_prompt)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    att = torch.zeros(n, width, dtype=torch.long)
    mm = torch.zeros(n, width, dtype=torch.long)
    pixels, grids = [], []
    for r in range(n):
        p = batch.prompts[int(batch.row_prompt[r])]
        k = len(p)
        ids[r, width - k :] = p.input_ids
        att[r, width - k :] = 1
        mm[r, width - k :] = p.mm_token_type_ids
        pixels.append(p.pixel_values)
        grids.append(p.image_grid_thw)
        for pv, grid in batch.images[r]:  # images in the order their tokens appear
            pixels.append(pv)
            grids.append(torch.tensor([grid], dtype=torch.long))
    return {
        "input_ids": torch.cat([ids, batch.ids], dim=1),
        "attention_mask": torch.cat([att, batch.valid.long()], dim=1),
        "mm_token_type_ids": torch.cat([mm, batch.mm], dim=1),
        "pixel_values": torch.cat(pixels, dim=0),
        "image_grid_thw": torch.cat(grids, dim=0),
    }


def row_logprobs(
    model: Any,
    batch: RowBatch,
    pad_id: int,
    *,
    temperature: float = 1.0,
    forbidden: Sequence[int] | None = None,
    shared: bool = True,
    entropy_out: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """Log-probs [n, T] of each row's continuation tokens (0 where ``batch.mask`` is 0).

    Args:
        model: a Qwen-VL ``*ForConditionalGeneration`` (gradients flow when enabled).
        batch: the rows.
        temperature: logits are divided by it (the sampler's temperature).
        forbidden: ids the sampler excluded from the distribution (vision placeholders).
        shared: use the shared-prefix path where it applies (text-only continuations).
        entropy_out: if a list, the detached per-token entropy [n, T] is appended to it.
    """
    device = next(model.parameters()).device
    mask = batch.mask.to(device)
    ids = batch.ids.to(device)
    if shared and batch.text_only:
        prompts = batch_prompts(batch.prompts, pad_id).to(device)
        return completion_logprobs_shared(
            model,
            prompts,
            batch.row_prompt.to(device),
            ids,
            mask,
            temperature=temperature,
            forbidden=forbidden,
            entropy_out=entropy_out,
            valid=batch.valid.to(device),
        )
    t = ids.shape[1]
    inputs = {k: v.to(device) for k, v in full_inputs(batch, pad_id).items()}
    # Only the last T+1 positions' logits are needed: no [n, P+T, V] tensor.
    logits = model(**inputs, logits_to_keep=t + 1, use_cache=False).logits
    logp = torch.log_softmax(mask_logits(logits[:, :-1, :].float(), forbidden) / temperature, -1)
    tok = logp.gather(-1, ids.unsqueeze(-1)).squeeze(-1)  # [n, T]
    if entropy_out is not None:
        with torch.no_grad():
            entropy_out.append(entropy_of_logp(logp, mask))
    # where, not a product: observation tokens include image pads, whose log-prob is -inf.
    return torch.where(mask > 0, tok, torch.zeros_like(tok))
