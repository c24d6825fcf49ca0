"""The transformers rollout engine: one assistant turn for each of a batch of segments.

Two decoders with the same sampling semantics (softmax(logits / temperature) with vision
placeholders and the ids past the tokenizer's vocabulary excluded and nothing else: no top-k /
top-p / repetition penalty), so behaviour log-probs are the sampler's own:
    prefix    every segment is a fresh prompt: one prefill per distinct prompt, the KV cache
              expanded to the rows that continue it (``rollout/prefix.py``); the default
    generate  transformers ``generate`` on the full left-padded contexts (prompt +
              continuation, tool images included); used for later turns of a growing
              conversation and when prefix sharing is off
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import LogitsProcessor

from vlagent.batching import mask_logits, policy_forbidden_ids
from vlagent.models.grammar import TokenGrammar
from vlagent.rollout.prefix import sample_with_prefix
from vlagent.rollout.rows import batch_prompts
from vlagent.rollout.trajectory import Segment


def eos_ids(policy: Any) -> list[int]:
    """Token ids that end a turn: the tokenizer's eos and the generation config's."""
    ids = {int(policy.tokenizer.eos_token_id)}
    gen_eos = policy.model.generation_config.eos_token_id
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif gen_eos:
        ids.update(int(e) for e in gen_eos)
    return sorted(ids)


def context_inputs(segments: Sequence[Segment], pad_id: int) -> dict[str, torch.Tensor]:
    """Left-padded model inputs [N, L] of whole contexts (prompt + continuation)."""
    seqs, mms, pixels, grids = [], [], [], []
    for s in segments:
        seqs.append(torch.cat([s.prompt.input_ids, torch.tensor(s.ids, dtype=torch.long)]))
        mms.append(torch.cat([s.prompt.mm_token_type_ids, torch.tensor(s.mm, dtype=torch.long)]))
        pixels.append(s.prompt.pixel_values)
        grids.append(s.prompt.image_grid_thw)
        for pv, grid in s.images:
            pixels.append(pv)
            grids.append(torch.tensor([grid], dtype=torch.long))
    width = max(len(x) for x in seqs)
    n = len(seqs)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    att = torch.zeros(n, width, dtype=torch.long)
    mm = torch.zeros(n, width, dtype=torch.long)
    for i, (x, m) in enumerate(zip(seqs, mms, strict=True)):
        ids[i, width - len(x) :] = x
        att[i, width - len(x) :] = 1
        mm[i, width - len(x) :] = m
    return {
        "input_ids": ids,
        "attention_mask": att,
        "mm_token_type_ids": mm,
        "pixel_values": torch.cat(pixels, dim=0),
        "image_grid_thw": torch.cat(grids, dim=0),
    }


def _generate(
    policy: Any,
    segments: Sequence[Segment],
    max_new: int,
    temperature: float,
    greedy: bool,
    seed: int | None,
    forbidden: list[int],
    eos: list[int],
    grammar: TokenGrammar | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    model = policy.model
    device = next(model.parameters()).device
    pad = policy.tokenizer.pad_token_id
    inputs = {k: v.to(device) for k, v in context_inputs(segments, pad).items()}
    if seed is not None:
        torch.manual_seed(seed)
    # Every sampling knob explicit: a checkpoint's generation_config (e.g. Qwen2.5-VL's
    # top_k=1, repetition_penalty=1.05) must not reshape the distribution behind our log-probs.
    knobs: dict[str, Any] = {"repetition_penalty": 1.0}
    if not greedy:
        knobs.update(temperature=temperature, top_k=0, top_p=1.0)
    if grammar is not None:
        knobs["logits_processor"] = [_GrammarProcessor(grammar, inputs["input_ids"].shape[1])]
    out = model.generate(
        **inputs,
        do_sample=not greedy,
        max_new_tokens=max_new,
        return_dict_in_generate=True,
        output_logits=True,
        pad_token_id=pad,
        eos_token_id=eos,
        suppress_tokens=forbidden or None,
        **knobs,
    )
    new = out.sequences[:, inputs["input_ids"].shape[1] :]  # [N, T]
    scale = 1.0 if greedy else temperature
    states = None
    if grammar is not None:  # each token's state: the turn runs to its first eos
        is_eos = torch.isin(new, torch.tensor(eos, device=new.device))
        turn = (is_eos.long().cumsum(1) - is_eos.long()) == 0  # up to and including eos
        states = grammar.states(new.cpu(), turn.cpu()).to(new.device)
    steps = []
    for t, logits in enumerate(out.logits):  # per step [N, V]: never a [N, T, V] tensor
        z = mask_logits(logits.float(), forbidden)
        if grammar is not None and states is not None:
            z = grammar.restrict_(z, states[:, t])
        logp = torch.log_softmax(z / scale, dim=-1)
        steps.append(logp.gather(-1, new[:, t : t + 1]).squeeze(-1))
    return new, torch.stack(steps, dim=1)


class _GrammarProcessor(LogitsProcessor):
    """A ``generate`` logits processor: each row's next scores restricted to the ids its
    automaton state accepts; the state follows the row's new tokens (a finished row's padding
    leaves it where it was)."""

    def __init__(self, grammar: TokenGrammar, prompt_len: int) -> None:
        self.grammar, self.start = grammar, prompt_len
        self.state: list[int] | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        g = self.grammar
        if self.state is None:
            self.state = [g.start] * input_ids.shape[0]
        if input_ids.shape[1] > self.start:
            for r, tok in enumerate(input_ids[:, -1].tolist()):
                self.state[r] = g.step[self.state[r]].get(tok, self.state[r])
        states = torch.tensor(self.state, dtype=torch.long, device=scores.device)
        return g.restrict_(scores.clone(), states)


@torch.no_grad()
def sample_turns(
    policy: Any,
    segments: Sequence[Segment],
    max_new: Sequence[int],
    *,
    temperature: float = 1.0,
    greedy: bool = False,
    seed: int | None = None,
    shared_prefix: bool = True,
) -> list[tuple[list[int], list[float], bool]]:
    """Sample one assistant turn per segment.

    Args:
        policy: a loaded ``Policy``.
        segments: the contexts to continue (not modified).
        max_new: per segment, its token allowance for this turn.
        temperature: sampling temperature (ignored when ``greedy``).
        greedy: argmax decoding (evaluation).
        seed: seeds the sampler (deterministic rollouts).
        shared_prefix: use the prefix engine where every segment is a fresh prompt.

    Returns:
        Per segment: the new ids up to and including the first eos (or its whole allowance),
        their behaviour log-probs, and whether the turn ended with eos within the allowance.
    """
    model = policy.model
    forbidden = policy_forbidden_ids(policy)  # placeholders + ids past the tokenizer
    eos = eos_ids(policy)
    grammar = getattr(policy, "grammar", None)
    budget = max(max_new)
    was_training = model.training
    model.eval()
    try:
        if shared_prefix and all(len(s) == 0 for s in segments):
            where: dict[int, int] = {}
            distinct = []
            for s in segments:
                if id(s.prompt) not in where:
                    where[id(s.prompt)] = len(distinct)
                    distinct.append(s.prompt)
            device = next(model.parameters()).device
            prompts = batch_prompts(distinct, policy.tokenizer.pad_token_id).to(device)
            rows = torch.tensor([where[id(s.prompt)] for s in segments], dtype=torch.long)
            ids, logp = sample_with_prefix(
                model,
                prompts,
                rows=rows,
                max_new_tokens=budget,
                temperature=temperature,
                greedy=greedy,
                forbidden=forbidden,
                eos=eos,
                pad_id=policy.tokenizer.pad_token_id,
                seed=seed,
                keys=distinct,
                grammar=grammar,
            )
        else:
            ids, logp = _generate(
                policy, segments, budget, temperature, greedy, seed, forbidden, eos, grammar
            )
    finally:
        model.train(was_training)
    eos_set = set(eos)
    out = []
    for row, lp, allow in zip(ids.cpu().tolist(), logp.cpu().tolist(), max_new, strict=True):
        end = next((j + 1 for j, v in enumerate(row) if v in eos_set), len(row))
        end = min(end, allow)
        hit = end >= 1 and row[end - 1] in eos_set
        out.append((row[:end], lp[:end], hit))
    return out
