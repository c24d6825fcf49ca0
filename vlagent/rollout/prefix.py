"""Group prefix sharing: encode each screenshot and prefill each prompt once, then reuse the KV cache.

A GRPO group's G samples share one prompt and one image. Instead of running the vision tower
and the prompt prefill G times, we run them once per *distinct* prompt and expand the KV cache
to the rows that continue it (``DynamicCache.batch_select_indices``). This is used both when
sampling (``sample_with_prefix``) and when computing training log-probs
(``completion_logprobs_shared``), where gradients flow back through the expanded cache into the
shared prompt computation — the same math as a full forward per row, at a fraction of the cost.

Positions: Qwen-VL models take position ids [4, N, L] — row 0 the plain text index (the
number of attended tokens before this one), rows 1–3 the M-RoPE (t, h, w) index, which for text
after the prompt is the text index plus the prompt's ``rope_delta`` (computed by the model
during prefill from the image grid).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from vlagent.algos.entropy import entropy_of_logp
from vlagent.batching import PromptBatch, mask_logits, mask_logits_
from vlagent.errors import VlagentError
from vlagent.models.grammar import TokenGrammar
from vlagent.rollout.kv_slots import expand_into_slots
from vlagent.rollout.packed import (
    attention_impl,
    packable,
    packed_continuation,
    packing_pays,
    slots,
)
from vlagent.rollout.prefill_stash import active_stash, lookup_prefill


def _rope_deltas(model: Any, batch: int, device: torch.device) -> torch.Tensor:
    """The M-RoPE offsets [batch, 1] the inner Qwen-VL model stored during the last prefill.

    A PEFT-wrapped policy (LoRA) hides the inner model one level deeper; missing them would
    silently give wrong positions to every generated token, so a model without the attribute
    is an error rather than a zero offset.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, "model", None)
    if inner is None or not hasattr(inner, "rope_deltas"):
        raise VlagentError(
            f"{type(base).__name__} has no model.rope_deltas: the shared-prefix rollout supports "
            "Qwen2-VL / Qwen2.5-VL / Qwen3-VL; set grpo.shared_prefix=false for other models"
        )
    deltas = inner.rope_deltas
    if deltas is None:
        return torch.zeros(batch, 1, dtype=torch.long, device=device)
    return deltas.to(device)


def text_positions(attention: torch.Tensor, deltas: torch.Tensor, new: int) -> torch.Tensor:
    """Position ids [4, N, new] of the last ``new`` columns of ``attention`` [N, L].

    Args:
        attention: [N, L] attention mask over cached + new tokens.
        deltas: [N, 1] M-RoPE offset of each row's prompt.
        new: number of trailing columns that are being fed now.
    """
    idx = (attention.long().cumsum(-1) - 1).clamp(min=0)[:, -new:]  # [N, new]
    mrope = idx + deltas  # [N, new]
    return torch.stack([idx, mrope, mrope, mrope])  # [4, N, new]


def prefill(model: Any, prompts: PromptBatch) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """Forward U prompts with a cache.

    Returns:
        (cache over U rows, logits of the last prompt position [U, V], rope deltas [U, 1]).
    """
    out = model(**prompts.inputs, use_cache=True, logits_to_keep=1)
    ids = prompts.inputs["input_ids"]
    return out.cache, out.logits[:, -1, :], _rope_deltas(model, ids.shape[0], ids.device)


