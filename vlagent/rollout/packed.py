"""Group-packed continuations: a prompt's G completions run as one sequence over its own cache.

The training forward of the shared-prefix path (``rollout/prefix.py``) feeds every row's
completion tokens after its prompt's cached prefill. Expanding the U-row cache to the n rows
(``batch_select_indices``) copies each layer's prefix keys and values G times, again in the
cache's concatenation and in grouped-query attention's head repeat, and the backward pays the
same in zero-filled gradients and scatter-adds — about a sixth of a bench step on CPU.

Here the cache stays at U rows. The completions of prompt u are laid side by side in one row
(K slots of T tokens, K = the most rows any prompt has) and a 4-D attention mask restores what
each token may see: its prompt's non-pad tokens and the valid tokens of its own completion up
to itself — never another completion. Positions are each row's own (prompt length + its valid
tokens so far, plus the prompt's M-RoPE offset for the t/h/w rows). The attention sets, and so
the outputs, are the expanded path's; only the summation order inside attention differs.

Used where the attention implementation takes a custom 4-D mask (``sdpa``, ``eager``; the
flash-attention kernels take 2-D padding masks only) and where packing pays
(:func:`packing_pays`, with ``grpo.pack_groups=auto``); otherwise the cache is expanded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

PACKABLE = ("sdpa", "eager")
"""Attention implementations that accept a ready 4-D mask from ``transformers``' mask utils."""


def attention_impl(model: Any) -> str | None:
    """The text decoder's attention implementation of a Qwen-VL (possibly PEFT-wrapped)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(base, "config", None)
    impl = getattr(getattr(config, "text_config", None), "_attn_implementation", None)
    return impl or getattr(config, "_attn_implementation", None)


def packable(model: Any) -> bool:
    """Whether ``model``'s text attention takes a ready 4-D mask (:data:`PACKABLE`)."""
    return attention_impl(model) in PACKABLE


CPU_PACKED_SPAN = 4096
"""On CPU, ``auto`` packs while a prompt's packed completions (K·T tokens) fit in this many."""


def packing_pays(k: int, p: int, fed: int, device: torch.device) -> bool:
    """Whether ``grpo.pack_groups=auto`` packs up to ``k`` rows per prompt (:func:`slots`)
    after prompts of ``p`` columns, ``fed`` tokens each.

    Packing saves the G-fold copies of the prefix keys and values, but each packed query spans
    all K slots: P + K·T keys instead of P + T, the other slots masked. On CPU the copies are
    what costs (memory traffic and page faults; attention FLOPs are small beside the MLPs and
    the LM head): packing was faster on both bench jobs, at 1.6× (job 1) and 4× (job 2) the
    span, so it packs while K·T ≤ :data:`CPU_PACKED_SPAN`. On accelerators, where copies are
    cheap and a masked attention cannot use the flash kernels, it packs only while the span at
    most doubles: P + K·T ≤ 2·(P + T) (not measured there yet).
    """
    if device.type == "cpu":
        return k * fed <= CPU_PACKED_SPAN
    return p + k * fed <= 2 * (p + fed)


def slots(row_prompt: torch.Tensor, n_prompts: int) -> tuple[torch.Tensor, int]:
    """Slot of each row inside its prompt's packed sequence.

    Args:
        row_prompt: [n] prompt index of each row (any order, repeats allowed).
        n_prompts: U.
    Returns:
        (slot [n]: the row's rank among the rows of its prompt, in row order; K = 1 + max slot).
    """
    n = row_prompt.shape[0]
    onehot = torch.nn.functional.one_hot(row_prompt, n_prompts)  # [n, U]
    slot = (onehot.cumsum(0) - 1).gather(1, row_prompt[:, None]).squeeze(1)  # [n]
    k = int(slot.max()) + 1 if n else 0
    return slot, k


