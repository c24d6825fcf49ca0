"""android-env action dicts and adb requests for gestures (positions normalized to [0, 1]).

android-env's native action is ``{"action_type": TOUCH | LIFT | REPEAT, "touch_position":
float32 (2,)}``, one per env step; a gesture is a sequence of them. Text, keys and app
launches are not touches: they go through adb (:class:`android_env.proto.adb_pb2.AdbRequest`).

>>> [int(a["action_type"]) for a in tap((0.5, 0.5))]
[0, 1]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from android_env.components.action_type import ActionType
from android_env.proto import adb_pb2

from sim.android.adb_text import escape_text, text_chunks, typing_problem, unescape_text

__all__ = [
    "BUTTONS",
    "KEYCODES",
    "escape_text",
    "input_text",
    "keyevent",
    "lift",
    "long_press",
    "press_button",
    "repeat",
    "start_activity",
    "swipe",
    "tap",
    "touch",
    "type_requests",
    "unescape_text",
]

PointNorm = tuple[float, float]
AndroidAction = dict[str, np.ndarray]
BUTTONS: dict[str, int] = {
    "home": adb_pb2.AdbRequest.PressButton.Button.HOME,
    "back": adb_pb2.AdbRequest.PressButton.Button.BACK,
    "enter": adb_pb2.AdbRequest.PressButton.Button.ENTER,
}
"""Keys android-env presses with ``PressButton``."""
KEYCODES: dict[str, str] = {
    "backspace": "KEYCODE_DEL",
    "delete": "KEYCODE_DEL",
    "del": "KEYCODE_DEL",
    "tab": "KEYCODE_TAB",
    "escape": "KEYCODE_ESCAPE",
    "space": "KEYCODE_SPACE",
    "menu": "KEYCODE_MENU",
    "search": "KEYCODE_SEARCH",
    "up": "KEYCODE_DPAD_UP",
    "down": "KEYCODE_DPAD_DOWN",
    "left": "KEYCODE_DPAD_LEFT",
    "right": "KEYCODE_DPAD_RIGHT",
    "volume_up": "KEYCODE_VOLUME_UP",
    "volume_down": "KEYCODE_VOLUME_DOWN",
}
"""Other keys, sent as ``adb shell input keyevent KEYCODE_*``."""


def _position(point: PointNorm) -> np.ndarray:
    x, y = (min(max(float(v), 0.0), 1.0) for v in point)
    return np.array([x, y], dtype=np.float32)


def touch(point: PointNorm) -> AndroidAction:
    """Finger down (or moved) at ``point``."""
    return {"action_type": np.array(ActionType.TOUCH), "touch_position": _position(point)}


def lift(point: PointNorm) -> AndroidAction:
    """Finger up (android-env ignores the position of a LIFT)."""
    return {"action_type": np.array(ActionType.LIFT), "touch_position": _position(point)}


def repeat() -> AndroidAction:
    """No input this step (an observation-only step)."""
    return {"action_type": np.array(ActionType.REPEAT), "touch_position": _position((0.0, 0.0))}


def tap(point: PointNorm) -> list[AndroidAction]:
    """TOUCH then LIFT at ``point``."""
    return [touch(point), lift(point)]


def long_press(point: PointNorm, touches: int = 3) -> list[AndroidAction]:
    """TOUCH held for ``touches`` steps at ``point``, then LIFT."""
    return [touch(point) for _ in range(max(2, touches))] + [lift(point)]


def swipe(start: PointNorm, end: PointNorm, moves: int = 5) -> list[AndroidAction]:
    """TOUCH at ``start``, ``moves`` interpolated TOUCH moves ending at ``end``, LIFT."""
    a, b = _position(start), _position(end)
    steps = [touch(tuple(a + (b - a) * k / max(1, moves))) for k in range(max(1, moves) + 1)]
    return steps + [lift(tuple(b))]


def input_text(text: str) -> adb_pb2.AdbRequest:
    """Type ``text`` into the focused field (one request: ``text`` holds no literal ``%s``).

    Raises:
        ValueError: ``text`` cannot be typed safely (:func:`sim.android.adb_text.escape_text`).
    """
    return adb_pb2.AdbRequest(input_text=adb_pb2.AdbRequest.InputText(text=escape_text(text)))


def type_requests(text: str) -> list[adb_pb2.AdbRequest]:
    """The ``input text`` requests that type ``text`` exactly (one per ``%s`` split).

    Raises:
        ValueError: ``text`` cannot be typed safely; check
            :func:`sim.android.adb_text.typing_problem` first.
    """
    problem = typing_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return [input_text(chunk) for chunk in text_chunks(text)]


def press_button(name: str) -> adb_pb2.AdbRequest:
    """Press ``home``, ``back`` or ``enter`` (keys of :data:`BUTTONS`)."""
    button = adb_pb2.AdbRequest.PressButton(button=BUTTONS[name])  # type: ignore[arg-type]
    return adb_pb2.AdbRequest(press_button=button)


def keyevent(keycode: str) -> adb_pb2.AdbRequest:
    """``adb shell input keyevent <keycode>`` (e.g. ``KEYCODE_DEL``)."""
    args: Sequence[str] = ["shell", "input", "keyevent", keycode]
    return adb_pb2.AdbRequest(generic=adb_pb2.AdbRequest.GenericRequest(args=args))


def start_activity(activity: str) -> adb_pb2.AdbRequest:
    """Launch ``package/.Activity``."""
    request = adb_pb2.AdbRequest.StartActivity(full_activity=activity)
    return adb_pb2.AdbRequest(start_activity=request)
