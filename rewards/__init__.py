"""rewards: pure scoring functions on normalized [0, 1] points and boxes (numpy only)."""

from __future__ import annotations

from rewards.composite import (
    KNOWN_TERMS,
    REGISTRY,
    RewardSpec,
    RewardTerm,
    score,
    score_many,
)
from rewards.format import format_reward
from rewards.grounding import (
    box_size_guard,
    distance_decay,
    gaussian_coverage,
    gaussian_point,
    giou01,
    giou_reward,
    iou_reward,
    point_in_box,
)
from rewards.tool_use import (
    TOOL_TERMS,
    ToolRewardConfig,
    curiosity_bonus,
    episode_reward,
    group_tool_rates,
    tool_bonus,
    tool_call_penalty,
    zoom_contains_target,
    zoom_evidence_iou,
)
from rewards.types import (
    Prediction,
    RewardError,
    RewardResult,
    RewardSpecError,
    norm_box_or_none,
    norm_point_or_none,
)

__all__ = [
    "KNOWN_TERMS",
    "REGISTRY",
    "Prediction",
    "RewardError",
    "RewardResult",
    "RewardSpec",
    "RewardSpecError",
    "RewardTerm",
    "box_size_guard",
    "distance_decay",
    "format_reward",
    "gaussian_coverage",
    "gaussian_point",
    "giou01",
    "giou_reward",
    "iou_reward",
    "norm_box_or_none",
    "norm_point_or_none",
    "point_in_box",
    "score",
    "score_many",
    "TOOL_TERMS",
    "ToolRewardConfig",
    "curiosity_bonus",
    "episode_reward",
    "group_tool_rates",
    "tool_bonus",
    "tool_call_penalty",
    "zoom_contains_target",
    "zoom_evidence_iou",
]
