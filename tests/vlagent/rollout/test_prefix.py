"""Group prefix sharing (``rollout/prefix.py``) computes the same thing as the plain path.

The fast path encodes each group's image and prompt once and expands the KV cache to the G
completions. These tests pin it to the plain path (G copies of the prompt: HF ``generate`` when
sampling, a full forward per row when training) for every model family: same greedy tokens,
same log-probs, same gradients.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.batching import completion_logprobs, forbidden_token_ids, select_prompts
from vlagent.models.loading import load_policy
from vlagent.rollout.engine import sample_turns
from vlagent.rollout.forward import row_logprobs
from vlagent.rollout.prefix import completion_logprobs_shared
from vlagent.rollout.rows import batch_prompts, build_rows
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.train.update import sequence_logprobs

FAMILIES = ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"]


def _segments(policy, group, n=2, seed=3):
    """``group`` fresh segments per prompt (sharing its Prompt object)."""
    rng = np.random.default_rng(seed)
    # Different sizes -> different image-token counts -> left padding inside the prompt batch.
    imgs = [rng.integers(0, 255, (224 + 56 * i, 280, 3), dtype=np.uint8) for i in range(n)]
    texts = ["Click the red circle.", "Tap the blue square near the top"][:n]
    prompts = [encode_prompt(policy.processor, [im], t) for im, t in zip(imgs, texts, strict=True)]
    return [Segment(p) for p in prompts for _ in range(group)]


def _sample(policy, group, max_new, **kw):
    segs = _segments(policy, group)
    return segs, sample_turns(policy, segs, [max_new] * len(segs), **kw)


def _rows(policy, group, max_new, seed):
    segs, outs = _sample(policy, group, max_new, seed=seed)
    trajs = []
    for i, (seg, (ids, logps, hit)) in enumerate(zip(segs, outs, strict=True)):
        start, end = seg.append(ids, policy=True, logprobs=logps)
        turn = Turn(0, start, end, "", truncated=not hit)
        trajs.append(Trajectory(i, group_id=i // group, segments=[seg], turns=[turn]))
    return build_rows(trajs, None, policy.tokenizer.pad_token_id)


def _assert_same_turns(fast, plain):
    for (ids_f, lp_f, hit_f), (ids_p, lp_p, hit_p) in zip(fast, plain, strict=True):
        assert ids_f == ids_p and hit_f == hit_p
        assert torch.allclose(torch.tensor(lp_f), torch.tensor(lp_p), atol=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_prefix_equals_hf_generate(tiny_dirs, family):
    policy = load_policy(tiny_dirs[family])
    _, fast = _sample(policy, 3, 10, greedy=True, shared_prefix=True)
    _, plain = _sample(policy, 3, 10, greedy=True, shared_prefix=False)
    assert any(ids for ids, _, _ in fast)
    _assert_same_turns(fast, plain)


def test_prefix_sampling_with_lora_wrapped_model(tiny_dirs):
    """PEFT hides the inner model one level deeper; positions must still be right."""
    pytest.importorskip("peft")
    from vlagent.algo_config import LoRAConfig
    from vlagent.models.lora import wrap_lora

    policy = load_policy(tiny_dirs["qwen2_5_vl"])
    policy.model = wrap_lora(policy.model, LoRAConfig(enabled=True, r=4))
    _, fast = _sample(policy, 2, 10, greedy=True, shared_prefix=True)
    _, plain = _sample(policy, 2, 10, greedy=True, shared_prefix=False)
    _assert_same_turns(fast, plain)


@pytest.mark.parametrize("family", FAMILIES)
def test_shared_logprobs_equal_full_forward(tiny_dirs, family):
    policy = load_policy(tiny_dirs[family])
    rows = _rows(policy, 4, 12, seed=1)
    pad = policy.tokenizer.pad_token_id
    forbidden = forbidden_token_ids(policy.tokenizer)
    with torch.no_grad():
        full = completion_logprobs(
            policy.model,
            select_prompts(batch_prompts(rows.prompts, pad), rows.row_prompt),
            rows.ids,
            rows.mask,
            forbidden=forbidden,
        )
        shared = completion_logprobs_shared(
            policy.model,
            batch_prompts(rows.prompts, pad),
            rows.row_prompt,
            rows.ids,
            rows.mask,
            forbidden=forbidden,
            valid=rows.valid,
        )
        for path in (True, False):  # the training forward, both paths
            lp = row_logprobs(policy.model, rows, pad, forbidden=forbidden, shared=path)
            assert torch.allclose(lp, full, atol=1e-5), path
    assert rows.mask.sum() > 0 and len(rows.prompts) == 2
    assert torch.allclose(shared, full, atol=1e-5)
    assert torch.allclose(rows.old_logp, full, atol=1e-4)  # sampler = teacher forcing


def test_training_forward_same_loss_and_grads_both_paths(tiny_dirs):
    """``grpo.shared_prefix`` true vs false: same log-probs and same gradients (a selection of
    rows from two groups, so the shared path really de-duplicates prompts)."""
    policy = load_policy(tiny_dirs["qwen2_5_vl"])
    policy.model.train()
    rows = _rows(policy, 3, 8, seed=2).select([0, 2, 3, 5])
    assert len(rows.prompts) == 2
    grads = []
    for shared in (True, False):
        g = dataclasses.replace(GRPOConfig(), shared_prefix=shared)
        policy.model.zero_grad()
        logp = sequence_logprobs(policy, rows, g)
        (logp * rows.mask).sum().backward()
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


def test_sample_scores_follows_the_probabilities():
    """Two-level inverse-CDF sampling: frequencies match softmax (tolerance 5 standard errors
    over 40,000 draws) with blocks that split the vocabulary unevenly (a short last block),
    masked (-inf) ids — one a whole block — are never drawn, the last id can be drawn, the
    returned log-probs are log-softmax's, and one seed gives one sequence."""
    from vlagent.rollout.prefix import sample_scores

    probs = torch.tensor([0.5, 0.0, 0.2, 0.0, 0.0, 0.0, 0.1, 0.15, 0.05])  # block 1 all masked
    scores = (torch.log(probs) + 3.0).expand(40_000, -1).contiguous()  # softmax-invariant shift
    for block in (3, 4, 128):  # 3 blocks of 3; 2 of 4 + a last of 1; one block of 9
        tok, logp = sample_scores(scores.clone(), torch.Generator().manual_seed(0), block=block)
        freq = torch.bincount(tok, minlength=len(probs)).double() / len(tok)
        se = (probs.double() * (1 - probs.double()) / len(tok)).sqrt()
        assert torch.all((freq - probs.double()).abs() <= 5 * se + 1e-12), (block, freq)
        assert freq[[1, 3, 4, 5]].sum() == 0 and freq[8] > 0, block
        want = torch.log_softmax(scores[0], -1)[tok]
        assert torch.allclose(logp, want, atol=1e-6), block
    again = sample_scores(scores[:100].clone(), torch.Generator().manual_seed(3))[0]
    assert torch.equal(
        again, sample_scores(scores[:100].clone(), torch.Generator().manual_seed(3))[0]
    )
    # a vocabulary of Qwen's size: the drawn ids' log-probs are log-softmax's, computed in
    # float64 (float32 log_softmax itself is 3.8e-5 off here on an AVX2 AMD CPU; ours 2.3e-7)
    big = torch.randn(4, 151_936, generator=torch.Generator().manual_seed(1)) * 4
    tok, logp = sample_scores(big.clone(), torch.Generator().manual_seed(2))
    want = torch.log_softmax(big.double(), -1).gather(-1, tok[:, None])[:, 0]
    assert torch.allclose(logp.double(), want, atol=1e-5)
