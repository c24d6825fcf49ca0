"""Tests for perception_tools.geometry: sizes, smart_resize, coordinate spaces, box ops."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from perception_tools import geometry as geo
from perception_tools.geometry import CoordSpace, Frame, GeometryError, ImageSize

FRAME_1080P = geo.frame_for(ImageSize(1920, 1080))

unit = st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False)
sizes = st.integers(1, 8000)


@st.composite
def boxes(draw: st.DrawFn) -> geo.Box:
    """Valid normalized xyxy boxes (x0 < x1, y0 < y1)."""
    x0, x1 = sorted((draw(unit), draw(unit)))
    y0, y1 = sorted((draw(unit), draw(unit)))
    assume(x0 < x1 and y0 < y1)
    return x0, y0, x1, y1


@st.composite
def frames(draw: st.DrawFn) -> Frame:
    return Frame(ImageSize(draw(sizes), draw(sizes)), ImageSize(draw(sizes), draw(sizes)))


# --- sizes and frames -----------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "640", None])
def test_image_size_rejects_non_positive_ints(bad: object) -> None:
    with pytest.raises(GeometryError, match="width"):
        ImageSize(bad, 10)  # type: ignore[arg-type]
    with pytest.raises(GeometryError, match="height"):
        ImageSize(10, bad)  # type: ignore[arg-type]


def test_frame_rejects_non_image_sizes() -> None:
    with pytest.raises(GeometryError, match="Frame.resized"):
        Frame(ImageSize(1, 1), (1, 1))  # type: ignore[arg-type]


# --- smart_resize ---------------------------------------------------------------------------


def test_smart_resize_pins_1080p() -> None:
    # 1080 / 28 = 38.57 -> 39 * 28 = 1092; 1920 / 28 = 68.57 -> 69 * 28 = 1932;
    # 1092 * 1932 = 2,109,744 lies inside [3,136, 12,845,056], so no rescaling.
    assert geo.smart_resize(1080, 1920) == (1092, 1932)
    assert geo.frame_for(ImageSize(1920, 1080)).resized == ImageSize(width=1932, height=1092)
    assert FRAME_1080P.orig == ImageSize(1920, 1080)


def test_smart_resize_scales_down_with_floor() -> None:
    # round: 3000 -> 107 * 28 = 2996, 5000 -> 179 * 28 = 5012; 2996 * 5012 = 15,015,952 > max.
    # beta = sqrt(15e6 / 12,845,056) = 1.08063; 3000 / beta / 28 = 99.15 -> 99 * 28 = 2772;
    # 5000 / beta / 28 = 165.25 -> 165 * 28 = 4620.
    assert geo.smart_resize(3000, 5000) == (2772, 4620)


def test_smart_resize_scales_up_with_ceil() -> None:
    # round: 10 -> max(28, 0) = 28 each; 784 < 3136, beta = sqrt(3136 / 100) = 5.6;
    # 10 * 5.6 / 28 = 2 -> 56.
    assert geo.smart_resize(10, 10) == (56, 56)


def test_smart_resize_never_returns_zero_sides() -> None:
    # qwen-vl-utils floors the short side of a 200:1 image to 0 under a tiny max_pixels.
    h, w = geo.smart_resize(200, 40_000, factor=28, min_pixels=28 * 28, max_pixels=4 * 28 * 28)
    assert h == 28 and w % 28 == 0 and w > 0


def test_smart_resize_errors_name_the_value() -> None:
    with pytest.raises(GeometryError, match="aspect ratio.*201"):
        geo.smart_resize(1, 201)
    with pytest.raises(GeometryError, match="height.*0"):
        geo.smart_resize(0, 10)
    with pytest.raises(GeometryError, match="min_pixels"):
        geo.smart_resize(100, 100, min_pixels=10, max_pixels=5)


def _qwen_reference(h: int, w: int, factor: int, min_px: int, max_px: int) -> tuple[int, int]:
    vp = pytest.importorskip("qwen_vl_utils.vision_process")
    rh, rw = vp.smart_resize(h, w, factor, min_pixels=min_px, max_pixels=max_px)
    # qwen-vl-utils can floor a side to 0 when scaling down; we keep one factor instead.
    return max(factor, rh), max(factor, rw)


@pytest.mark.parametrize("factor", [28, 32])
def test_smart_resize_agrees_with_qwen_vl_utils_on_a_grid(factor: int) -> None:
    min_px, max_px = 4 * factor * factor, 16384 * factor * factor
    side_values = [1, 2, 27, 28, 29, 55, 56, 100, 333, 640, 1080, 1920, 2160, 3840, 4096, 5000]
    side_values += [7680, 10_000, 20_000]
    checked = 0
    for h in side_values:
        for w in side_values:
            if max(h, w) / min(h, w) > 200:
                continue
            expected = _qwen_reference(h, w, factor, min_px, max_px)
            assert geo.smart_resize(h, w, factor, min_px, max_px) == expected, (h, w)
            checked += 1
    assert checked > 250


@settings(max_examples=300, deadline=None)
@given(
    h=st.integers(1, 30_000),
    w=st.integers(1, 30_000),
    factor=st.sampled_from([28, 32]),
    min_tokens=st.integers(1, 64),
    max_tokens=st.integers(64, 20_000),
)
def test_smart_resize_agrees_with_qwen_vl_utils(
    h: int, w: int, factor: int, min_tokens: int, max_tokens: int
) -> None:
    assume(max(h, w) / min(h, w) <= 200)
    min_px, max_px = min_tokens * factor**2, max_tokens * factor**2
    got = geo.smart_resize(h, w, factor, min_px, max_px)
    assert got == _qwen_reference(h, w, factor, min_px, max_px)
    assert got[0] % factor == 0 and got[1] % factor == 0


# --- coordinate spaces ----------------------------------------------------------------------


def test_point_conversions_by_hand() -> None:
    # resized 1932x1092: (966, 546) is the centre; orig 1920x1080: (960, 540) is the centre.
    assert geo.point_to_norm((966, 546), CoordSpace.RESIZED_PX, FRAME_1080P) == (0.5, 0.5)
    assert geo.point_to_norm((960, 540), CoordSpace.ORIG_PX, FRAME_1080P) == (0.5, 0.5)
    assert geo.point_to_norm((250, 750), CoordSpace.K1000, None) == (0.25, 0.75)
    assert geo.point_to_norm((0.25, 0.75), "norm", None) == (0.25, 0.75)
    # resized pixel (1932, 1092) is the bottom-right corner: norm (1, 1) -> orig (1920, 1080).
    corner = geo.point_to_norm((1932, 1092), "resized_px", FRAME_1080P)
    assert geo.point_from_norm(corner, "orig_px", FRAME_1080P) == (1920.0, 1080.0)


def test_box_conversions_by_hand() -> None:
    # orig 1920x1080: (480, 270, 960, 810) -> (0.25, 0.25, 0.5, 0.75).
    box = geo.box_to_norm((480, 270, 960, 810), CoordSpace.ORIG_PX, FRAME_1080P)
    assert box == (0.25, 0.25, 0.5, 0.75)
    # resized 1932x1092: x * 1932, y * 1092 -> (483, 273, 966, 819).
    assert geo.box_from_norm(box, "resized_px", FRAME_1080P) == (483.0, 273.0, 966.0, 819.0)
    assert geo.box_from_norm(box, "k1000", None) == (250.0, 250.0, 500.0, 750.0)


def test_conversion_errors_name_the_problem() -> None:
    with pytest.raises(GeometryError, match="'pixels' is unknown; known: norm, orig_px"):
        geo.point_to_norm((1, 1), "pixels", FRAME_1080P)
    with pytest.raises(GeometryError, match="'orig_px' needs a Frame"):
        geo.point_to_norm((1, 1), CoordSpace.ORIG_PX, None)
    with pytest.raises(GeometryError, match="finite.*nan"):
        geo.point_to_norm((float("nan"), 1), "norm", None)
    with pytest.raises(GeometryError, match="4 numbers, got 3"):
        geo.box_to_norm((1, 2, 3), "norm", None)
    with pytest.raises(GeometryError, match="2 numbers"):
        geo.point_from_norm("xy", "norm", None)  # type: ignore[arg-type]


@settings(max_examples=200)
@given(point=st.tuples(unit, unit), space=st.sampled_from(list(CoordSpace)), frame=frames())
def test_point_round_trips_every_space(point: geo.Point, space: CoordSpace, frame: Frame) -> None:
    there = geo.point_from_norm(point, space, frame)
    back = geo.point_to_norm(there, space, frame)
    assert back == pytest.approx(point, abs=1e-12)
    assert geo.point_from_norm(back, space, frame) == pytest.approx(there, rel=1e-12, abs=1e-9)


@settings(max_examples=200)
@given(box=boxes(), space=st.sampled_from(list(CoordSpace)), frame=frames())
def test_box_round_trips_every_space(box: geo.Box, space: CoordSpace, frame: Frame) -> None:
    there = geo.box_from_norm(box, space, frame)
    assert geo.box_to_norm(there, space, frame) == pytest.approx(box, abs=1e-12)


# --- box ops --------------------------------------------------------------------------------


def test_box_helpers_by_hand() -> None:
    assert geo.xywh_to_xyxy((0.25, 0.5, 0.5, 0.25)) == (0.25, 0.5, 0.75, 0.75)
    assert geo.xyxy_to_xywh((0.25, 0.5, 0.75, 0.75)) == (0.25, 0.5, 0.5, 0.25)
    assert geo.box_size((0.25, 0.5, 0.75, 0.75)) == (0.5, 0.25)
    assert geo.box_area((0.25, 0.5, 0.75, 0.75)) == 0.125  # 0.5 * 0.25
    assert geo.box_area((0.5, 0.5, 0.25, 0.75)) == 0.0  # inverted x
    assert geo.box_center((0.25, 0.5, 0.75, 0.75)) == (0.5, 0.625)
    assert geo.clip_box((-0.5, 0.25, 1.5, 2.0)) == (0.0, 0.25, 1.0, 1.0)
    assert geo.clip_box((5.0, -1.0, 50.0, 20.0), lo=0.0, hi=10.0) == (5.0, 0.0, 10.0, 10.0)
    with pytest.raises(GeometryError, match="lo"):
        geo.clip_box((0, 0, 1, 1), lo=1.0, hi=0.0)


@pytest.mark.parametrize(
    ("box", "valid"),
    [
        ((0.1, 0.1, 0.2, 0.2), True),
        ((0.1, 0.1, 0.1, 0.2), False),  # zero width
        ((0.2, 0.1, 0.1, 0.2), False),  # inverted
        ((0.1, float("nan"), 0.2, 0.2), False),
        ((0.1, 0.1, float("inf"), 0.2), False),
        ((0.1, 0.1, 0.2), False),
        ("abcd", False),
        (None, False),
    ],
)
def test_is_valid_box(box: object, valid: bool) -> None:
    assert geo.is_valid_box(box) is valid


def test_point_in_box_includes_edges() -> None:
    box = (0.25, 0.25, 0.5, 0.5)
    assert geo.point_in_box((0.25, 0.5), box)
    assert geo.point_in_box((0.375, 0.375), box)
    assert not geo.point_in_box((0.5000001, 0.375), box)
    assert not geo.point_in_box((0.375, 0.2), box)


def test_iou_giou_by_hand() -> None:
    a, b = (0.0, 0.0, 0.5, 0.5), (0.25, 0.0, 0.75, 0.5)
    # overlap 0.25 x 0.5 = 0.125; union 0.25 + 0.25 - 0.125 = 0.375; hull 0.75 x 0.5 = 0.375.
    assert geo.intersection_area(a, b) == 0.125
    assert geo.iou(a, b) == pytest.approx(1 / 3)
    assert geo.giou(a, b) == pytest.approx(1 / 3)
    c, d = (0.0, 0.0, 0.25, 0.25), (0.75, 0.75, 1.0, 1.0)
    # disjoint: iou 0; hull 1.0, union 0.125 -> giou = 0 - 0.875 / 1 = -0.875.
    assert geo.iou(c, d) == 0.0
    assert geo.giou(c, d) == -0.875
    # touching edges: overlap is a line (area 0); hull 0.5 x 0.5 = 0.25 = union -> giou 0.
    e, f = (0.0, 0.0, 0.25, 0.5), (0.25, 0.0, 0.5, 0.5)
    assert geo.iou(e, f) == 0.0 and geo.giou(e, f) == 0.0
    # two identical degenerate points: no union, no hull -> both 0.
    p = (0.5, 0.5, 0.5, 0.5)
    assert geo.iou(p, p) == 0.0 and geo.giou(p, p) == 0.0


@settings(max_examples=300)
@given(a=boxes(), b=boxes())
def test_iou_giou_properties(a: geo.Box, b: geo.Box) -> None:
    value = geo.iou(a, b)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(geo.iou(b, a), abs=1e-12)
    assert -1.0 <= geo.giou(a, b) <= value
    assert geo.giou(a, b) == pytest.approx(geo.giou(b, a), abs=1e-12)
    assert geo.intersection_area(a, b) <= min(geo.box_area(a), geo.box_area(b)) + 1e-15


@settings(max_examples=200)
@given(a=boxes())
def test_iou_of_a_box_with_itself_is_one(a: geo.Box) -> None:
    assume(geo.box_area(a) > 0.0)
    assert geo.iou(a, a) == 1.0
    assert geo.giou(a, a) == 1.0


@settings(max_examples=200)
@given(a=boxes(), b=boxes())
def test_disjoint_boxes_have_zero_iou(a: geo.Box, b: geo.Box) -> None:
    assume(a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1])
    assert geo.iou(a, b) == 0.0
    assert geo.intersection_area(a, b) == 0.0
    assert geo.giou(a, b) <= 0.0


@settings(max_examples=200)
@given(box=boxes())
def test_box_center_is_inside_and_xywh_round_trips(box: geo.Box) -> None:
    assert geo.point_in_box(geo.box_center(box), box)
    assert geo.xywh_to_xyxy(geo.xyxy_to_xywh(box)) == pytest.approx(box, abs=1e-15)
    assert math.isclose(geo.box_area(box), math.prod(geo.box_size(box)))
