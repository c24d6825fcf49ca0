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

PointNorm = tuple[float, float]
AndroidAction = dict[str, np.ndarray]
_ADB_TEXT_SPECIALS = set("\\'\"()&<>;|*$`~!#?[]{}")
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


def escape_text(text: str) -> str:
    """``text`` as ``adb shell input text`` wants it: ``%s`` for spaces, shell chars escaped."""
    return "".join(
        "%s" if ch == " " else ("\\" + ch if ch in _ADB_TEXT_SPECIALS else ch) for ch in text
    )


def unescape_text(text: str) -> str:
    """Inverse of :func:`escape_text` (what the device receives)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif text.startswith("%s", i):
            out.append(" ")
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def input_text(text: str) -> adb_pb2.AdbRequest:
    """Type ``text`` into the focused field."""
    return adb_pb2.AdbRequest(input_text=adb_pb2.AdbRequest.InputText(text=escape_text(text)))


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
