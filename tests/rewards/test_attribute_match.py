"""``attribute_match``: partial credit for the attributes of the instruction the clicked element
shares, hand-computed on a four-element screen, and wired through the grounding env."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rewards.composite import RewardSpec, score
from rewards.grounding import attribute_match, element_at
from rewards.types import Prediction, RewardTarget


@dataclass(frozen=True)
class El:
    kind: str
    box_norm: tuple[float, float, float, float]
    colour: str
    shape: str | None
    role: str = "img"


RED_CIRCLE = El("shape", (0.0, 0.0, 0.2, 0.2), "red", "circle")
BLUE_CIRCLE = El("shape", (0.5, 0.0, 0.7, 0.2), "blue", "circle")
RED_SQUARE = El("shape", (0.0, 0.5, 0.2, 0.7), "red", "square")
BLUE_SQUARE = El("shape", (0.5, 0.5, 0.7, 0.7), "blue", "square")
SCREEN = (RED_CIRCLE, BLUE_CIRCLE, RED_SQUARE, BLUE_SQUARE)
CENTRES = [(0.1, 0.1), (0.6, 0.1), (0.1, 0.6), (0.6, 0.6)]


@pytest.mark.parametrize(
    ("clicked", "want"),
    [(0, 1.0), (1, 0.5), (2, 0.5), (3, 0.0)],  # target / same shape / same colour / neither
)
def test_colour_reference_credits_each_shared_attribute(clicked: int, want: float) -> None:
    """ "the red circle": the blue circle and the red square share one of two attributes."""
    r = attribute_match(CENTRES[clicked], SCREEN, 0, "colour")
    assert r.value == want and r.terms == {"attribute_match": want}


def test_shape_reference_credits_only_the_outline() -> None:
    """ "the circle" (target index 1, the blue circle): the red circle has the outline too; a
    blue square shares only the colour, which the instruction did not name."""
    assert attribute_match(CENTRES[0], SCREEN, 1, "shape").value == 1.0
    assert attribute_match(CENTRES[3], SCREEN, 1, "shape").value == 0.0
    assert attribute_match(CENTRES[2], SCREEN, 1, "shape").value == 0.0


def test_other_references_score_the_target_only() -> None:
    assert attribute_match(CENTRES[2], SCREEN, 2, "position").value == 1.0
    assert attribute_match(CENTRES[0], SCREEN, 2, "position").value == 0.0  # same colour


@pytest.mark.parametrize(
    "point", [(0.35, 0.35), (1.5, 0.1), (float("nan"), 0.1), None, "here", (0.1,)]
)
def test_background_off_image_and_garbage_score_zero(point: object) -> None:
    assert attribute_match(point, SCREEN, 0, "colour").value == 0.0


def test_missing_or_bad_target_index_scores_zero() -> None:
    assert attribute_match(CENTRES[0], SCREEN, None, "colour").value == 0.0
    assert attribute_match(CENTRES[0], SCREEN, 4, "colour").value == 0.0
    assert attribute_match(CENTRES[0], (), 0, "colour").value == 0.0


def test_element_at_picks_the_smallest_of_nested_boxes() -> None:
    panel = El("shape", (0.0, 0.0, 1.0, 1.0), "green", "square")
    assert element_at((0.1, 0.1), (panel, RED_CIRCLE)) == 1
    assert element_at((0.9, 0.9), (panel, RED_CIRCLE)) == 0


def test_composite_reads_elements_target_index_and_reference() -> None:
    spec = RewardSpec.from_dict({"point_in_box": 1.0, "attribute_match": 0.5})
    gt = RewardTarget(
        box=RED_CIRCLE.box_norm, meta={"reference": "colour"}, elements=SCREEN, target_index=0
    )
    r = score(spec, Prediction(point=CENTRES[1]), gt)  # the blue circle
    assert r.terms == {"point_in_box": 0.0, "attribute_match": 0.25}
    r = score(spec, Prediction(box=RED_SQUARE.box_norm), gt)  # a box: scored at its centre
    assert r.terms == {"point_in_box": 0.0, "attribute_match": 0.25}
    r = score(spec, Prediction(point=CENTRES[0]), gt)
    assert r.value == 1.5


@pytest.mark.parametrize("level", ["shapes", "widgets"])
def test_grounding_env_scores_partial_credit_on_a_synthetic_screen(level: str) -> None:
    """Against the screen generator's own words (``sim.screens.instruction.noun``)."""
    from gui.grounding.env import make_synthetic_env
    from sim.screens.instruction import noun

    env = make_synthetic_env(level, reward={"point_in_box": 1.0, "attribute_match": 1.0})
    seen = set()
    for task in range(40):
        _, info = env.reset(options={"task_id": task})
        els, ref = info["elements"], info["meta"]["reference"]
        (target,) = [e for e in els if e.box_norm == info["target_box_norm"]]  # not from meta
        for e in els:
            env.reset(options={"task_id": task})
            x0, y0, x1, y1 = e.box_norm
            _, reward, *_, step_info = env.step({"point": ((x0 + x1) / 2, (y0 + y1) / 2)})
            terms = step_info["reward_terms"]
            if e is target:
                want = 1.0
            elif ref == "colour":
                want = ((e.colour == target.colour) + (noun(e) == noun(target))) / 2
            elif ref == "shape":
                want = float(e.shape == target.shape)
            else:
                want = 0.0
            assert terms["attribute_match"] == pytest.approx(want), (task, e, target, ref)
            seen.add(want)
    assert {0.0, 0.5, 1.0} <= seen  # every grade occurred on this level


def test_attribute_match_without_elements_is_a_clear_error(tmp_path) -> None:
    from gui.grounding.env import GroundingEnv, GroundingEnvError
    from gui.grounding.sources import GroundingSample

    class NoElements:  # a dataset source: screenshots without an element list
        name = "real"
        num_samples = 1
        image_size = (64, 64)
        charset = frozenset("Click it.")

        def sample(self, key):
            import numpy as np

            return GroundingSample(
                image=np.zeros((64, 64, 3), np.uint8),
                instruction="Click it.",
                target_box_norm=(0.1, 0.1, 0.2, 0.2),
                sample_id="real:0",
            )

    spec = RewardSpec.from_dict({"point_in_box": 1.0, "attribute_match": 0.5})
    env = GroundingEnv(NoElements(), spec)  # type: ignore[arg-type]
    with pytest.raises(GroundingEnvError, match="'attribute_match' needs the screen's elements"):
        env.reset(options={"task_id": 0})


def test_a_menu_item_is_not_a_button_of_the_same_colour() -> None:
    """ "the red button": a red menu item (a button drawn in a menu) shares the colour only."""
    button = El("button", (0.0, 0.0, 0.2, 0.1), "red", None, role="button")
    item = El("button", (0.5, 0.0, 0.7, 0.1), "red", None, role="menuitem")
    other = El("button", (0.0, 0.5, 0.2, 0.6), "red", None, role="button")
    assert attribute_match((0.6, 0.05), (button, item, other), 0, "colour").value == 0.5
    assert attribute_match((0.1, 0.55), (button, item, other), 0, "colour").value == 1.0
