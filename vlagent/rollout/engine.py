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

from vlagent.batching import mask_logits, policy_forbidden_ids
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
    steps = []
    for t, logits in enumerate(out.logits):  # per step [N, V]: never a [N, T, V] tensor
        logp = torch.log_softmax(mask_logits(logits.float(), forbidden) / scale, dim=-1)
        steps.append(logp.gather(-1, new[:, t : t + 1]).squeeze(-1))
    return new, torch.stack(steps, dim=1)


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
            )
        else:
            ids, logp = _generate(
                policy, segments, budget, temperature, greedy, seed, forbidden, eos
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