def continue_rows(
    model: Any,
    forward: Callable[[torch.Tensor, Any, torch.Tensor, torch.Tensor], torch.Tensor],
    cache: Any,
    prompt_att: torch.Tensor,
    deltas: torch.Tensor,
    row_prompt: torch.Tensor,
    ids: torch.Tensor,
    valid: torch.Tensor,
    pack: str = "auto",
) -> torch.Tensor:
    """Outputs [n, T, X] of n rows' fed tokens ``ids`` [n, T] after their prompts' U-row cache.

    ``pack``: ``always`` packs each prompt's rows over the U-row cache (``rollout/packed.py``),
    ``never`` expands the cache to the n rows, ``auto`` packs where the attention takes a 4-D
    mask and packing pays (:func:`~vlagent.rollout.packed.packing_pays`).

    Args:
        forward: ``forward(input_ids, cache, attention_mask, position_ids)`` → [rows, L, X].
        prompt_att: [U, P] the prompts' padding mask; deltas: [U, 1] their M-RoPE offsets.
        row_prompt: [n] prompt of each row; valid: [n, T] 1 on real (attended) fed tokens.
    """
    if pack == "always" and not packable(model):
        raise VlagentError(
            f"grpo.pack_groups=always needs an attention implementation that takes a 4-D mask "
            f"(sdpa or eager); this model uses {attention_impl(model)!r}: use auto or never"
        )
    if pack != "never":
        slot, k = slots(row_prompt, prompt_att.shape[0])
        if pack == "always" or (
            packable(model) and packing_pays(k, prompt_att.shape[1], ids.shape[1], ids.device)
        ):
            dtype = None if attention_impl(model) == "sdpa" else next(model.parameters()).dtype
            return packed_continuation(
                forward, cache, prompt_att, deltas, row_prompt, slot, k, ids, valid, dtype
            )
    cache.batch_select_indices(row_prompt)
    att = torch.cat([prompt_att[row_prompt], valid.to(prompt_att.dtype)], dim=1)
    return forward(ids, cache, att, text_positions(att, deltas[row_prompt], ids.shape[1]))