def packed_mask(
    prompt_att: torch.Tensor,
    row_prompt: torch.Tensor,
    slot: torch.Tensor,
    k: int,
    valid: torch.Tensor,
    dtype: torch.dtype | None,
) -> torch.Tensor:
    """The 4-D mask [U, 1, K·T, P + K·T] of the packed rows.

    Query (slot s, step i) sees prompt column c where ``prompt_att[u, c]`` is 1 and packed
    column (slot s, step j) where j ≤ i and ``valid[row, j]`` is 1; nothing of other slots.
    Unused slots see their prompt only (their outputs are never read).

    Args:
        prompt_att: [U, P] the prompts' padding mask (1 = token).
        row_prompt, slot: [n] prompt and slot of each row; ``k``: slots per prompt.
        valid: [n, T] 1 on the row's real tokens (attended), 0 on padding.
        dtype: None → bool (True = attend, for ``sdpa``); a float dtype → additive 0 / min.
    """
    u, p = prompt_att.shape
    t = valid.shape[1]
    device = prompt_att.device
    key_ok = torch.zeros(u, k, t, dtype=torch.bool, device=device)
    key_ok[row_prompt, slot] = valid.bool()
    causal = torch.ones(t, t, dtype=torch.bool, device=device).tril()  # [i, j]: j <= i
    same = torch.eye(k, dtype=torch.bool, device=device)  # [s, s']
    # [U, K(q slot), T(i), K(k slot), T(j)]
    comp = same[None, :, None, :, None] & causal[None, None, :, None, :] & key_ok[:, None, None]
    comp = comp.reshape(u, k * t, k * t)
    pre = prompt_att.bool()[:, None, :].expand(u, k * t, p)
    mask = torch.cat([pre, comp], dim=2)[:, None]  # [U, 1, K·T, P + K·T]
    if dtype is None:
        return mask
    zero = torch.zeros((), dtype=dtype, device=device)
    return torch.where(mask, zero, torch.finfo(dtype).min)


def packed_continuation(
    forward: Callable[..., torch.Tensor],
    cache: Any,
    prompt_att: torch.Tensor,
    deltas: torch.Tensor,
    row_prompt: torch.Tensor,
    slot: torch.Tensor,
    k: int,
    ids: torch.Tensor,
    valid: torch.Tensor,
    mask_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Run n rows' continuation tokens after their prompts' U-row cache, packed per prompt.

    Args:
        forward: ``forward(input_ids, cache, attention_mask, position_ids)`` → [U, L, X]
            (logits or last hidden states) of the fed tokens.
        cache: the prompts' prefill cache over U rows (consumed: it grows by K·T columns).
        prompt_att: [U, P] the prompts' padding mask; deltas: [U, 1] M-RoPE offsets.
        row_prompt: [n] prompt of each row; slot, k: its slot and the slots per prompt
            (:func:`slots`); ids, valid: [n, T] fed tokens and which are real.
    Returns:
        [n, T, X]: row r's outputs at its T fed positions, as if run alone after its prompt.
    """
    u, t = prompt_att.shape[0], ids.shape[1]
    packed_ids = torch.zeros(u, k, t, dtype=ids.dtype, device=ids.device)  # unused slots: id 0
    packed_ids[row_prompt, slot] = ids
    # text index of each fed token = attended tokens before it (prompt + own valid tokens)
    own = valid.long().cumsum(1) - 1 + prompt_att.long().sum(1)[row_prompt, None]  # [n, T]
    idx = torch.zeros(u, k, t, dtype=torch.long, device=ids.device)
    idx[row_prompt, slot] = own.clamp(min=0)
    idx = idx.reshape(u, k * t)
    mrope = idx + deltas.to(idx.device)
    positions = torch.stack([idx, mrope, mrope, mrope])  # [4, U, K·T]
    mask = packed_mask(prompt_att, row_prompt, slot, k, valid, mask_dtype)
    out = forward(packed_ids.reshape(u, k * t), cache, mask, positions)  # [U, K·T, X]
    return out.reshape(u, k, t, *out.shape[2:])[row_prompt, slot]  # [n, T, X]
