"""Rollout engine on transformers models (CPU or GPU; the default and the test path).

Two decoders with identical sampling semantics:
    ``prefix``       (default) one prefill per distinct prompt, KV cache expanded to the group,
                     a plain sampling loop (``rollout/prefix.py``)
    ``hf_generate``  transformers ``generate`` on the repeated prompts (reference path)
Both sample from softmax(logits / temperature) with vision placeholders excluded and nothing
else (no top-k/top-p/repetition penalty), so behaviour log-probs are the sampler's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

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
from vlagent.rollout.prefix import sample_with_prefix

Engine = Literal["prefix", "hf_generate"]


@dataclasses.dataclass
class Rollout:
    """Sampled completions: N rows continuing U distinct prompts (N = U·G for a fresh batch).

    Attributes:
        prompts: the U distinct prompts.
        row_prompt: [N] index into ``prompts`` of the prompt each row continues.
        completion_ids: [N, T] generated ids (pad after eos).
        mask: [N, T] 1 on tokens the policy generated, up to and including eos.
        behaviour_logprobs: [N, T] log-probs of the sampled tokens under the sampler's
            distribution (softmax(logits / temperature), vision placeholders excluded), 0 where
            ``mask`` is 0.
        texts: N decoded completions (special tokens removed).
        group_ids: [N] group of each row (rows of a group share a prompt).
        truncated: [N] True where no eos was produced within ``max_new_tokens``.
    """

    prompts: PromptBatch
    row_prompt: torch.Tensor
    completion_ids: torch.Tensor
    mask: torch.Tensor
    behaviour_logprobs: torch.Tensor
    texts: list[str]
    group_ids: torch.Tensor
    truncated: torch.Tensor

    def __len__(self) -> int:
        return int(self.completion_ids.shape[0])

    @property
    def frames(self) -> list[Any]:
        """Per row, the coordinate frame of its prompt's image."""
        return [self.prompts.frames[i] for i in self.row_prompt.tolist()]

    def row_prompts(self) -> PromptBatch:
        """The prompts materialized per row (N rows; for paths without prefix sharing)."""
        return select_prompts(self.prompts, self.row_prompt.cpu())

    def select(self, rows: Sequence[int] | torch.Tensor) -> Rollout:
        """The rollout rows at ``rows``, keeping only the prompts they continue."""
        idx = torch.as_tensor(rows, dtype=torch.long)
        used, remap = torch.unique(self.row_prompt.cpu()[idx], return_inverse=True)
        return Rollout(
            prompts=select_prompts(self.prompts, used),
            row_prompt=remap.reshape(-1),
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

    group_ids, row_prompt, g_off, p_off = [], [], 0, 0
    for p in parts:
        _, dense = torch.unique(p.group_ids, return_inverse=True)
        group_ids.append(dense.reshape(-1) + g_off)
        g_off += int(dense.max()) + 1 if len(p) else 0
        row_prompt.append(p.row_prompt.cpu() + p_off)
        p_off += len(p.prompts)
    return Rollout(
        prompts=concat_prompts([p.prompts for p in parts], pad_id),
        row_prompt=torch.cat(row_prompt),
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


def _hf_generate(
    policy: Any,
    batch: PromptBatch,
    max_new_tokens: int,
    temperature: float,
    greedy: bool,
    forbidden: list[int],
) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers ``generate`` on already repeated prompts → (ids [N, T], log-probs [N, T])."""
    # Every sampling knob is explicit: a checkpoint's generation_config (e.g. Qwen2.5-VL's
    # top_k=1, repetition_penalty=1.05) must not reshape the distribution behind our log-probs.
    sampling: dict[str, Any] = {"repetition_penalty": 1.0}
    if not greedy:
        sampling.update(temperature=temperature, top_k=0, top_p=1.0)
    out = policy.model.generate(
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
    ids = out.sequences[:, batch.inputs["input_ids"].shape[1] :]  # [N, T]
    logits = mask_logits(torch.stack(out.logits, dim=1).float(), forbidden)  # [N, T, V]
    scale = 1.0 if greedy else temperature
    logp = torch.log_softmax(logits / scale, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    return ids, logp


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
    engine: Engine = "prefix",
) -> Rollout:
    """Sample ``group_size`` completions per prompt, keeping behaviour log-probs.

    Args:
        policy: a loaded ``Policy``.
        prompts: B prompts from ``encode_prompts``.
        group_size: G samples per prompt.
        max_new_tokens: completion budget T.
        temperature: sampling temperature (ignored when ``greedy``).
        greedy: argmax decoding (evaluation).
        generator_seed: seeds the sampler (deterministic rollouts).
        engine: "prefix" (shared prefill per group, default) or "hf_generate".
    """
    model = policy.model
    device = next(model.parameters()).device
    prompts = prompts.to(device)
    forbidden = forbidden_token_ids(policy.tokenizer)
    eos = eos_ids(policy)
    pad = policy.tokenizer.pad_token_id
    was_training = model.training
    model.eval()
    try:
        if engine == "prefix":
            ids, logp = sample_with_prefix(
                model,
                prompts,
                group_size=group_size,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                greedy=greedy,
                forbidden=forbidden,
                eos=eos,
                pad_id=pad,
                seed=generator_seed,
            )
        else:
            if generator_seed is not None:
                torch.manual_seed(generator_seed)
            batch = repeat_prompts(prompts, group_size) if group_size > 1 else prompts
            ids, logp = _hf_generate(policy, batch, max_new_tokens, temperature, greedy, forbidden)
    finally:
        model.train(was_training)
    mask = completion_mask(ids, eos, pad)
    has_eos = (torch.isin(ids, torch.tensor(eos, device=ids.device)) & mask.bool()).any(dim=1)
    texts = policy.tokenizer.batch_decode(
        ids * mask.long() + pad * (1 - mask.long()), skip_special_tokens=True
    )
    n = ids.shape[0]
    row_prompt = torch.arange(n) // group_size
    return Rollout(
        prompts=prompts,
        row_prompt=row_prompt,
        completion_ids=ids,
        mask=mask,
        behaviour_logprobs=logp * mask,
        texts=texts,
        group_ids=row_prompt.clone(),
        truncated=~has_eos,
    )
