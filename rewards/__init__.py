"""rewards: pure scoring functions on normalized [0, 1] points and boxes (numpy only)."""

from __future__ import annotations

from rewards.actions import action_type_match, canonical_action, text_f1, token_f1
from rewards.composite import (
    KNOWN_TERMS,
    REGISTRY,
    RewardSpec,
    RewardTerm,
    as_target,
    score,
    score_many,
)
from rewards.custom import load_reward_fn
from rewards.format import format_reward
from rewards.grounding import (
    box_size_guard,
    distance_decay,
    gaussian_mass_ratio,
    gaussian_plane,
    gaussian_point,
    giou01,
    giou_reward,
    iou_reward,
    point_in_box,
)
from rewards.schedule import RewardStage, parse_stages, spec_at
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
    RewardTarget,
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
    "RewardStage",
    "RewardTarget",
    "RewardTerm",
    "action_type_match",
    "as_target",
    "canonical_action",
    "load_reward_fn",
    "parse_stages",
    "spec_at",
    "text_f1",
    "token_f1",
    "box_size_guard",
    "distance_decay",
    "format_reward",
    "gaussian_mass_ratio",
    "gaussian_plane",
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
