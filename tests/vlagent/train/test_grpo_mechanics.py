"""Optimization mechanics: accumulation invariance, old log-prob reuse, epochs, presets, KL,
gradient checkpointing, LoRA."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from vlagent.batching import forbidden_token_ids
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.forward import row_logprobs
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import group_specs
from vlagent.train.grpo import run_grpo
from vlagent.train.outputs import read_metrics
from vlagent.train.update import UpdateBatch, policy_update, recompute_logprobs
from vlagent.worlds import make_world

SMALL = [
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=20",
    "eval.every=0",
    "eval.monitor_screens=0",
    "run.progress=false",
    "run.samples_every=0",
]
ADV = [1.0, -1.0, 0.5, -0.5, -1.0, 1.0, 0.3, -0.3]


def _rollout(policy, seed=0, max_new_tokens=12):
    """8 grounding episodes (2 screens x 4) and their rows with advantages ADV."""
    cfg = load_config(None, SMALL)
    world = make_world(cfg, policy)
    trajs = world.episodes(
        policy,
        "train",
        group_specs(world.task_ids("train", 2 * seed, 2), 4),
        max_new_tokens,
        seed=seed,
    )
    return trajs, build_rows(trajs, [[a] for a in ADV], policy.tokenizer.pad_token_id)


def _grads(policy):
    return {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(
    "aggregation", ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"]
)
@pytest.mark.parametrize("loss", ["ppo_clip", "gspo"])
def test_micro_batching_gives_the_same_gradients(tiny_dir, aggregation, loss):
    """Each micro-batch's loss is weighted by its share of the minibatch's normalizer."""
    if loss == "gspo" and aggregation == "token_mean":
        pytest.skip("rejected at config load")
    base = load_policy(tiny_dir)
    _, rows = _rollout(base)
    # rows of different lengths (2 .. 9 loss tokens), so token and row shares differ
    mask = rows.mask.clone()
    for i in range(len(rows)):
        mask[i, 2 + i :] = 0
    # old log-probs shifted so ratios differ from 1 and clipping is exercised
    noise = torch.randn(mask.shape, generator=torch.Generator().manual_seed(0))
    old = rows.old_logp + 0.05 * noise * mask
    results = []
    for micro in (0, 1, 3):
        policy = load_policy(tiny_dir)
        cfg = load_config(
            None,
            [
                *SMALL,
                f"grpo.loss={loss}",
                f"grpo.aggregation={aggregation}",
                f"grpo.micro_batch_size={micro}",
                "grpo.max_grad_norm=0",
            ],
        )
        opt = torch.optim.SGD(policy.model.parameters(), lr=0.0)  # keeps the gradients only
        stats = policy_update(policy, UpdateBatch(rows, old, mask), cfg.grpo, opt, None, 0)
        results.append((stats["loss"], _grads(policy)))
    (loss0, g0), *others = results
    assert len(g0) > 0 and any(float(v.abs().max()) > 0 for v in g0.values())
    for loss_m, g_m in others:
        assert loss_m == pytest.approx(loss0, abs=1e-6)
        assert g_m.keys() == g0.keys()
        for name in g0:
            assert torch.allclose(g_m[name], g0[name], atol=1e-6, rtol=1e-4), name


def test_recomputed_old_logprobs_match_sampler_when_policy_has_not_moved(tiny_dir):
    policy = load_policy(tiny_dir)
    _, rows = _rollout(policy, seed=3)
    cfg = load_config(None, [*SMALL, "grpo.recompute_old_logprobs=true", "grpo.micro_batch_size=3"])
    again = recompute_logprobs(policy, rows, cfg.grpo)
    assert rows.mask.sum() > 0
    assert torch.allclose(again, rows.old_logp, atol=1e-4)


def test_epochs_and_minibatches_count_optimizer_steps(tiny_dir):
    policy = load_policy(tiny_dir)
    _, rows = _rollout(policy)
    cfg = load_config(None, [*SMALL, "grpo.epochs=2", "grpo.minibatches=2"])
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    stats = policy_update(
        policy, UpdateBatch(rows, rows.old_logp, rows.mask), cfg.grpo, opt, sched, 0
    )
    assert stats["optimizer_steps"] == 4
    assert sched.last_epoch == 4
    assert stats["entropy"] > 0


def test_entropy_is_the_mean_over_the_loss_mask(tiny_dir):
    """The logged entropy averages over the tokens that carry loss (e.g. without the rows
    overlong filtering removed), not over every sampled token."""
    policy = load_policy(tiny_dir)
    _, rows = _rollout(policy)
    mask = rows.mask.clone()
    mask[::2] = 0  # half the rows filtered out
    mask[1, 4:] = 0
    ents: list[torch.Tensor] = []
    with torch.no_grad():
        row_logprobs(
            policy.model,
            rows,
            policy.tokenizer.pad_token_id,
            forbidden=forbidden_token_ids(policy.tokenizer),
            entropy_out=ents,
        )
    want = float((ents[0] * mask).sum() / mask.sum())
    cfg = load_config(None, [*SMALL, "grpo.micro_batch_size=3"])
    opt = torch.optim.SGD(policy.model.parameters(), lr=0.0)
    stats = policy_update(policy, UpdateBatch(rows, rows.old_logp, mask), cfg.grpo, opt, None, 0)
    assert stats["entropy"] == pytest.approx(want, rel=1e-4)


def test_gradient_checkpointing_same_loss_and_gradients(tiny_dir):
    """Checkpointed forward (full path, no KV cache) = plain forward: same loss and gradients,
    before and after an update (two SGD steps on one batch: the second loss and gradients are
    those of the updated weights), and the same weights at the end."""
    _, rows = _rollout(load_policy(tiny_dir))
    cfg = load_config(None, [*SMALL, "grpo.max_grad_norm=0"])
    out = []
    for ckpt in (False, True):
        policy = load_policy(tiny_dir)
        if ckpt:
            policy.model.activation_checkpointing_enable()
        g = dataclasses.replace(cfg.grpo, gradient_checkpointing=ckpt)
        opt = torch.optim.SGD(policy.model.parameters(), lr=1e-2)
        batch = UpdateBatch(rows, rows.old_logp, rows.mask)
        losses = [policy_update(policy, batch, g, opt, None, 0)["loss"] for _ in range(2)]
        engaged = any(getattr(m, "gradient_checkpointing", False) for m in policy.model.modules())
        assert engaged == ckpt
        weights = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
        out.append((losses, _grads(policy), weights))
    (loss_a, ga, wa), (loss_b, gb, wb) = out
    assert abs(loss_a[1] - loss_a[0]) > 1e-4  # the first step moved the weights
    assert loss_a == pytest.approx(loss_b, abs=1e-6)
    assert len(ga) > 0 and ga.keys() == gb.keys()
    for name in ga:  # gradients of the second step, at the updated weights
        assert torch.allclose(ga[name], gb[name], atol=1e-6, rtol=1e-4), name
    for name in wa:
        assert torch.allclose(wa[name], wb[name], atol=1e-6), name


KL_ESTIMATES = {  # d = log pi_old - log pi_ref per token (docs/ALGORITHMS.md)
    "k1": lambda d: d,
    "k2": lambda d: 0.5 * d * d,
    "k3": lambda d: torch.exp(-d) + d - 1,
}


@pytest.mark.parametrize("estimator", list(KL_ESTIMATES))
def test_kl_in_reward_lowers_each_episode_reward_by_beta_kl(tiny_dir, monkeypatch, estimator):
    """With β > 0 and kl_in_reward, the rewards credit sees are the env rewards minus
    β · Σ_t k(π_old, π_ref) of each episode (computed here from the reference's log-probs),
    with the configured estimator. A masked and a crashed episode come first, so row r is not
    episode r: each row's KL must reach its own episode."""
    import vlagent.train.grpo as grpo
    from vlagent.train.common import Timer
    from vlagent.train.credit import episode_rewards

    policy = load_policy(tiny_dir)
    reference = load_policy(tiny_dir).model.eval()
    with torch.no_grad():  # a reference the policy has drifted from
        gen = torch.Generator().manual_seed(0)
        for p in reference.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen))
    beta = 0.5
    cfg = load_config(
        None,
        [
            *SMALL,
            f"grpo.kl_coef={beta}",
            "grpo.kl_in_reward=true",
            f"grpo.kl_estimator={estimator}",
        ],
    )
    trajs, _ = _rollout(policy)
    trajs[0].mask_out()
    trajs[1].error, trajs[1].status = "step 0: RuntimeError: device gone", "error"
    valid = [i for i, t in enumerate(trajs) if not t.masked and t.error is None]
    rows = build_rows(trajs, None, policy.tokenizer.pad_token_id)  # one row per valid episode
    env_rewards = episode_rewards(trajs)
    seen = []
    real = grpo.turn_advantages

    def spy(trajs, g, rewards=None):
        seen.append(rewards.clone())
        return real(trajs, g, rewards)

    monkeypatch.setattr(grpo, "turn_advantages", spy)
    opt = torch.optim.SGD(policy.model.parameters(), lr=0.0)
    out = grpo.train_step(policy, trajs, cfg.grpo, opt, None, reference, 0, Timer())
    (folded,) = seen
    with torch.no_grad():
        ref = row_logprobs(
            reference,
            rows,
            policy.tokenizer.pad_token_id,
            temperature=cfg.grpo.temperature,
            forbidden=forbidden_token_ids(policy.tokenizer),
        )
    d = (rows.old_logp - ref) * rows.mask
    kl = (KL_ESTIMATES[estimator](d) * rows.mask).sum(dim=1)  # [valid episodes]
    want = env_rewards.clone()
    want[valid] -= beta * kl
    assert (kl.abs() > 1e-3).all()
    assert torch.isnan(folded[:2]).all() and torch.isnan(env_rewards[:2]).all()
    assert torch.allclose(folded[valid], want[valid], atol=1e-4, rtol=1e-4)
    assert out["kl_in_reward"] == pytest.approx(beta * float(kl.mean()), rel=1e-4)
    assert "kl" not in out  # the KL is in the reward, not in the loss
    assert out["adv_abs_mean"] > 0  # equal env rewards, yet the KL made advantages


