"""Values shared by every reward: results, predictions, errors and input sanitizing."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perception_tools.geometry import Box, GeometryError, Point, as_box, as_point, is_valid_box


class RewardError(ValueError):
    """Base class of the errors raised by the rewards package (configuration, never inputs)."""


class RewardSpecError(RewardError):
    """A reward spec or a reward parameter is malformed."""


@dataclass(frozen=True)
class RewardResult:
    """A scalar reward and its named components.

    Attributes:
        value: the reward.
        terms: component name -> contribution; for composites the contributions sum to
            ``value``.
    """

    value: float
    terms: dict[str, float] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    """Terms that raised or returned a non-number (each scored 0), as ``"name: reason"``."""


@dataclass(frozen=True)
class Prediction:
    """What a codec parsed out of one model answer, in normalized [0, 1] coordinates.

    Nothing is validated here so that building one from hostile model output never raises;
    the rewards score malformed coordinates as 0.

    Attributes:
        point: ``(x, y)`` normalized, or None.
        box: ``(x0, y0, x1, y1)`` normalized, or None.
        format_ok: whether the answer followed the expected output format.
        error: the parser's message when it failed, else None.
        action_type: the action the answer names (``click``, ``type``, ...), when it names one.
        text: the text the answer types, when it types any.
        completion: the model's raw answer text (for rewards that read it), or None.
    """

    point: tuple[float, float] | None = None
    box: tuple[float, float, float, float] | None = None
    format_ok: bool = True
    error: str | None = None
    action_type: str | None = None
    text: str | None = None
    completion: str | None = None


@dataclass(frozen=True)
class RewardTarget:
    """What a prediction is scored against: the ground truth of one sample.

    Attributes:
        box: the target element ``(x0, y0, x1, y1)``, normalized.
        action_type: the expected action (``click``, ``type``, ...), when the data has one.
        text: the expected typed text, when the data has one.
        instruction: the instruction shown to the policy.
        sample_id: the sample's stable id (used in error reports).
        meta: the sample's extras (platform, data type, ``reference``: how the instruction
            names the target, ...).
        elements: the screen's elements (synthetic screens; empty when the data has none).
        target_index: the target's index in ``elements``, when there are elements.
    """

    box: object = None
    action_type: str | None = None
    text: str | None = None
    instruction: str = ""
    sample_id: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)
    elements: Sequence[Any] = ()
    target_index: int | None = None


def norm_point_or_none(point: object) -> Point | None:
    """``point`` as two finite floats in [0, 1], or None if it is anything else; never raises.

    >>> norm_point_or_none((0.5, 1)), norm_point_or_none((0.5, 1.5)), norm_point_or_none("xy")
    ((0.5, 1.0), None, None)
    """
    if point is None:
        return None
    try:
        x, y = as_point(point)  # type: ignore[arg-type]
    except GeometryError:
        return None
    return (x, y) if 0.0 <= x <= 1.0 and 0.0 <= y <= 1.0 else None


def norm_box_or_none(box: object) -> Box | None:
    """``box`` as a valid xyxy box (x0 < x1, y0 < y1) inside [0, 1], or None; never raises.

    >>> norm_box_or_none((0, 0, 0.5, 0.5)), norm_box_or_none((0.5, 0, 0.2, 0.5))
    ((0.0, 0.0, 0.5, 0.5), None)
    """
    if box is None or not is_valid_box(box):
        return None
    x0, y0, x1, y1 = as_box(box)  # type: ignore[arg-type]
    if min(x0, y0) < 0.0 or max(x1, y1) > 1.0:
        return None
    return x0, y0, x1, y1


def check_positive(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a finite number > 0, else raise RewardSpecError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RewardSpecError(f"{name} must be a finite number > 0, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise RewardSpecError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)
