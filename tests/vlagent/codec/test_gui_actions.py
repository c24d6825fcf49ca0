"""GUI action codec: both JSON styles, per-family coordinates, round trips, hostile text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gui.actions import (
    Answer,
    Click,
    Done,
    Fail,
    InvalidAction,
    Key,
    LongPress,
    OpenApp,
    Scroll,
    Type,
    Wait,
    parse_action,
)
from perception_tools.geometry import CoordSpace, ImageSize, frame_for
from vlagent.codec import GuiActionCodec

FRAME = frame_for(ImageSize(288, 512))  # resized by default limits to 280 x 504
K = GuiActionCodec.for_family("qwen3_vl")
PX = GuiActionCodec.for_family("qwen2_5_vl")


def test_family_spaces_and_frame():
    assert K.space is CoordSpace.K1000
    assert PX.space is CoordSpace.RESIZED_PX
    assert (FRAME.resized.width, FRAME.resized.height) == (280, 504)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"action_type": "click", "x": 500, "y": 170}', Click(point=(0.5, 0.17))),
        ('{"action_type":"long_press","x":250,"y":500}', LongPress(point=(0.25, 0.5))),
        (
            '{"action_type": "scroll", "direction": "down"}',
            Scroll(point=(0.5, 0.5), direction="down"),
        ),
        (
            '{"action_type": "scroll", "direction": "up", "x": 100, "y": 200}',
            Scroll(point=(0.1, 0.2), direction="up"),
        ),
        ('{"action_type": "input_text", "text": "Ana"}', Type(text="Ana")),
        (
            '{"action_type": "input_text", "text": "Ana", "x": 500, "y": 250}',
            Type(text="Ana", point=(0.5, 0.25)),
        ),
        ('{"action_type": "navigate_back"}', Key(key="back")),
        ('{"action_type": "navigate_home"}', Key(key="home")),
        ('{"action_type": "open_app", "app_name": "Clock"}', OpenApp(name="Clock")),
        ('{"action_type": "status", "goal_status": "complete"}', Done()),
        ('{"action_type": "status", "goal_status": "infeasible"}', Fail(reason="infeasible")),
        ('{"action_type": "wait"}', Wait()),
        ('{"action_type": "answer", "text": "555-0101"}', Answer(text="555-0101")),
    ],
)
def test_androidworld_k1000(text, expected):
    assert K.parse(text, FRAME) == expected


def test_resized_pixels_hand_computed():
    # Qwen2.5-VL: pixels of the 280 x 504 image the encoder saw; (140, 126) -> (0.5, 0.25)
    assert PX.parse('{"action_type": "click", "x": 140, "y": 126}', FRAME) == Click(
        point=(0.5, 0.25)
    )
    assert PX.render(Click(point=(0.5, 0.25)), FRAME) == '{"action_type":"click","x":140,"y":126}'
    bad = PX.parse('{"action_type": "click", "x": 281, "y": 10}', FRAME)
    assert isinstance(bad, InvalidAction) and "outside [0, 280]" in bad.reason


def test_our_json_style_and_wrappers():
    text = '<think>the switch</think><answer>{"type": "click", "point": [500, 170]}</answer>'
    assert K.parse(text, FRAME) == Click(point=(0.5, 0.17))
    fenced = '```json\n{"type": "scroll", "point": [500, 500], "direction": "down"}\n```'
    assert K.parse(fenced, FRAME) == Scroll(point=(0.5, 0.5), direction="down")
    assert K.parse('{"type": "open_app", "name": "Notes"}', FRAME) == OpenApp(name="Notes")
    assert K.parse('[{"type": "done"}]', FRAME) == Done()


def test_index_uses_the_element_list():
    boxes = [(0.0, 0.0, 0.2, 0.2), (0.5, 0.5, 0.7, 0.9)]
    text = '{"action_type": "input_text", "text": "hi", "index": 1}'
    assert K.parse(text, FRAME, boxes) == Type(text="hi", point=(0.6, 0.7))
    assert "element list" in K.parse(text, FRAME).reason
    assert "outside" in K.parse(text.replace("1}", "7}"), FRAME, boxes).reason


@pytest.mark.parametrize(
    "action",
    [
        Click(point=(0.5, 0.17)),
        LongPress(point=(0.1, 0.9)),
        Scroll(point=(0.5, 0.5), direction="left"),
        Type(text="Ana Lima", point=(0.3, 0.2)),
        Key(key="back"),
        OpenApp(name="Settings"),
        Done(),
        Answer(text="7:30"),
        Wait(),
    ],
)
@pytest.mark.parametrize("style", ["json", "androidworld"])
@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_render_parse_round_trip(action, style, family):
    codec = GuiActionCodec.for_family(family, style=style, wrap_answer=style == "json")
    back = codec.parse(codec.render(action, FRAME), FRAME)
    assert back.type == action.type
    for key in ("point",):
        if getattr(action, key, None) is not None:
            tol = 1e-3 if codec.space is CoordSpace.K1000 else 1 / 280
            assert all(
                abs(a - b) <= tol for a, b in zip(getattr(back, key), action.point, strict=True)
            )


def test_render_rejects_invalid_and_unmapped():
    with pytest.raises(ValueError, match="invalid"):
        K.render({"type": "click", "point": [2, 0]}, FRAME)
    with pytest.raises(ValueError, match="AndroidWorld"):
        K.render(parse_action({"type": "hotkey", "keys": ["ctrl", "c"]}), FRAME)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no action JSON"),
        ("click the wifi", "not valid JSON"),
        ("<answer>{", "unclosed"),
        ('{"action_type": "click", "x": 1000, "y": 5}', "outside [0, 999]"),
        ('{"action_type": "click", "x": -3, "y": 5}', "outside"),
        ('{"action_type": "click", "x": "5", "y": 5}', "finite numbers"),
        ('{"action_type": "click", "x": NaN, "y": 5}', "finite numbers"),
        ('{"action_type": "click"}', "x and y"),
        ('{"action_type": "teleport"}', "unknown AndroidWorld"),
        ('{"action_type": "status", "goal_status": "maybe"}', "goal_status"),
        ('{"action_type": "scroll", "direction": "sideways"}', "direction"),
        ('{"type": "click", "point": [1, 2, 3]}', "list of 2"),
        ('{"type": "fly"}', "unknown action type"),
        ("[1, 2]", "must be an object"),
        ('"click"', "must be an object"),
        ("[" * 5000 + "]" * 5000, ""),
        ("x" * 30_000, "longer than"),
    ],
)
def test_hostile_text_gives_invalid_action(text, reason):
    out = K.parse(text, FRAME)
    assert isinstance(out, InvalidAction)
    assert reason in out.reason


def test_non_text_input():
    assert "expected text" in K.parse(None, FRAME).reason  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_never_raises(text):
    out = K.parse(text, FRAME)
    assert isinstance(out, InvalidAction) or hasattr(out, "type")


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["action_type", "type", "x", "y", "text", "direction", "index", "point"]),
        st.one_of(st.none(), st.integers(-5, 2000), st.floats(), st.text(max_size=5)),
    )
)
def test_fuzz_json_objects_never_raise(obj):
    import json

    out = K.parse(json.dumps(obj), FRAME, [(0.0, 0.0, 1.0, 1.0)])
    if not isinstance(out, InvalidAction):
        assert all(0 <= v <= 1 for v in getattr(out, "point", None) or (0.5, 0.5))
