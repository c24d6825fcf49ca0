"""Rewards for tool use in "thinking with images" episodes (zoom / crop / ground calls).

Boxes are normalized [0, 1] xyxy in the ORIGINAL image (map zoom boxes with their
``CropMap`` first). Inputs from the model (boxes, counts) never raise; bad parameters raise
:class:`~rewards.types.RewardSpecError`.

Sources (each tested against numbers from its own code, ``tests/fixtures/``):
    * DeepEyes (Zheng et al., 2025; ``compute_score`` in ``verl/utils/reward_score/vl_agent.py``
      of github.com/Visual-Agent/DeepEyes): ``0.8 * acc + 0.2 * format + 1.2 * tool`` with
      ``tool = 1`` only when the answer is right (``acc > 0.5``) and the response holds at least
      one tool-returned image, so tools are never rewarded for their own sake; ``format`` is -1
      on a format error, else 0. :func:`tool_bonus` is that conditional term; its weight here
      (``bonus``, default 0.2) is ours, and ``bonus = 1.2`` with the answer terms weighted
      0.8 / 0.2 gives DeepEyes' reward (``tests/fixtures/deepeyes/``).
    * Pixel Reasoner (Su et al., 2025, arXiv:2505.15966), as implemented in TIGER-AI-Lab's
      ``verl-tool`` reward manager (``PixelReasonerRewardManager``):
      ``r' = r + alpha * r_curiosity + beta * r_penalty`` with
      ``r_curiosity = 1[episode used a visual operation] * max(0, H - RaPR)``, RaPR the
      fraction of the episode's GRPO group (same prompt) that used one, and
      ``r_penalty = min(N - n_vo, 0)`` for ``n_vo`` valid visual operations; defaults
      ``H = 0.3``, ``alpha = 0.5``, ``N = 1``, ``beta = 0.05`` (``tests/fixtures/pixel_reasoner/``).
      The Pixel-Reasoner repository's own trainer (``curiosity_driven_rl``, ``experience_maker``)
      scales it differently, ``max(0, 0.3 - RaPR) / 2 / RaPR * 0.25`` for images; that variant
      is not implemented here.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from perception_tools import geometry as geo
from rewards.types import RewardResult, RewardSpecError, norm_box_or_none

EvidenceMode = Literal["max", "last"]
EvidenceKind = Literal["iou", "contains"]


def _count(n_tool_calls: object) -> int:
    """A call count as an int >= 0; anything else counts as 0 calls."""
    if isinstance(n_tool_calls, bool) or not isinstance(n_tool_calls, (int, np.integer)):
        return 0
    return max(0, int(n_tool_calls))


def _finite(name: str, value: object, lo: float = -math.inf, hi: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RewardSpecError(f"{name} must be a finite number in [{lo}, {hi}], got {value!r}")
    if not (math.isfinite(value) and lo <= value <= hi):
        raise RewardSpecError(f"{name} must be a finite number in [{lo}, {hi}], got {value!r}")
    return float(value)


def tool_bonus(correct: bool, n_tool_calls: int, bonus: float = 0.2) -> RewardResult:
    """DeepEyes' conditional tool reward: ``bonus`` if the answer is right and a tool was called.

    DeepEyes pays 1.2 against 0.8 for a right answer (module docstring); the default 0.2 is ours.

    Args:
        correct: whether the final answer is right.
        n_tool_calls: tool calls the episode made (a non-int counts as 0).
        bonus: the reward paid (finite).

    Returns:
        ``RewardResult`` with term ``"tool_bonus"`` in {0, bonus}.

    >>> tool_bonus(True, 2).value, tool_bonus(False, 2).value, tool_bonus(True, 0).value
    (0.2, 0.0, 0.0)
    """
    bonus = _finite("tool_bonus: bonus", bonus)
    value = bonus if bool(correct) and _count(n_tool_calls) >= 1 else 0.0
    return RewardResult(value=value, terms={"tool_bonus": value})


def tool_call_penalty(
    n_tool_calls: int, free_calls: int = 1, per_call: float = 0.05
) -> RewardResult:
    """``-per_call`` for every tool call beyond ``free_calls`` (Pixel Reasoner's ``beta * r_penalty``).

    Args:
        n_tool_calls: tool calls the episode made (a non-int counts as 0).
        free_calls: calls that cost nothing (int >= 0).
        per_call: cost of each further call (finite, >= 0).

    Returns:
        ``RewardResult`` with term ``"tool_call_penalty"`` (<= 0).

    >>> round(tool_call_penalty(4, free_calls=1, per_call=0.05).value, 9)  # 3 extra calls
    -0.15
    """
    if isinstance(free_calls, bool) or not isinstance(free_calls, int) or free_calls < 0:
        raise RewardSpecError(
            f"tool_call_penalty: free_calls must be an int >= 0, got {free_calls!r}"
        )
    per_call = _finite("tool_call_penalty: per_call", per_call, lo=0.0)
    value = -per_call * max(0, _count(n_tool_calls) - free_calls)
    return RewardResult(value=value, terms={"tool_call_penalty": value})


def _evidence(
    name: str,
    zoom_boxes_norm: Sequence[object],
    target_box_norm: object,
    mode: EvidenceMode,
    score_one: object,
) -> RewardResult:
    if mode not in ("max", "last"):
        raise RewardSpecError(f"{name}: mode must be 'max' or 'last', got {mode!r}")
    target = norm_box_or_none(target_box_norm)
    boxes = list(zoom_boxes_norm) if isinstance(zoom_boxes_norm, (list, tuple)) else []
    if mode == "last":
        boxes = boxes[-1:]
    scores = [0.0]
    if target is not None:
        for box in boxes:
            valid = norm_box_or_none(box)
            if valid is not None:
                scores.append(score_one(valid, target))  # type: ignore[operator]
    value = max(scores)
    return RewardResult(value=value, terms={name: value})


def zoom_evidence_iou(
    zoom_boxes_original_norm: Sequence[object], target_box_norm: object, mode: EvidenceMode = "max"
) -> RewardResult:
    """IoU of the zoom boxes with the target box (a grounded-evidence reward).

    Args:
        zoom_boxes_original_norm: the crop region of each zoom, normalized in the original image
            (``CropMap.box_in_original_norm``); invalid boxes score 0.
        target_box_norm: the target's box, normalized.
        mode: ``"max"`` over every zoom, or only the ``"last"`` one.

    Returns:
        ``RewardResult`` with term ``"zoom_iou"`` in [0, 1]; 0 without zooms.

    >>> zooms, target = [(0.25, 0.25, 0.75, 0.5), (0.0, 0.0, 0.5, 0.5)], (0.25, 0.25, 0.5, 0.5)
    >>> zoom_evidence_iou(zooms, target).value, zoom_evidence_iou(zooms, target, "last").value
    (0.5, 0.25)
    """
    return _evidence("zoom_iou", zoom_boxes_original_norm, target_box_norm, mode, geo.iou)


def _contained(zoom: geo.Box, target: geo.Box) -> float:
    return geo.intersection_area(zoom, target) / geo.box_area(target)


def zoom_contains_target(
    zoom_boxes_original_norm: Sequence[object], target_box_norm: object, mode: EvidenceMode = "max"
) -> RewardResult:
    """Fraction of the target box's area inside the zoom box (1 when the zoom shows all of it).

    Unlike IoU it does not punish a zoom that is larger than a tiny target.

    Args:
        zoom_boxes_original_norm: see :func:`zoom_evidence_iou`.
        target_box_norm: the target's box, normalized.
        mode: ``"max"`` over every zoom, or only the ``"last"`` one.

    Returns:
        ``RewardResult`` with term ``"zoom_contains"`` in [0, 1].

    >>> zoom_contains_target([(0.0, 0.0, 0.375, 1.0)], (0.25, 0.25, 0.5, 0.5)).value
    0.5
    """
    return _evidence("zoom_contains", zoom_boxes_original_norm, target_box_norm, mode, _contained)


def curiosity_bonus(
    group_tool_rate: float, episode_used_tool: bool, alpha: float = 0.5, H: float = 0.3
) -> RewardResult:
    """Pixel Reasoner's curiosity bonus ``alpha * max(0, H - RaPR)`` for an episode that used a
    visual tool, where RaPR is its group's rate of tool use (see :func:`group_tool_rates`).

    Args:
        group_tool_rate: RaPR, fraction in [0, 1] of the episode's group that called a tool
            (non-finite or out-of-range values are clipped, NaN counts as 1: no bonus).
        episode_used_tool: whether this episode made at least one successful tool call.
        alpha: bonus scale (>= 0).
        H: target rate in [0, 1]; the bonus vanishes once the group's rate reaches it.

    Returns:
        ``RewardResult`` with term ``"curiosity"`` in [0, alpha * H].

    >>> round(curiosity_bonus(0.1, True).value, 9), curiosity_bonus(0.1, False).value  # 0.5 * 0.2
    (0.1, 0.0)
    """
    alpha = _finite("curiosity_bonus: alpha", alpha, lo=0.0)
    H = _finite("curiosity_bonus: H", H, lo=0.0, hi=1.0)
    numeric = isinstance(group_tool_rate, (int, float, np.integer, np.floating))
    rate = float(group_tool_rate) if numeric and not isinstance(group_tool_rate, bool) else 1.0
    rate = 1.0 if math.isnan(rate) else min(1.0, max(0.0, rate))
    value = alpha * max(0.0, H - rate) if bool(episode_used_tool) else 0.0
    return RewardResult(value=value, terms={"curiosity": value})


def group_tool_rates(n_tool_calls: Sequence[int], group_ids: Sequence[Hashable]) -> np.ndarray:
    """RaPR of each episode's group: the fraction of its group with at least one tool call.

    Args:
        n_tool_calls: ``[N]`` tool calls per episode.
        group_ids: ``[N]`` group id per episode (ragged groups allowed).

    Returns:
        float64 ``[N]``; ``out[i]`` is the rate of episode ``i``'s group.

    >>> group_tool_rates([0, 2, 1, 0], ["a", "a", "b", "b"])
    array([0.5, 0.5, 0.5, 0.5])
    """
    if len(n_tool_calls) != len(group_ids):
        raise RewardSpecError(
            f"group_tool_rates: {len(n_tool_calls)} counts but {len(group_ids)} group ids"
        )
    used = np.array([_count(n) >= 1 for n in n_tool_calls], dtype=np.float64)  # [N]
    index: dict[Hashable, int] = {}
    inverse = np.array([index.setdefault(g, len(index)) for g in group_ids], dtype=np.int64)  # [N]
    totals = np.bincount(inverse, weights=used)  # [G]
    sizes = np.bincount(inverse)  # [G]
    return totals[inverse] / sizes[inverse]


@dataclass(frozen=True)
class ToolRewardConfig:
    """Weights of the tool-use terms :func:`episode_reward` adds to the answer's reward."""

    bonus: float = 0.2
    """DeepEyes tool bonus paid for a right answer reached with >= 1 tool call (0 turns it off;
    DeepEyes pays 1.2 against 0.8 for the answer, the default here is ours)."""
    free_calls: int = 1
    """Tool calls per episode that cost nothing."""
    per_call: float = 0.05
    """Cost of each tool call beyond ``free_calls`` (>= 0)."""
    invalid_call: float = 0.0
    """Cost of each tool call that failed (malformed, unknown tool, bad box; >= 0). Without it a
    policy that drifts into broken calls pays nothing for them."""
    evidence_weight: float = 0.0
    """Weight of the grounded-evidence term (0 turns it off)."""
    evidence: EvidenceKind = "contains"
    """``"contains"``: share of the target inside a zoom; ``"iou"``: IoU of zoom and target."""
    evidence_mode: EvidenceMode = "max"
    """Score the best zoom (``"max"``) or only the ``"last"``."""
    curiosity_alpha: float = 0.0
    """Pixel Reasoner's alpha (0 turns the curiosity term off; the paper uses 0.5)."""
    curiosity_H: float = 0.3
    """Pixel Reasoner's target rate H of tool use per group, in [0, 1]."""
    correct_term: str = "point_in_box"
    """Answer term whose value > 0 means the answer is right (for the tool bonus)."""

    def __post_init__(self) -> None:
        for name in ("bonus", "evidence_weight"):
            _finite(f"ToolRewardConfig.{name}", getattr(self, name))
        for name in ("per_call", "invalid_call", "curiosity_alpha"):
            _finite(f"ToolRewardConfig.{name}", getattr(self, name), lo=0.0)
        _finite("ToolRewardConfig.curiosity_H", self.curiosity_H, lo=0.0, hi=1.0)
        if (
            isinstance(self.free_calls, bool)
            or not isinstance(self.free_calls, int)
            or self.free_calls < 0
        ):
            raise RewardSpecError(
                f"ToolRewardConfig.free_calls must be an int >= 0, got {self.free_calls!r}"
            )
        if self.evidence not in ("contains", "iou"):
            raise RewardSpecError(
                f"ToolRewardConfig.evidence must be 'contains' or 'iou', got {self.evidence!r}"
            )
        if self.evidence_mode not in ("max", "last"):
            raise RewardSpecError(
                f"ToolRewardConfig.evidence_mode must be 'max' or 'last', got {self.evidence_mode!r}"
            )


TOOL_TERMS: tuple[str, ...] = (
    "tool_bonus",
    "tool_call_penalty",
    "tool_error_penalty",
    "zoom_evidence",
    "curiosity",
    "answer",
)
"""Names of the terms :func:`episode_reward` may add (``answer`` stands for a term-less answer)."""


def episode_reward(
    answer_terms: RewardResult,
    n_tool_calls: int,
    zoom_boxes: Sequence[object],
    target_box: object,
    cfg: ToolRewardConfig,
    *,
    correct: bool | None = None,
    group_tool_rate: float | None = None,
    n_tool_errors: int = 0,
) -> RewardResult:
    """The answer's reward plus the tool-use terms of ``cfg``, as named terms that sum to it.

    Args:
        answer_terms: the scored answer (e.g. :func:`rewards.score`), terms summing to value.
        n_tool_calls: tool calls that ran without error.
        zoom_boxes: each zoom's crop region, normalized in the original image.
        target_box: the target's box, normalized.
        cfg: weights.
        correct: whether the answer is right; by default ``answer_terms.terms[cfg.correct_term]
            > 0`` (raises :class:`RewardSpecError` if that term is absent).
        group_tool_rate: RaPR of the episode's group; needed when ``cfg.curiosity_alpha > 0``.
        n_tool_errors: tool calls that failed; each costs ``cfg.invalid_call``.

    Returns:
        ``RewardResult``: the answer's terms, then ``tool_bonus``, ``tool_call_penalty``, and
        ``tool_error_penalty`` / ``zoom_evidence`` / ``curiosity`` when their weights are
        non-zero.

    >>> answer = RewardResult(1.1, {"point_in_box": 1.0, "format": 0.1})
    >>> episode_reward(answer, 3, [], (0.1, 0.1, 0.2, 0.2), ToolRewardConfig()).terms
    {'point_in_box': 1.0, 'format': 0.1, 'tool_bonus': 0.2, 'tool_call_penalty': -0.1}
    """
    clash = sorted(set(answer_terms.terms) & set(TOOL_TERMS))
    if clash:
        raise RewardSpecError(f"episode_reward: answer terms {clash} clash with tool term names")
    if correct is None:
        if cfg.correct_term not in answer_terms.terms:
            raise RewardSpecError(
                f"episode_reward: answer has no term {cfg.correct_term!r} to judge correctness "
                f"(has {sorted(answer_terms.terms)}); pass correct= or set cfg.correct_term"
            )
        correct = answer_terms.terms[cfg.correct_term] > 0.0
    terms = dict(answer_terms.terms) or {"answer": answer_terms.value}
    if abs(sum(terms.values()) - answer_terms.value) > 1e-9 * max(1.0, abs(answer_terms.value)):
        raise RewardSpecError(
            f"episode_reward: answer terms {answer_terms.terms} do not sum to {answer_terms.value}"
        )
    terms["tool_bonus"] = tool_bonus(correct, n_tool_calls, cfg.bonus).value
    terms["tool_call_penalty"] = tool_call_penalty(n_tool_calls, cfg.free_calls, cfg.per_call).value
    if cfg.invalid_call != 0.0:
        terms["tool_error_penalty"] = -cfg.invalid_call * _count(n_tool_errors)
    if cfg.evidence_weight != 0.0:
        fn = zoom_contains_target if cfg.evidence == "contains" else zoom_evidence_iou
        terms["zoom_evidence"] = (
            cfg.evidence_weight * fn(zoom_boxes, target_box, cfg.evidence_mode).value
        )
    if cfg.curiosity_alpha > 0.0:
        if group_tool_rate is None:
            raise RewardSpecError("episode_reward: cfg.curiosity_alpha > 0 needs group_tool_rate")
        used = _count(n_tool_calls) >= 1
        terms["curiosity"] = curiosity_bonus(
            group_tool_rate, used, cfg.curiosity_alpha, cfg.curiosity_H
        ).value
    return RewardResult(value=sum(terms.values()), terms=terms)
