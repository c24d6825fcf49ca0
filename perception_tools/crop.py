"""Geometry and image math of the visual tools: where each observation sits in the original
(:class:`CropMap`, :class:`ToolContext`), tool results, crop planning, zoom sizes, Set-of-Mark marks.

Boxes are xyxy. ``*_norm`` values are normalized floats in [0, 1] of an image's width / height;
``*_px`` values are pixels of the ORIGINAL full-resolution image (integer boxes have x1 / y1
exclusive). Images are ``uint8 (H, W, 3)`` RGB arrays and are never modified in place.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from perception_tools.geometry import (
    QWEN_FACTOR,
    QWEN_MAX_RATIO,
    QWEN_MIN_PIXELS,
    Box,
    CoordSpace,
    Frame,
    GeometryError,
    ImageSize,
    Point,
    as_box,
    as_point,
    frame_for,
    is_valid_box,
    space_scale,
)

BoxPx = tuple[int, int, int, int]
"""Integer pixel box ``(x0, y0, x1, y1)`` of the original image, x1 / y1 exclusive."""

MARK_RGB = (255, 0, 200)
"""Colour of Set-of-Mark boxes and numbered marks (rare on screens, so it stands out)."""


@dataclass(frozen=True)
class CropMap:
    """Where an observation sits in the original image, and the map between the two.

    A zoomed view shows the region ``box_in_original_norm`` of the original image stretched to
    the whole view, so ``orig = x0 + crop * (x1 - x0)`` per axis. The identity map describes the
    original image itself; :meth:`compose` chains a crop of a crop.

    Attributes:
        box_in_original_norm: ``(x0, y0, x1, y1)`` normalized in the original image, inside
            [0, 1] with ``x0 < x1`` and ``y0 < y1``.
    """

    box_in_original_norm: Box = (0.0, 0.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        box = self.box_in_original_norm
        if not is_valid_box(box):
            raise GeometryError(f"CropMap.box_in_original_norm must be a valid box, got {box!r}")
        x0, y0, x1, y1 = as_box(box)
        if min(x0, y0) < 0.0 or max(x1, y1) > 1.0:
            raise GeometryError(f"CropMap.box_in_original_norm must lie in [0, 1], got {box!r}")
        object.__setattr__(self, "box_in_original_norm", (x0, y0, x1, y1))

    @classmethod
    def identity(cls) -> CropMap:
        """The map of the original image onto itself."""
        return cls()

    def to_original(self, coords: Sequence[float]) -> Point | Box:
        """Map a point ``(x, y)`` or box ``(x0, y0, x1, y1)`` from crop-normalized coordinates
        to original-normalized coordinates (not clipped).

        >>> CropMap((0.5, 0.0, 1.0, 0.5)).to_original((0.5, 0.5))
        (0.75, 0.25)
        """
        bx0, by0, bx1, by1 = self.box_in_original_norm
        sx, sy = bx1 - bx0, by1 - by0
        if len(coords) == 2:
            x, y = as_point(coords)
            return bx0 + x * sx, by0 + y * sy
        x0, y0, x1, y1 = as_box(coords)
        return bx0 + x0 * sx, by0 + y0 * sy, bx0 + x1 * sx, by0 + y1 * sy

    def from_original(self, coords: Sequence[float]) -> Point | Box:
        """Map a point or box from original-normalized to crop-normalized coordinates
        (the inverse of :meth:`to_original`; points outside the crop land outside [0, 1]).

        >>> CropMap((0.5, 0.0, 1.0, 0.5)).from_original((0.75, 0.25))
        (0.5, 0.5)
        """
        bx0, by0, bx1, by1 = self.box_in_original_norm
        sx, sy = bx1 - bx0, by1 - by0
        if len(coords) == 2:
            x, y = as_point(coords)
            return (x - bx0) / sx, (y - by0) / sy
        x0, y0, x1, y1 = as_box(coords)
        return (x0 - bx0) / sx, (y0 - by0) / sy, (x1 - bx0) / sx, (y1 - by0) / sy

    def compose(self, inner: CropMap) -> CropMap:
        """The map of a crop taken from this crop: ``inner``'s box is in this crop's coordinates.

        >>> CropMap((0.5, 0.5, 1.0, 1.0)).compose(CropMap((0.0, 0.0, 0.5, 0.5)))
        CropMap(box_in_original_norm=(0.5, 0.5, 0.75, 0.75))
        """
        x0, y0, x1, y1 = self.to_original(inner.box_in_original_norm)  # type: ignore[misc]
        return CropMap((max(0.0, x0), max(0.0, y0), min(1.0, x1), min(1.0, y1)))


class ToolError(GeometryError):
    """The caller (not the model) misused a tool: bad context, images or tool name."""


@dataclass(frozen=True, eq=False)
class ToolResult:
    """What a tool call returns: a new observation and / or text, or an error text.

    Attributes:
        image: ``uint8 (H, W, 3)`` new observation, or None (errors).
        text: short message for the model (always set).
        error: why the call failed, or None when it worked.
        crop: where ``image`` sits in the original image, or None (errors).
    """

    image: np.ndarray | None
    text: str
    error: str | None = None
    crop: CropMap | None = None


@dataclass(frozen=True)
class ToolContext:
    """Coordinate space, per-observation geometry and zoom knobs shared by every tool call.

    Attributes:
        space: the space the model speaks: ``K1000`` (integers in [0, 1000) of each observation)
            or ``RESIZED_PX`` (pixels of the resized observation, needs ``frames``); ``NORM``
            and ``ORIG_PX`` work too.
        frames: ``frames[i]`` is observation ``i``'s original and resized size; needed for the
            pixel spaces (then one per observation), optional otherwise.
        crops: ``crops[i]`` places observation ``i`` in the original; ``crops[0]`` is normally
            the identity. One per observation.
        min_side_px: smallest zoom side in ORIGINAL pixels (one 28 px vision patch by default).
        max_aspect: largest zoom ``long / short`` side. Qwen's ``smart_resize`` rejects ratios
            above 200 and rounding each side to ``factor`` can double a ratio, so at most 100;
            50 keeps a one-line text strip while the short side stays a few patches.
        pixel_budget: pixel count a zoomed crop is resized to (the processor's ``max_pixels``).
        factor: zoom sides are multiples of this (28 for Qwen2/2.5-VL, 32 for Qwen3-VL).
    """

    space: CoordSpace
    frames: tuple[Frame, ...] = ()
    crops: tuple[CropMap, ...] = (CropMap(),)
    min_side_px: int = 28
    max_aspect: float = 50.0
    pixel_budget: int = 1280 * 28 * 28
    factor: int = QWEN_FACTOR

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "space", CoordSpace(self.space))
        except ValueError as err:
            raise ToolError(f"ToolContext.space: unknown coordinate space {self.space!r}") from err
        object.__setattr__(self, "frames", tuple(self.frames))
        object.__setattr__(self, "crops", tuple(self.crops))
        if not self.crops or not all(isinstance(c, CropMap) for c in self.crops):
            raise ToolError(
                f"ToolContext.crops must be a non-empty tuple of CropMap, got {self.crops!r}"
            )
        if not all(isinstance(f, Frame) for f in self.frames):
            raise ToolError(f"ToolContext.frames must hold Frame values, got {self.frames!r}")
        if self.space in (CoordSpace.RESIZED_PX, CoordSpace.ORIG_PX) and len(self.frames) != len(
            self.crops
        ):
            raise ToolError(
                f"ToolContext.frames: space {self.space.value!r} needs one Frame per observation "
                f"({len(self.crops)}), got {len(self.frames)}"
            )
        for name, lo in (("min_side_px", 1), ("factor", 1), ("pixel_budget", self.factor**2)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < lo:
                raise ToolError(f"ToolContext.{name} must be an int >= {lo}, got {value!r}")
        if not 1.0 <= self.max_aspect <= QWEN_MAX_RATIO / 2:
            raise ToolError(
                f"ToolContext.max_aspect must be in [1, {QWEN_MAX_RATIO / 2}], got {self.max_aspect!r}"
            )

    @classmethod
    def start(cls, space: CoordSpace | str, image_size: ImageSize, **knobs: Any) -> ToolContext:
        """Context of an episode whose only observation is the original image of ``image_size``,
        resized for the encoder with ``max_pixels = pixel_budget``.

        Args:
            space: the model's coordinate space.
            image_size: the original image's size in pixels.
            **knobs: any of ``min_side_px``, ``max_aspect``, ``pixel_budget``, ``factor``.
        """
        budget = knobs.get("pixel_budget", cls.pixel_budget)
        factor = knobs.get("factor", cls.factor)
        frame = frame_for(image_size, factor, min(QWEN_MIN_PIXELS, budget), budget)
        return cls(space=CoordSpace(space), frames=(frame,), crops=(CropMap(),), **knobs)

    @property
    def n_observations(self) -> int:
        """Number of observations this context describes."""
        return len(self.crops)

    def frame(self, observation: int) -> Frame | None:
        """Frame of ``observation`` (None when the context holds no frames)."""
        return self.frames[observation] if self.frames else None

    def observe(self, result: ToolResult, frame: Frame | None = None) -> ToolContext:
        """This context with ``result`` appended as the next observation.

        Args:
            result: a successful tool result (image and crop set).
            frame: the result's frame as the processor resizes it; by default the image size
                resized with ``max_pixels = pixel_budget`` (a zoom result is then unchanged).
        """
        if result.error is not None or result.image is None or result.crop is None:
            raise ToolError(
                f"ToolContext.observe: result is not a successful tool result: {result.text!r}"
            )
        if frame is None:
            size = ImageSize(int(result.image.shape[1]), int(result.image.shape[0]))
            frame = frame_for(
                size, self.factor, min(QWEN_MIN_PIXELS, self.pixel_budget), self.pixel_budget
            )
        frames = (*self.frames, frame) if self.frames else ()
        return dataclasses.replace(self, frames=frames, crops=(*self.crops, result.crop))

    def to_original_norm(self, coords: Sequence[float], observation: int = -1) -> Point | Box:
        """Map a point or box from the model space of ``observation`` to original-normalized."""
        sx, sy = space_scale(self.space, self.frame(observation))
        scaled = [v / (sx if k % 2 == 0 else sy) for k, v in enumerate(coords)]
        return self.crops[observation].to_original(scaled)

    def from_original_norm(self, coords: Sequence[float], observation: int = -1) -> Point | Box:
        """Map a point or box from original-normalized to the model space of ``observation``."""
        local = self.crops[observation].from_original(coords)
        sx, sy = space_scale(self.space, self.frame(observation))
        return tuple(v * (sx if k % 2 == 0 else sy) for k, v in enumerate(local))  # type: ignore[return-value]


def _grow(lo: float, hi: float, side: float, limit: float) -> tuple[float, float]:
    """Widen ``[lo, hi]`` to ``min(side, limit)`` around its centre, shifted inside [0, limit]."""
    side = min(side, limit)
    if hi - lo >= side:
        return lo, hi
    centre = (lo + hi) / 2.0
    lo, hi = centre - side / 2.0, centre + side / 2.0
    if lo < 0.0:
        lo, hi = 0.0, side
    elif hi > limit:
        lo, hi = limit - side, limit
    return lo, hi


def plan_crop(
    box_norm: Sequence[float], orig: ImageSize, min_side_px: int, max_aspect: float
) -> BoxPx:
    """Pixel box of the original image that a zoom on ``box_norm`` crops.

    The box is clamped to the image, each side is grown to ``min_side_px`` around the box centre,
    then the short side is grown until ``long / short <= max_aspect``; a grown box that would
    leave the image is shifted back inside, and the result is rounded outward to whole pixels.
    When the image itself is smaller than ``min_side_px`` (or more elongated than
    ``max_aspect``) the bound is met as far as the image allows.

    Args:
        box_norm: ``(x0, y0, x1, y1)`` normalized in the original image, ``x0 < x1``,
            ``y0 < y1``, overlapping the image.
        orig: the original image size in pixels.
        min_side_px: smallest crop side, in original pixels (>= 1).
        max_aspect: largest ``long side / short side`` of the crop (>= 1).

    Returns:
        ``(x0, y0, x1, y1)`` integer pixels, x1 / y1 exclusive, containing the clamped box.

    >>> plan_crop((0.5, 0.5, 0.51, 0.51), ImageSize(1000, 1000), 28, 50.0)
    (491, 491, 519, 519)
    """
    x0, y0, x1, y1 = as_box(box_norm)
    width, height = orig.width, orig.height
    x0, x1 = min(max(x0, 0.0), 1.0) * width, min(max(x1, 0.0), 1.0) * width
    y0, y1 = min(max(y0, 0.0), 1.0) * height, min(max(y1, 0.0), 1.0) * height
    if not (x0 < x1 and y0 < y1):
        raise GeometryError(f"plan_crop: box {tuple(box_norm)!r} does not overlap the image")
    x0, x1 = _grow(x0, x1, float(min_side_px), width)
    y0, y1 = _grow(y0, y1, float(min_side_px), height)
    w, h = x1 - x0, y1 - y0
    if w > h * max_aspect:
        y0, y1 = _grow(y0, y1, w / max_aspect, height)
    elif h > w * max_aspect:
        x0, x1 = _grow(x0, x1, h / max_aspect, width)
    # Tiny float error must not add a whole pixel row: snap within 1e-6 px before rounding out.
    px0 = max(0, math.floor(x0 + 1e-6))
    py0 = max(0, math.floor(y0 + 1e-6))
    px1 = min(width, math.ceil(x1 - 1e-6))
    py1 = min(height, math.ceil(y1 - 1e-6))
    return px0, py0, max(px1, px0 + 1), max(py1, py0 + 1)


def zoom_size(width: int, height: int, pixel_budget: int, factor: int) -> tuple[int, int]:
    """Size a ``width x height`` crop is resized to: the aspect kept, both sides multiples of
    ``factor`` (>= ``factor``), and the pixel count as close to ``pixel_budget`` as the
    multiples allow without exceeding it (when ``pixel_budget >= factor**2``).

    Such an image passes Qwen's ``smart_resize`` with ``max_pixels = pixel_budget`` unchanged,
    so the vision encoder sees the zoomed view at exactly this size.

    Returns:
        ``(width, height)`` in pixels.

    >>> zoom_size(100, 50, 448 * 252, 28)
    (448, 224)
    """
    beta = math.sqrt(pixel_budget / (width * height))
    out_w = max(factor, math.floor(width * beta / factor) * factor)
    out_h = max(factor, math.floor(height * beta / factor) * factor)
    if out_w * out_h > pixel_budget:  # one side was held at one factor; shrink the other
        if out_w >= out_h:
            out_w = max(factor, pixel_budget // (out_h * factor) * factor)
        else:
            out_h = max(factor, pixel_budget // (out_w * factor) * factor)
    return out_w, out_h


def crop_resize(original: np.ndarray, box_px: BoxPx, size: tuple[int, int]) -> np.ndarray:
    """Crop ``box_px`` from ``original`` and resize it to ``size`` with a Lanczos filter.

    Args:
        original: ``uint8 (H, W, 3)`` full-resolution image.
        box_px: integer ``(x0, y0, x1, y1)`` inside the image, x1 / y1 exclusive.
        size: ``(width, height)`` of the result in pixels.

    Returns:
        ``uint8 (size[1], size[0], 3)``, a new array.
    """
    x0, y0, x1, y1 = box_px
    region = Image.fromarray(np.ascontiguousarray(original[y0:y1, x0:x1]), mode="RGB")
    return np.asarray(region.resize(size, Image.Resampling.LANCZOS)).copy()


def draw_marks(
    image: np.ndarray,
    box_norm: Sequence[float] | None,
    points_norm: Sequence[Sequence[float]],
) -> np.ndarray:
    """Copy of ``image`` with a box outline and numbered point marks (Set-of-Mark style).

    Args:
        image: ``uint8 (H, W, 3)``.
        box_norm: ``(x0, y0, x1, y1)`` normalized in ``image``, or None.
        points_norm: ``(x, y)`` points normalized in ``image``; mark ``k`` is labelled
            ``k + 1``.

    Returns:
        ``uint8 (H, W, 3)``, a new array.
    """
    canvas = Image.fromarray(np.ascontiguousarray(image), mode="RGB")
    width, height = canvas.size
    draw = ImageDraw.Draw(canvas)
    line = max(1, round(min(width, height) / 200))
    if box_norm is not None:
        x0, y0, x1, y1 = as_box(box_norm)
        draw.rectangle(
            (
                x0 * width,
                y0 * height,
                max(x0 * width, x1 * width - 1),
                max(y0 * height, y1 * height - 1),
            ),
            outline=MARK_RGB,
            width=line,
        )
    r = max(6, round(min(width, height) / 40))
    font = ImageFont.load_default(size=max(8, round(r * 1.3)))
    for k, point in enumerate(points_norm):
        x, y = as_point(point)
        x, y = min(max(x * width, 0.0), width - 1.0), min(max(y * height, 0.0), height - 1.0)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=MARK_RGB, outline=(255, 255, 255))
        draw.text((x, y), str(k + 1), font=font, fill=(255, 255, 255), anchor="mm")
    return np.asarray(canvas).copy()
