"""Grouped statistics over rows tagged by an explicit integer id (ragged, non-contiguous ids).

Shapes: N rows. Only finite values count; a row whose value is NaN or ±inf is "invalid": it is
left out of every statistic and callers give it a zero result.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch


class GroupStats(NamedTuple):
    """Per-group statistics over the valid rows; [G] fields are indexed by dense group index."""

    inverse: torch.Tensor  # [N] dense group index of each row, in [0, G)
    count: torch.Tensor  # [G] number of valid rows per group
    mean: torch.Tensor  # [G] mean of the valid values (0 for a group with none)
    std: torch.Tensor  # [G] population std of the valid values (exactly 0 for a constant group)
    constant: torch.Tensor  # [G] bool: fewer than two distinct valid values
    centred: torch.Tensor  # [N] value - group mean; exactly 0 for invalid rows, constant groups


def dense_index(group_ids: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Map arbitrary integer ids to dense indices.

    Args:
        group_ids: [N] integer ids, any values, any order.
    Returns:
        ([N] dense index in [0, G), G the number of distinct ids).
    """
    _, inverse = torch.unique(group_ids, return_inverse=True)  # [N]
    n_groups = int(inverse.max().item()) + 1 if inverse.numel() else 0
    return inverse, n_groups


def float_values(values: torch.Tensor) -> torch.Tensor:
    """Values as float32, or float64 when they already are (never lowers precision)."""
    return values.to(torch.promote_types(values.dtype, torch.float32))


def group_stats(values: torch.Tensor, group_ids: torch.Tensor) -> GroupStats:
    """Count, mean, population std and constancy of the finite values of each group.

    A group whose valid values are all equal gets exactly zero centred values and std: the
    float mean of equal numbers can miss them by an ulp, and that residue divided by
    (std + eps) would otherwise become a spurious advantage of up to ~0.5.

    Args:
        values: [N] floats; non-finite entries are ignored.
        group_ids: [N] integer group ids.
    Returns:
        GroupStats with [N] ``inverse``, ``centred`` and [G] ``count``, ``mean``, ``std``,
        ``constant``.
    """
    values = float_values(values)
    valid = torch.isfinite(values)
    v = torch.where(valid, values, torch.zeros_like(values))
    inverse, n_groups = dense_index(group_ids)
    zeros = torch.zeros(n_groups, dtype=v.dtype, device=v.device)
    count = zeros.index_add(0, inverse, valid.to(v.dtype))  # [G]
    mean = zeros.index_add(0, inverse, v) / count.clamp(min=1)  # [G]
    gmax = torch.full_like(zeros, -math.inf).scatter_reduce(
        0, inverse, torch.where(valid, v, -math.inf), "amax"
    )  # [G]
    gmin = torch.full_like(zeros, math.inf).scatter_reduce(
        0, inverse, torch.where(valid, v, math.inf), "amin"
    )  # [G]
    constant = ~(gmax > gmin)  # [G], also True for groups with 0 or 1 valid rows
    keep = valid & ~constant[inverse]  # [N]
    centred = torch.where(keep, v - mean[inverse], torch.zeros_like(v))  # [N]
    var = zeros.index_add(0, inverse, centred**2) / count.clamp(min=1)  # [G]
    return GroupStats(inverse, count, mean, var.sqrt(), constant, centred)


def safe_divide(num: torch.Tensor, denom: torch.Tensor) -> torch.Tensor:
    """``num / denom`` elementwise, 0 where ``denom`` is 0 (e.g. std + eps with eps = 0)."""
    return torch.where(denom > 0, num / denom.clamp(min=1e-30), torch.zeros_like(num))
