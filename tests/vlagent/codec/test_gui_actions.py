"""GUI action codec: both JSON styles, per-family coordinates, round trips, hostile text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gui.actions import (
    ACTION_TYPES,
    Answer,
    Click,
    Done,
    DoubleClick,
    Drag,
    Fail,
    Hotkey,
    InvalidAction,
    Key,
    LongPress,
    OpenApp,
    RightClick,
    Scroll,
    Swipe,
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


# ---- render -> parse round trip: whole actions, every field, every type -------------------------

_P = st.tuples(st.floats(0, 1), st.floats(0, 1))
# text that must survive: arbitrary Unicode, plus the markers the parser looks for
_MARKERS = ["</answer>", "<answer>", "```", "```json", "<think>", "</think>", '"}', "\\", "\n"]
_TEXT = st.one_of(
    st.text(min_size=1, max_size=30),
    st.lists(st.one_of(st.sampled_from(_MARKERS), st.text(max_size=4)), min_size=1, max_size=5)
    .map("".join)
    .filter(bool),
)
_AW_KEYS = ["back", "home", "enter"]
ACTIONS: dict[str, st.SearchStrategy] = {
    "click": st.builds(Click, point=_P),
    "double_click": st.builds(DoubleClick, point=_P),
    "right_click": st.builds(RightClick, point=_P),
    "long_press": st.builds(LongPress, point=_P),
    "drag": st.builds(Drag, start=_P, end=_P),
    "swipe": st.builds(Swipe, start=_P, end=_P),
    "scroll": st.builds(
        Scroll, point=_P, direction=st.sampled_from(["up", "down", "left", "right"])
    ),
    "type": st.builds(Type, text=_TEXT, point=st.none() | _P),
    "key": st.builds(Key, key=st.sampled_from(_AW_KEYS) | st.text(min_size=1, max_size=32)),
    "hotkey": st.builds(
        Hotkey, keys=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4).map(tuple)
    ),
    "open_app": st.builds(
        OpenApp, name=st.text(min_size=1, max_size=64) | st.sampled_from(_MARKERS)
    ),
    "wait": st.builds(Wait, seconds=st.floats(0.001, 60)),
    "answer": st.builds(Answer, text=_TEXT),
    "done": st.just(Done()),
    "fail": st.builds(Fail, reason=st.text(max_size=40)),
}
_POINTS = ("point", "start", "end")


def test_every_action_type_has_a_strategy():
    assert set(ACTIONS) == set(ACTION_TYPES)


def androidworld_form(action):
    """What the AndroidWorld style can say of ``action`` (None: it has no form there).

    AndroidWorld has one press-and-hold (right_click becomes long_press), no wait length (the
    default), one failure status (``infeasible``) and three named keys."""
    match action:
        case Drag() | Swipe() | Hotkey():
            return None
        case Key(key=k) if k not in _AW_KEYS:
            return None
        case RightClick(point=p):
            return LongPress(point=p)
        case Wait():
            return Wait()
        case Fail():
            return Fail(reason="infeasible")
    return action


def assert_same_action(got, want, tol):
    """Equal type and every field equal; points within ``tol`` (the coordinate grid)."""
    assert type(got) is type(want), (got, want)
    assert set(type(got).model_fields) == set(type(want).model_fields)
    for name in type(want).model_fields:
        a, b = getattr(got, name), getattr(want, name)
        if name in _POINTS and b is not None:
            assert a is not None and len(a) == 2, (name, got, want)
            assert all(abs(x - y) <= tol for x, y in zip(a, b, strict=True)), (name, got, want)
        else:
            assert a == b, (name, got, want)


@pytest.mark.parametrize("kind", sorted(ACTIONS))
@pytest.mark.parametrize("style", ["json", "androidworld"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_render_parse_round_trip_keeps_every_field(kind, style, data):
    action = data.draw(ACTIONS[kind], label="action")
    family = data.draw(st.sampled_from(["qwen2_vl", "qwen2_5_vl", "qwen3_vl"]), label="family")
    wrap = data.draw(st.booleans(), label="wrap_answer")
    codec = GuiActionCodec.for_family(family, style=style, wrap_answer=wrap)
    want = action if style == "json" else androidworld_form(action)
    if want is None:
        with pytest.raises(ValueError, match="no AndroidWorld form"):
            codec.render(action, FRAME)
        return
    text = codec.render(action, FRAME)
    back = codec.parse(text, FRAME)
    # a number's grid: 1/1000 (k1000, clamped to 999), or one pixel of the 280 x 504 image
    tol = 1e-3 + 1e-9 if codec.space is CoordSpace.K1000 else 1 / 280
    assert_same_action(back, want, tol)


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
