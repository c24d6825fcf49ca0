"""Boxes, points and coordinate spaces.

At the env boundary every point and box is normalized: floats in [0, 1], x to the right, y down,
boxes as ``(x0, y0, x1, y1)``. Model families speak other spaces (see :class:`CoordSpace`); the
converters here map between them given a sample's :class:`Frame`. Pixel spaces are continuous:
``x_px = x_norm * width`` with no rounding, so conversions round-trip exactly up to float error.
"""

from __future__ import annotations

import enum
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

Point = tuple[float, float]
Box = tuple[float, float, float, float]

QWEN_FACTOR = 28
QWEN_MIN_PIXELS = 4 * 28 * 28
QWEN_MAX_PIXELS = 16384 * 28 * 28
QWEN_MAX_RATIO = 200.0
K1000_SCALE = 1000.0


class GeometryError(ValueError):
    """A point, box, size or coordinate space is malformed."""


class CoordSpace(str, enum.Enum):
    """Coordinate space a point or box is expressed in."""

    NORM = "norm"
    """Floats in [0, 1] of the image width / height (the env boundary)."""
    ORIG_PX = "orig_px"
    """Continuous pixels of the original image."""
    RESIZED_PX = "resized_px"
    """Continuous pixels of the image the vision encoder saw (Qwen2.5-VL)."""
    K1000 = "k1000"
    """Thousandths of the image width / height, [0, 1000) (Qwen2-VL, Qwen3-VL)."""


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class ImageSize:
    """Width and height of an image in pixels (both > 0)."""

    width: int
    height: int

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            value = getattr(self, name)
            if not _is_int(value) or value <= 0:
                raise GeometryError(f"ImageSize.{name} must be a positive int, got {value!r}")
            object.__setattr__(self, name, int(value))


@dataclass(frozen=True)
class Frame:
    """One sample's original image size and the size the vision encoder saw."""

    orig: ImageSize
    resized: ImageSize

    def __post_init__(self) -> None:
        for name in ("orig", "resized"):
            value = getattr(self, name)
            if not isinstance(value, ImageSize):
                raise GeometryError(f"Frame.{name} must be an ImageSize, got {value!r}")