def _run(tmp_path, tiny_dir, name, extra, steps=2):
    cfg = load_config(
        None,
        [
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={tmp_path / name}",
            f"grpo.steps={steps}",
            *SMALL,
            *extra,
        ],
    )
    return cfg, run_grpo(cfg)


@pytest.mark.parametrize("algo", ["grpo", "dr_grpo", "dapo", "gspo", "rloo", "reinforce_pp"])
def test_every_preset_trains(tmp_path, sft_dir, algo):
    cfg, result = _run(tmp_path, sft_dir, algo, [f"algo={algo}"])
    assert result.steps == 2
    rows = read_metrics(tmp_path / algo / "metrics.jsonl", "grpo")
    assert len(rows) == 2
    if algo == "dapo":
        assert cfg.grpo.clip_eps_high == 0.28 and cfg.grpo.dynamic_sampling
        assert all("dynamic_sampling/fraction_dropped" in r for r in rows)
    trained = [r for r in rows if r.get("loss") is not None]
    assert trained, "no step had rows to train on"
    for r in trained:
        assert np.isfinite(r["loss"]) and r["optimizer_steps"] >= 1


def test_kl_zero_loads_no_reference(tmp_path, tiny_dir, monkeypatch):
    import vlagent.models.loading as loading

    calls = []
    real = loading.load_policy

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(loading, "load_policy", counting)
    monkeypatch.setattr("vlagent.train.common.load_policy", counting)
    _run(tmp_path, tiny_dir, "nokl", ["grpo.kl_coef=0"])
    assert len(calls) == 1
    calls.clear()
    _, _ = _run(tmp_path, tiny_dir, "kl", ["grpo.kl_coef=0.05"])
    assert len(calls) == 2  # policy + frozen reference
    rows = read_metrics(tmp_path / "kl" / "metrics.jsonl", "grpo")
    trained = [r for r in rows if r.get("loss") is not None]
    assert trained and all("kl" in r for r in trained)


