"""Config sections of the policy-optimization family: the ``grpo`` knobs, presets, and LoRA.

One surface selects every method in ``docs/ALGORITHMS.md``. A preset (``algo=dapo``) is a layer
of ``grpo.*`` values applied on top of the defaults and *under* the user's own YAML and
overrides, so ``algo=dapo grpo.clip_eps_high=0.3`` is DAPO with a different clip.
Combinations that make no sense fail at config load with a message naming the fields.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vlagent.errors import ConfigError

ADVANTAGES = ("grpo", "dr_grpo", "rloo", "reinforce_pp")
LOSSES = ("ppo_clip", "gspo")
AGGREGATIONS = ("token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm")
KL_ESTIMATORS = ("k1", "k2", "k3")
SCHEDULES = ("constant", "linear", "cosine")

# Each preset is a layer of grpo.* values (docs/ALGORITHMS.md has the sources).
PRESETS: dict[str, dict[str, Any]] = {
    "grpo": {},
    "dr_grpo": {
        "advantage": "dr_grpo",
        "scale_by_std": False,
        "aggregation": "seq_mean_token_sum_norm",
    },
    "dapo": {
        "clip_eps_low": 0.2,
        "clip_eps_high": 0.28,
        "dynamic_sampling": True,
        "aggregation": "token_mean",
        "kl_coef": 0.0,
        "mask_truncated": True,
    },
    "gspo": {
        "loss": "gspo",
        "clip_eps_low": 3e-4,
        "clip_eps_high": 4e-4,
        "aggregation": "seq_mean_token_mean",
    },
    "rloo": {"advantage": "rloo"},
    "reinforce_pp": {"advantage": "reinforce_pp", "reinforce_group_baseline": True},
}


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{field}: {msg}")


def _one_of(value: str, field: str, allowed: tuple[str, ...]) -> None:
    _check(value in allowed, field, f"{value!r} is unknown; use one of {', '.join(allowed)}")


@dataclasses.dataclass
class GRPOConfig:
    """Group-relative policy optimization: sampling, advantages, loss, optimization."""

    steps: int = 200
    """Rollout + update iterations."""
    max_seconds: float = 0.0
    """Stop after this many seconds of training (0 = no time limit)."""
    max_samples: int = 0
    """Stop once this many completions were generated, dropped ones included (0 = no limit)."""
    prompts_per_step: int = 4
    """Screens per iteration (B)."""
    group_size: int = 8
    """Samples per screen (G); advantages are relative within a group."""
    temperature: float = 1.0
    """Sampling temperature (top_k=0, top_p=1 so behaviour log-probs match the sampler)."""
    max_new_tokens: int = 24
    """Completion budget per sample (also Dr.GRPO's constant length normalizer)."""
    lr: float = 1e-4
    """Peak AdamW learning rate."""
    lr_schedule: str = "constant"
    """constant | linear | cosine decay after warmup."""
    warmup_steps: int = 0
    """Optimizer steps of linear warmup."""
    min_lr_ratio: float = 0.0
    """Floor of the decayed learning rate as a fraction of ``lr``."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm (0 = off)."""
    advantage: str = "grpo"
    """grpo | dr_grpo | rloo | reinforce_pp."""
    scale_by_std: bool = True
    """GRPO: divide centred rewards by a std (False = Dr.GRPO centring)."""
    std_level: str = "group"
    """GRPO std: group | batch | none."""
    reinforce_group_baseline: bool = False
    """REINFORCE++: subtract the group mean before batch normalization."""
    gigpo_weight: float = 0.0
    """GiGPO: weight ω of step-level advantages among turns of a group that acted on an equal
    observation (0: episode-level credit only). Multi-step worlds."""
    episode_weight: float = 1.0
    """Weight of the episode-level advantage when ``gigpo_weight`` > 0 (GiGPO's own: 1; 0: step
    groups only). Ignored without GiGPO (episode credit is then the whole advantage)."""
    gamma: float = 1.0
    """Discount of the step returns GiGPO compares (the episode advantage is undiscounted)."""
    loss: str = "ppo_clip"
    """ppo_clip (token ratio) | gspo (sequence ratio)."""
    clip_eps_low: float = 0.2
    """Lower clip range ε_low: ratio ≥ 1 − ε_low."""
    clip_eps_high: float = 0.2
    """Upper clip range ε_high (DAPO clip-higher sets it above ε_low)."""
    dual_clip: float = 0.0
    """Dual-clip constant c > 1 for negative advantages (0 = off)."""
    aggregation: str = "token_mean"
    """token_mean | seq_mean_token_mean | seq_mean_token_sum_norm."""
    kl_coef: float = 0.0
    """β of the KL to the starting policy (0 = no reference model is loaded at all)."""
    kl_estimator: str = "k3"
    """k1 | k2 | k3."""
    kl_in_reward: bool = False
    """Fold β·KL into the sequence reward instead of adding it to the loss."""
    dynamic_sampling: bool = False
    """Drop groups whose rewards do not vary and resample prompts to refill the batch."""
    max_resample_rounds: int = 3
    """Resampling rounds per step when dynamic sampling is on (each round draws B prompts)."""
    mask_truncated: bool = False
    """Give completions that hit max_new_tokens without eos no loss (overlong filtering)."""
    difficulty_band: list[float] = dataclasses.field(default_factory=list)
    """[lo, hi]: on a finite task source, skip tasks whose running success rate left the band."""
    epochs: int = 1
    """Passes over each rollout batch."""
    minibatches: int = 1
    """Optimizer steps per epoch (the batch's rows split evenly)."""
    micro_batch_size: int = 0
    """Rows per forward/backward with gradient accumulation (0 = a whole minibatch)."""
    recompute_old_logprobs: bool = False
    """Recompute old log-probs with a forward pass instead of reusing the sampler's."""
    max_staleness: int = 0
    """Asynchronous rollouts (``rollout/ahead.py``): k > 0 samples step s with the weights of
    step s - k on a thread while the trainer updates (one-step-off pipelining at k = 1);
    episodes more than k versions old are dropped and counted; the ratio against the
    sampler's log-probs is the importance correction. 0: synchronous."""
    engine: str = "hf"
    """Rollout engine (``rollout/engines.py``): hf = the transformers sampler on the trained
    model; vllm = vLLM, weights pushed after each update (docs/SCALING.md "vLLM engine")."""
    vllm_python: str = ".venv-vllm/bin/python"
    """CPU vllm engine: the python of the vLLM venv (``scripts/setup_vllm.sh``)."""
    gradient_checkpointing: bool = False
    """Trade compute for memory in the policy's forward pass."""
    shared_prefix: bool = True
    """Encode each group's image and prompt once and share it across the G completions, in
    sampling (KV-cache expansion) and in the training forward. false = the plain path: HF
    ``generate`` on G copies of the prompt and a full forward per row (same math, slower;
    kept as the benchmark's "before" and as a fallback)."""
    reuse_prefill: bool = True
    """With the shared prefix, keep the sampler's prompt prefill (vision tower included, run with
    grad) for the update instead of computing it again: one vision + prefill forward per step
    instead of two. Exact: used only by the first optimizer step after sampling, and only where
    :func:`vlagent.train.grpo.prefill_reuse_applies` holds (one process, the hf engine, no rollout
    ahead, single-turn, no dynamic sampling, no gradient checkpointing, no dropout)."""
    pack_groups: str = "auto"
    """Training forward of the shared prefix: lay each prompt's completions side by side in one
    row over the prompt's own KV cache with a 4-D attention mask (``rollout/packed.py``) instead
    of copying the cache to every row. always | never | auto (pack where the attention takes a 4-D
    mask and, on CPU, a prompt's packed completions hold ≤ 4,096 tokens; on accelerators, where
    each packed query sees at most twice the keys it would see expanded: P + K·T ≤ 2·(P + T);
    ``rollout/packed.py: packing_pays``). Same math either way; a speed trade-off."""
    logits_chunk: int = 0
    """Tokens per chunk through the LM head in the training forward and the log-prob recomputes:
    only loss-mask positions get logits, this many at a time, recomputed in the backward (no
    [rows, tokens, vocab] tensor; same distribution). 0 = all positions at once."""

    def __post_init__(self) -> None:
        _one_of(self.advantage, "grpo.advantage", ADVANTAGES)
        _one_of(self.std_level, "grpo.std_level", ("group", "batch", "none"))
        _one_of(self.loss, "grpo.loss", LOSSES)
        _one_of(self.aggregation, "grpo.aggregation", AGGREGATIONS)
        _one_of(self.kl_estimator, "grpo.kl_estimator", KL_ESTIMATORS)
        _one_of(self.lr_schedule, "grpo.lr_schedule", SCHEDULES)
        _check(self.steps >= 0, "grpo.steps", f"must be >= 0, got {self.steps}")
        _check(
            self.prompts_per_step >= 1,
            "grpo.prompts_per_step",
            f"must be >= 1, got {self.prompts_per_step}",
        )
        needs_group = self.advantage != "reinforce_pp" or self.reinforce_group_baseline
        _check(
            self.group_size >= 2 or not needs_group,
            "grpo.group_size",
            f"must be >= 2 for group-relative advantages (grpo.advantage={self.advantage}), got {self.group_size}",
        )
        _check(self.group_size >= 1, "grpo.group_size", f"must be >= 1, got {self.group_size}")
        _check(self.temperature > 0, "grpo.temperature", f"must be > 0, got {self.temperature}")
        _check(self.lr > 0, "grpo.lr", f"must be > 0, got {self.lr}")
        _check(
            self.kl_coef >= 0,
            "grpo.kl_coef",
            f"must be >= 0 (β < 0 would reward drifting away), got {self.kl_coef}",
        )
        _check(
            0 < self.clip_eps_low < 1,
            "grpo.clip_eps_low",
            f"must be in (0, 1), got {self.clip_eps_low}",
        )
        _check(
            self.clip_eps_high > 0, "grpo.clip_eps_high", f"must be > 0, got {self.clip_eps_high}"
        )
        _check(
            self.dual_clip == 0 or self.dual_clip > 1,
            "grpo.dual_clip",
            f"must be 0 (off) or > 1, got {self.dual_clip}",
        )
        _check(
            not (self.loss == "gspo" and self.aggregation == "token_mean"),
            "grpo.loss / grpo.aggregation",
            "gspo optimizes a sequence-level ratio; token_mean would weight sequences by their length. "
            "Use grpo.aggregation=seq_mean_token_mean",
        )
        _check(
            not (self.kl_in_reward and self.kl_coef == 0),
            "grpo.kl_in_reward / grpo.kl_coef",
            "kl_in_reward=true with kl_coef=0 subtracts nothing; set grpo.kl_coef > 0",
        )
        _check(
            not (self.loss == "gspo" and self.dual_clip),
            "grpo.loss / grpo.dual_clip",
            "dual-clip is defined for token-level PPO ratios; set grpo.dual_clip=0 with gspo",
        )
        _check(
            not (self.advantage == "dr_grpo" and self.scale_by_std),
            "grpo.advantage / grpo.scale_by_std",
            "dr_grpo never divides by the std; set grpo.scale_by_std=false (algo=dr_grpo does)",
        )
        _check(
            self.max_resample_rounds >= 1,
            "grpo.max_resample_rounds",
            f"must be >= 1, got {self.max_resample_rounds}",
        )
        if self.difficulty_band:
            lo_hi = self.difficulty_band
            _check(
                len(lo_hi) == 2 and 0 <= lo_hi[0] <= lo_hi[1] <= 1,
                "grpo.difficulty_band",
                f"must be [lo, hi] with 0 <= lo <= hi <= 1, got {lo_hi}",
            )
        _check(self.epochs >= 1, "grpo.epochs", f"must be >= 1, got {self.epochs}")
        _check(
            self.gigpo_weight >= 0, "grpo.gigpo_weight", f"must be >= 0, got {self.gigpo_weight}"
        )
        _check(
            self.episode_weight >= 0,
            "grpo.episode_weight",
            f"must be >= 0, got {self.episode_weight}",
        )
        _check(
            self.episode_weight > 0 or self.gigpo_weight > 0,
            "grpo.episode_weight",
            "is 0 without GiGPO (grpo.gigpo_weight = 0): no turn would get any credit",
        )
        _check(
            self.max_staleness >= 0, "grpo.max_staleness", f"must be >= 0, got {self.max_staleness}"
        )
        _check(
            self.max_staleness == 0 or not self.recompute_old_logprobs,
            "grpo.recompute_old_logprobs",
            "must be false with grpo.max_staleness > 0: stale episodes are importance-corrected "
            "against the sampler's own log-probs, which a recompute would replace",
        )
        _one_of(self.engine, "grpo.engine", ("hf", "vllm"))
        _check(
            self.engine == "hf" or self.max_staleness == 0,
            "grpo.engine / grpo.max_staleness",
            "the vllm engine samples synchronously; set grpo.max_staleness=0",
        )
        _check(bool(self.vllm_python.strip()), "grpo.vllm_python", "must name a python binary")
        _check(0 <= self.gamma <= 1, "grpo.gamma", f"must be in [0, 1], got {self.gamma}")
        _check(
            self.max_new_tokens >= 1,
            "grpo.max_new_tokens",
            f"must be >= 1, got {self.max_new_tokens}",
        )
        rows = self.prompts_per_step * self.group_size
        _check(
            self.minibatches >= 1 and rows % self.minibatches == 0,
            "grpo.minibatches",
            f"must divide prompts_per_step × group_size = {rows}, got {self.minibatches}",
        )
        _check(
            self.micro_batch_size >= 0,
            "grpo.micro_batch_size",
            f"must be >= 0, got {self.micro_batch_size}",
        )
        _check(
            self.pack_groups in ("auto", "always", "never"),
            "grpo.pack_groups",
            f"must be auto, always or never, got {self.pack_groups!r}",
        )
        _check(
            self.logits_chunk >= 0,
            "grpo.logits_chunk",
            f"must be >= 0 (0 = no chunking), got {self.logits_chunk}",
        )
        _check(
            self.warmup_steps >= 0, "grpo.warmup_steps", f"must be >= 0, got {self.warmup_steps}"
        )
        _check(
            0 <= self.min_lr_ratio <= 1,
            "grpo.min_lr_ratio",
            f"must be in [0, 1], got {self.min_lr_ratio}",
        )


@dataclasses.dataclass
class LoRAConfig:
    """Parameter-efficient training through PEFT on the language model."""

    enabled: bool = False
    """Train LoRA adapters instead of all weights."""
    r: int = 8
    """Adapter rank."""
    alpha: int = 16
    """LoRA scaling α (effective scale α / r)."""
    dropout: float = 0.0
    """Dropout on the adapter input."""
    target_modules: list[str] = dataclasses.field(
        default_factory=lambda: [
            "q_proj",
            "k_proj",
            "v_proj",
            "o_proj",
            "gate_proj",
            "up_proj",
            "down_proj",
        ]
    )
    """Language-model linear layers that get adapters (vision-tower layers are never matched)."""
    train_vision: bool = False
    """Also train the vision tower's full weights (saved with the adapter); False freezes it."""

    def __post_init__(self) -> None:
        _check(self.r >= 1, "model.lora.r", f"must be >= 1, got {self.r}")
        _check(self.alpha > 0, "model.lora.alpha", f"must be > 0, got {self.alpha}")
        _check(
            0 <= self.dropout < 1, "model.lora.dropout", f"must be in [0, 1), got {self.dropout}"
        )
        _check(
            bool(self.target_modules), "model.lora.target_modules", "must name at least one module"
        )
