"""The typed GUI action schema shared by every screen backend (DESIGN.md "GUI actions").

Actions are frozen pydantic models discriminated by ``type``. Points are normalized to [0, 1]
of the screenshot (x right, y down); executors turn them into device pixels, android-env
touch sequences or xdotool calls. :func:`parse_action` validates a mapping (the codec's output)
and never raises: it returns a :data:`GuiAction` or an :class:`InvalidAction` with a reason.

Scroll directions name where the *view* moves: ``"down"`` reveals content further down (the
finger moves up), as in AndroidWorld. Swipe / drag go from ``start`` to ``end`` (the finger).

>>> parse_action({"type": "click", "point": [0.5, 0.25]})
Click(type='click', point=(0.5, 0.25))
>>> parse_action({"type": "click", "point": [1.5, 0.25]}).reason
'click.point.0: Input should be less than or equal to 1'
>>> from_androidworld({"action_type": "click", "x": 540, "y": 1200}, (1080, 2400)).to_dict()
{'type': 'click', 'point': [0.5, 0.5]}
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

log = logging.getLogger(__name__)


def _real(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"must be a number, got {type(value).__name__}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError("must be finite")
    return out


def _sequence(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


Coord = Annotated[float, BeforeValidator(_real), Field(ge=0.0, le=1.0)]
PointNorm = Annotated[tuple[Coord, Coord], BeforeValidator(_sequence)]
"""``(x, y)`` normalized to [0, 1] of the screenshot."""
Text = Annotated[str, Field(strict=True, min_length=1, max_length=2000)]
KeyName = Annotated[str, Field(strict=True, min_length=1, max_length=32)]
Direction = Literal["up", "down", "left", "right"]


class BaseAction(BaseModel):
    """Base of every GUI action: frozen, no extra fields, ``to_dict()`` for JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping that :func:`parse_action` turns back into an equal action."""
        return self.model_dump(mode="json", exclude_none=True)


class Click(BaseAction):
    """Tap / left click at ``point``."""

    type: Literal["click"] = "click"
    point: PointNorm


class DoubleClick(BaseAction):
    """Double tap / double click at ``point``."""

    type: Literal["double_click"] = "double_click"
    point: PointNorm


class RightClick(BaseAction):
    """Right click at ``point`` (a long press on touch screens)."""

    type: Literal["right_click"] = "right_click"
    point: PointNorm


class LongPress(BaseAction):
    """Touch and hold at ``point``."""

    type: Literal["long_press"] = "long_press"
    point: PointNorm


class Drag(BaseAction):
    """Press at ``start``, move to ``end``, release (mouse drag)."""

    type: Literal["drag"] = "drag"
    start: PointNorm
    end: PointNorm


class Swipe(BaseAction):
    """Finger swipe from ``start`` to ``end``."""

    type: Literal["swipe"] = "swipe"
    start: PointNorm
    end: PointNorm


class Scroll(BaseAction):
    """Scroll the view under ``point``; ``"down"`` reveals content further down."""

    type: Literal["scroll"] = "scroll"
    point: PointNorm
    direction: Direction


class Type(BaseAction):
    """Type ``text`` into the focused field (tapping ``point`` first when given)."""

    type: Literal["type"] = "type"
    text: Text
    point: PointNorm | None = None


class Key(BaseAction):
    """Press one key by name (``back``, ``home``, ``enter``, ``backspace``, ``tab``...)."""

    type: Literal["key"] = "key"
    key: KeyName


class Hotkey(BaseAction):
    """Press keys together, e.g. ``("ctrl", "c")``."""

    type: Literal["hotkey"] = "hotkey"
    keys: Annotated[tuple[KeyName, ...], Field(min_length=1, max_length=4)]


class OpenApp(BaseAction):
    """Launch an app by its display name."""

    type: Literal["open_app"] = "open_app"
    name: Annotated[str, Field(strict=True, min_length=1, max_length=64)]


class Wait(BaseAction):
    """Do nothing for a moment (the screen may change on its own)."""

    type: Literal["wait"] = "wait"
    seconds: Annotated[float, BeforeValidator(_real), Field(gt=0.0, le=60.0)] = 1.0


class Answer(BaseAction):
    """End the episode with an answer to a question task."""

    type: Literal["answer"] = "answer"
    text: Text


class Done(BaseAction):
    """End the episode claiming the task is complete."""

    type: Literal["done"] = "done"


class Fail(BaseAction):
    """End the episode declaring the task infeasible (or given up)."""

    type: Literal["fail"] = "fail"
    reason: Annotated[str, Field(strict=True, max_length=2000)] = ""


GuiAction = Annotated[
    Union[  # noqa: UP007 - pydantic needs the Union object for the discriminator
        Click,
        DoubleClick,
        RightClick,
        LongPress,
        Drag,
        Swipe,
        Scroll,
        Type,
        Key,
        Hotkey,
        OpenApp,
        Wait,
        Answer,
        Done,
        Fail,
    ],  # fmt: skip
    Field(discriminator="type"),
]
"""Any GUI action (a discriminated union on ``type``)."""
ACTION_TYPES: dict[str, type[BaseAction]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        Click,
        DoubleClick,
        RightClick,
        LongPress,
        Drag,
        Swipe,
        Scroll,
        Type,
        Key,
        Hotkey,
        OpenApp,
        Wait,
        Answer,
        Done,
        Fail,
    )  # fmt: skip
}
"""``type`` value -> action class."""
TERMINAL_TYPES: frozenset[str] = frozenset({"answer", "done", "fail"})
"""Action types that end an episode."""
_ADAPTER: TypeAdapter[Any] = TypeAdapter(GuiAction)
_REPR_LIMIT = 120


@dataclass(frozen=True)
class InvalidAction:
    """An action that could not be parsed; ``reason`` says what was wrong and where."""

    reason: str


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not break a rollout
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


def _reason(err: ValidationError, kind: str) -> str:
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(p) for p in (kind, *e["loc"][1:]))
        parts.append(f"{loc}: {e['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def parse_action(obj: Any) -> BaseAction | InvalidAction:
    """Validate ``obj`` (a mapping with a ``type`` key, or an action) into a GUI action.

    Never raises: malformed, off-screen (outside [0, 1]), non-finite or unknown actions give an
    :class:`InvalidAction` whose reason names the action type, the field and the problem.
    """
    try:
        return _parse(obj)
    except Exception as err:  # a hostile mapping must not break a rollout
        log.debug("GUI action parser caught an exception", exc_info=True)
        return InvalidAction(f"action could not be read: {type(err).__name__}")


def _parse(obj: Any) -> BaseAction | InvalidAction:
    if isinstance(obj, BaseAction):
        return obj
    if not isinstance(obj, Mapping):
        return InvalidAction(f"action must be a mapping with a 'type' key, got {_short(obj)}")
    kind = obj.get("type")
    if kind is None and "action_type" in obj:
        return InvalidAction("AndroidWorld-style action; convert it with from_androidworld()")
    if not isinstance(kind, str) or kind not in ACTION_TYPES:
        return InvalidAction(
            f"unknown action type {_short(kind)}; known: {', '.join(sorted(ACTION_TYPES))}"
        )
    try:
        return _ADAPTER.validate_python(dict(obj))
    except ValidationError as err:
        return InvalidAction(_reason(err, kind))


def _aw_point(obj: Mapping[str, Any], size: tuple[float, float]) -> tuple[float, float] | str:
    """Normalized ``(x, y)`` of AndroidWorld pixel fields, or a reason."""
    if "x" not in obj or "y" not in obj:
        if obj.get("index") is not None:
            return "index-based AndroidWorld actions need the element list; give x and y"
        return "needs pixel fields x and y"
    try:
        x, y = _real(obj["x"]), _real(obj["y"])
    except ValueError as err:
        return f"x / y {err}"
    w, h = size
    if not (0 <= x <= w and 0 <= y <= h):
        return f"point ({x:g}, {y:g}) lies outside the {w:g}x{h:g} screen"
    return x / w, y / h


_AW_KEYS = {"navigate_back": "back", "navigate_home": "home", "keyboard_enter": "enter"}
_AW_STEP = {"up": (0.0, -1.0), "down": (0.0, 1.0), "left": (-1.0, 0.0), "right": (1.0, 0.0)}


def from_androidworld(obj: Any, screen_size: tuple[int, int]) -> BaseAction | InvalidAction:
    """Convert an AndroidWorld ``JSONAction`` mapping (pixel coordinates) to a GUI action.

    Args:
        obj: e.g. ``{"action_type": "click", "x": 540, "y": 1200}``; ``swipe`` directions name
            the finger's motion, ``scroll`` directions the view's, as in AndroidWorld.
        screen_size: ``(width, height)`` in pixels of the screenshot ``x`` / ``y`` refer to.

    Returns:
        The action, or an :class:`InvalidAction` (never raises).
    """
    try:
        w, h = (_real(v) for v in screen_size)
        if w <= 0 or h <= 0:
            return InvalidAction(f"screen_size must be positive, got {_short(screen_size)}")
        if not isinstance(obj, Mapping):
            return InvalidAction(f"AndroidWorld action must be a mapping, got {_short(obj)}")
        kind = obj.get("action_type")
        if kind in _AW_KEYS:
            return parse_action({"type": "key", "key": _AW_KEYS[kind]})
        if kind in ("click", "double_tap", "long_press"):
            point = _aw_point(obj, (w, h))
            if isinstance(point, str):
                return InvalidAction(f"{kind}: {point}")
            types = {"click": "click", "double_tap": "double_click", "long_press": "long_press"}
            return parse_action({"type": types[kind], "point": point})
        if kind in ("scroll", "swipe"):
            direction = obj.get("direction")
            if direction not in _AW_STEP:
                return InvalidAction(
                    f"{kind}: direction must be up/down/left/right, got {_short(direction)}"
                )
            point = _aw_point(obj, (w, h)) if "x" in obj else (0.5, 0.5)
            if isinstance(point, str):
                return InvalidAction(f"{kind}: {point}")
            if kind == "scroll":
                return parse_action({"type": "scroll", "point": point, "direction": direction})
            dx, dy = _AW_STEP[direction]
            start = (min(max(point[0] - dx / 4, 0.0), 1.0), min(max(point[1] - dy / 4, 0.0), 1.0))
            end = (min(max(point[0] + dx / 4, 0.0), 1.0), min(max(point[1] + dy / 4, 0.0), 1.0))
            return parse_action({"type": "swipe", "start": start, "end": end})
        if kind == "input_text":
            action: dict[str, Any] = {"type": "type", "text": obj.get("text")}
            if "x" in obj or "y" in obj:
                point = _aw_point(obj, (w, h))
                if isinstance(point, str):
                    return InvalidAction(f"input_text: {point}")
                action["point"] = point
            return parse_action(action)
        if kind == "open_app":
            return parse_action({"type": "open_app", "name": obj.get("app_name")})
        if kind == "status":
            status = obj.get("goal_status")
            if status == "complete":
                return Done()
            if status == "infeasible":
                return Fail(reason="infeasible")
            return InvalidAction(
                f"status: goal_status must be complete or infeasible, got {_short(status)}"
            )
        if kind == "answer":
            return parse_action({"type": "answer", "text": obj.get("text")})
        if kind == "wait":
            return Wait()
        return InvalidAction(f"unknown AndroidWorld action_type {_short(kind)}")
    except Exception as err:  # a hostile mapping must not break a rollout
        log.debug("AndroidWorld action parser caught an exception", exc_info=True)
        return InvalidAction(f"AndroidWorld action could not be read: {type(err).__name__}")