def test_kl_in_reward_changes_rewards_not_loss_terms(tmp_path, sft_dir, monkeypatch):
    """A run with ``grpo.kl_in_reward=true``: credit sees the env rewards minus β·KL to the
    starting policy (≈ 0 at step 1, where the policy is the reference; then > 0 for every
    episode with k3), the logged ``kl_in_reward`` is that penalty's mean, and no KL term
    enters the loss."""
    import vlagent.train.grpo as grpo
    from vlagent.train.credit import episode_rewards

    seen = []
    real = grpo.turn_advantages

    def spy(trajs, g, rewards=None):
        seen.append((episode_rewards(trajs), rewards.clone()))
        return real(trajs, g, rewards)

    monkeypatch.setattr(grpo, "turn_advantages", spy)
    beta = 2.0
    extra = [f"grpo.kl_coef={beta}", "grpo.kl_in_reward=true", "grpo.kl_estimator=k3"]
    _run(tmp_path, sft_dir, "klr", [*extra, "grpo.lr=1e-3"], steps=2)
    rows = read_metrics(tmp_path / "klr" / "metrics.jsonl", "grpo")
    assert len(rows) == len(seen) == 2
    assert all("kl" not in r for r in rows)  # nothing in the loss
    (env1, folded1), (env2, folded2) = seen
    assert torch.isfinite(env1).all() and torch.isfinite(env2).all()
    assert torch.allclose(folded1, env1, atol=1e-4)  # step 1: the policy is the reference
    assert (folded2 < env2 - 1e-4).all()  # step 2: every episode pays for the drift
    for r, (env, folded) in zip(rows, seen, strict=True):
        assert r["kl_in_reward"] == pytest.approx(float((env - folded).mean()), abs=1e-6)
    assert rows[1]["kl_in_reward"] > 1e-4


