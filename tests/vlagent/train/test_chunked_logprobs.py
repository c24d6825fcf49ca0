"""Chunked LM-head log-probs (``grpo.logits_chunk``) equal the plain full-vocabulary path.

Same log-probs, entropies and gradients (fp32, ≤ 1e-5) on both training-forward paths (shared
prefix and full), for chunks of 1 token, a few tokens and more than the sequence, at a
temperature ≠ 1 with the sampler's forbidden ids; through ``sequence_logprobs`` and the
log-prob recompute; with a LoRA-wrapped policy; and for a head that is not a plain Linear.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.batching import policy_forbidden_ids
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.rollout.chunked import head_logprobs
from vlagent.rollout.engine import sample_turns
from vlagent.rollout.forward import row_logprobs
from vlagent.rollout.rows import build_rows
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.train.update import recompute_logprobs, sequence_logprobs

TEMP = 0.7
CHUNKS = [1, 3, 1000]  # one token, a few, more than all loss tokens


def _rows(policy, group=3, max_new=10, seed=1):
    """2 prompts × ``group`` sampled rows at TEMP, loss masks cut to different lengths."""
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 255, (224 + 56 * i, 280, 3), dtype=np.uint8) for i in range(2)]
    texts = ["Click the red circle.", "Tap the blue square near the top"]
    prompts = [encode_prompt(policy.processor, [im], t) for im, t in zip(imgs, texts, strict=True)]
    segs = [Segment(p) for p in prompts for _ in range(group)]
    outs = sample_turns(policy, segs, [max_new] * len(segs), seed=seed, temperature=TEMP)
    trajs = []
    for i, (seg, (ids, lps, hit)) in enumerate(zip(segs, outs, strict=True)):
        start, end = seg.append(ids, policy=True, logprobs=lps)
        turn = Turn(0, start, end, "", truncated=not hit)
        trajs.append(Trajectory(i, group_id=i // group, segments=[seg], turns=[turn]))
    rows = build_rows(trajs, None, policy.tokenizer.pad_token_id)
    mask = rows.mask.clone()
    for i in range(len(rows)):
        mask[i, 3 + i :] = 0  # 3 .. 8 loss tokens; later tokens still attended (valid)
    mask[1, 0] = 0  # a row whose first token carries no loss (the shared path's prefill token)
    return dataclasses.replace(rows, mask=mask)


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return load_policy(tiny_dir)


@pytest.fixture(scope="module")
def rows(policy):
    return _rows(policy)


def _logp(policy, rows, shared, chunk, temperature=TEMP):
    ents: list[torch.Tensor] = []
    lp = row_logprobs(
        policy.model,
        rows,
        policy.tokenizer.pad_token_id,
        temperature=temperature,
        forbidden=policy_forbidden_ids(policy),
        shared=shared,
        entropy_out=ents,
        logits_chunk=chunk,
    )
    return lp, ents[0] * rows.mask


def _grads(policy):
    return {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("shared", [True, False])
def test_chunked_logprobs_and_entropy_equal_the_plain_path(policy, rows, shared):
    with torch.no_grad():
        want, want_ent = _logp(policy, rows, shared, 0)
        assert torch.allclose(want, rows.old_logp * rows.mask, atol=1e-4)  # = the sampler's
        for chunk in CHUNKS:
            got, ent = _logp(policy, rows, shared, chunk)
            assert torch.allclose(got, want, atol=1e-5, rtol=0), chunk
            assert torch.allclose(ent, want_ent, atol=1e-5, rtol=0), chunk
            assert bool((got[rows.mask == 0] == 0).all())
    assert float(want_ent.sum()) > 0


def test_the_temperature_is_applied_as_the_sampler_applies_it(policy, rows):
    """At temperature 1 the log-probs differ from those at TEMP; each chunked value equals the
    plain one at its own temperature."""
    with torch.no_grad():
        hot, _ = _logp(policy, rows, True, 3, temperature=1.0)
        plain_hot, _ = _logp(policy, rows, True, 0, temperature=1.0)
        cold, _ = _logp(policy, rows, True, 3)
    assert torch.allclose(hot, plain_hot, atol=1e-5, rtol=0)
    assert float((hot - cold).abs().max()) > 1e-2


@pytest.mark.parametrize("shared", [True, False])
def test_chunked_gradients_equal_the_plain_path(policy, rows, shared):
    weights = torch.randn(rows.mask.shape, generator=torch.Generator().manual_seed(0))
    policy.model.train()
    results = []
    for chunk in [0, *CHUNKS]:
        policy.model.zero_grad(set_to_none=True)
        lp, _ = _logp(policy, rows, shared, chunk)
        (lp * weights * rows.mask).sum().backward()
        results.append((chunk, _grads(policy)))
    policy.model.zero_grad(set_to_none=True)
    (_, want), *others = results
    assert "lm_head.weight" in want or "model.language_model.embed_tokens.weight" in want
    assert len(want) > 10 and any(float(g.abs().max()) > 0 for g in want.values())
    for chunk, got in others:
        assert got.keys() == want.keys(), chunk
        for name in want:
            assert torch.allclose(got[name], want[name], atol=1e-5, rtol=1e-4), (chunk, name)


def test_the_knob_reaches_the_training_forward_and_the_recompute(policy, rows):
    plain, chunked = GRPOConfig(temperature=TEMP), GRPOConfig(temperature=TEMP, logits_chunk=4)
    with torch.no_grad():
        a = sequence_logprobs(policy, rows, plain)
        b = sequence_logprobs(policy, rows, chunked)
    assert torch.allclose(a, b, atol=1e-5, rtol=0)
    micro = dataclasses.replace(chunked, micro_batch_size=4)
    again = recompute_logprobs(policy, rows, micro)
    assert torch.allclose(again, a, atol=1e-5, rtol=0)


def test_chunked_with_gradient_checkpointing_same_gradients(tiny_dir, rows):
    """Gradient checkpointing (full path, checkpointed decoder layers) + chunked head = the
    plain forward without checkpointing."""
    out = []
    for ckpt, chunk in ((False, 0), (True, 5)):
        pol = load_policy(tiny_dir)
        if ckpt:
            pol.model.activation_checkpointing_enable()
        pol.model.train()
        g = GRPOConfig(temperature=TEMP, gradient_checkpointing=ckpt, logits_chunk=chunk)
        sequence_logprobs(pol, rows, g).sum().backward()
        out.append(_grads(pol))
    assert len(out[0]) > 0 and out[0].keys() == out[1].keys()
    for name in out[0]:
        assert torch.allclose(out[1][name], out[0][name], atol=1e-5, rtol=1e-4), name


def test_the_knob_is_validated():
    with pytest.raises(ConfigError, match="grpo.logits_chunk"):
        GRPOConfig(logits_chunk=-1)
    assert GRPOConfig().logits_chunk == 0  # default: today's path


def test_lora_policy_same_gradients(tiny_dir, rows):
    """PEFT hides the decoder one level deeper; the adapters still get the same gradients."""
    pytest.importorskip("peft")
    from vlagent.algo_config import LoRAConfig
    from vlagent.models.lora import wrap_lora

    pol = load_policy(tiny_dir)
    pol.model = wrap_lora(pol.model, LoRAConfig(enabled=True, r=4))
    pol.model.train()
    for p in pol.model.parameters():  # random adapters: B = 0 would leave A's gradient at 0
        if p.requires_grad:
            torch.nn.init.normal_(p, std=0.05, generator=torch.Generator().manual_seed(1))
    out = []
    for chunk in (0, 2):
        pol.model.zero_grad(set_to_none=True)
        lp, _ = _logp(pol, rows, True, chunk)
        lp.sum().backward()
        out.append(_grads(pol))
    assert len(out[0]) > 0 and out[0].keys() == out[1].keys()
    for name in out[0]:
        assert torch.allclose(out[1][name], out[0][name], atol=1e-5, rtol=1e-4), name


class _Wrapped(torch.nn.Module):
    """A head that is not a plain Linear (as a LoRA-wrapped lm_head is)."""

    def __init__(self, inner: torch.nn.Linear) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


@pytest.mark.parametrize("chunk", [1, 5, 64])
def test_head_logprobs_linear_and_other_heads_match_the_full_softmax(chunk):
    """A bigger fake vocabulary, forbidden ids (placeholders and a padded tail), a bias."""
    from vlagent.batching import ForbiddenIds

    gen = torch.Generator().manual_seed(0)
    v, h, m = 4000, 16, 23
    head = torch.nn.Linear(h, v, bias=True)
    with torch.no_grad():
        head.weight.normal_(generator=gen)
        head.bias.normal_(generator=gen)
    forbidden = ForbiddenIds([3, 17], tail=3900, end=v)
    ids = torch.randint(20, 3900, (m,), generator=gen)
    hidden = torch.randn(m, h, generator=gen, requires_grad=True)
    coef = torch.randn(m, generator=gen)

    z = torch.log_softmax(
        torch.where(
            torch.isin(torch.arange(v), torch.tensor(list(forbidden))),
            float("-inf"),
            head(hidden),
        )
        / TEMP,
        -1,
    )
    want = z.gather(-1, ids[:, None]).squeeze(-1)
    want_ent = -(z.exp() * torch.nan_to_num(z, neginf=0.0)).sum(-1)
    want_g = torch.autograd.grad((want * coef).sum(), [hidden, head.weight, head.bias])
    for module in (head, _Wrapped(head)):
        got, ent = head_logprobs(
            module, hidden, ids, temperature=TEMP, forbidden=forbidden, chunk=chunk
        )
        assert not ent.requires_grad
        assert torch.allclose(got, want, atol=1e-5, rtol=0)
        assert torch.allclose(ent, want_ent.detach(), atol=1e-5, rtol=0)
        got_g = torch.autograd.grad((got * coef).sum(), [hidden, head.weight, head.bias])
        for a, b in zip(got_g, want_g, strict=True):
            assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="chunk"):
        head_logprobs(head, hidden, ids, chunk=0)
