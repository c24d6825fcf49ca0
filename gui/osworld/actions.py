"""Convert OSWorld agent outputs into our GUI actions (:mod:`gui.actions`), never running them.

OSWorld (github.com/xlang-ai/OSWorld, commit ``89426951c97d750c388ebbafcc923cfce5577616``):
computer_13 (``desktop_env/actions.py`` as ``PythonController.execute_action`` runs it), pyautogui
code (``mm_agents`` prompts), the answers ``WAIT`` / ``DONE`` / ``FAIL``. Pixels of the agent's
``screen_size = (width, height)`` become points normalized to [0, 1] (``x / width``,
``y / height``); ``cursor`` is the pointer's pixel position before the action, when known.
InvalidAction (no equivalent in our schema): MOVE_TO, MOUSE_DOWN / UP, KEY_DOWN / UP, middle and
triple clicks. Scroll amounts are dropped: ``dy > 0`` (pyautogui ``scroll(+n)``) is ``"up"``,
``dx > 0`` ``"right"``, at the pointer or else the screen centre.

>>> from_pyautogui("import os; os.system('rm -rf /')", (20, 20)).reason
'line 1: import os is not allowed (only pyautogui and time)'
"""

from __future__ import annotations

import ast
import logging
import math
import warnings
from collections.abc import Mapping
from typing import Any

from gui.actions import BaseAction, Done, Fail, InvalidAction, Wait, parse_action

log = logging.getLogger(__name__)


_names = str.split
KEYBOARD_KEYS: frozenset[str] = frozenset(
    [*"\t\n\r !\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"]
    + [f"f{i}" for i in range(1, 25)]
    + [f"num{i}" for i in range(10)]
    + _names(
        "accept add alt altleft altright apps backspace browserback browserfavorites "
        "browserforward browserhome browserrefresh browsersearch browserstop capslock clear "
        "convert ctrl ctrlleft ctrlright decimal del delete divide down end enter esc escape "
        "execute final fn hanguel hangul hanja help home insert junja kana kanji launchapp1 "
        "launchapp2 launchmail launchmediaselect left modechange multiply nexttrack nonconvert "
        "numlock pagedown pageup pause pgdn pgup playpause prevtrack print printscreen prntscrn "
        "prtsc prtscr return right scrolllock select separator shift shiftleft shiftright sleep "
        "stop subtract tab up volumedown volumemute volumeup win winleft winright yen command "
        "option optionleft optionright"
    )
)
"""computer_13 key names (OSWorld's ``KEYBOARD_KEYS``); pyautogui also knows ``space``."""
PYAUTOGUI_KEYS: frozenset[str] = KEYBOARD_KEYS | {"space"}
SPECIAL = {"WAIT": Wait, "DONE": Done, "FAIL": Fail}  # OSWorld's special answers
MAX_CODE_CHARS = 20_000
MAX_ACTIONS = 64
_WHITESPACE_KEYS = {"\n": "enter", "\r": "enter", "\t": "tab", " ": "space"}
Pixel = tuple[float, float]


class _Reject(Exception):
    """Internal: the input cannot become an action; ``args[0]`` is the reason."""


def _num(v: Any, what: str) -> float:
    try:
        ok = not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v)
    except OverflowError:  # an int too large for a float
        ok = False
    if not ok:
        raise _Reject(f"{what} must be a finite number, got {v!r:.60}")
    return float(v)


def _key(key: Any, known: frozenset[str]) -> str:
    """A key name as pyautogui reads it (multi-letter names lower-cased), or _Reject."""
    if not isinstance(key, str) or not key or key.lower() not in known:
        raise _Reject(f"unknown key {key!r:.60}")
    return _WHITESPACE_KEYS.get(key, key if len(key) == 1 else key.lower())


def _act(**fields: Any) -> BaseAction:
    action = parse_action(fields)
    if isinstance(action, InvalidAction):
        raise _Reject(action.reason)
    return action


