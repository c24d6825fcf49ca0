"""Text <-> grounding answer (a point or a box) in the formats users train on.

Formats (``ANSWER_FORMATS``):
    ``think_answer``  GUI-R1 / UI-R1 style: optional ``<think>…</think>`` then
                      ``<answer>{"point": [x, y]}</answer>`` or ``<answer>{"bbox": [x0, y0, x1, y1]}
                      </answer>``. GUI-R1's python-literal action list is read too:
                      ``<answer>[{'action': 'click', 'point': [x, y], 'input_text': 'no input
                      text'}]</answer>`` (JSON first, else ``ast.literal_eval`` of a bounded body).
    ``qwen_json``     Qwen-VL native grounding JSON: ``{"point_2d": [x, y]}`` or
                      ``[{"bbox_2d": [x0, y0, x1, y1], "label": "…"}]`` (a ```json fence is allowed).
    ``uitars``        UI-TARS: ``Thought: …`` then ``Action: click(start_box='(x,y)')``; UI-TARS 1.0
                      ``start_box='<|box_start|>(x,y)<|box_end|>'``, UI-TARS-1.5 / Seed
                      ``point='<point>x y</point>'``, 4-number boxes, ``left_double``,
                      ``right_single``, ``type(content=…)``, ``scroll``, ``drag`` (grammar in
                      :mod:`vlagent.codec.uitars`).
    ``qwen_box``      Qwen2-VL's grounding tokens: ``<|object_ref_start|>label<|object_ref_end|>
                      <|box_start|>(x0,y0),(x1,y1)<|box_end|>``, or ``(x,y)`` in the box tokens
                      (also with the special tokens stripped by decoding; :mod:`vlagent.codec.qwen_box`).

Coordinates: numbers in the text are in the model family's space (``coord_space_for``): absolute
pixels of the *resized* image for Qwen2.5-VL, integers in [0, 1000) for Qwen2-VL / Qwen3-VL. This
covers UI-TARS's own conventions: UI-TARS-1.5 (Qwen2.5-VL based) writes pixels of the
smart-resized image, UI-TARS 1.0 (Qwen2-VL based) thousandths; Qwen2-VL's box tokens are
thousandths. Numbers must lie on the image (``[0, size]`` of their space; a K1000 value may be
1000): anything else is a ``ParseError``, so an ``Answer`` is always inside [0, 1]. Parsed answers
come back in normalized [0, 1] coordinates of the original image.

Action type and typed text: an answer that names its action carries it in
``Answer.action_type`` (UI-TARS: the call's name as written, ``click``, ``left_double``, ...;
GUI-R1: its ``action``) and the text it types in ``Answer.typed_text`` (UI-TARS: ``content`` of a
``type`` call; GUI-R1: ``input_text`` unless it is ``'no input text'``). A grounding answer must
point: an action without a point (``hotkey``, ``finished``, a ``type`` without ``start_box``) is
a ``ParseError`` naming the action.

Parsing never raises: bad text gives a ``ParseError`` value that the format reward and the env's
invalid-action path see. Every parser bounds the text to ``_MAX_TEXT`` characters before any
regex, and every scan is linear in the text.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import logging
import math
import warnings
from typing import Any, Literal

from perception_tools.geometry import (
    CoordSpace,
    Frame,
    box_from_norm,
    box_to_norm,
    point_from_norm,
    point_to_norm,
)
from rewards import Prediction
from vlagent.codec import qwen_box, uitars

log = logging.getLogger(__name__)

AnswerFormat = Literal["think_answer", "qwen_json", "uitars", "qwen_box"]
ANSWER_FORMATS: tuple[AnswerFormat, ...] = ("think_answer", "qwen_json", "uitars", "qwen_box")
AnswerKind = Literal["point", "box"]

_MAX_TEXT = 20_000
_MAX_LITERAL = 4_000  # longest <answer> body handed to ast.literal_eval
_NO_TEXT = "no input text"  # GUI-R1's "this action types nothing"
_POINT_KEYS = ("point", "point_2d")
_BOX_KEYS = ("bbox", "bbox_2d", "box")


_VERBS = frozenset({"click", "tap", "select", "press", "choose", "open", "find", "locate"})


def instruction_phrase(instruction: str) -> str:
    """The noun phrase of an instruction, as a ``qwen_box`` object reference names its target:
    ``"Click the red circle."`` → ``"the red circle"`` (a leading imperative verb and the
    final full stop dropped; the format's special tokens removed, so the text cannot end the
    reference early). An instruction of only a verb is kept whole."""
    text = " ".join(str(instruction).split())
    for token in (qwen_box.REF_START, qwen_box.REF_END, qwen_box.BOX_START, qwen_box.BOX_END):
        text = text.replace(token, "")
    text = text.strip().rstrip(".!").strip()
    words = text.split(" ")
    if len(words) > 1 and words[0].casefold() in _VERBS:
        text = " ".join(words[1:])
    return text or "target"


@dataclasses.dataclass(frozen=True)
class Answer:
    """A parsed grounding answer in normalized [0, 1] coordinates of the original image.

    Attributes:
        point_norm: ``(x, y)``; a box answer's centre.
        box_norm: ``(x0, y0, x1, y1)`` for a box answer, else None.
        text: the model's text.
        action_type: the action the text names (``click``, ``left_double``, ``type``, ...), if any.
        typed_text: the text the action types, if any.
    """

    point_norm: tuple[float, float] | None
    box_norm: tuple[float, float, float, float] | None
    text: str
    action_type: str | None = None
    typed_text: str | None = None

    def to_prediction(self) -> Prediction:
        return Prediction(
            point=self.point_norm,
            box=self.box_norm,
            format_ok=True,
            error=None,
            action_type=self.action_type,
            text=self.typed_text,
        )

    def to_action(self) -> dict[str, Any]:
        """The grounding env's action mapping (``action_type`` / ``text`` only when known)."""
        out: dict[str, Any] = (
            {"box": self.box_norm} if self.box_norm is not None else {"point": self.point_norm}
        )
        if self.action_type is not None:
            out["action_type"] = self.action_type
        if self.typed_text is not None:
            out["text"] = self.typed_text
        return out


