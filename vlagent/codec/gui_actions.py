"""Text <-> GUI actions (:mod:`gui.actions`) for screen-control policies.

Two JSON action styles are read, optionally inside ``<answer>…</answer>``, a ```json fence or
after a ``<think>…</think>`` block:

``json``          ours: ``{"type": "click", "point": [x, y]}``, ``{"type": "open_app",
                  "name": "Settings"}``, ``{"type": "scroll", "point": [x, y], "direction":
                  "down"}``, ``{"type": "done"}`` … (every type of :data:`gui.actions.GuiAction`).
``androidworld``  AndroidWorld ``JSONAction``: ``{"action_type": "click", "x": .., "y": ..}``,
                  ``long_press``, ``double_tap``, ``scroll`` / ``swipe`` (+ ``direction``),
                  ``input_text`` (+ ``text``, optional ``index`` or ``x`` / ``y``),
                  ``navigate_back``, ``navigate_home``, ``keyboard_enter``, ``open_app``
                  (``app_name``), ``status`` (``goal_status``: complete / infeasible), ``wait``,
                  ``answer`` (``text``). ``index`` picks an element of the screen's element list.

Numbers in the text are in the model family's space (``coord_space_for``): integers in [0, 1000)
for Qwen2-VL / Qwen3-VL, pixels of the *resized* image for Qwen2.5-VL. Parsed actions carry
normalized [0, 1] points of the screenshot (the env boundary). Parsing never raises: bad text
gives an :class:`~gui.actions.InvalidAction` whose reason the format reward and the env see.

>>> from perception_tools.geometry import ImageSize, frame_for
>>> codec = GuiActionCodec()
>>> frame = frame_for(ImageSize(288, 512))
>>> codec.parse('{"action_type": "click", "x": 500, "y": 170}', frame)
Click(type='click', point=(0.5, 0.17))
>>> codec.render(codec.parse('{"type": "open_app", "name": "Notes"}', frame), frame)
'{"action_type":"open_app","app_name":"Notes"}'
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from gui.actions import (
    Answer,
    BaseAction,
    Click,
    Done,
    DoubleClick,
    Drag,
    Fail,
    InvalidAction,
    Key,
    LongPress,
    OpenApp,
    RightClick,
    Scroll,
    Swipe,
    Type,
    Wait,
    from_androidworld,
    parse_action,
)
from perception_tools.geometry import CoordSpace, Frame, point_from_norm, point_to_norm

ActionStyle = Literal["json", "androidworld"]
ACTION_STYLES: tuple[ActionStyle, ...] = ("json", "androidworld")
BoxNorm = tuple[float, float, float, float]

_LOG = logging.getLogger(__name__)
_FENCE = "```"
_MAX_TEXT = 20_000
_POINT_FIELDS = ("point", "start", "end")
_AW_KEYS = {"back": "navigate_back", "home": "navigate_home", "enter": "keyboard_enter"}


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _last_block(text: str, open_tag: str, close_tag: str) -> str | None:
    """Body of the last ``open_tag…close_tag`` block (each closes at the first ``close_tag``
    after it, as a non-greedy regex would); one ``str.find`` pass, linear in ``text``."""
    last, pos = None, 0
    while True:
        start = text.find(open_tag, pos)
        if start < 0:
            return last
        end = text.find(close_tag, start + len(open_tag))
        if end < 0:
            return last
        last = text[start + len(open_tag) : end]
        pos = end + len(close_tag)


def _json_body(text: str) -> str | InvalidAction:
    """The JSON part of model text: inside ``<answer>``, a fence, or the text itself.

    Linear in ``text`` (string searches, no backtracking regex): a leading ``<think>…</think>``
    is dropped, then the last ``<answer>`` block is kept, then the first ```json fence's body.
    """
    body = text
    head = text.lstrip()
    if head.startswith("<think>"):
        end = head.find("</think>")
        if end >= 0:
            body = head[end + len("</think>") :]
    answer = _last_block(body, "<answer>", "</answer>")
    if answer is not None:
        body = answer
    elif "<answer>" in body:
        return InvalidAction("unclosed <answer> block")
    start = body.find(_FENCE)
    if start >= 0:
        inner = start + len(_FENCE)
        if body.startswith("json", inner):
            inner += len("json")
        end = body.find(_FENCE, inner)
        if end >= 0:
            body = body[inner:end]
    body = body.strip()
    if not body:
        return InvalidAction("no action JSON in the text")
    return body


@dataclasses.dataclass(frozen=True)
class GuiActionCodec:
    """Render GUI actions as text (SFT targets) and parse model text back into actions.

    Attributes:
        style: the style :meth:`render` writes (parsing reads both).
        space: the coordinate space numbers are written in (``coord_space_for(family)``).
        wrap_answer: wrap rendered JSON in ``<answer>…</answer>``.
    """

    style: ActionStyle = "androidworld"
    space: CoordSpace = CoordSpace.K1000
    wrap_answer: bool = False

    def __post_init__(self) -> None:
        if self.style not in ACTION_STYLES:
            raise ValueError(
                f"GuiActionCodec.style {self.style!r} is unknown; known: {', '.join(ACTION_STYLES)}"
            )
        object.__setattr__(self, "space", CoordSpace(self.space))

    @classmethod
    def for_family(
        cls, family: str, style: ActionStyle = "androidworld", **kw: Any
    ) -> GuiActionCodec:
        """The codec of a Qwen-VL family (its coordinate convention)."""
        from vlagent.codec.grounding import coord_space_for

        return cls(style=style, space=coord_space_for(family), **kw)

    # ------------------------------------------------------------------ coordinates
    def _upper(self, frame: Frame, axis: int) -> float:
        if self.space is CoordSpace.K1000:
            return 999.0
        if self.space is CoordSpace.NORM:
            return 1.0
        size = frame.resized if self.space is CoordSpace.RESIZED_PX else frame.orig
        return float(size.width if axis == 0 else size.height)

    def _to_model(self, point_norm: Sequence[float], frame: Frame) -> list[float]:
        """A normalized point in the model's space, rounded to ints (pixel / k1000 spaces)."""
        x, y = point_from_norm(point_norm, self.space, frame)
        if self.space is CoordSpace.NORM:
            return [round(x, 4), round(y, 4)]
        return [int(min(max(round(v), 0), self._upper(frame, i))) for i, v in enumerate((x, y))]

    def _to_norm(self, value: Any, frame: Frame, what: str) -> tuple[float, float] | str:
        """A model-space ``[x, y]`` as a normalized point, or a reason it is not one."""
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            return f"{what} must be a list of 2 numbers, got {_short(repr(value))}"
        nums = []
        for v in value:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return f"{what} must hold finite numbers, got {_short(repr(value))}"
            f = float(v) if isinstance(v, float) or abs(v) < 2**1000 else math.inf
            if not math.isfinite(f):
                return f"{what} must hold finite numbers, got {_short(repr(value))}"
            nums.append(f)
        for axis, v in enumerate(nums):
            hi = self._upper(frame, axis)
            if not 0 <= v <= hi:
                return f"{what} ({nums[0]:g}, {nums[1]:g}) lies outside [0, {hi:g}] ({self.space.value})"
        x, y = point_to_norm(nums, self.space, frame)
        return min(max(x, 0.0), 1.0), min(max(y, 0.0), 1.0)

    # ----------------------------------------------------------------------- render
    def render(self, action: BaseAction | Mapping[str, Any], frame: Frame) -> str:
        """Text of ``action`` in :attr:`style` with points in the model's space.

        Args:
            action: a GUI action (or its mapping), points normalized.
            frame: the screenshot's original and resized sizes.

        Raises:
            ValueError: the action is invalid or has no AndroidWorld equivalent.
        """
        parsed = parse_action(action)
        if isinstance(parsed, InvalidAction):
            raise ValueError(f"cannot render an invalid action: {parsed.reason}")
        obj = (
            self._render_json(parsed, frame)
            if self.style == "json"
            else self._render_androidworld(parsed, frame)
        )
        text = json.dumps(obj, separators=(",", ":"))
        # <, > and ` occur only inside JSON strings: escaped, typed text such as "</answer>" or
        # "```" cannot close the answer block or open a fence when the text is parsed back
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("`", "\\u0060")
        return f"<answer>{text}</answer>" if self.wrap_answer else text

    def _render_json(self, action: BaseAction, frame: Frame) -> dict[str, Any]:
        obj = action.to_dict()
        for key in _POINT_FIELDS:
            if obj.get(key) is not None:
                obj[key] = self._to_model(obj[key], frame)
        return obj

    def _render_androidworld(self, action: BaseAction, frame: Frame) -> dict[str, Any]:
        def xy(p: Sequence[float]) -> dict[str, float]:
            x, y = self._to_model(p, frame)
            return {"x": x, "y": y}

        match action:
            case Click(point=p):
                return {"action_type": "click", **xy(p)}
            case DoubleClick(point=p):
                return {"action_type": "double_tap", **xy(p)}
            case LongPress(point=p) | RightClick(point=p):
                return {"action_type": "long_press", **xy(p)}
            case Scroll(point=p, direction=d):
                return {"action_type": "scroll", "direction": d, **xy(p)}
            case Type(text=t, point=p):
                return {"action_type": "input_text", "text": t, **(xy(p) if p else {})}
            case Key(key=k) if k in _AW_KEYS:
                return {"action_type": _AW_KEYS[k]}
            case OpenApp(name=n):
                return {"action_type": "open_app", "app_name": n}
            case Wait():
                return {"action_type": "wait"}
            case Answer(text=t):
                return {"action_type": "answer", "text": t}
            case Done():
                return {"action_type": "status", "goal_status": "complete"}
            case Fail():
                return {"action_type": "status", "goal_status": "infeasible"}
        raise ValueError(f"{action.type} has no AndroidWorld form; use style='json'")

    # ------------------------------------------------------------------------ parse
    def parse(
        self, text: Any, frame: Frame, elements: Sequence[BoxNorm] | None = None
    ) -> BaseAction | InvalidAction:
        """Parse model text into a GUI action (points normalized); never raises.

        Args:
            text: the model's completion.
            frame: the screenshot's original and resized sizes.
            elements: normalized boxes of the screen's elements, for AndroidWorld ``index``.

        Returns:
            The action, or an :class:`InvalidAction` with a reason.
        """
        try:
            return self._parse(text, frame, elements)
        except Exception as err:  # parsing must never raise into a rollout
            _LOG.debug(
                "GuiActionCodec.parse caught an exception on %r", str(text)[:80], exc_info=True
            )
            return InvalidAction(f"action text could not be read ({type(err).__name__})")

    def _parse(
        self, text: Any, frame: Frame, elements: Sequence[BoxNorm] | None
    ) -> BaseAction | InvalidAction:
        if not isinstance(text, str):
            return InvalidAction(f"expected text, got {type(text).__name__}")
        if len(text) > _MAX_TEXT:
            return InvalidAction(f"action text longer than {_MAX_TEXT} characters")
        body = _json_body(text)
        if isinstance(body, InvalidAction):
            return body
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError) as err:  # ValueError: also ints over 4,300 digits
            return InvalidAction(
                f"action is not valid JSON ({_short(str(getattr(err, 'msg', err)))})"
            )
        if isinstance(obj, list) and len(obj) == 1:
            obj = obj[0]
        if not isinstance(obj, dict):
            return InvalidAction(f"action JSON must be an object, got {type(obj).__name__}")
        if "action_type" in obj:
            return self._from_androidworld(obj, frame, elements)
        return self._from_json(obj, frame)

    def _from_json(self, obj: dict[str, Any], frame: Frame) -> BaseAction | InvalidAction:
        out = dict(obj)
        kind = out.get("type")
        for key in _POINT_FIELDS:
            if out.get(key) is not None:
                point = self._to_norm(out[key], frame, f"{kind}.{key}")
                if isinstance(point, str):
                    return InvalidAction(point)
                out[key] = point
        return parse_action(out)

    def _from_androidworld(
        self, obj: dict[str, Any], frame: Frame, elements: Sequence[BoxNorm] | None
    ) -> BaseAction | InvalidAction:
        kind = obj.get("action_type")
        for key in ("action_type", "direction"):  # from_androidworld looks these up in dicts
            if key in obj and not isinstance(obj[key], str):
                return InvalidAction(f"{key} must be a string, got {_short(repr(obj[key]))}")
        out = {k: v for k, v in obj.items() if k not in ("x", "y", "index")}
        if "x" in obj or "y" in obj:
            point = self._to_norm([obj.get("x"), obj.get("y")], frame, f"{kind}: x / y")
            if isinstance(point, str):
                return InvalidAction(point)
        elif obj.get("index") is not None:
            index = obj["index"]
            if elements is None:
                return InvalidAction(f"{kind}: index needs the screen's element list")
            if isinstance(index, bool) or not isinstance(index, int):
                return InvalidAction(f"{kind}: index must be an int, got {_short(repr(index))}")
            if not 0 <= index < len(elements):
                return InvalidAction(f"{kind}: index {index} outside [0, {len(elements)})")
            x0, y0, x1, y1 = elements[index]
            point = ((x0 + x1) / 2, (y0 + y1) / 2)
        else:
            point = None
        if point is not None:  # from_androidworld reads pixels: give it a 1e6-pixel canvas
            out["x"], out["y"] = point[0] * 1e6, point[1] * 1e6
        return from_androidworld(out, (1_000_000, 1_000_000))


def render_history_action(action: BaseAction | InvalidAction | None) -> str:
    """A short description of a past action for the text history (points normalized).

    >>> render_history_action(OpenApp(name="Settings"))
    'open_app Settings'
    """
    if action is None:
        return "none"
    if isinstance(action, InvalidAction):
        return "invalid"
    match action:
        case Click(point=p) | DoubleClick(point=p) | LongPress(point=p) | RightClick(point=p):
            return f"{action.type} ({p[0]:.2f}, {p[1]:.2f})"
        case Scroll(direction=d):
            return f"scroll {d}"
        case Swipe() | Drag():
            return action.type
        case Type(text=t):
            return f"type {_short(t, 30)!r}"
        case Key(key=k):
            return f"key {k}"
        case OpenApp(name=n):
            return f"open_app {n}"
    return action.type