def prefill_for_update(
    model: Any, prompts: PromptBatch, keys: Sequence[object] | None
) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The training forward's prefill: the sampler's stashed one when it may be reused
    (``rollout/prefill_stash.py``), else a fresh :func:`prefill`.

    Returns:
        (cache over U rows, last-position logits [U, V], rope deltas [U, 1], the prompts'
        attention mask [U, P] that goes with the cache).
    """
    hit = lookup_prefill(model, keys)
    if hit is not None:
        return hit
    cache, first, deltas = prefill(model, prompts)
    return cache, first, deltas, prompts.inputs["attention_mask"]


@torch.no_grad()
def sample_with_prefix(
    model: Any,
    prompts: PromptBatch,
    *,
    group_size: int = 1,
    rows: torch.Tensor | None = None,
    max_new_tokens: int,
    temperature: float,
    greedy: bool,
    forbidden: Sequence[int],
    eos: Sequence[int],
    pad_id: int,
    seed: int | None,
    keys: Sequence[object] | None = None,
    grammar: TokenGrammar | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode G completions for each of B prompts with one prefill per prompt.

    Args:
        prompts: B prompts on the model's device (left padded).
        group_size: G rows per prompt, in place order (ignored when ``rows`` is given).
        rows: [N] which prompt each sampled row continues (any order, repeats allowed).
        keys: the B ``Prompt`` objects; with a ``PrefillStash`` active for ``model``
            (``rollout/prefill_stash.py``) the prefill runs with grad and is kept for the update.
        grammar: constrained decoding: each step samples only the ids the row's automaton
            state accepts (``codec/action_grammar.py``); the log-probs are then under that
            renormalized distribution.
    Returns:
        (completion ids [B·G, T] with ``pad_id`` after eos, log-probs [B·G, T] of the sampled
        tokens under softmax(masked logits / temperature); T ≤ max_new_tokens).
    """
    device = prompts.inputs["input_ids"].device
    stash = active_stash(model) if keys is not None else None
    if stash is not None:
        with torch.enable_grad():  # the views the stash keeps must stay on the graph
            cache, logits, deltas = prefill(model, prompts)
            att = prompts.inputs["attention_mask"]
            cache, logits = stash.keep(keys, cache, logits, deltas, att)
    else:
        cache, logits, deltas = prefill(model, prompts)
    if rows is None:
        rows = torch.arange(len(prompts), device=device).repeat_interleave(group_size)  # [N]
    rows = rows.to(device)
    expand_into_slots(cache, rows, max_new_tokens)  # the G-fold expansion, with decode room
    logits, deltas = logits[rows], deltas[rows]
    attention = prompts.inputs["attention_mask"][rows]  # [N, P]
    n = rows.shape[0]
    gen = torch.Generator(device=device)
    if seed is not None:
        gen.manual_seed(seed)
    eos_t = torch.tensor(list(eos), device=device)
    ids = torch.full((n, max_new_tokens), pad_id, dtype=torch.long, device=device)
    logps = torch.zeros(n, max_new_tokens, device=device)
    done = torch.zeros(n, dtype=torch.bool, device=device)
    state = None if grammar is None else torch.full((n,), grammar.start, device=device)
    union = None if grammar is None else grammar.union_ids(device)
    steps = 0
    for t in range(max_new_tokens):
        if grammar is not None and state is not None and union is not None:
            # only the K accepted ids can be drawn: work on [N, K], never on [N, V]
            scores = logits[:, union].float()
            scores.masked_fill_(~grammar.member.to(device)[state], float("-inf"))
        else:  # the step's logits are a fresh tensor nobody reads again: mask in place
            scores = mask_logits_(logits.float(), forbidden)
        if greedy:
            tok = scores.argmax(-1)
            logp = scores.gather(-1, tok[:, None]).squeeze(-1) - torch.logsumexp(scores, -1)
        else:
            if temperature != 1.0:
                scores = scores.div_(temperature)
            tok, logp = sample_scores(scores, gen)
        if union is not None:
            tok = union[tok]
        tok = torch.where(done, torch.full_like(tok, pad_id), tok)
        if grammar is not None and state is not None:
            live = ~done
            state[live] = grammar.advance(state[live], tok[live])
        ids[:, t] = tok
        logps[:, t] = torch.where(done, 0.0, logp)
        done |= torch.isin(tok, eos_t)
        steps = t + 1
        if bool(done.all()) or t + 1 == max_new_tokens:
            break
        attention = torch.cat(
            [attention, torch.ones(n, 1, dtype=attention.dtype, device=device)], dim=1
        )
        out = model(
            input_ids=tok[:, None],
            cache=cache,
            attention_mask=attention,
            position_ids=text_positions(attention, deltas, 1),
            use_cache=True,
        )
        logits = out.logits[:, -1, :]
    return ids[:, :steps], logps[:, :steps]


SAMPLER_BLOCK = 128
"""Vocabulary entries per block of :func:`sample_scores`' two-level inverse CDF."""