class _Screen:
    """Pixels of a ``(width, height)`` screen -> normalized points; follows the pointer."""

    def __init__(self, screen_size: Any, cursor: Any) -> None:
        self.keys = PYAUTOGUI_KEYS
        try:
            self.size = tuple(_num(v, "screen_size") for v in screen_size)
            ok = len(self.size) == 2 and min(self.size) > 0
        except (TypeError, _Reject):
            ok = False
        if not ok:
            raise _Reject(f"screen_size must be a positive (width, height): {screen_size!r:.60}")
        self.cursor: Pixel | None = None if cursor is None else self.pixel(*cursor)

    def pixel(self, x: Any, y: Any) -> Pixel:
        px, py = _num(x, "x"), _num(y, "y")
        w, h = self.size
        if not (0 <= px <= w and 0 <= py <= h):
            raise _Reject(f"point ({px:g}, {py:g}) lies outside the {w:g}x{h:g} screen")
        return px, py

    def norm(self, p: Pixel) -> tuple[float, float]:
        return p[0] / self.size[0], p[1] / self.size[1]

    def at(self, x: Any, y: Any, what: str) -> tuple[float, float]:
        """Normalized point of pixels ``x`` / ``y`` (None: the pointer's); moves the pointer."""
        if x is None or y is None:
            if self.cursor is None:
                raise _Reject(f"{what} has no coordinates and the pointer position is unknown")
            x, y = self.cursor[0] if x is None else x, self.cursor[1] if y is None else y
        self.cursor = self.pixel(x, y)
        return self.norm(self.cursor)

    def scroll(self, dx: float, dy: float, x: Any = None, y: Any = None) -> BaseAction:
        if dx == 0 and dy == 0:
            raise _Reject("scroll: dx and dy are both 0")
        vertical = ("up" if dy > 0 else "down", "right" if dx > 0 else "left")
        here = self.norm(self.cursor) if self.cursor else (0.5, 0.5)
        point = self.at(x, y, "scroll") if x is not None and y is not None else here
        return _act(type="scroll", point=point, direction=vertical[abs(dy) < abs(dx)])

    def click(self, x: Any, y: Any, clicks: Any, button: Any, what: str) -> list[BaseAction]:
        button = {"primary": "left", "secondary": "right"}.get(button, button)
        if isinstance(clicks, bool) or not isinstance(clicks, int) or not 0 <= clicks <= 3:
            raise _Reject(f"{what}: clicks must be 0-3, got {clicks!r:.60}")
        kinds = {("left", 1): "click", ("left", 2): "double_click", ("right", 1): "right_click"}
        point = self.at(x, y, what)
        if clicks and (button, clicks) not in kinds:
            raise _Reject(f"{what}: {clicks} click(s) of {button!r:.60} have no GUI action")
        return [_act(type=kinds[button, clicks], point=point)] if clicks else []


def _convert(what: str, fn: Any, obj: Any, screen_size: Any, cursor: Any) -> Any:
    try:
        return fn(obj, _Screen(screen_size, cursor))
    except _Reject as err:
        return InvalidAction(str(err))
    except Exception as err:  # hostile input must not break a rollout
        log.debug("%s converter caught an exception", what, exc_info=True)
        return InvalidAction(f"{what} could not be read: {type(err).__name__}")


# ---------------------------------------------------------------- computer_13 (JSON dicts)

_C13_UNSUPPORTED = ("MOVE_TO", "MOUSE_DOWN", "MOUSE_UP", "KEY_DOWN", "KEY_UP")
_C13_CALLS = dict(  # computer_13 type -> the pyautogui call OSWorld's controller makes
    kv.split(":")
    for kv in _names(
        "CLICK:click DOUBLE_CLICK:doubleClick RIGHT_CLICK:rightClick "
        "DRAG_TO:dragTo TYPING:write PRESS:press HOTKEY:hotkey"
    )
)


