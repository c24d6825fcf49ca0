"""Values shared by every reward: results, predictions, errors and input sanitizing."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

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
    """

    point: tuple[float, float] | None = None
    box: tuple[float, float, float, float] | None = None
    format_ok: bool = True
    error: str | None = None


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
