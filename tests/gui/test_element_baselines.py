"""Instruction-blind grounding baselines (``gui.grounding.baselines``) against hand counts."""

from __future__ import annotations

import pytest

from gui.grounding.baselines import NAMES, mean_baselines, screen_baselines
from gui.grounding.sources import SyntheticSource
from sim.screens.screen import Element


def _el(box, colour="red", shape="circle", kind="shape"):
    return Element(kind, box, "", colour, shape, None, "img")


def test_four_elements_by_hand():
    target = _el((0.0, 0.0, 0.1, 0.1), "red", "circle")
    others = [
        _el((0.2, 0.2, 0.35, 0.35), "red", "square"),
        _el((0.4, 0.4, 0.9, 0.9), "blue", "circle"),  # largest
        _el((0.0, 0.5, 0.15, 0.65), "green", "star", kind="button"),
    ]
    m = screen_baselines([target, *others], target.box_norm)
    assert m == {
        "random_element": 0.25,
        "largest_element": 0.0,
        "same_colour": 0.5,
        "same_shape": 0.5,
        "same_kind": pytest.approx(1 / 3),
    }
    big = others[1]
    assert screen_baselines([target, *others], big.box_norm)["largest_element"] == 1.0
    assert screen_baselines([target], target.box_norm) == dict.fromkeys(NAMES, 1.0)
    with pytest.raises(ValueError, match="no elements"):
        screen_baselines([], target.box_norm)


def test_synthetic_levels_random_element_is_one_over_count():
    src = SyntheticSource("basic2")
    samples = [src.sample(1_000_000 + i) for i in range(30)]
    m = mean_baselines((s.elements, s.target_box_norm) for s in samples)
    assert m["random_element"] == pytest.approx(sum(1 / len(s.elements) for s in samples) / 30)
    assert m["same_colour"] == 1.0  # basic2 gives every element its own colour
    assert mean_baselines([((), (0, 0, 1, 1))]) == {}
