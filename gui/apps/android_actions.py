"""Translate GUI actions (:mod:`gui.actions`) into android-env steps and adb requests.

A plan is a list of steps: an android-env action dict (TOUCH / LIFT / REPEAT with a position
in [0, 1]) sent with ``AndroidEnv.step``, or an ``AdbRequest`` sent with
``AndroidEnv.execute_adb_call`` (text, keys, app launches). Plans that end with adb get a
trailing REPEAT step so the env observes the screen after it. Text that cannot be typed safely
through the device shell (control characters, NUL, too long: :mod:`sim.android.adb_text`) is an
invalid action: no request is built for it.

>>> from gui.actions import Click
>>> [type(s).__name__ for s in plan_action(Click(point=(0.5, 0.5)), PlanConfig())]
['dict', 'dict']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from android_env.proto import adb_pb2

from gui.actions import (
    BaseAction,
    Click,
    DoubleClick,
    Drag,
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
)
from sim.android import touch
from sim.android.adb_text import typing_problem

Step = dict[str, Any] | adb_pb2.AdbRequest
_SCROLL_SPAN = 0.4  # finger travel of a scroll, as a fraction of the screen
_FINGER = {"down": (0.0, -1.0), "up": (0.0, 1.0), "right": (-1.0, 0.0), "left": (1.0, 0.0)}


@dataclass(frozen=True)
class PlanConfig:
    """How GUI actions become android-env input.

    Attributes:
        adb: the device has an adb controller (text, keys and app launches need it).
        activities: app display name -> ``package/.Activity`` that ``open_app`` launches.
        long_press_touches: TOUCH steps held before LIFT for a long press.
        swipe_moves: interpolated TOUCH moves of a swipe.
    """

    adb: bool = True
    activities: Mapping[str, str] = field(default_factory=dict)
    long_press_touches: int = 3
    swipe_moves: int = 5


def _clamp(v: float) -> float:
    return min(max(v, 0.02), 0.98)


def scroll_points(
    point: tuple[float, float], direction: str
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Finger start and end of a scroll centred on ``point``; ``"down"`` moves the finger up."""
    dx, dy = _FINGER[direction]
    half = _SCROLL_SPAN / 2
    start = (_clamp(point[0] - dx * half), _clamp(point[1] - dy * half))
    end = (_clamp(point[0] + dx * half), _clamp(point[1] + dy * half))
    return start, end


def plan_action(action: BaseAction, config: PlanConfig) -> list[Step] | InvalidAction:
    """android-env steps for a non-terminal GUI action, or why it cannot run on this device."""
    match action:
        case Click(point=p):
            return list(touch.tap(p))
        case DoubleClick(point=p):
            return touch.tap(p) + touch.tap(p)
        case LongPress(point=p) | RightClick(point=p):
            return list(touch.long_press(p, config.long_press_touches))
        case Swipe(start=a, end=b) | Drag(start=a, end=b):
            return list(touch.swipe(a, b, config.swipe_moves))
        case Scroll(point=p, direction=d):
            return list(touch.swipe(*scroll_points(p, d), config.swipe_moves))
        case Wait():
            return [touch.repeat()]
        case Hotkey(keys=keys):
            return InvalidAction(f"hotkeys are not supported on Android: {'+'.join(keys)}")
    if not config.adb:
        return InvalidAction(f"{action.type} needs adb (text input, keys and app launches use adb)")
    steps: list[Step] = []
    match action:
        case Type(text=text, point=p):
            problem = typing_problem(text)
            if problem is not None:  # never reaches the device shell
                return InvalidAction(f"type: {problem}")
            if p is not None:
                steps += touch.tap(p)
            steps += touch.type_requests(text)
        case Key(key=key):
            name = key.strip().lower()
            if name in touch.BUTTONS:
                steps.append(touch.press_button(name))
            elif name in touch.KEYCODES:
                steps.append(touch.keyevent(touch.KEYCODES[name]))
            else:
                known = ", ".join([*touch.BUTTONS, *touch.KEYCODES])
                return InvalidAction(f"key {key!r} has no Android keycode here; known: {known}")
        case OpenApp(name=name):
            activity = next(
                (
                    a
                    for n, a in config.activities.items()
                    if n.casefold() == name.strip().casefold()
                ),
                None,
            )
            if activity is None:
                known = ", ".join(config.activities) or "none"
                return InvalidAction(f"app {name!r} is not known to this device; known: {known}")
            steps.append(touch.start_activity(activity))
        case _:
            return InvalidAction(f"{action.type} actions are not executed on the device")
    return steps + [touch.repeat()]
