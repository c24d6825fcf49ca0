"""Codec: render → parse round trips per family and format; hostile text never raises."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perception_tools.geometry import CoordSpace, Frame, ImageSize, frame_for
from vlagent.codec import Answer, GroundingCodec, ParseError, coord_space_for

FRAME = frame_for(ImageSize(1920, 1080))  # resized to 1932 x 1092 at default limits
FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")


def test_family_spaces():
    assert coord_space_for("qwen2_5_vl") == CoordSpace.RESIZED_PX
    assert coord_space_for("qwen2_vl") == CoordSpace.K1000
    assert coord_space_for("qwen3_vl") == CoordSpace.K1000
    with pytest.raises(ValueError, match="llava"):
        coord_space_for("llava")


def test_render_point_hand_computed():
    box = (0.25, 0.5, 0.35, 0.6)  # centre (0.3, 0.55)
    k = GroundingCodec.for_family("qwen3_vl", fmt="qwen_json")
    assert k.render(box, FRAME) == '{"point_2d": [300, 550]}'
    px = GroundingCodec.for_family("qwen2_5_vl", fmt="think_answer")
    # 0.3 * 1932 = 579.6 -> 580 ; 0.55 * 1092 = 600.6 -> 601
    assert px.render(box, FRAME) == '<answer>{"point": [580, 601]}</answer>'
    assert px.render(box, FRAME, think="it is there").startswith(
        "<think>it is there</think><answer>"
    )


def test_render_box_formats():
    box = (0.1, 0.2, 0.3, 0.4)
    k = GroundingCodec.for_family("qwen2_vl", fmt="qwen_json", kind="box")
    assert k.render(box, FRAME) == '[{"bbox_2d": [100, 200, 300, 400], "label": "target"}]'
    t = GroundingCodec.for_family("qwen2_vl", fmt="think_answer", kind="box")
    assert t.render(box, FRAME) == '<answer>{"bbox": [100, 200, 300, 400]}</answer>'


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("fmt", ["think_answer", "qwen_json"])
@pytest.mark.parametrize("kind", ["point", "box"])
def test_round_trip(family, fmt, kind):
    codec = GroundingCodec.for_family(family, fmt=fmt, kind=kind)
    box = (0.1, 0.2, 0.4, 0.45)
    ans = codec.parse(codec.render(box, FRAME), FRAME)
    assert isinstance(ans, Answer)
    cx, cy = 0.25, 0.325
    # one unit of the model's space is at most 1/1000 of the image
    assert ans.point_norm == pytest.approx((cx, cy), abs=1.5e-3)
    if kind == "box":
        assert ans.box_norm == pytest.approx(box, abs=1.5e-3)


def test_parse_variants():
    f = Frame(ImageSize(1000, 1000), ImageSize(1008, 1008))
    c = GroundingCodec(fmt="think_answer", space=CoordSpace.K1000)
    a = c.parse('<think>the red one</think> <answer> {"point": [500, 250]} </answer>', f)
    assert isinstance(a, Answer) and a.point_norm == (0.5, 0.25)
    # the last answer block wins
    a = c.parse('<answer>{"point": [1, 1]}</answer><answer>{"point": [100, 900]}</answer>', f)
    assert a.point_norm == (0.1, 0.9)
    q = GroundingCodec(fmt="qwen_json", space=CoordSpace.K1000)
    assert q.parse('```json\n[{"bbox_2d": [0, 0, 500, 500], "label": "x"}]\n```', f).point_norm == (
        0.25,
        0.25,
    )


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "no <answer>"),
        ("<answer>not json</answer>", "not valid JSON"),
        ('<answer>{"point": [1]}</answer>', "list of 2 numbers"),
        ('<answer>{"point": ["a", 2]}</answer>', "finite numbers"),
        ('<answer>{"point": [NaN, 2]}</answer>', "finite numbers"),
        ('<answer>{"point": [true, 2]}</answer>', "finite numbers"),
        ('<answer>{"bbox": [5, 5, 1, 1]}</answer>', "x0 < x1"),
        ('<answer>{"where": [1, 2]}</answer>', "has none of"),
        ("<answer>[1, 2]</answer>", "exactly one object"),
        ("<answer>" + "[" * 5000 + "</answer>", "JSON"),
    ],
)
def test_parse_errors_name_the_problem(text, reason):
    out = GroundingCodec(fmt="think_answer").parse(text, FRAME)
    assert isinstance(out, ParseError)
    assert reason in out.reason
    assert out.to_action() == {"parse_error": out.reason}
    assert out.to_prediction().format_ok is False


def test_require_think():
    c = GroundingCodec(fmt="think_answer", require_think=True)
    assert isinstance(c.parse('<answer>{"point": [1, 2]}</answer>', FRAME), ParseError)
    assert isinstance(c.parse('<think>x</think><answer>{"point": [1, 2]}</answer>', FRAME), Answer)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=50).map(lambda b: b.decode("latin-1"))))
@pytest.mark.parametrize("fmt", ["think_answer", "qwen_json"])
def test_hostile_text_never_raises(fmt, text):
    for candidate in (text, f"<answer>{text}</answer>", '{"point_2d": ' + text + "}"):
        out = GroundingCodec(fmt=fmt).parse(candidate, FRAME)
        assert isinstance(out, (Answer, ParseError))
        if isinstance(out, Answer):
            assert all(math.isfinite(v) for v in out.point_norm)


def test_non_string_input():
    assert isinstance(GroundingCodec().parse(None, FRAME), ParseError)  # type: ignore[arg-type]