def sample_scores(
    scores: torch.Tensor, gen: torch.Generator, block: int = SAMPLER_BLOCK
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token per row of softmax(``scores`` [N, V]) and its log-prob, by a two-level
    inverse CDF; ``scores`` (float32, ``-inf`` for excluded ids) is overwritten.

    ``torch.multinomial`` draws one exponential per vocabulary entry (4.9 M numbers a step for
    32 rows of Qwen's 151,936 ids, 3.7 of a 4.8 s generate phase on CPU); a full float64 CDF
    costs a widening copy and a cumulative sum over all V. Here three float32 passes over
    [N, V] (max, exp of the difference, block sums), then a float64 CDF over the ⌈V / block⌉
    block sums picks a block with probability (its sum) / (total), and a float64 CDF over that
    block's ``block`` entries picks the id: exactly softmax's probabilities, up to float32
    rounding of each entry. Zero-probability ids and blocks are never picked. Two uniforms per
    row from ``gen``.

    Returns:
        (token ids [N] long, their log-probs [N] float32: score − max − log Σ exp(score − max)).
    """
    n, v = scores.shape
    top = scores.amax(-1, keepdim=True)  # [N, 1]
    e = scores.sub_(top).exp_()  # [N, V] = exp(score - max), in (0, 1]
    full = (v // block) * block
    sums = e[:, :full].reshape(n, -1, block).sum(-1)  # [N, v // block]
    if full < v:
        sums = torch.cat([sums, e[:, full:].sum(-1, keepdim=True)], dim=1)
    cdf = sums.to(torch.float64).cumsum_(-1)  # [N, nb]
    u = torch.rand(n, 2, generator=gen, dtype=torch.float64, device=scores.device)
    b = torch.searchsorted(cdf, u[:, :1] * cdf[:, -1:], right=True).clamp_(max=cdf.shape[1] - 1)
    idx = b * block + torch.arange(block, device=scores.device)  # [N, block]
    inside = idx < v
    w = e.gather(-1, idx.clamp(max=v - 1)).masked_fill_(~inside, 0.0)  # [N, block]
    wcdf = w.to(torch.float64).cumsum_(-1)
    j = torch.searchsorted(wcdf, u[:, 1:] * wcdf[:, -1:], right=True).clamp_(max=block - 1)
    tok = idx.gather(-1, j).squeeze(-1)  # [N]
    # log p = log e[tok] - log Σ e, with e[tok] = exp(score - max) read back as a log
    logp = torch.log(e.gather(-1, tok[:, None]).squeeze(-1).double()) - cdf[:, -1].log()
    return tok, logp.float()


def completion_logprobs_shared(
    model: Any,
    prompts: PromptBatch,
    row_prompt: torch.Tensor,
    completion_ids: torch.Tensor,
    mask: torch.Tensor,
    *,
    temperature: float = 1.0,
    forbidden: Sequence[int] | None = None,
    entropy_out: list[torch.Tensor] | None = None,
    valid: torch.Tensor | None = None,
    keys: Sequence[object] | None = None,
    pack: str = "auto",
) -> torch.Tensor:
    """Teacher-forced log-probs of completions that continue a few distinct prompts.

    Args:
        prompts: U distinct prompts (left padded).
        keys: their ``Prompt`` objects: the sampler's stashed prefill is used when it may be
            (:func:`prefill_for_update`).
        row_prompt: [n] which prompt each completion row continues.
        completion_ids, mask: [n, T].
        valid: [n, T] 1 on real completion tokens (attended); defaults to ``mask``.
        pack: how the completions continue their prompts (:func:`continue_rows`).
    Returns:
        [n, T] log-probs (zero where ``mask`` is 0), differentiable w.r.t. the model, equal to
        ``batching.completion_logprobs`` on the repeated prompts.
    """
    cache, first, deltas, prompt_att = prefill_for_update(model, prompts, keys)  # first: [U, V]
    t = completion_ids.shape[1]
    logits = first[row_prompt][:, None, :]  # [n, 1, V]: predicts completion token 0
    if t > 1:  # completion tokens 0..T-2 are fed; position j predicts token j + 1

        def forward(
            ids: torch.Tensor, c: Any, att: torch.Tensor, pos: torch.Tensor
        ) -> torch.Tensor:
            return model(
                input_ids=ids, cache=c, attention_mask=att, position_ids=pos, use_cache=True
            ).logits

        fed_valid = (mask if valid is None else valid)[:, :-1]
        out = continue_rows(
            model,
            forward,
            cache,
            prompt_att,
            deltas,
            row_prompt,
            completion_ids[:, :-1],
            fed_valid,
            pack,
        )
        logits = torch.cat([logits, out], dim=1)  # [n, T, V]
    logp = torch.log_softmax(mask_logits(logits.float(), forbidden) / temperature, dim=-1)
    tok = logp.gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)  # [n, T]
    if entropy_out is not None:
        with torch.no_grad():
            entropy_out.append(entropy_of_logp(logp, mask))  # [B, T]
    return tok * mask
