"""Sampling-side stabilizers: dynamic sampling, overlong masking, difficulty filtering.

Shapes: N sampled sequences (rows), T completion tokens; ``group_ids`` [N] as in ``advantages``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import torch

from vlagent.algos.groups import group_stats

K = TypeVar("K", bound=Hashable)


def dynamic_sampling_keep(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """Rows of groups whose finite rewards are not all equal (DAPO dynamic sampling).

    Args:
        rewards: [N] rewards; non-finite ones are ignored.
        group_ids: [N] integer group ids.
    Returns:
        [N] bool, True for every row (NaN ones included) of a group with at least two distinct
        finite rewards.
    """
    stats = group_stats(rewards, group_ids)
    return ~stats.constant[stats.inverse]


@dataclass
class DynamicSampler:
    """Accumulates groups with varying rewards over resampling rounds, up to a target.

    Call ``offer`` once per generated batch until ``done``; each call says which rows join the
    training batch. Group ids are read per round (reusing ids across rounds is fine). A group
    beyond the target is not kept and not counted as dropped.

    Args:
        target_groups: number of groups the training batch needs.
        max_rounds: most generation rounds before giving up with what was kept.
    """

    target_groups: int
    max_rounds: int
    rounds: int = field(default=0, init=False)
    groups_seen: int = field(default=0, init=False)
    groups_dropped: int = field(default=0, init=False)
    groups_kept: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.target_groups < 1:
            raise ValueError(f"DynamicSampler.target_groups must be >= 1, got {self.target_groups}")
        if self.max_rounds < 1:
            raise ValueError(f"DynamicSampler.max_rounds must be >= 1, got {self.max_rounds}")

    @property
    def done(self) -> bool:
        """True once the target is reached or the rounds are used up."""
        return self.groups_kept >= self.target_groups or self.rounds >= self.max_rounds

    @property
    def fraction_dropped(self) -> float:
        """Groups dropped for constant rewards / groups seen (0 before any round)."""
        return self.groups_dropped / self.groups_seen if self.groups_seen else 0.0

    def offer(self, rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
        """Filter one round and take kept groups, in order of first appearance, up to the target.

        Args:
            rewards: [N] rewards of this round.
            group_ids: [N] integer group ids of this round.
        Returns:
            [N] bool, True for rows that join the training batch.
        """
        if self.done:
            raise RuntimeError(
                f"DynamicSampler.offer after done ({self.rounds} rounds, "
                f"{self.groups_kept}/{self.target_groups} groups); check .done first"
            )
        self.rounds += 1
        keep = dynamic_sampling_keep(rewards, group_ids).tolist()
        varies = dict(zip(group_ids.tolist(), keep, strict=True))
        taken: set[int] = set()
        for gid, ok in varies.items():  # dict keeps first-appearance order
            self.groups_seen += 1
            if not ok:
                self.groups_dropped += 1
            elif self.groups_kept < self.target_groups:
                taken.add(gid)
                self.groups_kept += 1
        return torch.tensor([gid in taken for gid in group_ids.tolist()], dtype=torch.bool)

    def stats(self) -> dict[str, float]:
        """Rounds used, groups seen/kept, fraction dropped, and whether the target was reached."""
        return {
            "rounds": float(self.rounds),
            "groups_seen": float(self.groups_seen),
            "groups_kept": float(self.groups_kept),
            "fraction_dropped": self.fraction_dropped,
            "target_reached": float(self.groups_kept >= self.target_groups),
        }


def overlong_mask(mask: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """Zero the loss mask of truncated (no-eos) completions (DAPO overlong filtering).

    Args:
        mask: [N, T] loss mask.
        truncated: [N] bool, True where generation hit the length limit without eos.
    Returns:
        [N, T] mask of the same dtype, all zeros on truncated rows.
    """
    keep = (~truncated.bool()).to(mask.dtype)[:, None]  # [N, 1]
    return mask * keep


def difficulty_filter(success_rates: Mapping[K, float], lo: float, hi: float) -> set[K]:
    """Tasks whose success rate lies in [lo, hi] (drop too-easy and too-hard ones).

    Args:
        success_rates: task id -> success rate in [0, 1]; NaN (never tried) is dropped.
        lo, hi: inclusive bounds, 0 <= lo <= hi <= 1.
    Returns:
        the kept task ids.
    """
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"difficulty_filter needs 0 <= lo <= hi <= 1, got lo={lo}, hi={hi}")
    return {task for task, rate in success_rates.items() if lo <= rate <= hi}
