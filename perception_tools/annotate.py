"""Draw grounding predictions onto screenshots and tile screenshots into a grid (PIL + numpy).

Boxes and points are normalized (floats in [0, 1], x right, y down; boxes xyxy), as at the env
boundary. Images are ``uint8 (H, W, 3)`` RGB arrays; inputs are never modified.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from perception_tools.geometry import GeometryError, as_box, as_point, box_center, point_in_box

TARGET_RGB = (0, 200, 0)
"""Ground-truth box outline."""
HIT_RGB = (30, 90, 255)
"""Prediction that hits the target."""
MISS_RGB = (255, 30, 30)
"""Prediction that misses the target."""
_CAPTION_BG = (20, 20, 24)
_CAPTION_FG = (245, 245, 245)


def _rgb_image(image: np.ndarray) -> Image.Image:
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise GeometryError(f"image must be uint8 (H, W, 3), got {array.dtype} {array.shape}")
    return Image.fromarray(np.ascontiguousarray(array), mode="RGB")


def _to_px(box_norm: Sequence[float], width: int, height: int) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = as_box(box_norm)
    return x0 * width, y0 * height, x1 * width - 1, y1 * height - 1


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=max(8, size))


def draw_prediction(
    image: np.ndarray,
    target_box_norm: Sequence[float],
    point_norm: Sequence[float] | None = None,
    box_norm: Sequence[float] | None = None,
    caption: str | None = None,
    hit: bool | None = None,
) -> np.ndarray:
    """Copy of ``image`` with the target box, the predicted point / box and a caption.

    The target box is outlined in green; the prediction is blue when it hits and red when it
    misses; the point is a circled crosshair.

    Args:
        image: ``uint8 (H, W, 3)`` screenshot.
        target_box_norm: ground-truth ``(x0, y0, x1, y1)`` normalized.
        point_norm: predicted ``(x, y)`` normalized, or ``None``; off-image points are clipped
            to the border so they stay visible.
        box_norm: predicted ``(x0, y0, x1, y1)`` normalized, or ``None``.
        caption: text for a dark strip added under the image, or ``None`` for no strip.
        hit: colour the prediction as a hit / miss; ``None`` decides by whether the point (else
            the predicted box's centre) lies in the target box.

    Returns:
        ``uint8 (H + strip, W, 3)``; ``strip`` is 0 without a caption.

    >>> blank = np.zeros((100, 100, 3), np.uint8)
    >>> draw_prediction(blank, (0.1, 0.1, 0.5, 0.5), point_norm=(0.3, 0.3), caption="ok").shape
    (120, 100, 3)
    """
    canvas = _rgb_image(image).copy()
    width, height = canvas.size
    draw = ImageDraw.Draw(canvas)
    line = max(1, round(min(width, height) / 150))
    draw.rectangle(_to_px(target_box_norm, width, height), outline=TARGET_RGB, width=line)
    if hit is None:
        probe = point_norm
        if probe is None and box_norm is not None:
            probe = box_center(box_norm)
        hit = probe is not None and point_in_box(probe, target_box_norm)
    colour = HIT_RGB if hit else MISS_RGB
    if box_norm is not None:
        draw.rectangle(_to_px(box_norm, width, height), outline=colour, width=line)
    if point_norm is not None:
        x, y = as_point(point_norm)
        x = min(max(x * width, 0.0), width - 1.0)
        y = min(max(y * height, 0.0), height - 1.0)
        r = max(4, round(min(width, height) / 40))
        draw.ellipse((x - r, y - r, x + r, y + r), outline=colour, width=line)
        draw.line((x - 1.6 * r, y, x + 1.6 * r, y), fill=colour, width=line)
        draw.line((x, y - 1.6 * r, x, y + 1.6 * r), fill=colour, width=line)
    if caption is None:
        return np.asarray(canvas).copy()
    size = max(10, round(min(width, height) / 16))
    strip = Image.new("RGB", (width, round(size * 2)), _CAPTION_BG)
    ImageDraw.Draw(strip).text(
        (size // 2, size), caption, font=_font(size), fill=_CAPTION_FG, anchor="lm"
    )
    out = Image.new("RGB", (width, height + strip.height))
    out.paste(canvas, (0, 0))
    out.paste(strip, (0, height))
    return np.asarray(out).copy()


def tile_images(
    images: Sequence[np.ndarray],
    cols: int,
    pad: int = 4,
    fill: tuple[int, int, int] = (255, 255, 255),
) -> np.ndarray:
    """Arrange images in a grid, row by row, each cell as large as the largest image.

    Args:
        images: ``uint8 (H_i, W_i, 3)`` arrays; sizes may differ (each sits top-left in its cell).
        cols: number of columns (>= 1); rows follow from ``len(images)``.
        pad: pixels between cells and around the grid.
        fill: RGB of the padding and of unused cell area.

    Returns:
        ``uint8 (rows * (H_max + pad) + pad, cols * (W_max + pad) + pad, 3)``.

    >>> tile_images([np.zeros((2, 3, 3), np.uint8)] * 3, cols=2, pad=1).shape
    (7, 9, 3)
    """
    if not images:
        raise GeometryError("tile_images: needs at least one image")
    if not isinstance(cols, int) or cols < 1:
        raise GeometryError(f"tile_images: cols must be an int >= 1, got {cols!r}")
    arrays = [np.asarray(_rgb_image(im)) for im in images]
    cell_h = max(a.shape[0] for a in arrays)
    cell_w = max(a.shape[1] for a in arrays)
    rows = math.ceil(len(arrays) / cols)
    grid = np.empty((rows * (cell_h + pad) + pad, cols * (cell_w + pad) + pad, 3), np.uint8)
    grid[...] = np.asarray(fill, np.uint8)
    for i, a in enumerate(arrays):
        r, c = divmod(i, cols)
        y, x = pad + r * (cell_h + pad), pad + c * (cell_w + pad)
        grid[y : y + a.shape[0], x : x + a.shape[1]] = a
    return grid
