"""Rollout engine on transformers ``generate`` (CPU or GPU; the default and the test path)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from vlagent.batching import (
    PromptBatch,
    completion_mask,
    concat_prompts,
    forbidden_token_ids,
    mask_logits,
    repeat_prompts,
    select_prompts,
)


@dataclasses.dataclass
class Rollout:
    """G sampled completions for each of B prompts (N = B·G rows, prompt-major order).

    Attributes:
        prompts: the N repeated prompts the completions continue.
        completion_ids: [N, T] generated ids (pad after eos).
        mask: [N, T] 1 on tokens the policy generated, up to and including eos.
        behaviour_logprobs: [N, T] log-probs of the sampled tokens under the sampler's
            distribution (softmax(logits / temperature) with vision placeholders excluded),
            0 where ``mask`` is 0.
        texts: N decoded completions (special tokens removed).
        group_ids: [N] index of the prompt each row came from.
        truncated: [N] True where no eos was produced within ``max_new_tokens``.
    """

    prompts: PromptBatch
    completion_ids: torch.Tensor
    mask: torch.Tensor
    behaviour_logprobs: torch.Tensor
    texts: list[str]
    group_ids: torch.Tensor
    truncated: torch.Tensor

    def __len__(self) -> int:
        return int(self.completion_ids.shape[0])

    def select(self, rows: Sequence[int] | torch.Tensor) -> Rollout:
        """The rollout rows at ``rows`` (their prompts included)."""
        idx = torch.as_tensor(rows, dtype=torch.long)
        return Rollout(
            prompts=select_prompts(self.prompts, idx),
            completion_ids=self.completion_ids[idx],
            mask=self.mask[idx],
            behaviour_logprobs=self.behaviour_logprobs[idx],
            texts=[self.texts[i] for i in idx.tolist()],
            group_ids=self.group_ids[idx],
            truncated=self.truncated[idx],
        )


def concat_rollouts(parts: Sequence[Rollout], pad_id: int) -> Rollout:
    """Stack rollouts (e.g. resampling rounds): prompts left-padded, completions right-padded.

    Group ids are renumbered so groups from different parts never merge.
    """
    if len(parts) == 1:
        return parts[0]
    width = max(p.completion_ids.shape[1] for p in parts)

    def right(t: torch.Tensor, value: float) -> torch.Tensor:
        return torch.nn.functional.pad(t, (0, width - t.shape[1]), value=value)

    group_ids, offset = [], 0
    for p in parts:
        _, dense = torch.unique(p.group_ids, return_inverse=True)
        group_ids.append(dense + offset)
        offset += int(dense.max()) + 1 if len(p) else 0
    return Rollout(
        prompts=concat_prompts([p.prompts for p in parts], pad_id),
        completion_ids=torch.cat([right(p.completion_ids, pad_id) for p in parts]),
        mask=torch.cat([right(p.mask, 0.0) for p in parts]),
        behaviour_logprobs=torch.cat([right(p.behaviour_logprobs, 0.0) for p in parts]),
        texts=[t for p in parts for t in p.texts],
        group_ids=torch.cat(group_ids),
        truncated=torch.cat([p.truncated for p in parts]),
    )


def eos_ids(policy: Any) -> list[int]:
    """Token ids that end a turn: the tokenizer's eos and the generation config's."""
    ids = {int(policy.tokenizer.eos_token_id)}
    gen_eos = policy.model.generation_config.eos_token_id
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif gen_eos:
        ids.update(int(e) for e in gen_eos)
    return sorted(ids)


@torch.no_grad()
def generate(
    policy: Any,
    prompts: PromptBatch,
    *,
    group_size: int = 1,
    max_new_tokens: int = 32,
    temperature: float = 1.0,
    greedy: bool = False,
    generator_seed: int | None = None,
) -> Rollout:
    """Sample ``group_size`` completions per prompt, keeping behaviour log-probs.

    Args:
        policy: a loaded ``Policy``.
        prompts: B prompts from ``encode_prompts``.
        group_size: G samples per prompt.
        max_new_tokens: completion budget T.
        temperature: sampling temperature (ignored when ``greedy``).
        greedy: argmax decoding (evaluation).
        generator_seed: if given, seeds torch's RNG before sampling (deterministic rollouts).
    """
    model = policy.model
    device = next(model.parameters()).device
    batch = repeat_prompts(prompts, group_size).to(device) if group_size > 1 else prompts.to(device)
    if generator_seed is not None:
        torch.manual_seed(generator_seed)
    was_training = model.training
    model.eval()
    # Every sampling knob is explicit: a checkpoint's generation_config (e.g. Qwen2.5-VL's
    # top_k=1, repetition_penalty=1.05) must not reshape the distribution behind our log-probs.
    sampling = {"repetition_penalty": 1.0}
    if not greedy:
        sampling.update(temperature=temperature, top_k=0, top_p=1.0)
    forbidden = forbidden_token_ids(policy.tokenizer)
    out = model.generate(
        **batch.inputs,
        do_sample=not greedy,
        max_new_tokens=max_new_tokens,
        return_dict_in_generate=True,
        output_logits=True,
        pad_token_id=policy.tokenizer.pad_token_id,
        eos_token_id=eos_ids(policy),
        suppress_tokens=forbidden or None,
        **sampling,
    )
    if was_training:
        model.train()
    prompt_len = batch.inputs["input_ids"].shape[1]
    ids = out.sequences[:, prompt_len:]  # [N, T]
    logits = mask_logits(torch.stack(out.logits, dim=1).float(), forbidden)  # [N, T, V]
    scale = 1.0 if greedy else temperature
    logp = torch.log_softmax(logits / scale, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    eos = eos_ids(policy)
    mask = completion_mask(ids, eos, policy.tokenizer.pad_token_id)
    has_eos = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    for e in eos:
        has_eos |= ((ids == e) & mask.bool()).any(dim=1)
    texts = policy.tokenizer.batch_decode(
        ids * mask.long() + policy.tokenizer.pad_token_id * (1 - mask.long()),
        skip_special_tokens=True,
    )
    n = ids.shape[0]
    group_ids = torch.arange(n, device=ids.device) // group_size
    return Rollout(
        prompts=batch,
        completion_ids=ids,
        mask=mask,
        behaviour_logprobs=logp * mask,
        texts=texts,
        group_ids=group_ids,
        truncated=~has_eos,
    )
