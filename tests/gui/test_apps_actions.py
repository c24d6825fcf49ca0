"""The typed GUI action schema: parsing, round trips, junk, AndroidWorld conversion."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gui.actions import (
    ACTION_TYPES,
    Answer,
    BaseAction,
    Click,
    Done,
    Fail,
    InvalidAction,
    Key,
    LongPress,
    OpenApp,
    Scroll,
    Swipe,
    Type,
    Wait,
    from_androidworld,
    parse_action,
)
from gui.apps.spaces import GuiActionSpace

_P = st.tuples(st.floats(0, 1), st.floats(0, 1))
_TEXT = st.text(min_size=1, max_size=40)
_VALID: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "click": st.fixed_dictionaries({"point": _P}),
    "double_click": st.fixed_dictionaries({"point": _P}),
    "right_click": st.fixed_dictionaries({"point": _P}),
    "long_press": st.fixed_dictionaries({"point": _P}),
    "drag": st.fixed_dictionaries({"start": _P, "end": _P}),
    "swipe": st.fixed_dictionaries({"start": _P, "end": _P}),
    "scroll": st.fixed_dictionaries(
        {"point": _P, "direction": st.sampled_from(["up", "down", "left", "right"])}
    ),
    "type": st.fixed_dictionaries({"text": _TEXT}, optional={"point": _P}),
    "key": st.fixed_dictionaries({"key": st.text(min_size=1, max_size=10)}),
    "hotkey": st.fixed_dictionaries(
        {"keys": st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=4)}
    ),
    "open_app": st.fixed_dictionaries({"name": st.text(min_size=1, max_size=20)}),
    "wait": st.fixed_dictionaries({}, optional={"seconds": st.floats(0.01, 60)}),
    "answer": st.fixed_dictionaries({"text": _TEXT}),
    "done": st.just({}),
    "fail": st.fixed_dictionaries({}, optional={"reason": st.text(max_size=20)}),
}
VALID_ACTIONS = st.sampled_from(sorted(_VALID)).flatmap(
    lambda k: _VALID[k].map(lambda d: {"type": k, **d})
)


def test_every_type_has_a_strategy() -> None:
    assert set(_VALID) == set(ACTION_TYPES)


@settings(max_examples=300, deadline=None)
@given(VALID_ACTIONS)
def test_valid_actions_parse_and_round_trip(obj: dict[str, Any]) -> None:
    action = parse_action(obj)
    assert isinstance(action, BaseAction), action
    assert action.type == obj["type"]
    again = parse_action(action.to_dict())
    assert again == action and parse_action(action) is action


_JUNK = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=10),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.fixed_dictionaries({"type": st.text(max_size=8).filter(lambda t: t not in ACTION_TYPES)}),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["click", "long_press"]),
            "point": st.one_of(
                st.tuples(st.floats(allow_nan=True), st.floats()).filter(
                    lambda p: not all(0 <= v <= 1 for v in p)
                ),
                st.text(max_size=3),
                st.none(),
                st.lists(st.floats(0, 1), max_size=5).filter(lambda v: len(v) != 2),
            ),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("type"), "text": st.one_of(st.integers(), st.just(""), st.none())}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("scroll"),
            "point": _P,
            "direction": st.text(max_size=5).filter(
                lambda d: d not in ("up", "down", "left", "right")
            ),
        }
    ),
    VALID_ACTIONS.map(lambda d: {**d, "extra": 1}),
)


@settings(max_examples=300, deadline=None)
@given(_JUNK)
def test_junk_gives_invalid_actions_never_exceptions(obj: Any) -> None:
    out = parse_action(obj)
    assert isinstance(out, InvalidAction) and isinstance(out.reason, str) and out.reason


def test_reasons_name_the_type_field_and_problem() -> None:
    assert (
        parse_action({"type": "click", "point": [0.5, math.nan]}).reason
        == "click.point.1: must be finite"
    )
    assert (
        parse_action({"type": "click", "point": [True, 0.1]}).reason
        == "click.point.0: must be a number, got bool"
    )
    assert "unknown action type 'tap'" in parse_action({"type": "tap", "point": [0, 0]}).reason
    assert "from_androidworld" in parse_action({"action_type": "click", "x": 1, "y": 2}).reason
    assert parse_action("click(0.5, 0.5)").reason.startswith("action must be a mapping")


def test_points_accept_numpy_and_ints() -> None:
    assert parse_action({"type": "click", "point": np.array([0.25, 1])}) == Click(point=(0.25, 1.0))
    assert parse_action({"type": "click", "point": (np.float32(0.5), 0)}) == Click(point=(0.5, 0.0))


def test_gui_action_space_samples_are_valid_and_seeded() -> None:
    a, b = GuiActionSpace(apps=("Notes",), seed=3), GuiActionSpace(apps=("Notes",), seed=3)
    samples = [a.sample() for _ in range(300)]
    assert samples == [b.sample() for _ in range(300)]
    assert all(a.contains(s) for s in samples)
    assert {s["type"] for s in samples} >= {"click", "scroll", "type", "open_app", "done"}
    assert not a.contains({"type": "click"})


SIZE = (1080, 2400)


@pytest.mark.parametrize(
    ("aw", "expected"),
    [
        ({"action_type": "click", "x": 540, "y": 600}, Click(point=(0.5, 0.25))),
        ({"action_type": "long_press", "x": 0, "y": 2400}, LongPress(point=(0.0, 1.0))),
        (
            {"action_type": "double_tap", "x": 108, "y": 240},
            parse_action({"type": "double_click", "point": [0.1, 0.1]}),
        ),
        (
            {"action_type": "input_text", "text": "Ana", "x": 540, "y": 1200},
            Type(text="Ana", point=(0.5, 0.5)),
        ),
        ({"action_type": "input_text", "text": "Ana"}, Type(text="Ana")),
        ({"action_type": "navigate_back"}, Key(key="back")),
        ({"action_type": "navigate_home"}, Key(key="home")),
        ({"action_type": "keyboard_enter"}, Key(key="enter")),
        (
            {"action_type": "scroll", "direction": "down"},
            Scroll(point=(0.5, 0.5), direction="down"),
        ),
        (
            {"action_type": "scroll", "direction": "up", "x": 270, "y": 600},
            Scroll(point=(0.25, 0.25), direction="up"),
        ),
        ({"action_type": "swipe", "direction": "up"}, Swipe(start=(0.5, 0.75), end=(0.5, 0.25))),
        (
            {"action_type": "swipe", "direction": "right", "x": 1080, "y": 1200},
            Swipe(start=(0.75, 0.5), end=(1.0, 0.5)),
        ),
        ({"action_type": "open_app", "app_name": "Contacts"}, OpenApp(name="Contacts")),
        ({"action_type": "status", "goal_status": "complete"}, Done()),
        ({"action_type": "status", "goal_status": "infeasible"}, Fail(reason="infeasible")),
        ({"action_type": "answer", "text": "555-0101"}, Answer(text="555-0101")),
        ({"action_type": "wait"}, Wait()),
    ],
)
def test_from_androidworld_by_hand(aw: dict[str, Any], expected: BaseAction) -> None:
    assert from_androidworld(aw, SIZE) == expected


@pytest.mark.parametrize(
    ("aw", "size", "reason"),
    [
        ({"action_type": "click", "x": 2000, "y": 10}, SIZE, "outside the 1080x2400 screen"),
        ({"action_type": "click", "index": 4}, SIZE, "index-based"),
        ({"action_type": "click", "x": "10", "y": 10}, SIZE, "must be a number"),
        ({"action_type": "scroll", "direction": "sideways"}, SIZE, "direction must be"),
        ({"action_type": "status", "goal_status": "maybe"}, SIZE, "goal_status"),
        ({"action_type": "input_text"}, SIZE, "type.text"),
        ({"action_type": "fly"}, SIZE, "unknown AndroidWorld action_type"),
        ({"action_type": "click", "x": 1, "y": 1}, (0, 10), "screen_size must be positive"),
        ("click", SIZE, "must be a mapping"),
        ({"action_type": "click", "x": 1, "y": 1}, None, "could not be read"),
    ],
)
def test_from_androidworld_rejects_with_reasons(aw: Any, size: Any, reason: str) -> None:
    out = from_androidworld(aw, size)
    assert isinstance(out, InvalidAction) and reason in out.reason
