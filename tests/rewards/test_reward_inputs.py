"""Hostile model outputs (nan, inf, out of range, junk types) score 0 and never raise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewards import (
    KNOWN_TERMS,
    Prediction,
    RewardSpec,
    box_size_guard,
    distance_decay,
    format_reward,
    gaussian_mass_ratio,
    gaussian_plane,
    gaussian_point,
    giou01,
    giou_reward,
    iou_reward,
    norm_box_or_none,
    norm_point_or_none,
    point_in_box,
    score,
)

GT = (0.4, 0.4, 0.6, 0.6)
NAN, INF = float("nan"), float("inf")
POINT_FNS = (point_in_box, gaussian_point, distance_decay)
BOX_FNS = (iou_reward, giou_reward, giou01, gaussian_plane, gaussian_mass_ratio, box_size_guard)

BAD_POINTS = [
    (NAN, 0.5),
    (0.5, INF),
    (-INF, 0.5),
    (-0.1, 0.5),
    (0.5, 1.0000001),
    (2.0, 3.0),
    (0.5,),
    (0.5, 0.5, 0.5),
    "0.5,0.5",
    ("a", "b"),
    {"x": 0.5},
    (10**400, 0.5),
    np.array([[0.5, 0.5]]),
    object(),
]
BAD_BOXES = [
    (NAN, 0.4, 0.6, 0.6),
    (0.4, 0.4, INF, 0.6),
    (0.6, 0.4, 0.4, 0.6),  # inverted
    (0.4, 0.4, 0.4, 0.6),  # zero width
    (-0.1, 0.4, 0.6, 0.6),
    (0.4, 0.4, 0.6, 1.5),
    (0.4, 0.4, 0.6),
    "0.4 0.4 0.6 0.6",
    (None, None, None, None),
    (10**400, 0.4, 0.6, 0.6),
    object(),
]


@pytest.mark.parametrize("fn", POINT_FNS)
@pytest.mark.parametrize("point", BAD_POINTS, ids=repr)
def test_bad_points_score_zero(fn: object, point: object) -> None:
    assert norm_point_or_none(point) is None
    assert fn(point, GT).value == 0.0  # type: ignore[operator]


@pytest.mark.parametrize("fn", BOX_FNS)
@pytest.mark.parametrize("box", BAD_BOXES, ids=repr)
def test_bad_boxes_score_zero(fn: object, box: object) -> None:
    assert norm_box_or_none(box) is None
    assert fn(box, GT).value == 0.0  # type: ignore[operator]
    # a bad ground truth also scores 0 rather than raising
    assert fn(GT, box).value == 0.0  # type: ignore[operator]


@pytest.mark.parametrize("ok", [False, None, NAN, 1, "yes", np.float64(1.0)], ids=repr)
def test_format_reward_needs_a_true_boolean(ok: object) -> None:
    assert format_reward(ok).value == 0.0
    assert format_reward(np.bool_(True)).value == 1.0


anything = st.floats() | st.integers() | st.none() | st.text(max_size=3)
junk_point = st.none() | st.tuples(anything, anything) | st.lists(st.floats(), max_size=5)
junk_box = st.none() | st.tuples(anything, anything, anything, anything) | st.lists(st.floats())


@settings(max_examples=400)
@given(point=junk_point, box=junk_box, gt=junk_box, format_ok=anything | st.booleans())
def test_score_never_raises_or_returns_nan(
    point: object, box: object, gt: object, format_ok: object
) -> None:
    spec = RewardSpec.from_dict({name: 1.0 for name in KNOWN_TERMS}, size_guard=4.0)
    result = score(spec, Prediction(point=point, box=box, format_ok=format_ok), gt)  # type: ignore[arg-type]
    assert all(math.isfinite(v) for v in result.terms.values())
    assert math.isfinite(result.value)
    if norm_box_or_none(gt) is None:
        assert all(result.terms[name] == 0.0 for name in KNOWN_TERMS if name != "format")


@settings(max_examples=300)
@given(
    point=st.tuples(st.floats(), st.floats()),
    box=st.tuples(st.floats(), st.floats(), st.floats(), st.floats()),
    gt=st.tuples(st.floats(), st.floats(), st.floats(), st.floats()),
)
def test_single_rewards_stay_in_range_on_any_float(point: tuple, box: tuple, gt: tuple) -> None:
    for fn in POINT_FNS:
        assert 0.0 <= fn(point, gt).value <= 1.0
    for fn in BOX_FNS:
        assert -1.0 <= fn(box, gt).value <= 1.0