def test_gradient_checkpointing_same_loss_in_a_run(tmp_path, sft_dir):
    """Two steps from the SFT model (rewards vary, so step 1 moves the weights): step 2's
    rollouts, loss and gradient norm come from the updated weights, and the final weights are
    the same with and without checkpointing."""
    _, plain = _run(tmp_path, sft_dir, "plain", ["grpo.lr=1e-3"], steps=2)
    _, ckpt = _run(
        tmp_path, sft_dir, "ckpt", ["grpo.lr=1e-3", "grpo.gradient_checkpointing=true"], steps=2
    )
    a = read_metrics(tmp_path / "plain" / "metrics.jsonl", "grpo")
    b = read_metrics(tmp_path / "ckpt" / "metrics.jsonl", "grpo")
    assert [r["step"] for r in a] == [r["step"] for r in b] == [1, 2]
    assert a[0]["adv_abs_mean"] > 0  # step 1 had a signal: step 2 runs on updated weights
    for ra, rb in zip(a, b, strict=True):
        assert ra["reward/mean"] == pytest.approx(rb["reward/mean"], abs=1e-6)
        assert ra["loss"] == pytest.approx(rb["loss"], abs=1e-5)
        assert ra["grad_norm"] == pytest.approx(rb["grad_norm"], rel=1e-4)
    start = load_policy(sft_dir).model.state_dict()
    wa = load_policy(plain.final_dir).model.state_dict()
    wb = load_policy(ckpt.final_dir).model.state_dict()
    # AdamW's first steps move each weight by about lr whatever its gradient's size, so a few
    # weights with near-zero gradients differ by float noise; compare each tensor on average
    for k in start:
        step = float((wa[k] - start[k]).abs().mean())
        assert step > 1e-4, k  # every tensor moved (no weight decay: only gradients move it)
        assert float((wa[k] - wb[k]).abs().mean()) < 0.01 * step, k


def test_lora_trains_adapters_only_and_final_is_a_normal_checkpoint(tmp_path, sft_dir):
    cfg, result = _run(
        tmp_path, sft_dir, "lora", ["model.lora.enabled=true", "model.lora.r=4", "grpo.lr=1e-2"]
    )
    rows = read_metrics(tmp_path / "lora" / "metrics.jsonl", "grpo")
    assert any(r["reward/std"] > 0 for r in rows), "no learning signal: rewards constant"
    base = load_policy(sft_dir).model.state_dict()
    merged = load_policy(result.final_dir)  # plain transformers checkpoint, no PEFT needed
    sd = merged.model.state_dict()
    assert set(sd) == set(base)
    vision_same = all(
        torch.equal(sd[k], base[k]) for k in sd if ".visual." in k or k.startswith("model.visual")
    )
    lm_changed = [
        k
        for k in sd
        if "language_model" in k and k.endswith("q_proj.weight") and not torch.equal(sd[k], base[k])
    ]
    assert vision_same, "vision tower must stay frozen when model.lora.train_vision=false"
    assert lm_changed, "merged LoRA deltas must change the targeted language-model weights"
    assert (
        tmp_path / "lora" / "checkpoints" / "grpo" / "step_000002" / "adapter_config.json"
    ).is_file()


def test_lora_resume_equals_uninterrupted(tmp_path, sft_dir):
    extra = ["model.lora.enabled=true", "model.lora.r=4", "grpo.lr=1e-2", "run.checkpoint_every=2"]
    _run(tmp_path, sft_dir, "straight", extra, steps=4)
    _run(tmp_path, sft_dir, "resumed", extra, steps=2)
    _run(tmp_path, sft_dir, "resumed", extra, steps=4)
    a = read_metrics(tmp_path / "straight" / "metrics.jsonl", "grpo")
    b = read_metrics(tmp_path / "resumed" / "metrics.jsonl", "grpo")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for ra, rb in zip(a, b, strict=True):
        assert ra["loss"] == pytest.approx(rb["loss"], abs=1e-5)
        assert ra["reward/mean"] == pytest.approx(rb["reward/mean"], abs=1e-6)
