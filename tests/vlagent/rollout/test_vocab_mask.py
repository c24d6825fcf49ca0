"""Ids past the tokenizer's vocabulary are never sampled and their rows never move.

Real checkpoints pad the embedding past the tokenizer (Qwen3-VL: 151,936 rows for 151,669
tokens). The tiny model's output size equals ``len(tokenizer)``, so these tests pad it by
``EXTRA`` rows whose weights are made large: unmasked, the sampler would pick one almost every
step.
"""

from __future__ import annotations

import pytest
import torch

from vlagent.batching import (
    ForbiddenIds,
    forbidden_token_ids,
    mask_logits,
    output_vocab_size,
    policy_forbidden_ids,
)
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import group_specs
from vlagent.train.sft import demonstrations, sft_loss
from vlagent.train.update import UpdateBatch, policy_update
from vlagent.worlds import make_world

EXTRA = 48
SMALL = [
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=8",
    "grpo.max_grad_norm=0",
    "eval.every=0",
    "eval.monitor_screens=0",
    "run.progress=false",
    "run.samples_every=0",
]


def _padded_policy(tiny_dir, scale: float = 50.0):
    """The tiny policy with ``EXTRA`` output rows past its tokenizer (random, std ``scale``:
    the default makes them outscore every real token)."""
    policy = load_policy(tiny_dir)
    n_tok = len(policy.tokenizer)
    assert output_vocab_size(policy.model) == n_tok  # the tiny model is not padded itself
    policy.model.resize_token_embeddings(n_tok + EXTRA, mean_resizing=False)
    with torch.no_grad():
        rows = policy.model.get_output_embeddings().weight
        gen = torch.Generator().manual_seed(0)
        rows[n_tok:] = scale * torch.randn(EXTRA, rows.shape[1], generator=gen)
    assert output_vocab_size(policy.model) == n_tok + EXTRA
    return policy, n_tok


def _rollout(policy, shared_prefix: bool):
    cfg = load_config(None, SMALL)
    world = make_world(cfg, policy)
    trajs = world.episodes(
        policy,
        "train",
        group_specs(world.task_ids("train", 0, 2), 4),
        8,
        seed=0,
        temperature=1.0,
        shared_prefix=shared_prefix,
    )
    return cfg, trajs


def test_forbidden_ids_cover_the_padding_and_mask_by_slice(tiny_dir):
    policy = load_policy(tiny_dir)
    tok = policy.tokenizer
    n_tok = len(tok)
    plain = forbidden_token_ids(tok)
    assert plain.tail is None and all(i < n_tok for i in plain)
    padded = forbidden_token_ids(tok, n_tok + EXTRA)
    assert isinstance(padded, ForbiddenIds) and padded.tail == n_tok
    assert list(padded) == [*plain, *range(n_tok, n_tok + EXTRA)]
    assert forbidden_token_ids(tok, n_tok).tail is None  # nothing past the tokenizer
    logits = torch.randn(3, 2, n_tok + EXTRA)
    masked = mask_logits(logits, padded)
    by_index = mask_logits(logits, list(padded))  # plain list: the index path
    assert torch.equal(masked, by_index)
    banned = torch.isinf(masked[0, 0]).nonzero().flatten().tolist()
    assert banned == list(padded)
    assert policy_forbidden_ids(policy) == plain  # the stock tiny model: placeholders only


@pytest.mark.parametrize("shared_prefix", [True, False], ids=["prefix", "generate"])
def test_sampling_never_emits_ids_past_the_tokenizer(tiny_dir, shared_prefix):
    policy, n_tok = _padded_policy(tiny_dir)
    _, trajs = _rollout(policy, shared_prefix)
    sampled = [
        i for t in trajs for s in t.segments for i, m in zip(s.ids, s.loss_mask, strict=True) if m
    ]
    assert len(sampled) >= 8
    assert max(sampled) < n_tok, "an id the tokenizer cannot decode was sampled"
    for t in trajs:
        for s in t.segments:
            assert all(lp > -1e30 for lp in s.logprobs)


def test_rows_past_the_tokenizer_get_no_update(tiny_dir):
    """One policy update (weight decay 0) moves the embedding / lm_head rows of real tokens and
    leaves the padded rows exactly as they were (their logits are -inf: zero gradient). The
    padded rows are ordinary-sized here, so an unmasked forward would give them gradient."""
    policy, n_tok = _padded_policy(tiny_dir, scale=0.05)
    cfg, trajs = _rollout(policy, True)
    adv = [[1.0], [-1.0], [0.5], [-0.5], [-1.0], [1.0], [0.3], [-0.3]]
    rows = build_rows(trajs, adv, policy.tokenizer.pad_token_id)
    assert rows.mask.sum() > 0
    head = policy.model.get_output_embeddings().weight
    embed = policy.model.get_input_embeddings().weight
    before_head, before_embed = head.detach().clone(), embed.detach().clone()
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-2, weight_decay=0.0)
    policy_update(policy, UpdateBatch(rows, rows.old_logp, rows.mask), cfg.grpo, opt, None, 0)
    assert not torch.equal(head[:n_tok], before_head[:n_tok])  # the update did move the head
    assert torch.equal(head[n_tok:], before_head[n_tok:])
    assert torch.equal(embed[n_tok:], before_embed[n_tok:])


def test_sft_loss_gives_no_gradient_past_the_tokenizer(tiny_dir):
    """The SFT forward masks like the sampler: the padded rows' gradient is exactly zero."""
    policy, n_tok = _padded_policy(tiny_dir, scale=0.05)
    world = make_world(load_config(None, SMALL), policy)
    trajs = demonstrations(policy, world, world.task_ids("demo", 0, 2))
    loss, tokens = sft_loss(policy, trajs)
    assert tokens > 0
    loss.backward()
    grad = policy.model.get_output_embeddings().weight.grad
    assert float(grad[:n_tok].abs().sum()) > 0
    assert torch.count_nonzero(grad[n_tok:]) == 0
