"""Annotated screenshots and image grids."""

from __future__ import annotations

import numpy as np
import pytest

from perception_tools.annotate import HIT_RGB, MISS_RGB, TARGET_RGB, draw_prediction, tile_images
from perception_tools.geometry import GeometryError


def _grey(h: int = 100, w: int = 200) -> np.ndarray:
    return np.full((h, w, 3), 128, np.uint8)


def _has(image: np.ndarray, rgb: tuple[int, int, int]) -> bool:
    return bool(np.all(image == np.array(rgb, np.uint8), axis=2).any())


def test_returns_copy_and_leaves_input_alone() -> None:
    image = _grey()
    out = draw_prediction(image, (0.1, 0.1, 0.5, 0.5), point_norm=(0.3, 0.3))
    assert out.shape == image.shape and out.dtype == np.uint8
    assert np.all(image == 128)
    assert not np.shares_memory(out, image)


def test_target_box_outline_is_green_at_its_edges() -> None:
    out = draw_prediction(_grey(), (0.1, 0.2, 0.5, 0.6))
    assert tuple(out[20, 20]) == TARGET_RGB  # top-left corner: x = 0.1 * 200, y = 0.2 * 100
    assert tuple(out[40, 60]) == (128, 128, 128)  # inside the box stays untouched


@pytest.mark.parametrize(
    ("point", "rgb"),
    [((0.3, 0.4), HIT_RGB), ((0.9, 0.9), MISS_RGB)],
)
def test_point_colour_follows_hit(point: tuple[float, float], rgb: tuple[int, int, int]) -> None:
    out = draw_prediction(_grey(), (0.1, 0.2, 0.5, 0.6), point_norm=point)
    x, y = round(point[0] * 200), round(point[1] * 100)
    assert _has(out[y - 1 : y + 2, x - 1 : x + 2], rgb)  # the crosshair centre
    other = MISS_RGB if rgb == HIT_RGB else HIT_RGB
    assert not _has(out, other)


def test_box_prediction_uses_centre_and_explicit_hit_overrides() -> None:
    miss_box = (0.7, 0.7, 0.9, 0.9)
    assert _has(draw_prediction(_grey(), (0.1, 0.1, 0.5, 0.5), box_norm=miss_box), MISS_RGB)
    forced = draw_prediction(_grey(), (0.1, 0.1, 0.5, 0.5), box_norm=miss_box, hit=True)
    assert _has(forced, HIT_RGB) and not _has(forced, MISS_RGB)


def test_caption_adds_a_strip_below() -> None:
    image = _grey()
    out = draw_prediction(image, (0.1, 0.1, 0.5, 0.5), caption="pred (0.3, 0.3)")
    assert out.shape[0] > image.shape[0] and out.shape[1:] == image.shape[1:]
    assert np.array_equal(
        out[: image.shape[0], 100:], draw_prediction(image, (0.1, 0.1, 0.5, 0.5))[:, 100:]
    )
    assert len(np.unique(out[image.shape[0] :].reshape(-1, 3), axis=0)) > 1  # text was drawn


def test_off_image_point_is_clipped_not_raised() -> None:
    out = draw_prediction(_grey(), (0.1, 0.1, 0.5, 0.5), point_norm=(1.5, -0.2))
    assert _has(out, MISS_RGB)


def test_bad_image_raises() -> None:
    with pytest.raises(GeometryError, match="uint8"):
        draw_prediction(np.zeros((4, 4), np.uint8), (0, 0, 1, 1))


def test_tile_images_places_each_image() -> None:
    a = np.full((10, 20, 3), 10, np.uint8)
    b = np.full((6, 8, 3), 200, np.uint8)
    grid = tile_images([a, b, a], cols=2, pad=2)
    assert grid.shape == (2 * (10 + 2) + 2, 2 * (20 + 2) + 2, 3)
    assert np.all(grid[2:12, 2:22] == 10)
    assert np.all(grid[2:8, 24:32] == 200)
    assert np.all(grid[14:24, 2:22] == 10)
    assert np.all(grid[14:24, 24:44] == 255)  # empty cell is fill
    with pytest.raises(GeometryError):
        tile_images([], cols=2)
    with pytest.raises(GeometryError):
        tile_images([a], cols=0)
