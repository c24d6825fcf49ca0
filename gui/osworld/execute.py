"""Run our GUI actions (:mod:`gui.actions`) on a local X desktop (:mod:`sim.desktop`).

Points arrive normalized to [0, 1] of the screenshot and become integer pixels of the X
screen: ``round(x * (W - 1))``. Text reaches the apps only as keystrokes (``xdotool type`` with
an argv list, never a shell). Two Ubuntu desktop conventions that OSWorld's task files rely on
are emulated here, since our window manager has no such bindings: the chord ``ctrl+alt+t``
opens a terminal, and ``open_app`` launches one of the session's apps by name.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from gui.actions import (
    BaseAction,
    Click,
    DoubleClick,
    Drag,
    Hotkey,
    Key,
    LongPress,
    OpenApp,
    RightClick,
    Scroll,
    Swipe,
    Type,
    Wait,
)

APP_ALIASES: dict[str, str] = {
    "terminal": "terminal",
    "xterm": "terminal",
    "gnome-terminal": "terminal",
    "text_editor": "text_editor",
    "text editor": "text_editor",
    "editor": "text_editor",
    "xedit": "text_editor",
    "gedit": "text_editor",
    "calculator": "calculator",
    "xcalc": "calculator",
    "gnome-calculator": "calculator",
}
"""App names an action or a task file may use → the session's app keys (``sim.desktop.APPS``)."""

TERMINAL_TITLE = "Terminal"
"""Window title of the terminal, as on OSWorld's Ubuntu (``activate_window: Terminal``)."""

MAX_WAIT_S = 5.0
"""A ``wait`` action sleeps at most this long (the action allows up to 60 s)."""

_SHORTCUTS: dict[tuple[str, ...], str] = {("alt", "ctrl", "t"): "terminal"}
"""Desktop chords (sorted key names) → the app they open, as Ubuntu's GNOME binds them."""


def app_key(name: str) -> str | None:
    """The session app key for ``name`` (case-insensitive; None when it is not one of ours)."""
    return APP_ALIASES.get(name.strip().lower())


def to_pixels(point: Sequence[float], size: tuple[int, int]) -> tuple[int, int]:
    """Normalized ``(x, y)`` in [0, 1] → integer pixels of a ``(width, height)`` screen."""
    w, h = size
    return round(float(point[0]) * (w - 1)), round(float(point[1]) * (h - 1))


def launch_app(session: Any, key: str, log_path: str | None = None) -> None:
    """Start app ``key`` in ``session``'s sandbox and wait for its window.

    The terminal is an xterm titled ``Terminal`` whose output is logged to ``log_path`` (a
    path inside the sandbox home; the ``vm_terminal_output`` getter reads it).
    """
    if key == "terminal":
        args = ["-title", TERMINAL_TITLE]
        if log_path:
            args += ["-l", "-lf", log_path]
        session.launch("terminal", args, wait_title=TERMINAL_TITLE)
    else:
        session.launch(key)


def _chord(keys: Sequence[str]) -> str:
    return "+".join(keys)


def execute(session: Any, action: BaseAction, terminal_log: str | None = None) -> str | None:
    """Perform one non-terminal action on ``session``'s screen.

    Returns:
        None when done, or the reason the action could not run (the env records it as an
        invalid action: an unknown app name, a key name ``xdotool`` does not have, a gesture
        with no desktop equivalent).
    """
    size = session.display.size
    xin = session.input
    match action:
        case Click(point=p):
            xin.click(*to_pixels(p, size))
        case DoubleClick(point=p):
            xin.click(*to_pixels(p, size), count=2)
        case RightClick(point=p):
            xin.click(*to_pixels(p, size), button=3)
        case Drag(start=a, end=b) | Swipe(start=a, end=b):
            xin.drag(*to_pixels(a, size), *to_pixels(b, size))
        case Scroll(point=p, direction=d):
            xin.scroll(*to_pixels(p, size), d)
        case Type(text=t, point=p):
            if p is not None:
                xin.click(*to_pixels(p, size))
            xin.type_text(t)
        case Key(key=k):
            try:
                xin.key(k)
            except ValueError as exc:
                return str(exc)
        case Hotkey(keys=keys):
            shortcut = _SHORTCUTS.get(tuple(sorted(k.lower() for k in keys)))
            if shortcut is not None:
                launch_app(session, shortcut, terminal_log)
                return None
            try:
                xin.key(_chord(keys))
            except ValueError as exc:
                return str(exc)
        case OpenApp(name=n):
            key = app_key(n)
            if key is None:
                known = ", ".join(sorted(set(APP_ALIASES.values())))
                return f"open_app: no app named {n!r} on this desktop; known: {known}"
            launch_app(session, key, terminal_log)
        case Wait(seconds=s):
            time.sleep(min(float(s), MAX_WAIT_S))
        case LongPress():
            return "long_press has no desktop equivalent (use right_click)"
        case _:
            return f"{action.type} is not an on-screen action"
    return None
