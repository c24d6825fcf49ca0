"""``retarget_screen``: the same pixels with another named target (instruction-focused batches)."""

from __future__ import annotations

import numpy as np
import pytest

from sim.errors import ScreenGenerationError
from sim.screens import generate_screen, get_level
from sim.screens.generator import retarget_screen
from sim.screens.instruction import applies, describe


def _namable(screen, level):
    lv = get_level(level)
    rng = np.random.default_rng(0)
    return {
        i
        for i in range(len(screen.elements))
        if any(describe(screen.elements, i, r, lv, rng) for r in lv.references)
    }


@pytest.mark.parametrize("level", ["shapes", "basic2", "widgets"])
def test_variants_share_pixels_and_name_every_namable_element(level):
    for seed in range(12):
        screen = generate_screen(level, seed)
        namable = _namable(screen, level)
        variants = [retarget_screen(screen, level, v) for v in range(len(namable))]
        assert variants[0] is screen
        assert {v.target_index for v in variants} == namable  # m variants, m different targets
        for v in variants:
            assert v.image is screen.image and v.elements is screen.elements
            assert v.target_box_norm == screen.elements[v.target_index].box_norm
            assert applies(v.reference, v.target, get_level(level))
        again = [retarget_screen(screen, level, v) for v in range(len(namable))]
        assert [v.instruction for v in again] == [v.instruction for v in variants]


def test_the_instruction_names_the_new_target():
    screen = generate_screen("shapes", 3)
    for v in range(1, 6):
        t = retarget_screen(screen, "shapes", v)
        words = t.instruction.lower()
        assert t.target.shape in words or t.target.colour in words, t.instruction


def test_bad_variant_and_panel_levels_are_refused():
    screen = generate_screen("shapes", 0)
    with pytest.raises(ScreenGenerationError, match="variant"):
        retarget_screen(screen, "shapes", -1)
    panel = generate_screen("hires_panel", 0)
    assert retarget_screen(panel, "hires_panel", 0) is panel  # variant 0 is always the screen
    with pytest.raises(ScreenGenerationError, match="panel"):
        retarget_screen(panel, "hires_panel", 1)
