"""Teacher-forced log-probs of row continuations under the current policy (training forward).

Two paths with the same math:
    shared   rows whose continuation is text only and whose prompts repeat (a GRPO group)
             prefill each distinct prompt once and expand the KV cache (``rollout/prefix.py``);
    full     every row runs prompt + continuation in one forward (left-padded prompts,
             right-padded continuations, continuation images in row order). Used for rows
             with tool images, with gradient checkpointing, or when sharing is switched off.

With ``logits_chunk > 0`` either path stops at the decoder's last hidden states and sends only
the loss-mask positions through the LM head, that many at a time (``rollout/chunked.py``): no
``[n, T, V]`` logits; the same distribution (softmax of masked logits over the temperature).
With a ``grammar`` (constrained decoding, ``codec/action_grammar.py``) the hidden-state paths
always run and each position is scored over the ids its automaton state accepts
(``rollout/grammar_head.py``), the distribution the constrained sampler drew from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from vlagent.algos.entropy import entropy_of_logp
from vlagent.batching import mask_logits
from vlagent.models.grammar import TokenGrammar
from vlagent.rollout.chunked import decoder_and_head, head_logprobs, scaled_logits, token_stats
from vlagent.rollout.grammar_head import grammar_token_stats, union_scores
from vlagent.rollout.prefix import (
    completion_logprobs_shared,
    continue_rows,
    prefill_for_update,
)
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
    logits_chunk: int = 0,
    pack: str = "auto",
    grammar: TokenGrammar | None = None,
) -> torch.Tensor:
    """Log-probs [n, T] of each row's continuation tokens (0 where ``batch.mask`` is 0).

    Args:
        model: a Qwen-VL ``*ForConditionalGeneration`` (gradients flow when enabled).
        batch: the rows.
        temperature: logits are divided by it (the sampler's temperature).
        forbidden: ids the sampler excluded from the distribution (vision placeholders).
        shared: use the shared-prefix path where it applies (text-only continuations).
        entropy_out: if a list, the detached per-token entropy [n, T] is appended to it.
        pack: how the shared path's rows continue their prompts (``grpo.pack_groups``:
            auto | always | never).
        logits_chunk: > 0: positions per chunk through the LM head, loss-mask positions only
            (``rollout/chunked.py``); 0: the logits of all T positions at once.
        grammar: the constrained sampler's automaton (each masked run of a row is one turn
            under it); None: the unconstrained distribution.
    """
    device = next(model.parameters()).device
    mask = batch.mask.to(device)
    ids = batch.ids.to(device)
    if logits_chunk > 0 or grammar is not None:
        states = None if grammar is None else grammar.states(batch.ids, batch.mask).to(device)
        head = _HeadArgs(
            temperature, forbidden, max(logits_chunk, 1), entropy_out is not None, grammar, states
        )
        if shared and batch.text_only:
            logp, ent = _chunked_shared(model, batch, pad_id, mask, ids, head, pack)
        else:
            logp, ent = _chunked_full(model, batch, pad_id, mask, ids, head)
        if entropy_out is not None:
            entropy_out.append(ent)
        return logp
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
            keys=batch.prompts,
            pack=pack,
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


@dataclasses.dataclass(frozen=True)
class _HeadArgs:
    """How the chunked paths send hidden states through the head (``head_logprobs``)."""

    temperature: float
    forbidden: Sequence[int] | None
    chunk: int
    entropy: bool
    grammar: TokenGrammar | None = None
    states: torch.Tensor | None = None  # [n, T] automaton states, with a grammar

    def stats(
        self,
        head: torch.nn.Module,
        h: torch.Tensor,
        ids: torch.Tensor,
        rows: torch.Tensor,
        cols: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probs and entropies of ``ids`` [m] at (``rows``, ``cols``) from ``h`` [m, H]."""
        if self.grammar is None or self.states is None:
            return head_logprobs(
                head,
                h,
                ids,
                temperature=self.temperature,
                forbidden=self.forbidden,
                chunk=self.chunk,
                entropy=self.entropy,
            )
        z = union_scores(head, h, self.grammar, self.temperature)
        return grammar_token_stats(z, self.states[rows, cols], ids, self.grammar)


def _scatter(
    n: int, t: int, parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]
) -> tuple[torch.Tensor, torch.Tensor]:
    """[n, T] log-probs (differentiable) and entropies from (rows, cols, logp, ent) pieces."""
    ref = parts[0][2]
    logp = torch.zeros(n, t, dtype=torch.float32, device=ref.device)
    ent = torch.zeros(n, t, dtype=torch.float32, device=ref.device)
    for r, c, lp, en in parts:
        logp = logp.index_put((r, c), lp)
        ent[r, c] = en.detach()
    return logp, ent


def _chunked_full(
    model: Any, batch: RowBatch, pad_id: int, mask: torch.Tensor, ids: torch.Tensor, a: _HeadArgs
) -> tuple[torch.Tensor, torch.Tensor]:
    """Full path: one decoder forward per row, the loss positions' hidden states to the head."""
    decoder, head = decoder_and_head(model)
    n, t = ids.shape
    inputs = {k: v.to(ids.device) for k, v in full_inputs(batch, pad_id).items()}
    hidden = decoder(**inputs, use_cache=False)[0][:, -(t + 1) : -1]  # [n, T, H]
    r, c = (mask > 0).nonzero(as_tuple=True)
    lp, en = a.stats(head, hidden[r, c], ids[r, c], r, c)
    return _scatter(n, t, [(r, c, lp, en)])


def _chunked_shared(
    model: Any,
    batch: RowBatch,
    pad_id: int,
    mask: torch.Tensor,
    ids: torch.Tensor,
    a: _HeadArgs,
    pack: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Shared path (``prefix.completion_logprobs_shared``'s positions): token 0 from the
    prefill's last-position logits [U, V], tokens 1.. from the decoder's hidden states."""
    device = ids.device
    decoder, head = decoder_and_head(model)
    n, t = ids.shape
    prompts = batch_prompts(batch.prompts, pad_id).to(device)
    row_prompt = batch.row_prompt.to(device)
    cache, first, deltas, prompt_att = prefill_for_update(model, prompts, batch.prompts)
    r0 = (mask[:, 0] > 0).nonzero(as_tuple=True)[0]  # first: [U, V]
    if a.grammar is not None and a.states is not None:
        union = a.grammar.union_ids(device)
        z0 = first[row_prompt[r0]][:, union].float() / a.temperature  # [n0, K]
        lp0, en0 = grammar_token_stats(z0, a.states[r0, 0], ids[r0, 0], a.grammar)
    else:
        z0 = scaled_logits(first[row_prompt[r0]], a.forbidden, a.temperature)  # [n0, V]
        lp0, en0 = token_stats(z0, ids[r0, 0])
    parts = [(r0, torch.zeros_like(r0), lp0, en0)]
    if t > 1:

        def forward(x: torch.Tensor, c: Any, att: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
            return decoder(
                input_ids=x, cache=c, attention_mask=att, position_ids=pos, use_cache=True
            )[0]

        valid = batch.valid.to(device=device)[:, :-1]  # completion tokens 0..T-2 fed
        hidden = continue_rows(
            model, forward, cache, prompt_att, deltas, row_prompt, ids[:, :-1], valid, pack
        )  # [n, T-1, H]: position j predicts token j + 1
        r, c = (mask[:, 1:] > 0).nonzero(as_tuple=True)
        lp, en = a.stats(head, hidden[r, c], ids[r, c + 1], r, c + 1)
        parts.append((r, c + 1, lp, en))
    return _scatter(n, t, parts)
