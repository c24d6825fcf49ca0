"""The update's reuse of the sampler's prefill (``rollout/prefill_stash.py``) is exact or absent.

Against the same rows trained without a stash: equal log-probs and gradients (vision tower
included) through both training paths, with each group split over two micro-batches; a stash
is not read after the weights move, under no-grad, or by another model; one optimizer step of
``policy_update`` lands on the same weights; the GRPO loop turns it on only where it applies and
logs how many prompts it served.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.engine import sample_turns
from vlagent.rollout.prefill_stash import has_dropout, stash_prefills
from vlagent.rollout.rows import build_rows
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.train.grpo import prefill_reuse_applies, run_grpo
from vlagent.train.outputs import read_metrics
from vlagent.train.update import UpdateBatch, policy_update, sequence_logprobs

GROUP = 3
MICRO = ([0, 1, 3], [2, 4, 5])  # each prompt's rows split over both micro-batches


def _segments(policy, seed=3):
    """GROUP fresh segments for each of 2 prompts of different widths (left padding)."""
    rng = np.random.default_rng(seed)
    imgs = [rng.integers(0, 255, (224 + 56 * i, 280, 3), dtype=np.uint8) for i in range(2)]
    texts = ["Click the red circle.", "Tap the blue square near the top"]
    prompts = [encode_prompt(policy.processor, [im], t) for im, t in zip(imgs, texts, strict=True)]
    return [Segment(p) for p in prompts for _ in range(GROUP)]


def _rows(policy, segs, outs):
    trajs = []
    for i, (seg, (ids, logps, hit)) in enumerate(zip(segs, outs, strict=True)):
        start, end = seg.append(ids, policy=True, logprobs=logps)
        turn = Turn(0, start, end, "", truncated=not hit)
        trajs.append(Trajectory(i, group_id=i // GROUP, segments=[seg], turns=[turn]))
    return build_rows(trajs, None, policy.tokenizer.pad_token_id)


def _sample(policy, segs, calls=1):
    """Sample in ``calls`` sampler calls (one per prompt when 2: each its own width)."""
    size = len(segs) // calls
    return [
        out
        for i in range(0, len(segs), size)
        for out in sample_turns(policy, segs[i : i + size], [8] * size, seed=i, temperature=1.0)
    ]


def _train_pass(policy, rows, g, weights):
    """Both micro-batches' backward of sum(logp · weights); returns the log-probs [N, T]."""
    policy.model.train()
    policy.model.zero_grad(set_to_none=True)
    out = torch.zeros_like(weights)
    for micro in MICRO:
        lp = sequence_logprobs(policy, rows.select(micro), g)
        (lp * weights[micro]).sum().backward()
        out[micro] = lp.detach()
    return out


def _grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _assert_same(a, b, atol=1e-5):
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k], b[k], atol=atol, rtol=1e-4), (k, (a[k] - b[k]).abs().max())


@pytest.mark.parametrize(
    ("family", "chunk", "calls"),
    [("qwen2_5_vl", 0, 1), ("qwen3_vl", 0, 1), ("qwen3_vl", 5, 1), ("qwen3_vl", 0, 2)],
)
def test_stashed_prefill_gives_the_same_logprobs_and_gradients(tiny_dirs, family, chunk, calls):
    """calls=2: the prompts' stashed prefills have different widths (left-padded in the update)."""
    policy = load_policy(tiny_dirs[family])
    g = GRPOConfig(logits_chunk=chunk)
    segs = _segments(policy)
    with stash_prefills(policy.model) as stash:
        rows = _rows(policy, segs, _sample(policy, segs, calls))
        weights = torch.randn(rows.mask.shape, generator=torch.Generator().manual_seed(1))
        fast_lp = _train_pass(policy, rows, g, weights)
        assert stash.served == 2  # one lookup per micro-batch
        assert stash.backward() == 2  # both prompts' prefills reused
    fast = _grads(policy.model)
    plain_lp = _train_pass(policy, rows, g, weights)  # no stash: a prefill per micro-batch
    plain = _grads(policy.model)
    assert torch.allclose(fast_lp, plain_lp, atol=1e-5)
    assert any("visual" in k and v.abs().sum() > 0 for k, v in fast.items())  # through vision
    _assert_same(fast, plain)


def test_no_reuse_after_the_weights_move_or_without_grad_or_for_another_model(tiny_dirs):
    policy = load_policy(tiny_dirs["qwen2_5_vl"])
    other = load_policy(tiny_dirs["qwen2_5_vl"])
    g = GRPOConfig()
    segs = _segments(policy)
    with stash_prefills(policy.model) as stash:
        rows = _rows(policy, segs, _sample(policy, segs))
        with torch.no_grad():
            sequence_logprobs(policy, rows, g)  # e.g. reference / recomputed log-probs
        sequence_logprobs(other, rows, g)  # another model (a frozen reference copy)
        assert stash.served == 0
        with torch.no_grad():
            next(p for p in policy.model.parameters() if p.requires_grad).add_(0.0)  # a step
        weights = torch.ones(rows.mask.shape)
        _train_pass(policy, rows, g, weights)
        assert stash.served == 0 and stash.backward() == 0
    moved = _grads(policy.model)
    _train_pass(policy, rows, g, weights)
    _assert_same(moved, _grads(policy.model), atol=0.0)


