"""Configuration of multi-step app training and evaluation (every default lives here once)."""

from __future__ import annotations

import dataclasses
import math

from vlagent.errors import ConfigError


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{field}: {msg}")


@dataclasses.dataclass(frozen=True)
class HistoryConfig:
    """What the policy sees on each turn."""

    keep_images: int = 1
    """The last k screenshots are images (k >= 1); older turns appear only as text."""
    max_text_turns: int = 8
    """At most this many past actions are listed as text (the most recent ones)."""
    screen_width: int = 160
    """Screenshots are resized to this width in pixels before the processor (0: keep)."""
    screen_height: int = 288
    """Screenshots are resized to this height in pixels before the processor (0: keep)."""

    def __post_init__(self) -> None:
        _check(1 <= self.keep_images <= 8, "history.keep_images", "must be in [1, 8]")
        _check(self.max_text_turns >= 0, "history.max_text_turns", "must be >= 0")
        for name in ("screen_width", "screen_height"):
            v = getattr(self, name)
            _check(v == 0 or 32 <= v <= 4096, f"history.{name}", "must be 0 or in [32, 4096]")


@dataclasses.dataclass(frozen=True)
class TrajectoryRewardConfig:
    """Weights of an episode's reward terms (their sum is the episode reward)."""

    success: float = 1.0
    """Paid once when the task checker says success."""
    format: float = 0.1
    """Times the fraction of turns whose text parsed into an action."""
    invalid_action: float = -0.1
    """Paid per turn whose action was unparseable or could not be executed (<= 0)."""

    def __post_init__(self) -> None:
        for name in ("success", "format", "invalid_action"):
            _check(math.isfinite(getattr(self, name)), f"reward.{name}", "must be finite")
        _check(self.invalid_action <= 0, "reward.invalid_action", "must be <= 0 (a penalty)")


@dataclasses.dataclass(frozen=True)
class AppsGRPOConfig:
    """Multi-step GRPO (step-bound budget; no time-bound stopping)."""

    steps: int = 20
    """Optimizer rounds (each: rollouts, advantages, one PPO-clip update)."""
    tasks_per_step: int = 4
    """Tasks drawn per round."""
    group_size: int = 8
    """G episodes per task, all reset to the same state."""
    temperature: float = 1.0
    """Sampling temperature of rollouts (and of the loss's log-probs)."""
    max_new_tokens: int = 32
    """Completion budget of one turn."""
    lr: float = 5e-5
    """AdamW learning rate."""
    max_grad_norm: float = 1.0
    """Gradient clipping (0: off)."""
    clip_eps: float = 0.2
    """PPO clip range (symmetric)."""
    epochs: int = 1
    """Passes over the round's turn rows."""
    micro_batch_size: int = 16
    """Turn rows per forward pass (gradients accumulated exactly)."""
    scale_by_std: bool = True
    """Divide group-centred rewards by the group std (GRPO); False: Dr.GRPO centring."""
    gigpo_weight: float = 0.0
    """GiGPO: weight ω of step-level advantages (0: episode-level credit only)."""
    gamma: float = 1.0
    """Discount of the step returns GiGPO compares (episode advantage is undiscounted)."""
    seed: int = 0
    """Seeds task draws, sampling and shuffling."""

    def __post_init__(self) -> None:
        _check(self.steps >= 0, "grpo.steps", "must be >= 0")
        _check(self.tasks_per_step >= 1, "grpo.tasks_per_step", "must be >= 1")
        _check(self.group_size >= 2, "grpo.group_size", "must be >= 2 (group-relative)")
        _check(self.temperature > 0, "grpo.temperature", "must be > 0")
        _check(self.max_new_tokens >= 1, "grpo.max_new_tokens", "must be >= 1")
        _check(self.lr > 0, "grpo.lr", "must be > 0")
        _check(0 < self.clip_eps < 1, "grpo.clip_eps", "must be in (0, 1)")
        _check(self.epochs >= 1, "grpo.epochs", "must be >= 1")
        _check(self.micro_batch_size >= 1, "grpo.micro_batch_size", "must be >= 1")
        _check(self.gigpo_weight >= 0, "grpo.gigpo_weight", "must be >= 0")
        _check(0 <= self.gamma <= 1, "grpo.gamma", "must be in [0, 1]")


@dataclasses.dataclass(frozen=True)
class AppsSFTConfig:
    """SFT on oracle trajectories (step-bound)."""

    steps: int = 200
    """Optimizer steps."""
    batch_size: int = 16
    """Turns per step, drawn from the demonstration set."""
    lr: float = 1e-3
    """AdamW learning rate."""
    seed: int = 0
    """Seeds batch draws."""

    def __post_init__(self) -> None:
        _check(self.steps >= 0, "sft.steps", "must be >= 0")
        _check(self.batch_size >= 1, "sft.batch_size", "must be >= 1")
        _check(self.lr > 0, "sft.lr", "must be > 0")
