"""``hires_tiny`` / ``hires_tiny_small``: tiny targets that a training pixel budget cannot resolve.

How "unreadable at the budget" is verified: each element's appearance is resampled from the
screen at a scale (1 = full resolution; ``budget_w / W`` = what the vision encoder sees when the
processor resizes the screen to ~448x252 px, bicubic as Qwen's processor does). The target is
compared with its *nearest look-alike* (the closest other button, or the closest same-colour
glyph) and with *itself shifted by a quarter pixel* at that scale (a difference no reader can
use, since nobody knows where a label sits to a quarter pixel):

* full resolution: some pixel of the look-alike differs from the target by more than twice
  what the quarter-pixel shift changes (max abs difference): a different stroke is visible;
* at the budget, labels: on average the look-alike is closer to the target than the shifted
  target is (mean abs difference ratio < 0.7): the label cannot be identified;
* at the budget, glyphs: the textures average out to one flat colour, the look-alike differs
  by a few grey levels (mean abs < 7 of 255) against > 30 at full resolution.

Thresholds were checked with margin on seeds 0-39 (worst cases: full-resolution ratio 2.3,
label ratio 0.58, glyph difference 5.4); the tests run the first few seeds.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from PIL import Image

from perception_tools.geometry import ImageSize, smart_resize
from perception_tools.tools import TOOLS, ToolContext
from sim.screens import LEVELS, generate_screen
from sim.screens.hires import glyph_mask
from sim.screens.hires_vocab import GLYPH_PATTERNS

BUDGET = 448 * 252
SEEDS = range(6)


def _look(image: Image.Image, box_px: tuple[int, ...], scale: float, shift: float) -> np.ndarray:
    """The element at ``box_px`` resampled at ``scale``, moved by ``shift`` output pixels."""
    x0, y0, x1, y1 = box_px
    w, h = math.ceil((x1 - x0) * scale) + 1, math.ceil((y1 - y0) * scale) + 1
    sx, sy = x0 - shift / scale, y0 - shift / scale
    region = (sx, sy, sx + w / scale, sy + h / scale)
    return np.asarray(image.resize((w, h), Image.Resampling.BICUBIC, box=region), dtype=np.float64)


def _separation(screen, scale: float, stat=np.mean) -> tuple[float, float]:
    """(distance to the nearest look-alike, distance to the target moved by 1/4 px), each the
    ``stat`` (mean or max) of the absolute pixel difference."""
    image = Image.fromarray(screen.image)
    height, width = screen.image.shape[:2]
    boxes = [
        tuple(round(v * s) for v, s in zip(e.box_norm, (width, height) * 2, strict=True))
        for e in screen.elements
    ]
    t = screen.target_index
    rivals = [
        i
        for i, e in enumerate(screen.elements)
        if i != t and e.colour == screen.target.colour and e.kind == screen.target.kind
    ]
    assert rivals, "every target needs look-alikes"
    base = _look(image, boxes[t], scale, 0.0)
    nearest = min(stat(np.abs(base - _look(image, boxes[i], scale, 0.0))) for i in rivals)
    jitter = stat(np.abs(base - _look(image, boxes[t], scale, 0.25)))
    return float(nearest), float(jitter)


def _budget_scale(screen) -> float:
    height, width = screen.image.shape[:2]
    _, budget_w = smart_resize(height, width, 28, 4 * 28 * 28, BUDGET)
    return budget_w / width


@pytest.mark.parametrize("name", ["hires_tiny", "hires_tiny_small"])
def test_hires_levels_are_deterministic_and_targets_tiny(name):
    level = LEVELS[name]
    assert level.width * level.height >= (2560 * 1440 if name == "hires_tiny" else 1280 * 736)
    assert level.width % 32 == 0 and level.height % 32 == 0
    for seed in SEEDS:
        a, b = generate_screen(name, seed), generate_screen(name, seed)
        np.testing.assert_array_equal(a.image, b.image)
        assert (a.instruction, a.target_box_norm) == (b.instruction, b.target_box_norm)
        assert a.image.shape == (level.height, level.width, 3)
        for element in a.elements:
            x0, y0, x1, y1 = element.box_norm
            assert (x1 - x0) * (y1 - y0) < 0.005  # every element, the target included
    assert not np.array_equal(generate_screen(name, 0).image, generate_screen(name, 1).image)


def test_hires_tiny_names_a_unique_label_on_identical_buttons():
    for seed in SEEDS:
        screen = generate_screen("hires_tiny", seed)
        labels = [e.label for e in screen.elements]
        assert len(set(labels)) == len(labels) >= LEVELS["hires_tiny"].n_elements[0]
        assert re.fullmatch(r"(Click|Select) '([A-Za-z]+)'\.", screen.instruction)
        assert f"'{screen.target.label}'" in screen.instruction
        height, width = screen.image.shape[:2]
        sizes = {
            (
                round((e.box_norm[2] - e.box_norm[0]) * width),
                round((e.box_norm[3] - e.box_norm[1]) * height),
            )
            for e in screen.elements
        }
        assert len(sizes) == 1  # only the label tells buttons apart
        (_, button_h), scale = sizes.pop(), _budget_scale(screen)
        font_px = max(7, int(button_h * 0.45))  # sim.screens.fonts.font_size_for
        assert font_px >= 11  # readable at full resolution (and in a zoom)
        assert font_px * scale < 3.0  # a 2-3 px smudge at the budget


def test_hires_tiny_small_targets_have_same_colour_twins():
    for pattern in GLYPH_PATTERNS:
        assert glyph_mask(pattern, 16).sum() == 128  # every texture inks half the tile
    for seed in SEEDS:
        screen = generate_screen("hires_tiny_small", seed)
        colour, pattern = screen.target.label.split(" ")
        assert screen.instruction == f"Click the {colour} {pattern} icon."
        assert screen.target.colour == colour
        twins = [e for e in screen.elements if e.colour == colour and e is not screen.target]
        assert twins and all(e.label != screen.target.label for e in twins)
        assert sum(e.label == screen.target.label for e in screen.elements) == 1


@pytest.mark.parametrize("name", ["hires_tiny", "hires_tiny_small"])
def test_targets_are_distinct_at_full_resolution(name):
    for seed in SEEDS:
        nearest, jitter = _separation(generate_screen(name, seed), 1.0, np.max)
        assert nearest > 2.0 * jitter, (seed, nearest, jitter)


def test_labels_are_unreadable_at_the_budget():
    for seed in SEEDS:
        screen = generate_screen("hires_tiny", seed)
        nearest, jitter = _separation(screen, _budget_scale(screen))
        assert nearest < 0.7 * jitter, (seed, nearest, jitter)


def test_glyph_textures_average_out_at_the_budget():
    for seed in SEEDS:
        screen = generate_screen("hires_tiny_small", seed)
        nearest_full, _ = _separation(screen, 1.0)
        nearest_low, _ = _separation(screen, _budget_scale(screen))
        assert nearest_full > 30.0 and nearest_low < 7.0, (seed, nearest_full, nearest_low)


def test_a_zoom_makes_the_glyph_target_distinguishable_again():
    screen = generate_screen("hires_tiny_small", 0)
    height, width = screen.image.shape[:2]
    twins = [e for e in screen.elements if e.colour == screen.target.colour]
    x0 = min(e.box_norm[0] for e in twins) * 1000
    x1 = max(e.box_norm[2] for e in twins) * 1000
    y0, y1 = screen.target.box_norm[1] * 1000, screen.target.box_norm[3] * 1000
    ctx = ToolContext.start("k1000", ImageSize(width, height), pixel_budget=BUDGET)
    zoom = TOOLS["zoom_in"]([screen.image], {"bbox_2d": [x0 - 5, y0 - 5, x1 + 5, y1 + 5]}, ctx)
    assert zoom.error is None and zoom.image.size <= 3 * BUDGET
    view_h, view_w = zoom.image.shape[:2]
    corners = []
    for element in twins:
        bx0, by0, bx1, by1 = zoom.crop.from_original(element.box_norm)
        corners.append((round(bx0 * view_w), round(by0 * view_h)))
        side = round((bx1 - bx0) * view_w) - 2  # the tile as the zoom shows it, at full size
    assert side >= 48  # a 16 px tile is now ~100 px: every stripe spans several pixels

    def look(corner: tuple[int, int]) -> np.ndarray:
        return zoom.image[corner[1] : corner[1] + side, corner[0] : corner[0] + side].astype(float)

    k = twins.index(screen.target)
    others = [look(c) for i, c in enumerate(corners) if i != k]
    in_zoom = min(np.abs(look(corners[k]) - other).mean() for other in others)
    at_budget, _ = _separation(screen, _budget_scale(screen))
    assert in_zoom > 20.0 and in_zoom > 5 * at_budget, (in_zoom, at_budget)
