"""RewardSpec validation and composite scoring."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewards import (
    KNOWN_TERMS,
    Prediction,
    RewardError,
    RewardSpec,
    RewardSpecError,
    RewardTerm,
    score,
    score_many,
)

GT = (0.4, 0.4, 0.6, 0.6)  # 0.2 x 0.2, centre (0.5, 0.5)
ALL_TERMS = {name: 1.0 for name in KNOWN_TERMS}


def test_known_terms_cover_the_registry() -> None:
    expected = {"point_in_box", "iou", "giou", "gaussian_point", "gaussian_plane"}
    expected |= {"gaussian_mass_ratio"}
    expected |= {"distance_decay", "format", "giou01", "action_type", "text_f1"}
    expected |= {"attribute_match"}
    assert set(KNOWN_TERMS) == expected


def test_from_dict_builds_weighted_terms_with_params() -> None:
    spec = RewardSpec.from_dict(
        {"point_in_box": 1.0, "format": 0.1, "gaussian_point": {"weight": 0.5, "sigma_scale": 0.5}},
        size_guard=4.0,
    )
    assert spec.terms == (
        RewardTerm("point_in_box", 1.0),
        RewardTerm("format", 0.1),
        RewardTerm("gaussian_point", 0.5, {"sigma_scale": 0.5}),
    )
    assert spec.size_guard == 4.0


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: RewardTerm("hit", 1.0),
            r"'hit' is unknown; known: action_type, attribute_match, distance_decay",
        ),
        (lambda: RewardTerm("iou", float("nan")), r"'iou': weight must be a finite number"),
        (lambda: RewardTerm("iou", float("inf")), r"weight must be a finite number, got inf"),
        (lambda: RewardTerm("iou", "1"), r"weight must be a finite number"),  # type: ignore[arg-type]
        (lambda: RewardTerm("iou", 1.0, {"sigma_scale": 0.5}), r"'sigma_scale' is unknown"),
        (lambda: RewardTerm("gaussian_point", 1.0, {"sigma": 0.5}), r"known: sigma_scale"),
        (lambda: RewardTerm("gaussian_point", 1.0, {"sigma_scale": 0.0}), r"sigma_scale"),
        (lambda: RewardSpec(()), r"terms is empty"),
        (lambda: RewardSpec((RewardTerm("iou"), RewardTerm("iou"))), r"duplicate.*'iou'"),
        (lambda: RewardSpec((RewardTerm("iou"),), size_guard=0.0), r"size_guard"),
        (lambda: RewardSpec.from_dict({"iou": {"w": 1.0}}), r"needs a 'weight' key"),
        (lambda: RewardSpec.from_dict({"bogus": 1.0}), r"'bogus' is unknown"),
        (
            lambda: RewardSpec.from_dict({"gaussian_coverage": 1.0}),
            r"'gaussian_coverage' no longer exists: use 'gaussian_plane' .*'gaussian_mass_ratio'",
        ),
    ],
)
def test_spec_errors_name_the_problem(build: object, message: str) -> None:
    with pytest.raises(RewardSpecError, match=message):
        build()  # type: ignore[operator]


def test_score_by_hand() -> None:
    spec = RewardSpec.from_dict(
        {"point_in_box": 1.0, "iou": 2.0, "gaussian_point": 0.5, "format": 0.1}
    )
    pred = Prediction(point=(0.6, 0.5), box=(0.5, 0.4, 0.7, 0.6))
    result = score(spec, pred, GT)
    # point on the right edge: hit 1; gaussian dx = sigma -> e^-0.5; iou 1/3 (0.02 / 0.06).
    assert result.terms == pytest.approx(
        {
            "point_in_box": 1.0,
            "iou": 2.0 / 3.0,
            "gaussian_point": 0.5 * math.exp(-0.5),
            "format": 0.1,
        }
    )
    assert result.value == sum(result.terms.values())


def test_box_only_prediction_is_scored_at_its_centre() -> None:
    spec = RewardSpec.from_dict({"point_in_box": 1.0, "gaussian_point": 1.0, "iou": 1.0})
    # box centre (0.5, 0.5) is the gt centre.
    result = score(spec, Prediction(box=(0.45, 0.45, 0.55, 0.55)), GT)
    # iou = 0.01 / 0.04 = 0.25.
    assert result.terms == pytest.approx({"point_in_box": 1.0, "gaussian_point": 1.0, "iou": 0.25})


def test_point_only_prediction_gets_zero_on_box_terms() -> None:
    spec = RewardSpec.from_dict(ALL_TERMS)
    result = score(spec, Prediction(point=(0.5, 0.5)), GT)
    for name in ("iou", "giou", "giou01", "gaussian_plane", "gaussian_mass_ratio"):
        assert result.terms[name] == 0.0
    assert result.terms["point_in_box"] == 1.0
    assert result.terms["gaussian_point"] == 1.0
    assert result.terms["distance_decay"] == 1.0
    assert result.value == 4.0  # three point terms + format


def test_unparseable_prediction_scores_zero_everywhere() -> None:
    spec = RewardSpec.from_dict(ALL_TERMS, size_guard=4.0)
    result = score(spec, Prediction(format_ok=False, error="no <answer> tag"), GT)
    assert result.terms == {name: 0.0 for name in KNOWN_TERMS}
    assert result.value == 0.0


def test_size_guard_kills_huge_boxes_on_box_terms_only() -> None:
    weights = {"iou": 1.0, "gaussian_mass_ratio": 1.0, "point_in_box": 1.0, "format": 0.5}
    huge = Prediction(box=(0.0, 0.0, 1.0, 1.0))  # area 1 = 25x the gt area 0.04
    unguarded = score(RewardSpec.from_dict(weights), huge, GT)
    # iou 0.04; the whole screen holds all of the gt Gaussian's mass -> mass ratio 1.
    assert unguarded.terms["iou"] == pytest.approx(0.04)
    assert unguarded.terms["gaussian_mass_ratio"] == 1.0
    guarded = score(RewardSpec.from_dict(weights, size_guard=4.0), huge, GT)
    assert guarded.terms == {
        "iou": 0.0,
        "gaussian_mass_ratio": 0.0,
        "point_in_box": 1.0,
        "format": 0.5,
    }
    assert guarded.value == 1.5
    # a box inside the allowance keeps its reward.
    ok = score(RewardSpec.from_dict(weights, size_guard=4.0), Prediction(box=GT), GT)
    assert ok.terms["iou"] == 1.0 and ok.terms["gaussian_mass_ratio"] == 1.0


@pytest.mark.parametrize(
    "prediction",
    [
        Prediction(point=(1e17, 0.001)),  # {"point": [1e20, 1]} in thousandths
        Prediction(point=(-0.04, 0.02)),  # {"point_2d": [-40, 20]}
        Prediction(point=(float("nan"), 0.5)),
        Prediction(box=(-0.1, 0.4, 0.5, 0.6)),
        Prediction(box=(0.6, 0.4, 0.4, 0.6)),  # inverted
        Prediction(point=(0.5, 0.5), box=(0.4, 0.4, 1.2, 0.6)),  # a good point, an off-image box
    ],
)
def test_off_image_coordinates_earn_no_format_credit(prediction: Prediction) -> None:
    spec = RewardSpec.from_dict({"format": 0.1, "iou": 1.0})
    assert prediction.format_ok  # the parser's verdict; the reward still pays nothing
    assert score(spec, prediction, GT).terms["format"] == 0.0


def test_on_image_or_coordinate_free_answers_keep_format_credit() -> None:
    spec = RewardSpec.from_dict({"format": 0.1})
    for prediction in (
        Prediction(point=(0.0, 1.0)),  # on the image's edge
        Prediction(box=(0.0, 0.0, 1.0, 1.0)),
        Prediction(action_type="type", text="hello"),  # no coordinates at all
    ):
        assert score(spec, prediction, GT).terms["format"] == 0.1


def test_negative_weight_is_a_penalty() -> None:
    spec = RewardSpec.from_dict({"point_in_box": 1.0, "format": -0.5})
    assert score(spec, Prediction(point=(0.5, 0.5)), GT).value == 0.5


def test_score_many_matches_score() -> None:
    spec = RewardSpec.from_dict({"point_in_box": 1.0, "iou": 1.0})
    preds = [Prediction(point=(0.5, 0.5)), Prediction(box=GT), Prediction(format_ok=False)]
    out = score_many(spec, preds, np.array([GT, GT, GT]))
    assert out.dtype == np.float64 and out.shape == (3,)
    np.testing.assert_array_equal(out, [1.0, 2.0, 0.0])
    with pytest.raises(RewardError, match="3 predictions but 2 gt_boxes"):
        score_many(spec, preds, [GT, GT])


coord = st.floats(-0.5, 1.5, allow_nan=False, allow_infinity=False)
maybe_point = st.none() | st.tuples(coord, coord)
maybe_box = st.none() | st.tuples(coord, coord, coord, coord)
weights = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@settings(max_examples=300)
@given(
    point=maybe_point,
    box=maybe_box,
    format_ok=st.booleans(),
    w=st.lists(weights, min_size=len(KNOWN_TERMS), max_size=len(KNOWN_TERMS)),
    guard=st.none() | st.floats(0.5, 10),
)
def test_terms_always_sum_to_value(
    point: object, box: object, format_ok: bool, w: list[float], guard: float | None
) -> None:
    spec = RewardSpec.from_dict(dict(zip(KNOWN_TERMS, w, strict=True)), size_guard=guard)
    result = score(spec, Prediction(point=point, box=box, format_ok=format_ok), GT)  # type: ignore[arg-type]
    assert set(result.terms) == set(KNOWN_TERMS)
    assert result.value == sum(result.terms.values())
    assert math.isfinite(result.value)
    for name, weight in zip(KNOWN_TERMS, w, strict=True):
        bound = abs(weight) + 1e-12
        assert -bound <= result.terms[name] <= bound
