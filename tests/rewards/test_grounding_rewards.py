"""Hand-computed cases and properties of the single-term rewards."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rewards import (
    RewardResult,
    RewardSpecError,
    box_size_guard,
    distance_decay,
    format_reward,
    gaussian_mass_ratio,
    gaussian_plane,
    gaussian_point,
    giou01,
    giou_reward,
    iou_reward,
    point_in_box,
)

GT = (0.4, 0.4, 0.6, 0.6)  # 0.2 x 0.2, centre (0.5, 0.5); sigma at scale 0.5 is 0.1 per axis
unit = st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False)


@st.composite
def boxes(draw: st.DrawFn) -> tuple[float, float, float, float]:
    x0, x1 = sorted((draw(unit), draw(unit)))
    y0, y1 = sorted((draw(unit), draw(unit)))
    assume(x1 - x0 > 1e-6 and y1 - y0 > 1e-6)
    return x0, y0, x1, y1


def test_results_name_their_term() -> None:
    assert point_in_box((0.5, 0.5), GT) == RewardResult(1.0, {"point_in_box": 1.0})
    assert iou_reward(GT, GT).terms == {"iou": 1.0}
    assert giou_reward(GT, GT).terms == {"giou": 1.0}
    assert giou01(GT, GT).terms == {"giou01": 1.0}
    assert gaussian_point((0.5, 0.5), GT).terms == {"gaussian_point": 1.0}
    assert gaussian_mass_ratio(GT, GT).terms == {"gaussian_mass_ratio": 1.0}
    assert gaussian_plane(GT, GT).terms == {"gaussian_plane": 1.0}
    assert distance_decay((0.5, 0.5), GT).terms == {"distance_decay": 1.0}
    assert box_size_guard(GT, GT).terms == {"size_guard": 1.0}
    assert format_reward(True).terms == {"format": 1.0}


def test_point_in_box_by_hand() -> None:
    assert point_in_box((0.4, 0.6), GT).value == 1.0  # corner counts
    assert point_in_box((0.39, 0.5), GT).value == 0.0
    assert point_in_box((0.5, 0.61), GT).value == 0.0


def test_iou_and_giou_by_hand() -> None:
    pred = (0.5, 0.4, 0.7, 0.6)
    # overlap 0.1 x 0.2 = 0.02; union 0.04 + 0.04 - 0.02 = 0.06 -> iou 1/3;
    # hull 0.3 x 0.2 = 0.06 = union -> giou = iou = 1/3; giou01 = (1/3 + 1) / 2 = 2/3.
    assert iou_reward(pred, GT).value == pytest.approx(1 / 3)
    assert giou_reward(pred, GT).value == pytest.approx(1 / 3)
    assert giou01(pred, GT).value == pytest.approx(2 / 3)
    far = (0.0, 0.0, 0.1, 0.1)
    # disjoint: union 0.01 + 0.04 = 0.05; hull 0.6 x 0.6 = 0.36 -> giou = -(0.31 / 0.36).
    assert iou_reward(far, GT).value == 0.0
    assert giou_reward(far, GT).value == pytest.approx(-0.31 / 0.36)
    assert giou01(far, GT).value == pytest.approx((1 - 0.31 / 0.36) / 2)


def test_gaussian_point_by_hand() -> None:
    assert gaussian_point((0.5, 0.5), GT).value == 1.0
    # dx = sigma_x = 0.5 * 0.2 = 0.1 -> exp(-0.5).
    assert gaussian_point((0.6, 0.5), GT).value == pytest.approx(math.exp(-0.5))
    # dx = dy = 0.1 -> exp(-0.5 * (1 + 1)) = exp(-1).
    assert gaussian_point((0.4, 0.6), GT).value == pytest.approx(math.exp(-1.0))
    # sigma_scale 1 -> sigma 0.2; dy = 0.2 -> exp(-0.5).
    assert gaussian_point((0.5, 0.7), GT, sigma_scale=1.0).value == pytest.approx(math.exp(-0.5))
    # anisotropic box 0.4 x 0.1: sigma = (0.2, 0.05); dy = 0.05 -> exp(-0.5).
    wide = (0.3, 0.45, 0.7, 0.55)
    assert gaussian_point((0.5, 0.55), wide).value == pytest.approx(math.exp(-0.5))


def test_gaussian_mass_ratio_by_hand() -> None:
    assert gaussian_mass_ratio(GT, GT).value == 1.0
    # left half [0.4, 0.5]: per-axis mass Phi(0) - Phi(-1) is half of Phi(1) - Phi(-1), y full.
    assert gaussian_mass_ratio((0.4, 0.4, 0.5, 0.6), GT).value == pytest.approx(0.5)
    # left half x bottom half: 0.5 * 0.5.
    assert gaussian_mass_ratio((0.4, 0.5, 0.5, 0.6), GT).value == pytest.approx(0.25)
    # x in [0.5, 0.7] = [0, +2 sigma]: (Phi(2) - Phi(0)) / (Phi(1) - Phi(-1)).
    expected = (0.5 * math.erf(2 / math.sqrt(2))) / math.erf(1 / math.sqrt(2))
    assert gaussian_mass_ratio((0.5, 0.4, 0.7, 0.6), GT).value == pytest.approx(expected)
    assert expected == pytest.approx(0.4772499 / 0.6826895, rel=1e-6)
    # a box containing everything holds mass ~1 > the gt box's 0.466 -> saturates at 1.
    assert gaussian_mass_ratio((0.0, 0.0, 1.0, 1.0), GT).value == 1.0
    # far away: ~0 mass.
    assert gaussian_mass_ratio((0.9, 0.9, 1.0, 1.0), GT).value < 1e-6


def test_gaussian_mass_ratio_grows_with_containment() -> None:
    inner = gaussian_mass_ratio((0.45, 0.45, 0.55, 0.55), GT).value
    assert 0.0 < inner < gaussian_mass_ratio(GT, GT).value


def test_gaussian_plane_by_hand() -> None:
    # Per axis exp(-D_B) = sqrt(2 s1 s2 / (s1^2 + s2^2)) * exp(-d^2 / (4 (s1^2 + s2^2))).
    assert gaussian_plane(GT, GT).value == 1.0
    # same centre, twice the size: s = 0.2 vs 0.1 per axis -> sqrt(0.4 / 0.5) per axis = 0.8.
    assert gaussian_plane((0.3, 0.3, 0.7, 0.7), GT).value == pytest.approx(0.8)
    assert gaussian_plane(GT, (0.3, 0.3, 0.7, 0.7)).value == pytest.approx(0.8)  # symmetric
    # same size, shifted by half a width in x: d = 0.1, s = 0.1 -> exp(-0.01 / 0.08).
    assert gaussian_plane((0.5, 0.4, 0.7, 0.6), GT).value == pytest.approx(math.exp(-0.125))
    # left half: x sigma 0.05 vs 0.1, centres 0.05 apart; y identical.
    v = 0.05**2 + 0.1**2
    expected = math.sqrt(2 * 0.05 * 0.1 / v) * math.exp(-(0.05**2) / (4 * v))
    assert gaussian_plane((0.4, 0.4, 0.5, 0.6), GT).value == pytest.approx(expected)
    # the whole screen: sigma 0.5 vs 0.1 per axis -> (sqrt(0.1 / 0.26))^2 = 0.1 / 0.26.
    assert gaussian_plane((0.0, 0.0, 1.0, 1.0), GT).value == pytest.approx(0.1 / 0.26)
    # sigma_scale 1.0: sigma 0.2 per axis, so the offset's exponent is 4x smaller.
    shifted = gaussian_plane((0.5, 0.4, 0.7, 0.6), GT, sigma_scale=1.0).value
    assert shifted == pytest.approx(math.exp(-0.125 / 4))


def test_gaussian_plane_is_not_the_mass_ratio() -> None:
    # the mass ratio saturates for any box holding the target; GUI-G2's plane reward does not.
    screen = (0.0, 0.0, 1.0, 1.0)
    assert gaussian_mass_ratio(screen, GT).value == 1.0
    assert gaussian_plane(screen, GT).value < 0.4


def test_gaussian_plane_survives_extreme_sizes() -> None:
    tiny = (0.0, 0.0, 1e-300, 1e-300)
    assert 0.0 <= gaussian_plane(tiny, GT).value < 1e-100  # no overflow, no NaN
    assert gaussian_plane(tiny, tiny).value == 1.0
    assert gaussian_plane((0.0, 0.0, 1e-12, 1.0), (0.0, 0.0, 1.0, 1e-12)).value < 1e-5


def test_distance_decay_by_hand() -> None:
    assert distance_decay((0.45, 0.6), GT).value == 1.0  # on the edge: d = 0
    # right of the box: d = 0.9 - 0.6 = 0.3 -> exp(-3).
    assert distance_decay((0.9, 0.5), GT).value == pytest.approx(math.exp(-3.0))
    # diagonal from corner (0.6, 0.6): (0.3, 0.4) -> d = 0.5 -> exp(-5); scale 0.5 -> exp(-1).
    assert distance_decay((0.9, 1.0), GT).value == pytest.approx(math.exp(-5.0))
    assert distance_decay((0.9, 1.0), GT, scale=0.5).value == pytest.approx(math.exp(-1.0))


def test_box_size_guard_by_hand() -> None:
    # gt area 0.04; 4x allows 0.16: a 0.4 x 0.4 box (0.16) passes, 0.41 x 0.4 fails.
    assert box_size_guard((0.3, 0.3, 0.7, 0.7), GT).value == 1.0
    assert box_size_guard((0.3, 0.3, 0.71, 0.7), GT).value == 0.0
    assert box_size_guard((0.0, 0.0, 1.0, 1.0), GT).value == 0.0
    assert box_size_guard((0.0, 0.0, 1.0, 1.0), GT, max_area_ratio=25.0).value == 1.0


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda: gaussian_point((0.5, 0.5), GT, sigma_scale=0.0), "sigma_scale"),
        (lambda: gaussian_mass_ratio(GT, GT, sigma_scale=float("nan")), "sigma_scale"),
        (lambda: distance_decay((0.5, 0.5), GT, scale=-1.0), "scale"),
        (lambda: box_size_guard(GT, GT, max_area_ratio=float("inf")), "max_area_ratio"),
    ],
)
def test_bad_parameters_raise_naming_the_parameter(call: object, param: str) -> None:
    with pytest.raises(RewardSpecError, match=param):
        call()  # type: ignore[operator]


@settings(max_examples=300)
@given(pred=boxes(), gt=boxes())
def test_box_reward_properties(pred: tuple, gt: tuple) -> None:
    iou = iou_reward(pred, gt).value
    giou = giou_reward(pred, gt).value
    assert 0.0 <= iou <= 1.0
    assert iou == pytest.approx(iou_reward(gt, pred).value, abs=1e-12)
    assert -1.0 <= giou <= iou
    assert giou01(pred, gt).value == pytest.approx((giou + 1) / 2)
    assert 0.0 <= gaussian_mass_ratio(pred, gt).value <= 1.0
    plane = gaussian_plane(pred, gt).value
    assert 0.0 <= plane <= 1.0
    assert plane == pytest.approx(gaussian_plane(gt, pred).value, rel=1e-9, abs=1e-300)
    assert gaussian_plane(gt, gt).value == pytest.approx(1.0)
    assert iou_reward(gt, gt).value == 1.0
    assert gaussian_mass_ratio(gt, gt).value == pytest.approx(1.0)


@settings(max_examples=300)
@given(point=st.tuples(unit, unit), gt=boxes())
def test_point_reward_properties(point: tuple, gt: tuple) -> None:
    hit = point_in_box(point, gt).value
    decay = distance_decay(point, gt).value
    gauss = gaussian_point(point, gt).value
    assert hit in (0.0, 1.0)
    assert 0.0 <= gauss <= 1.0
    assert 0.0 <= decay <= 1.0
    if hit == 1.0:
        assert decay == 1.0
    dx = max(gt[0] - point[0], 0.0, point[0] - gt[2])
    dy = max(gt[1] - point[1], 0.0, point[1] - gt[3])
    assert decay == pytest.approx(math.exp(-math.hypot(dx, dy) / 0.1))
