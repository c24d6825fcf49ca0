"""Optimization mechanics: accumulation invariance, old log-prob reuse, epochs, presets, KL, LoRA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vlagent.batching import encode_prompts
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.hf import generate
from vlagent.train.grpo import run_grpo
from vlagent.train.grpo_update import UpdateBatch, policy_update, recompute_logprobs
from vlagent.train.outputs import read_metrics

SMALL = [
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=20",
    "eval.every=0",
    "eval.monitor_screens=0",
    "run.progress=false",
    "run.samples_every=0",
]


def _rollout(policy, seed=0):
    imgs = [
        np.random.default_rng(i + seed).integers(0, 255, (224, 224, 3), dtype=np.uint8)
        for i in range(2)
    ]
    prompts = encode_prompts(
        policy.processor, imgs, ["Click the red circle.", "Click the blue square."]
    )
    return generate(policy, prompts, group_size=4, max_new_tokens=12, generator_seed=seed)


ADV = torch.tensor([1.0, -1.0, 0.5, -0.5, -1.0, 1.0, 0.3, -0.3])


@pytest.mark.parametrize(
    "aggregation", ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"]
)
@pytest.mark.parametrize("loss", ["ppo_clip", "gspo"])
def test_micro_batching_gives_the_same_update(tiny_dir, aggregation, loss):
    if loss == "gspo" and aggregation == "token_mean":
        pytest.skip("rejected at config load")
    base = load_policy(tiny_dir)
    ro = _rollout(base)
    results = []
    for micro in (0, 3):
        policy = load_policy(tiny_dir)
        cfg = load_config(
            None,
            [
                *SMALL,
                f"grpo.loss={loss}",
                f"grpo.aggregation={aggregation}",
                f"grpo.micro_batch_size={micro}",
            ],
        )
        opt = torch.optim.SGD(policy.model.parameters(), lr=1.0)
        # old log-probs shifted so ratios differ from 1 and clipping is exercised
        old = (
            ro.behaviour_logprobs
            + 0.05
            * torch.randn(ro.mask.shape, generator=torch.Generator().manual_seed(0))
            * ro.mask
        )
        policy_update(
            policy, UpdateBatch(ro, ADV, old, ro.mask, None), cfg.grpo, opt, None, shuffle_seed=0
        )
        results.append({n: p.detach().clone() for n, p in policy.model.named_parameters()})
    for name in results[0]:
        assert torch.allclose(results[0][name], results[1][name], atol=1e-5), name


def test_recomputed_old_logprobs_match_sampler_when_policy_has_not_moved(tiny_dir):
    policy = load_policy(tiny_dir)
    ro = _rollout(policy, seed=3)
    cfg = load_config(None, [*SMALL, "grpo.recompute_old_logprobs=true"])
    again = recompute_logprobs(policy, ro, cfg.grpo, micro=3)
    assert torch.allclose(again, ro.behaviour_logprobs, atol=1e-4)


def test_epochs_and_minibatches_count_optimizer_steps(tiny_dir):
    policy = load_policy(tiny_dir)
    ro = _rollout(policy)
    cfg = load_config(None, [*SMALL, "grpo.epochs=2", "grpo.minibatches=2"])
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    stats = policy_update(
        policy, UpdateBatch(ro, ADV, ro.behaviour_logprobs, ro.mask, None), cfg.grpo, opt, sched, 0
    )
    assert stats["optimizer_steps"] == 4
    assert sched.last_epoch == 4
    assert stats["entropy"] > 0


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
    trained = [r for r in rows if r["rows"] > 0]
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
    assert all("kl" in r for r in rows if r["rows"] > 0)


def test_kl_in_reward_changes_rewards_not_loss_terms(tmp_path, tiny_dir):
    _run(
        tmp_path,
        tiny_dir,
        "klr",
        ["grpo.kl_coef=0.5", "grpo.kl_in_reward=true", "grpo.kl_estimator=k1"],
    )
    rows = read_metrics(tmp_path / "klr" / "metrics.jsonl", "grpo")
    assert all("kl" not in r for r in rows)


def test_gradient_checkpointing_same_loss(tmp_path, tiny_dir):
    _run(tmp_path, tiny_dir, "plain", [], steps=1)
    _run(tmp_path, tiny_dir, "ckpt", ["grpo.gradient_checkpointing=true"], steps=1)
    a = read_metrics(tmp_path / "plain" / "metrics.jsonl")[0]
    b = read_metrics(tmp_path / "ckpt" / "metrics.jsonl")[0]
    assert a["loss"] == pytest.approx(b["loss"], abs=1e-6)


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
