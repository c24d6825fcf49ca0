"""Skipping zero-advantage rows in ``policy_update`` changes nothing in the parameters.

Rows whose advantage is 0 on every loss token contribute no gradient when the loss has no KL
term, so their forward/backward is skipped while the normalizer still counts them. One update
with and without the skip must leave equal parameters (fp32, ≤ 1e-6), for every aggregation,
both losses, micro-batching and minibatches; a batch with nothing left runs no forward and still
steps the optimizer exactly as before (Adam's state and the next update are unchanged).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.models.loading import load_policy
from vlagent.rollout.engine import sample_turns
from vlagent.rollout.rows import RowBatch, build_rows
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.train.update import UpdateBatch, policy_update, zero_advantage_rows

GROUP = 3
# 3 groups of 3: group 0 all zero (equal rewards), group 1 varied with one zero row, group 2 zero
ADV = [0.0, 0.0, 0.0, 1.0, -0.5, 0.0, 0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def sampled(tiny_dir):
    """9 sampled rows (3 prompts × 3), loss masks of different lengths, old log-probs off the
    current policy's so ratios differ from 1 and clipping is exercised."""
    policy = load_policy(tiny_dir)
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 255, (224 + 28 * i, 280, 3), dtype=np.uint8) for i in range(3)]
    texts = ["Click the red circle.", "Tap the blue square", "Press the green star now"]
    prompts = [encode_prompt(policy.processor, [im], t) for im, t in zip(imgs, texts, strict=True)]
    segs = [Segment(p) for p in prompts for _ in range(GROUP)]
    outs = sample_turns(policy, segs, [8] * len(segs), seed=2)
    trajs = []
    for i, (seg, (ids, lps, hit)) in enumerate(zip(segs, outs, strict=True)):
        start, end = seg.append(ids, policy=True, logprobs=lps)
        turn = Turn(0, start, end, "", truncated=not hit)
        trajs.append(Trajectory(i, group_id=i // GROUP, segments=[seg], turns=[turn]))
    rows = build_rows(trajs, None, policy.tokenizer.pad_token_id)
    mask = rows.mask.clone()
    for i in range(len(rows)):
        mask[i, 2 + (i % 5) :] = 0
    noise = torch.randn(mask.shape, generator=torch.Generator().manual_seed(0))
    old = (rows.old_logp + 0.1 * noise) * mask
    return dataclasses.replace(rows, mask=mask, old_logp=old)


def _with_adv(rows: RowBatch, adv: list[float]) -> RowBatch:
    return dataclasses.replace(rows, advantages=torch.tensor(adv))


def _config(**kw) -> GRPOConfig:
    return GRPOConfig(prompts_per_step=3, group_size=GROUP, max_new_tokens=8, **kw)


def _train(tiny_dir, batches, g, skip, counter=None, adam=False):
    """Fresh policy; one policy_update per batch. Returns (weights, stats per update); with
    ``counter``, each stats dict also holds the rows the model forwarded so far.

    SGD (lr 1) moves each weight by the gradient itself, so any change of the gradient's
    normalizer shows (Adam and gradient clipping would hide a constant factor). Adam is for the
    optimizer-state test; its eps = 1e-3 because with eps = 1e-8 Adam's first step is
    lr·sign(g), which turns rounding-level gradient differences (~1e-8: the rows run in other
    batch shapes) on near-zero entries into lr-sized weight differences.
    """
    policy = load_policy(tiny_dir)
    if counter is not None:
        policy.model.register_forward_hook(
            lambda _m, _a, kw, _o: counter.append(int(kw["input_ids"].shape[0])), with_kwargs=True
        )
    params = policy.model.parameters()
    if adam:
        opt = torch.optim.AdamW(params, lr=1e-3, eps=1e-3, weight_decay=0.0)
    else:
        opt = torch.optim.SGD(params, lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
    stats = []
    for seed, rows in enumerate(batches):
        batch = UpdateBatch(rows, rows.old_logp, rows.mask)
        stats.append(policy_update(policy, batch, g, opt, sched, seed, skip_zero_adv=skip))
        if counter is not None:
            stats[-1]["forwards_so_far"] = float(sum(counter))
    weights = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    return weights, stats


def _assert_same(wa, wb, start=None):
    assert wa.keys() == wb.keys()
    for name in wa:
        assert torch.allclose(wa[name], wb[name], atol=1e-6, rtol=0), name
    if start is not None:  # the update moved weights, else equality says nothing
        assert any(float((wa[n] - start[n]).abs().max()) > 1e-4 for n in wa)


CASES = [
    dict(loss="ppo_clip", aggregation="token_mean"),
    dict(loss="ppo_clip", aggregation="seq_mean_token_sum_norm", micro_batch_size=2),
    dict(loss="gspo", aggregation="seq_mean_token_mean", clip_eps_low=0.2, clip_eps_high=0.2),
    dict(loss="ppo_clip", aggregation="seq_mean_token_mean", minibatches=3, dual_clip=3.0),
    dict(loss="ppo_clip", aggregation="token_mean", micro_batch_size=4, epochs=2),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_skipping_zero_advantage_rows_leaves_the_same_parameters(tiny_dir, sampled, case):
    g = _config(max_grad_norm=0.0, **case)
    rows = _with_adv(sampled, ADV)
    start = {n: p.detach().clone() for n, p in load_policy(tiny_dir).model.named_parameters()}
    runs = {}
    for skip in (False, True):
        calls: list[int] = []
        runs[skip] = (*_train(tiny_dir, [rows], g, skip, calls), sum(calls))
    (w0, (s0,), calls0), (w1, (s1,), calls1) = runs[False], runs[True]
    _assert_same(w1, w0, start)
    assert s1["rows_skipped_zero_adv"] == 7 and s0["rows_skipped_zero_adv"] == 0
    assert s1["update_skipped"] == 0 and s1["optimizer_steps"] == s0["optimizer_steps"]
    assert s1["loss"] == pytest.approx(s0["loss"], abs=1e-6)
    assert calls1 < calls0  # fewer rows forwarded


def test_a_batch_with_nothing_left_skips_the_forward_and_keeps_the_optimizer_exact(
    tiny_dir, sampled
):
    """All advantages 0 (every group's rewards equal): no forward at all, update_skipped = 1;
    the optimizer and LR schedule still step with zero gradients, so a following update on a
    mixed batch lands on the same weights as without the skip (Adam's step count matters)."""
    g = _config(minibatches=3)
    zero, mixed = _with_adv(sampled, [0.0] * 9), _with_adv(sampled, ADV)
    calls: list[int] = []
    w1, (s_zero, s_mixed) = _train(tiny_dir, [zero, mixed], g, True, calls, adam=True)
    w0, (ref_zero, _) = _train(tiny_dir, [zero, mixed], g, False, adam=True)
    _assert_same(w1, w0)
    assert s_zero["update_skipped"] == 1 and s_zero["rows_skipped_zero_adv"] == 9
    assert s_zero["optimizer_steps"] == 3 and s_zero["loss"] == ref_zero["loss"] == 0
    assert "entropy" not in s_zero and "entropy" in ref_zero  # nothing ran: nothing to average
    assert s_mixed["update_skipped"] == 0 and s_mixed["rows_skipped_zero_adv"] == 7
    assert s_zero["forwards_so_far"] == 0 and s_mixed["forwards_so_far"] > 0


def test_a_kl_term_in_the_loss_turns_the_skip_off(tiny_dir, sampled):
    """With β·KL in the loss, zero-advantage rows still have a gradient: nothing is skipped;
    with the KL folded into the reward they are skipped again."""
    rows = _with_adv(sampled, ADV)
    policy = load_policy(tiny_dir)
    opt = torch.optim.SGD(policy.model.parameters(), lr=0.0)
    ref = rows.old_logp + 0.05 * rows.mask
    batch = UpdateBatch(rows, rows.old_logp, rows.mask, ref_logp=ref)
    in_loss = policy_update(policy, batch, _config(kl_coef=0.1), opt, None, 0)
    assert in_loss["rows_skipped_zero_adv"] == 0 and in_loss["kl"] > 0
    in_reward = policy_update(policy, batch, _config(kl_coef=0.1, kl_in_reward=True), opt, None, 0)
    assert in_reward["rows_skipped_zero_adv"] == 7


def test_zero_advantage_rows_per_token_advantages():
    """Per-token advantages: a row is skipped only if every loss token's advantage is 0
    (advantages off the mask do not count)."""
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    adv = torch.tensor([[0.0, 0.0, 5.0], [0.0, 2.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, -1.0]])
    rows = RowBatch(
        prompts=[],
        row_prompt=torch.zeros(4, dtype=torch.long),
        ids=torch.zeros(4, 3, dtype=torch.long),
        mm=torch.zeros(4, 3, dtype=torch.long),
        valid=torch.ones(4, 3),
        mask=mask,
        old_logp=torch.zeros(4, 3),
        advantages=adv,
        group_ids=torch.zeros(4, dtype=torch.long),
        traj_index=torch.arange(4),
        segment_index=torch.zeros(4, dtype=torch.long),
        truncated=torch.zeros(4, dtype=torch.bool),
        images=[[] for _ in range(4)],
    )
    assert zero_advantage_rows(rows, mask).tolist() == [True, True, True, False]
    per_row = dataclasses.replace(rows, advantages=torch.tensor([0.0, 1.0, 0.0, -0.0]))
    assert zero_advantage_rows(per_row, mask).tolist() == [True, False, True, True]