def _c13(obj: Any, scr: _Screen) -> BaseAction:
    if isinstance(obj, str) and obj in SPECIAL:
        return SPECIAL[obj]()
    if not isinstance(obj, Mapping):
        raise _Reject(f"computer_13 action must be a mapping, got {obj!r:.60}")
    kind = obj.get("action_type")
    p = obj.get("parameters", {k: v for k, v in obj.items() if k != "action_type"})
    if kind in SPECIAL:
        return SPECIAL[kind]()
    if kind in _C13_UNSUPPORTED:
        raise _Reject(f"{kind}: unsupported (our schema has no separate pointer move or press)")
    if kind not in _C13_CALLS and kind != "SCROLL":
        known = ", ".join(sorted([*SPECIAL, *_C13_UNSUPPORTED, *_C13_CALLS, "SCROLL"]))
        raise _Reject(f"unknown computer_13 action_type {kind!r:.60}; known: {known}")
    if not isinstance(p, Mapping):
        raise _Reject(f"{kind}: parameters must be a mapping")
    if (p.get("x") is None) != (p.get("y") is None) or (kind == "DRAG_TO" and p.get("x") is None):
        raise _Reject(f"{kind}: give x and y together" + " (required)" * (kind == "DRAG_TO"))
    if kind == "SCROLL":
        return scr.scroll(_num(p.get("dx", 0), "dx"), _num(p.get("dy", 0), "dy"))
    if kind == "TYPING" and not (isinstance(p.get("text"), str) and p["text"]):
        raise _Reject("TYPING: text must be a non-empty str")
    if kind == "HOTKEY" and not isinstance(p.get("keys"), list):
        raise _Reject("HOTKEY: keys must be a list of key names")
    args = {"clicks": p.get("num_clicks", 1), "message": p.get("text"), "keys": p.get("key")}
    scr.keys = KEYBOARD_KEYS
    try:
        actions = _pyautogui(_C13_CALLS[kind], {**p, **args, "*": p.get("keys")}, scr)
    except _Reject as err:
        raise _Reject(f"{kind}: {err}") from None
    if len(actions) != 1:
        raise _Reject(f"{kind}: gives {len(actions)} actions instead of one")
    return actions[0]


def from_computer13(
    obj: Mapping[str, Any] | str, screen_size: tuple[int, int], cursor: Pixel | None = None
) -> BaseAction | InvalidAction:
    """Convert one computer_13 action: ``{"action_type": ..., <params>}`` (the parameters
    inline or under ``"parameters"``, ``x`` / ``y`` in pixels of ``screen_size``) or a plain
    ``"WAIT"`` / ``"DONE"`` / ``"FAIL"``; ``cursor`` (pixels) serves CLICK without x / y and
    DRAG_TO's start. Returns the action or an InvalidAction naming the problem; never raises.
    """
    return _convert("computer_13 action", _c13, obj, screen_size, cursor)


def computer13_pointer(obj: Any, cursor: tuple[float, float] | None) -> tuple[float, float] | None:
    """The pointer's pixel position after computer_13 action ``obj`` (``cursor`` if unmoved),
    so that a runner can follow MOVE_TO (itself an InvalidAction) into a later CLICK / DRAG_TO.
    """
    params = obj.get("parameters", obj) if isinstance(obj, Mapping) else None
    xy = [params.get(k) for k in "xy"] if isinstance(params, Mapping) else []
    ok = len(xy) == 2 and all(isinstance(v, int | float) and not isinstance(v, bool) for v in xy)
    return (float(xy[0]), float(xy[1])) if ok else cursor


# ---------------------------------------------------------------- pyautogui code (ast only)