def test_one_policy_update_lands_on_the_same_weights(tiny_dirs):
    a = load_policy(tiny_dirs["qwen3_vl"])
    b = load_policy(tiny_dirs["qwen3_vl"])
    g = GRPOConfig(micro_batch_size=3, lr=0.05, max_grad_norm=0.0)
    adv = torch.tensor([1.0, -0.5, -0.5, 0.8, -0.2, -0.6])

    def update(policy, stash_on):
        opt = torch.optim.SGD(policy.model.parameters(), lr=g.lr)
        with stash_prefills(policy.model) if stash_on else contextlib.nullcontext():
            segs = _segments(policy)  # fresh: sampling appends to them
            rows = _rows(policy, segs, _sample(policy, segs))
            rows = dataclasses.replace(rows, advantages=adv)
            out = policy_update(
                policy, UpdateBatch(rows, rows.old_logp, rows.mask), g, opt, None, 0
            )
        return out

    fast, plain = update(a, True), update(b, False)
    assert fast["prefill_reused"] == 2 and plain["prefill_reused"] == 0
    assert fast["loss"] == pytest.approx(plain["loss"], abs=1e-6)
    pa, pb = a.model.state_dict(), b.model.state_dict()
    start = load_policy(tiny_dirs["qwen3_vl"]).model.state_dict()
    assert any(not torch.equal(pa[k], start[k]) for k in start)  # the step moved the weights
    for k in pa:
        assert torch.allclose(pa[k], pb[k], atol=1e-6), k


def _cfg(*extra):
    return load_config(None, ["recipe=grpo", *extra])


def test_reuse_applies_only_where_it_is_exact(tiny_dirs):
    policy = load_policy(tiny_dirs["qwen3_vl"])
    model = policy.model
    assert not has_dropout(model)
    ok = dict(max_turns=1, one_process=True, sampler_is_learner=True)
    assert prefill_reuse_applies(_cfg(), model, **ok)
    for override in (
        "grpo.reuse_prefill=false",
        "grpo.shared_prefix=false",
        "grpo.dynamic_sampling=true",
        "grpo.gradient_checkpointing=true",
    ):
        assert not prefill_reuse_applies(_cfg(override), model, **ok), override
    for name in ok:  # a multi-turn world, torchrun / vLLM / rollout ahead, a sharded learner
        assert not prefill_reuse_applies(
            _cfg(), model, **{**ok, name: 3 if name == "max_turns" else False}
        )
    model.config.text_config.attention_dropout = 0.1  # functional dropout, read from config
    assert has_dropout(model) and not prefill_reuse_applies(_cfg(), model, **ok)
    model.config.text_config.attention_dropout = 0.0
    model.extra_dropout = torch.nn.Dropout(0.2)  # a dropout module (e.g. LoRA's)
    assert has_dropout(model)


SMALL = [
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=24",  # room for a whole answer: rewards differ
    "eval.every=0",
    "eval.monitor_screens=8",
    "run.progress=false",
    "run.samples_every=0",
    "run.checkpoint_every=0",
]


def test_grpo_loop_reuses_prefills_and_trains_the_same(tmp_path, sft_dir):
    """Two steps with and without the stash: the same rewards and losses, the same weights, and
    the metrics say which run reused prefills."""
    results = {}
    for reuse in ("true", "false"):
        cfg = load_config(
            None,
            [
                f"model.path={sft_dir}",
                "model.build_tiny=false",
                f"run.out_dir={tmp_path / reuse}",
                "grpo.steps=2",
                f"grpo.reuse_prefill={reuse}",
                *SMALL,
            ],
        )
        results[reuse] = (run_grpo(cfg), read_metrics(tmp_path / reuse / "metrics.jsonl", "grpo"))
    (on, rows_on), (off, rows_off) = results["true"], results["false"]
    assert [r["prefill_reused"] for r in rows_off] == [0.0, 0.0]
    for a, b in zip(rows_on, rows_off, strict=True):
        assert a["reward/mean"] == pytest.approx(b["reward/mean"], abs=1e-6)
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-5)
        assert 0 <= a["prefill_reused"] <= 2  # prompts with a row that ran
    assert sum(r["prefill_reused"] for r in rows_on) > 0
    pa = load_policy(on.final_dir).model.state_dict()
    pb = load_policy(off.final_dir).model.state_dict()
    for k in pa:
        assert torch.allclose(pa[k], pb[k], atol=1e-5), k
