"""Group prefix sharing (``rollout/prefix.py``) computes the same thing as the plain path.

The fast path encodes each group's image and prompt once and expands the KV cache to the G
completions. These tests pin it to the plain path (G copies of the prompt, full forward per
row) for every model family: same greedy tokens, same log-probs, same gradients.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.batching import completion_logprobs, encode_prompts, forbidden_token_ids
from vlagent.models.loading import load_policy
from vlagent.rollout.hf import generate
from vlagent.rollout.prefix import completion_logprobs_shared
from vlagent.train.grpo_update import sequence_logprobs

FAMILIES = ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"]


def _prompts(policy, n=2, seed=3):
    rng = np.random.default_rng(seed)
    # Different sizes -> different image-token counts -> left padding inside the prompt batch.
    imgs = [rng.integers(0, 255, (224 + 56 * i, 280, 3), dtype=np.uint8) for i in range(n)]
    texts = ["Click the red circle.", "Tap the blue square near the top"][:n]
    return encode_prompts(policy.processor, imgs, texts)


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_prefix_equals_hf_generate(tiny_dirs, family):
    policy = load_policy(tiny_dirs[family])
    prompts = _prompts(policy)
    fast = generate(policy, prompts, group_size=3, max_new_tokens=10, greedy=True)
    plain = generate(
        policy, prompts, group_size=3, max_new_tokens=10, greedy=True, engine="hf_generate"
    )
    assert torch.equal(fast.completion_ids * fast.mask, plain.completion_ids * plain.mask)
    assert torch.equal(fast.mask, plain.mask)
    assert torch.allclose(fast.behaviour_logprobs, plain.behaviour_logprobs, atol=1e-4)


def test_prefix_sampling_with_lora_wrapped_model(tiny_dirs):
    """PEFT hides the inner model one level deeper; positions must still be right."""
    pytest.importorskip("peft")
    from vlagent.algo_config import LoRAConfig
    from vlagent.models.lora import wrap_lora

    policy = load_policy(tiny_dirs["qwen2_5_vl"])
    policy.model = wrap_lora(policy.model, LoRAConfig(enabled=True, r=4))
    prompts = _prompts(policy)
    fast = generate(policy, prompts, group_size=2, max_new_tokens=10, greedy=True)
    plain = generate(
        policy, prompts, group_size=2, max_new_tokens=10, greedy=True, engine="hf_generate"
    )
    assert torch.equal(fast.completion_ids * fast.mask, plain.completion_ids * plain.mask)
    assert torch.allclose(fast.behaviour_logprobs, plain.behaviour_logprobs, atol=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_shared_logprobs_equal_full_forward(tiny_dirs, family):
    policy = load_policy(tiny_dirs[family])
    prompts = _prompts(policy)
    ro = generate(policy, prompts, group_size=4, max_new_tokens=12, generator_seed=1)
    forbidden = forbidden_token_ids(policy.tokenizer)
    with torch.no_grad():
        full = completion_logprobs(
            policy.model, ro.row_prompts(), ro.completion_ids, ro.mask, forbidden=forbidden
        )
        shared = completion_logprobs_shared(
            policy.model,
            ro.prompts,
            ro.row_prompt,
            ro.completion_ids,
            ro.mask,
            forbidden=forbidden,
        )
    assert ro.mask.sum() > 0
    assert torch.allclose(shared, full, atol=1e-5)
    assert torch.allclose(ro.behaviour_logprobs, full, atol=1e-4)  # sampler = teacher forcing


def test_training_forward_same_loss_and_grads_both_paths(tiny_dirs):
    """``grpo.shared_prefix`` true vs false: same log-probs and same gradients (a selection of
    rows from two groups, so the shared path really de-duplicates prompts)."""
    policy = load_policy(tiny_dirs["qwen2_5_vl"])
    policy.model.train()
    ro = generate(policy, _prompts(policy), group_size=3, max_new_tokens=8, generator_seed=2)
    rows = torch.tensor([0, 2, 3, 5])
    grads = []
    for shared in (True, False):
        g = dataclasses.replace(GRPOConfig(), shared_prefix=shared)
        policy.model.zero_grad()
        logp = sequence_logprobs(policy, ro, rows, g, ro.mask[rows])
        (logp * ro.mask[rows]).sum().backward()
        grads.append(
            {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}
        )
        if shared:
            first = logp.detach()
        else:
            assert torch.allclose(logp.detach(), first, atol=1e-5)
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 0
    for name in grads[0]:
        assert torch.allclose(grads[0][name], grads[1][name], atol=1e-5, rtol=1e-4), name