def smart_resize(
    height: int,
    width: int,
    factor: int = QWEN_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
    max_ratio: float = QWEN_MAX_RATIO,
) -> tuple[int, int]:
    """Size Qwen2.5-VL's processor resizes an image to (the qwen-vl-utils algorithm).

    Each side is rounded to a multiple of ``factor``; if the area then exceeds ``max_pixels`` the
    image is scaled down (sides floored to the factor, never below one factor), if it falls under
    ``min_pixels`` it is scaled up (sides ceiled to the factor). Same result as
    ``qwen_vl_utils.smart_resize`` wherever that returns non-zero sides.

    Args:
        height: original height in pixels (> 0).
        width: original width in pixels (> 0).
        factor: both returned sides are multiples of this (patch size x spatial merge).
        min_pixels: lower bound on the returned area, in pixels.
        max_pixels: upper bound on the returned area, in pixels.
        max_ratio: largest allowed ``max(h, w) / min(h, w)``.

    Returns:
        ``(resized_height, resized_width)`` in pixels.

    Raises:
        GeometryError: on non-positive sizes, ``min_pixels > max_pixels`` or too extreme an
            aspect ratio.

    >>> smart_resize(1080, 1920)
    (1092, 1932)
    """
    for name, value in (("height", height), ("width", width), ("factor", factor)):
        if not _is_int(value) or value <= 0:
            raise GeometryError(f"smart_resize: {name} must be a positive int, got {value!r}")
    if not min_pixels <= max_pixels:
        raise GeometryError(
            f"smart_resize: min_pixels ({min_pixels}) must be <= max_pixels ({max_pixels})"
        )
    ratio = max(height, width) / min(height, width)
    if ratio > max_ratio:
        raise GeometryError(
            f"smart_resize: aspect ratio of {width}x{height} is {ratio:.1f}, "
            f"above the limit {max_ratio}"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def frame_for(
    orig: ImageSize,
    factor: int = QWEN_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
) -> Frame:
    """Frame of an image of size ``orig`` after :func:`smart_resize`.

    Args:
        orig: original image size in pixels.
        factor: see :func:`smart_resize`.
        min_pixels: see :func:`smart_resize`.
        max_pixels: see :func:`smart_resize`.

    Returns:
        ``Frame(orig, resized)`` with the resized size in pixels.

    >>> frame_for(ImageSize(1920, 1080)).resized
    ImageSize(width=1932, height=1092)
    """
    height, width = smart_resize(orig.height, orig.width, factor, min_pixels, max_pixels)
    return Frame(orig=orig, resized=ImageSize(width=width, height=height))


def _floats(values: object, n: int, what: str) -> tuple[float, ...]:
    try:
        out = tuple(float(v) for v in values)  # type: ignore[attr-defined]
    except (TypeError, ValueError, OverflowError) as err:
        raise GeometryError(f"{what} must be {n} numbers, got {values!r}") from err
    if len(out) != n:
        raise GeometryError(f"{what} must be {n} numbers, got {len(out)}: {values!r}")
    if not all(math.isfinite(v) for v in out):
        raise GeometryError(f"{what} must be finite, got {values!r}")
    return out


def as_point(point: Sequence[float]) -> Point:
    """Validate and convert ``point`` to a tuple of two finite floats (any space)."""
    x, y = _floats(point, 2, "point")
    return x, y


def as_box(box: Sequence[float]) -> Box:
    """Validate and convert ``box`` to a tuple of four finite floats (any space)."""
    x0, y0, x1, y1 = _floats(box, 4, "box")
    return x0, y0, x1, y1


def space_scale(space: CoordSpace | str, frame: Frame | None) -> tuple[float, float]:
    """Units of ``space`` per normalized unit along x and y.

    Args:
        space: target coordinate space (a :class:`CoordSpace` or its string value).
        frame: the sample's sizes; only read for the pixel spaces.

    Returns:
        ``(sx, sy)`` such that ``x_space = x_norm * sx``.
    """
    try:
        space = CoordSpace(space)
    except ValueError as err:
        known = ", ".join(s.value for s in CoordSpace)
        raise GeometryError(f"coordinate space {space!r} is unknown; known: {known}") from err
    if space is CoordSpace.NORM:
        return 1.0, 1.0
    if space is CoordSpace.K1000:
        return K1000_SCALE, K1000_SCALE
    if not isinstance(frame, Frame):
        raise GeometryError(f"coordinate space {space.value!r} needs a Frame, got {frame!r}")
    size = frame.orig if space is CoordSpace.ORIG_PX else frame.resized
    return float(size.width), float(size.height)


def point_to_norm(point: Sequence[float], space: CoordSpace | str, frame: Frame | None) -> Point:
    """Map a point from ``space`` to normalized coordinates.

    Args:
        point: ``(x, y)`` in ``space``.
        space: the space ``point`` is in.
        frame: the sample's original and resized sizes (pixel spaces only).

    Returns:
        ``(x, y)`` normalized; not clipped, so off-image points stay off-image.

    >>> point_to_norm((966, 546), CoordSpace.RESIZED_PX, frame_for(ImageSize(1920, 1080)))
    (0.5, 0.5)
    """
    x, y = as_point(point)
    sx, sy = space_scale(space, frame)
    return x / sx, y / sy


def point_from_norm(
    point_norm: Sequence[float], space: CoordSpace | str, frame: Frame | None
) -> Point:
    """Map a normalized point into ``space``.

    Args:
        point_norm: ``(x, y)`` normalized.
        space: the target space.
        frame: the sample's original and resized sizes (pixel spaces only).

    Returns:
        ``(x, y)`` in ``space`` as continuous floats (no rounding).

    >>> point_from_norm((0.25, 0.5), "k1000", None)
    (250.0, 500.0)
    """
    x, y = as_point(point_norm)
    sx, sy = space_scale(space, frame)
    return x * sx, y * sy


def box_to_norm(box_xyxy: Sequence[float], space: CoordSpace | str, frame: Frame | None) -> Box:
    """Map an xyxy box from ``space`` to normalized coordinates.

    Args:
        box_xyxy: ``(x0, y0, x1, y1)`` in ``space``.
        space: the space the box is in.
        frame: the sample's original and resized sizes (pixel spaces only).

    Returns:
        ``(x0, y0, x1, y1)`` normalized; not clipped nor reordered.

    >>> box_to_norm((0, 0, 960, 540), "orig_px", frame_for(ImageSize(1920, 1080)))
    (0.0, 0.0, 0.5, 0.5)
    """
    x0, y0, x1, y1 = as_box(box_xyxy)
    sx, sy = space_scale(space, frame)
    return x0 / sx, y0 / sy, x1 / sx, y1 / sy


def box_from_norm(
    box_xyxy_norm: Sequence[float], space: CoordSpace | str, frame: Frame | None
) -> Box:
    """Map a normalized xyxy box into ``space``.

    Args:
        box_xyxy_norm: ``(x0, y0, x1, y1)`` normalized.
        space: the target space.
        frame: the sample's original and resized sizes (pixel spaces only).

    Returns:
        ``(x0, y0, x1, y1)`` in ``space`` as continuous floats.

    >>> box_from_norm((0.0, 0.0, 0.5, 0.25), "k1000", None)
    (0.0, 0.0, 500.0, 250.0)
    """
    x0, y0, x1, y1 = as_box(box_xyxy_norm)
    sx, sy = space_scale(space, frame)
    return x0 * sx, y0 * sy, x1 * sx, y1 * sy


def xywh_to_xyxy(box_xywh: Sequence[float]) -> Box:
    """Convert ``(x, y, w, h)`` (top-left corner and size) to ``(x0, y0, x1, y1)``, same space.

    >>> xywh_to_xyxy((0.25, 0.5, 0.5, 0.25))
    (0.25, 0.5, 0.75, 0.75)
    """
    x, y, w, h = as_box(box_xywh)
    return x, y, x + w, y + h


def xyxy_to_xywh(box_xyxy: Sequence[float]) -> Box:
    """Convert ``(x0, y0, x1, y1)`` to ``(x, y, w, h)`` (top-left corner and size), same space.

    >>> xyxy_to_xywh((0.25, 0.5, 0.75, 1.0))
    (0.25, 0.5, 0.5, 0.5)
    """
    x0, y0, x1, y1 = as_box(box_xyxy)
    return x0, y0, x1 - x0, y1 - y0


def box_size(box_xyxy: Sequence[float]) -> tuple[float, float]:
    """Width and height of an xyxy box, in its own space; inverted sides count as 0.

    >>> box_size((0.25, 0.5, 0.75, 1.0))
    (0.5, 0.5)
    """
    x0, y0, x1, y1 = as_box(box_xyxy)
    return max(0.0, x1 - x0), max(0.0, y1 - y0)


def box_area(box_xyxy: Sequence[float]) -> float:
    """Area of an xyxy box in its own space squared; inverted or degenerate boxes have area 0.

    >>> box_area((0.0, 0.0, 0.5, 0.25))
    0.125
    """
    w, h = box_size(box_xyxy)
    return w * h


def box_center(box_xyxy: Sequence[float]) -> Point:
    """Centre ``(cx, cy)`` of an xyxy box, in its own space.

    >>> box_center((0.0, 0.0, 0.5, 0.25))
    (0.25, 0.125)
    """
    x0, y0, x1, y1 = as_box(box_xyxy)
    return (x0 + x1) / 2.0, (y0 + y1) / 2.0


def clip_box(box_xyxy: Sequence[float], lo: float = 0.0, hi: float = 1.0) -> Box:
    """Clamp every coordinate of an xyxy box into ``[lo, hi]`` (normalized by default).

    >>> clip_box((-0.5, 0.25, 1.5, 0.75))
    (0.0, 0.25, 1.0, 0.75)
    """
    if not lo <= hi:
        raise GeometryError(f"clip_box: lo ({lo}) must be <= hi ({hi})")
    x0, y0, x1, y1 = (min(hi, max(lo, v)) for v in as_box(box_xyxy))
    return x0, y0, x1, y1


def is_valid_box(box_xyxy: object) -> bool:
    """Whether ``box_xyxy`` is four finite numbers with ``x0 < x1`` and ``y0 < y1``; never raises.

    >>> is_valid_box((0.1, 0.1, 0.2, 0.2)), is_valid_box((0.2, 0.1, 0.1, 0.2))
    (True, False)
    """
    try:
        x0, y0, x1, y1 = as_box(box_xyxy)  # type: ignore[arg-type]
    except GeometryError:
        return False
    return x0 < x1 and y0 < y1


def point_in_box(point: Sequence[float], box_xyxy: Sequence[float]) -> bool:
    """Whether ``point`` lies in the xyxy box, edges included (both in the same space).

    >>> point_in_box((0.5, 0.5), (0.0, 0.0, 0.5, 0.5))
    True
    """
    x, y = as_point(point)
    x0, y0, x1, y1 = as_box(box_xyxy)
    return x0 <= x <= x1 and y0 <= y <= y1


def intersection_area(box_a: Sequence[float], box_b: Sequence[float]) -> float:
    """Area of the overlap of two xyxy boxes in the same space (0 when disjoint).

    >>> intersection_area((0.0, 0.0, 0.5, 0.5), (0.25, 0.25, 1.0, 1.0))
    0.0625
    """
    ax0, ay0, ax1, ay1 = as_box(box_a)
    bx0, by0, bx1, by1 = as_box(box_b)
    return box_area((max(ax0, bx0), max(ay0, by0), min(ax1, bx1), min(ay1, by1)))


def iou(box_a: Sequence[float], box_b: Sequence[float]) -> float:
    """Intersection over union of two xyxy boxes in the same space, in [0, 1].

    Degenerate or inverted boxes have area 0; if the union is empty the IoU is 0.

    >>> iou((0.0, 0.0, 0.5, 0.5), (0.25, 0.0, 0.75, 0.5))  # 0.125 / 0.375
    0.3333333333333333
    """
    inter = intersection_area(box_a, box_b)
    union = box_area(box_a) + box_area(box_b) - inter
    return min(1.0, inter / union) if union > 0.0 else 0.0


def giou(box_a: Sequence[float], box_b: Sequence[float]) -> float:
    """Generalized IoU of two xyxy boxes in the same space, in [-1, 1].

    ``giou = iou - (C - U) / C`` with ``C`` the area of the smallest box enclosing both and ``U``
    the union; if ``C`` is 0 (both boxes collapse onto one point or line) the result is the IoU,
    i.e. 0.

    >>> giou((0.0, 0.0, 0.25, 0.25), (0.75, 0.75, 1.0, 1.0))  # 0 - (1 - 0.125) / 1
    -0.875
    """
    ax0, ay0, ax1, ay1 = as_box(box_a)
    bx0, by0, bx1, by1 = as_box(box_b)
    inter = intersection_area(box_a, box_b)
    union = box_area(box_a) + box_area(box_b) - inter
    iou_ab = min(1.0, inter / union) if union > 0.0 else 0.0
    hull = box_area((min(ax0, bx0), min(ay0, by0), max(ax1, bx1), max(ay1, by1)))
    if hull <= 0.0:
        return iou_ab
    # The hull is never smaller than the union mathematically; the clamp absorbs rounding.
    return max(-1.0, iou_ab - max(0.0, hull - union) / hull)
