"""Learning-rate multipliers for ``torch.optim.lr_scheduler.LambdaLR``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import torch

ScheduleKind = Literal["constant", "linear", "cosine"]


def lr_lambda(
    kind: ScheduleKind, warmup_steps: int, total_steps: int, min_ratio: float = 0.0
) -> Callable[[int], float]:
    """Multiplier of the base LR at optimizer step ``step`` (0-based, LambdaLR's counter).

    Warmup: (step + 1) / warmup_steps for step < warmup_steps, so the first update already
    moves the weights (reaching 1 at the last warmup step). Then, with
    p = min(1, (step - warmup_steps) / max(1, total_steps - warmup_steps)):
    constant → 1; linear → min_ratio + (1 - min_ratio)(1 - p);
    cosine → min_ratio + (1 - min_ratio)·½(1 + cos(π p)). After total_steps it stays at the end.

    Args:
        kind: "constant", "linear" or "cosine".
        warmup_steps: linear warmup length (>= 0, <= total_steps).
        total_steps: total optimizer steps (>= 1).
        min_ratio: final multiplier of the decaying kinds, in [0, 1].
    Returns:
        step -> multiplier.
    """
    if kind not in ("constant", "linear", "cosine"):
        raise ValueError(f"lr schedule {kind!r} is unknown; known: constant, linear, cosine")
    if total_steps < 1 or not 0 <= warmup_steps <= total_steps:
        raise ValueError(
            f"lr schedule needs total_steps >= 1 and 0 <= warmup_steps <= total_steps, "
            f"got warmup_steps={warmup_steps}, total_steps={total_steps}"
        )
    if not 0.0 <= min_ratio <= 1.0:
        raise ValueError(f"lr schedule min_ratio must be in [0, 1], got {min_ratio}")
    decay_steps = max(1, total_steps - warmup_steps)

    def multiplier(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        if kind == "constant":
            return 1.0
        progress = min(1.0, (step - warmup_steps) / decay_steps)
        shape = 1.0 - progress if kind == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))
        return min_ratio + (1.0 - min_ratio) * shape

    return multiplier


def lambda_scheduler(
    opt: torch.optim.Optimizer, multiplier: Callable[[int], float], state: dict | None = None
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` over ``opt``; with ``state`` (a checkpoint's), resumed where it stopped.

    ``LambdaLR``'s constructor sets every group's rate for step 0 and ``load_state_dict``
    restores only the scheduler's own counter, so a resumed run would take its first step at
    the step-0 rate; the saved last rates are written back into the optimizer here."""
    sched = torch.optim.lr_scheduler.LambdaLR(opt, multiplier)
    if state:
        sched.load_state_dict(state)
        for group, lr in zip(opt.param_groups, sched.get_last_lr(), strict=True):
            group["lr"] = lr
    return sched