@dataclasses.dataclass(frozen=True)
class ParseError:
    """Model text that is not a valid answer; ``reason`` says what was expected."""

    reason: str
    text: str

    def to_prediction(self) -> Prediction:
        return Prediction(point=None, box=None, format_ok=False, error=self.reason)

    def to_action(self) -> dict[str, Any]:
        return {"parse_error": self.reason}


def coord_space_for(family: str) -> CoordSpace:
    """The coordinate space a Qwen-VL family speaks in its answers."""
    if family == "qwen2_5_vl":
        return CoordSpace.RESIZED_PX
    if family in ("qwen2_vl", "qwen3_vl"):
        return CoordSpace.K1000
    raise ValueError(f"family {family!r} has no known coordinate convention")


def _short(value: Any, n: int = 60) -> str:
    text = str(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _numbers(value: Any, n: int, key: str) -> tuple[float, ...] | str:
    """Validate a list of ``n`` finite numbers; return a reason string if it is not one."""
    if not isinstance(value, (list, tuple)) or len(value) != n:
        return f"'{key}' must be a list of {n} numbers, got {_short(value)!r}"
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"'{key}' must hold finite numbers, got {_short(value)!r}"
        try:
            f = float(v)
        except OverflowError:  # an int beyond float range
            f = math.inf
        if not math.isfinite(f):
            return f"'{key}' must hold finite numbers, got {_short(value)!r}"
        out.append(f)
    return tuple(out)


def _answer_body(text: str) -> str | None:
    """The body of the last ``<answer>…</answer>`` block (str scans: linear in the text)."""
    close = text.rfind("</answer>")
    if close < 0:
        return None
    open_ = text.rfind("<answer>", 0, close)
    return None if open_ < 0 else text[open_ + len("<answer>") : close]


def _starts_with_think(text: str) -> bool:
    body = text.lstrip()
    return body.startswith("<think>") and body.find("</think>") > 0


def _unfence(body: str) -> str:
    """``body`` without a surrounding ```json fence."""
    if len(body) >= 6 and body.startswith("```") and body.endswith("```"):
        inner = body[3:-3]
        return (inner[4:] if inner.startswith("json") else inner).strip()
    return body


def _load(body: str) -> Any:
    """JSON, else a Python literal (GUI-R1 writes single quotes); raises ValueError if neither."""
    try:
        return json.loads(body)
    except (json.JSONDecodeError, RecursionError) as exc:
        error = f"answer is not valid JSON ({getattr(exc, 'msg', exc)})"
    if len(body) <= _MAX_LITERAL and body[:1] in "[{":
        try:
            with warnings.catch_warnings():  # "invalid escape sequence" in model text
                warnings.simplefilter("ignore")
                return ast.literal_eval(body)
        except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as exc:
            error += f" nor a Python literal ({type(exc).__name__})"
    raise ValueError(error)


@dataclasses.dataclass(frozen=True)
class GroundingCodec:
    """Render targets as answer text (for SFT demos) and parse model text back.

    Attributes:
        fmt: the answer format (module docstring).
        space: the coordinate space numbers are written in (``coord_space_for(family)``).
        kind: whether rendered answers are points or boxes (parsing accepts both).
        require_think: ``think_answer`` only: reject answers without a ``<think>`` block.
    """

    fmt: AnswerFormat = "think_answer"
    space: CoordSpace = CoordSpace.K1000
    kind: AnswerKind = "point"
    require_think: bool = False

    def __post_init__(self) -> None:
        if self.fmt not in ANSWER_FORMATS:
            raise ValueError(
                f"codec.format {self.fmt!r} is unknown; known: {', '.join(ANSWER_FORMATS)}"
            )
        if self.kind not in ("point", "box"):
            raise ValueError(f"codec.kind {self.kind!r} is unknown; known: point, box")
        object.__setattr__(self, "space", CoordSpace(self.space))

    @classmethod
    def for_family(
        cls, family: str, fmt: AnswerFormat = "think_answer", **kw: Any
    ) -> GroundingCodec:
        return cls(fmt=fmt, space=coord_space_for(family), **kw)

    # ------------------------------------------------------------------------ coordinates
    def _upper(self, frame: Frame, axis: int) -> float:
        """The largest value an answer may write on ``axis`` (0 = x, 1 = y) in ``space``."""
        if self.space is CoordSpace.K1000:
            return 1000.0
        if self.space is CoordSpace.NORM:
            return 1.0
        size = frame.resized if self.space is CoordSpace.RESIZED_PX else frame.orig
        return float(size.width if axis == 0 else size.height)

    def _int(self, v: float, axis: int, frame: Frame) -> int:
        upper = 999.0 if self.space is CoordSpace.K1000 else self._upper(frame, axis)
        return int(min(max(round(v), 0), upper))

    def _model_numbers(self, target_box_norm: tuple[float, ...], frame: Frame) -> list[int]:
        """The target's centre (kind point) or box (kind box) in ``space``, as ints."""
        if self.kind == "point":
            x0, y0, x1, y1 = target_box_norm
            nums = point_from_norm(((x0 + x1) / 2, (y0 + y1) / 2), self.space, frame)
        else:
            nums = box_from_norm(target_box_norm, self.space, frame)
        return [self._int(v, i % 2, frame) for i, v in enumerate(nums)]

    def _answer(
        self, nums: tuple[float, ...], frame: Frame, text: str, key: str, **extra: Any
    ) -> Answer | ParseError:
        """Model-space numbers (2: point, 4: box) as an ``Answer``, or why they are not one."""
        if len(nums) == 4 and not (nums[0] < nums[2] and nums[1] < nums[3]):
            return ParseError(f"'{key}' must satisfy x0 < x1 and y0 < y1, got {list(nums)}", text)
        for i, v in enumerate(nums):
            upper = self._upper(frame, i % 2)
            if not (math.isfinite(v) and 0.0 <= v <= upper):
                return ParseError(
                    f"'{key}' {list(nums)} lies off the image: {'xy'[i % 2]} must be in "
                    f"[0, {upper:g}] ({self.space.value})",
                    text,
                )

        def clip(p: tuple[float, ...]) -> Any:
            return tuple(min(max(v, 0.0), 1.0) for v in p)

        if len(nums) == 2:
            return Answer(clip(point_to_norm(nums, self.space, frame)), None, text, **extra)
        box = clip(box_to_norm(nums, self.space, frame))
        return Answer(((box[0] + box[2]) / 2, (box[1] + box[3]) / 2), box, text, **extra)

    # ----------------------------------------------------------------------------- render
    def point_text(self, point_norm: tuple[float, float], frame: Frame) -> str:
        """``"(x, y)"``: a normalized point written in the codec's coordinate space, as an
        answer would write it (a describe task's question, ``task.describe_mix``)."""
        nums = point_from_norm(point_norm, self.space, frame)
        return f"({self._int(nums[0], 0, frame)}, {self._int(nums[1], 1, frame)})"

    def render(
        self,
        target_box_norm: tuple[float, ...],
        frame: Frame,
        think: str | None = None,
        label: str | None = None,
    ) -> str:
        """Answer text for a target box (its centre when ``kind == "point"``).

        Args:
            target_box_norm: target (x0, y0, x1, y1) in normalized coordinates.
            frame: the sample's original and resized sizes.
            think: optional reasoning text: ``<think>`` for ``think_answer``, ``Thought:`` for
                ``uitars``; the JSON and token formats have no place for it.
            label: ``qwen_box`` only: the object reference written before the coordinates
                (default ``"target"``; :func:`instruction_phrase` makes one from an
                instruction).
        """
        nums = self._model_numbers(target_box_norm, frame)
        if self.fmt == "think_answer":
            key = "point" if self.kind == "point" else "bbox"
            prefix = f"<think>{think}</think>" if think is not None else ""
            return f"{prefix}<answer>{json.dumps({key: nums})}</answer>"
        if self.fmt == "uitars":
            return uitars.render("click", nums, thought=think)
        if self.fmt == "qwen_box":
            return qwen_box.render(nums, "target" if label is None else label)
        if self.kind == "point":
            return json.dumps({"point_2d": nums})
        return json.dumps([{"bbox_2d": nums, "label": "target"}])

    # ------------------------------------------------------------------------------ parse
    def parse(self, text: str, frame: Frame) -> Answer | ParseError:
        """Parse model text into an ``Answer`` or a ``ParseError``; never raises."""
        try:
            return self._parse(text, frame)
        except Exception as exc:  # noqa: BLE001 - parsing must never raise into a rollout
            log.debug("grounding answer parser caught an exception", exc_info=True)
            return ParseError(f"unparseable answer ({type(exc).__name__}: {exc})", str(text)[:200])

    def _parse(self, text: str, frame: Frame) -> Answer | ParseError:
        if not isinstance(text, str):
            return ParseError(f"expected text, got {type(text).__name__}", repr(text)[:200])
        if len(text) > _MAX_TEXT:
            return ParseError(f"answer text longer than {_MAX_TEXT} characters", text[:200])
        if self.fmt == "uitars":
            return self._parse_uitars(text, frame)
        if self.fmt == "qwen_box":
            got = qwen_box.parse(text, _MAX_TEXT)
            if isinstance(got, str):
                return ParseError(got, text)
            return self._answer(got[1], frame, text, "box" if len(got[1]) == 4 else "point")
        if self.fmt == "think_answer":
            body = _answer_body(text)
            if body is None:
                return ParseError("no <answer>…</answer> block", text)
            if self.require_think and not _starts_with_think(text):
                return ParseError("answer must start with a <think>…</think> block", text)
            body = body.strip()
        else:
            body = _unfence(text.strip())
        try:
            obj = _load(body)
        except ValueError as exc:
            return ParseError(str(exc), text)
        return self._from_json(obj, text, frame)

    def _parse_uitars(self, text: str, frame: Frame) -> Answer | ParseError:
        call = uitars.parse_action_text(text, _MAX_TEXT)
        if isinstance(call, str):
            return ParseError(call, text)
        if "start_box" not in call.args:
            return ParseError(
                f"{call.name}(…) has no start_box / point: a grounding answer must point at "
                "its target",
                text,
            )
        if "end_box" in call.args:  # a drag's end must be valid too; the answer is its start
            end = uitars.coords(call.args["end_box"])
            if isinstance(end, str):
                return ParseError(f"end_box: {end}", text)
            checked = self._answer(end, frame, text, "end_box")
            if isinstance(checked, ParseError):
                return checked
        nums = uitars.coords(call.args["start_box"])
        if isinstance(nums, str):
            return ParseError(f"start_box: {nums}", text)
        typed = call.args.get("content") if call.name == "type" else None
        return self._answer(
            nums, frame, text, "start_box", action_type=call.name, typed_text=typed or None
        )

    def _from_json(self, obj: Any, text: str, frame: Frame) -> Answer | ParseError:
        if isinstance(obj, list):
            if len(obj) != 1 or not isinstance(obj[0], dict):
                return ParseError("a JSON list answer must hold exactly one object", text)
            obj = obj[0]
        if not isinstance(obj, dict):
            return ParseError("answer JSON must be an object with a point or a box", text)
        extra: dict[str, Any] = {}
        for key, field in (("action", "action_type"), ("input_text", "typed_text")):
            value = obj.get(key)
            if value is not None and not isinstance(value, str):
                return ParseError(f"'{key}' must be a string, got {_short(value)!r}", text)
            if value is not None and value.strip() and value.strip().lower() != _NO_TEXT:
                extra[field] = value.strip().lower() if key == "action" else value
        for key, n in [(k, 4) for k in _BOX_KEYS] + [(k, 2) for k in _POINT_KEYS]:
            if key in obj:
                nums = _numbers(obj[key], n, key)
                if isinstance(nums, str):
                    return ParseError(nums, text)
                return self._answer(nums, frame, text, key, **extra)
        return ParseError(f"answer JSON has none of {_POINT_KEYS + _BOX_KEYS}", text)