_MOUSE = ("logScreenshot", "_pause")
_WRITE, _SCROLL = ("message", "interval", *_MOUSE), ("clicks", "x", "y", *_MOUSE)
_SIGS: dict[str, tuple[str, ...]] = {
    "click": ("x", "y", "clicks", "interval", "button", "duration", "tween", *_MOUSE),
    "doubleClick": ("x", "y", "interval", "button", "duration", "tween", *_MOUSE),
    "rightClick": ("x", "y", "interval", "duration", "tween", *_MOUSE),
    "moveTo": ("x", "y", "duration", "tween", *_MOUSE),
    "dragTo": ("x", "y", "duration", "tween", "button", *_MOUSE, "mouseDownUp"),
    "press": ("keys", "presses", "interval", *_MOUSE),
    "hotkey": (),
    **dict.fromkeys(("write", "typewrite"), _WRITE),
    **dict.fromkeys(("scroll", "vscroll", "hscroll"), _SCROLL),
}
"""Allowed ``pyautogui.<name>`` calls -> positional parameter order (pyautogui 0.9.54)."""


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` of an attribute chain (at most 6 deep; anything else ``<expression>``)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute) and len(parts) < 6:
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "<expression>")
    return ".".join(reversed(parts))


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Call | ast.Name | ast.Attribute | ast.Constant):
        kind = {ast.Call: "call of", ast.Name: "name", ast.Attribute: "attribute"}.get(type(node))
        what = _dotted(node.func if isinstance(node, ast.Call) else node)
        call = "()" if isinstance(node, ast.Call) else ""
        return f"{type(node.value).__name__} constant" if kind is None else f"{kind} {what}{call}"
    return "an f-string" if isinstance(node, ast.JoinedStr) else f"{type(node).__name__} expression"


def _literal(node: ast.AST, depth: int = 0) -> Any:
    """A literal argument: str / number / None / bool, a short list or tuple of them, or a
    ``pyautogui.ease*`` tween (kept as its name)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | None):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = node.operand
        if isinstance(inner, ast.Constant) and type(inner.value) in (int, float):
            return -inner.value if isinstance(node.op, ast.USub) else inner.value
    if isinstance(node, ast.Tuple | ast.List) and depth < 2 and len(node.elts) <= MAX_ACTIONS:
        return [_literal(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Attribute) and _dotted(node).startswith("pyautogui.ease"):
        return _dotted(node)
    raise _Reject(f"{_describe(node)} is not allowed (arguments must be literals)")


def _bind(name: str, call: ast.Call) -> dict[str, Any]:
    """Arguments by parameter name; ``"*"`` holds the positional ones."""
    sig = _SIGS[name]
    if any(isinstance(a, ast.Starred) for a in call.args):
        raise _Reject(f"{name}(): *args is not allowed")
    if len(call.args) > len(sig) and name != "hotkey":
        raise _Reject(f"{name}() takes at most {len(sig)} positional arguments")
    bound: dict[str, Any] = {"*": [_literal(a) for a in call.args]}
    bound.update(zip(sig, bound["*"], strict=False))
    for kw in call.keywords:
        if kw.arg not in (("interval", *_MOUSE) if name == "hotkey" else sig) or kw.arg in bound:
            raise _Reject(f"{name}(): keyword {kw.arg or '**'} is not allowed here")
        bound[kw.arg] = _literal(kw.value)
    return bound


def _xy(b: dict[str, Any], name: str) -> tuple[Any, Any]:
    x, y = b.get("x"), b.get("y")
    if isinstance(x, list) and len(x) == 2 and y is None:
        x, y = x
    if isinstance(x, str):
        raise _Reject(f"{name}(): locating an image on screen is not supported")
    return x, y


def _keys(value: Any, scr: _Screen) -> list[str]:
    return [_key(k, scr.keys) for k in (value if isinstance(value, list) else [value])]


def _pyautogui(fn: str, b: dict[str, Any], scr: _Screen) -> list[BaseAction]:
    if fn in ("click", "doubleClick", "rightClick"):
        clicks = {"click": b.get("clicks", 1), "doubleClick": 2}.get(fn, 1)
        button = "right" if fn == "rightClick" else b.get("button", "left")
        return scr.click(*_xy(b, fn), clicks, button, f"{fn}()")
    if fn == "moveTo":
        scr.at(*_xy(b, fn), "moveTo()")
        return []
    if fn == "dragTo":
        if b.get("button", "left") not in ("left", "primary"):
            raise _Reject(f"dragTo(): only the left button drags, got {b.get('button')!r:.60}")
        if scr.cursor is None:
            raise _Reject("dragTo(): the start position (the pointer) is unknown")
        start = scr.norm(scr.cursor)
        return [_act(type="drag", start=start, end=scr.at(*_xy(b, fn), "dragTo()"))]
    if fn in ("write", "typewrite"):
        msg = b.get("message")
        if isinstance(msg, list):
            return [_act(type="key", key=k) for k in _keys(msg, scr)]
        if not isinstance(msg, str):
            raise _Reject(f"{fn}(): message must be a str or a list of key names")
        return [_act(type="type", text=msg)] if msg else []
    if fn == "press":
        n = b.get("presses", 1)
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_ACTIONS:
            raise _Reject(f"press(): presses must be 0-{MAX_ACTIONS}, got {n!r:.60}")
        return [_act(type="key", key=k) for _ in range(n) for k in _keys(b.get("keys"), scr)]
    if fn == "hotkey":
        if not b["*"]:
            raise _Reject("hotkey() needs at least one key")
        return [_act(type="hotkey", keys=_keys(b["*"], scr))]
    clicks = _num(b.get("clicks"), f"{fn}() clicks")
    dx, dy = (clicks, 0.0) if fn == "hscroll" else (0.0, clicks)
    return [scr.scroll(dx, dy, b.get("x"), b.get("y"))] if clicks else []


def _statement(stmt: ast.stmt, scr: _Screen, last: bool) -> list[BaseAction]:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.name not in ("pyautogui", "time") or alias.asname:
                name = alias.name + (f" as {alias.asname}" if alias.asname else "")
                raise _Reject(f"import {name} is not allowed (only pyautogui and time)")
        return []
    value = stmt.value if isinstance(stmt, ast.Expr) else None
    if isinstance(value, ast.Name) and value.id in SPECIAL:
        if value.id != "WAIT" and not last:
            raise _Reject(f"{value.id} must be the last statement")
        return [SPECIAL[value.id]()]
    if not isinstance(value, ast.Call):
        what = _describe(value) if value is not None else f"{type(stmt).__name__} statement"
        raise _Reject(f"{what} is not allowed")
    f = value.func
    mod = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
    if mod == "time" and f.attr == "sleep":
        if value.keywords or len(value.args) != 1:
            raise _Reject("time.sleep() takes one positional argument")
        secs = _num(_literal(value.args[0]), "time.sleep() seconds")
        return [_act(type="wait", seconds=secs)] if secs else []  # negative: wait rejects it
    if mod == "pyautogui" and f.attr in _SIGS:
        return _pyautogui(f.attr, _bind(f.attr, value), scr)
    raise _Reject(f"call of {_dotted(f)}() is not allowed")


def _snippet(code: Any, scr: _Screen) -> list[BaseAction]:
    if not isinstance(code, str):
        raise _Reject(f"pyautogui code must be a str, got {type(code).__name__}")
    text = code.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        text = text[3:-3].removeprefix("python").strip()
    if text in SPECIAL:
        return [SPECIAL[text]()]
    if not text or len(text) > MAX_CODE_CHARS:
        raise _Reject(f"code must have 1-{MAX_CODE_CHARS} characters, got {len(text)}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise _Reject(f"not valid Python ({type(err).__name__}: {str(err)!r:.60})") from None
    actions: list[BaseAction] = []
    for i, stmt in enumerate(tree.body):
        try:
            actions += _statement(stmt, scr, last=i == len(tree.body) - 1)
        except _Reject as err:
            raise _Reject(f"line {stmt.lineno}: {err}") from None
        if len(actions) > MAX_ACTIONS:
            raise _Reject(f"more than {MAX_ACTIONS} actions in one snippet")
    return actions


def from_pyautogui(
    code: str, screen_size: tuple[int, int], cursor: Pixel | None = None
) -> list[BaseAction] | InvalidAction:
    """Convert a pyautogui snippet into GUI actions by reading its syntax tree (never run).

    Allowed: ``import pyautogui`` / ``import time``; ``pyautogui.click / doubleClick / rightClick
    / moveTo / dragTo / write / typewrite / press / hotkey / scroll / vscroll / hscroll`` and
    ``time.sleep`` with literal arguments (``interval``, ``duration``, ``tween`` ignored); bare
    ``WAIT`` / ``DONE`` / ``FAIL`` (the last two only at the end); a Markdown fence around it.
    The pointer (``cursor``, pixels) is followed: ``moveTo(x, y); click()`` clicks at ``(x, y)``.
    Returns the actions in order (empty for e.g. a lone ``moveTo``) or an InvalidAction naming
    the line and the construct that is not allowed; never raises.
    """
    return _convert("pyautogui code", _snippet, code, screen_size, cursor)
