"""Text <-> grounding answer (a point or a box) in the formats users train on.

Formats:
    ``think_answer``  GUI-R1 / UI-R1 style: optional ``<think>…</think>`` then
                      ``<answer>{"point": [x, y]}</answer>`` or ``<answer>{"bbox": [x0, y0, x1, y1]}</answer>``.
    ``qwen_json``     Qwen-VL native grounding JSON: ``{"point_2d": [x, y]}`` or
                      ``[{"bbox_2d": [x0, y0, x1, y1], "label": "…"}]`` (a ```json fence is allowed).

Numbers in the text are in the model family's space (``coord_space_for``): absolute pixels of
the *resized* image for Qwen2.5-VL, integers in [0, 1000) for Qwen2-VL / Qwen3-VL. Parsed answers
come back in normalized [0, 1] coordinates of the original image. Parsing never raises: bad text
gives a ``ParseError`` value that the format reward and the env's invalid-action path see.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
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

AnswerFormat = Literal["think_answer", "qwen_json"]
ANSWER_FORMATS: tuple[AnswerFormat, ...] = ("think_answer", "qwen_json")
AnswerKind = Literal["point", "box"]

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_THINK_RE = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_FENCE_RE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_MAX_TEXT = 20_000


@dataclasses.dataclass(frozen=True)
class Answer:
    """A parsed grounding answer in normalized [0, 1] coordinates of the original image."""

    point_norm: tuple[float, float] | None
    box_norm: tuple[float, float, float, float] | None
    text: str

    def to_prediction(self) -> Prediction:
        return Prediction(point=self.point_norm, box=self.box_norm, format_ok=True, error=None)

    def to_action(self) -> dict[str, Any]:
        """The grounding env's action mapping."""
        if self.box_norm is not None:
            return {"box": self.box_norm}
        return {"point": self.point_norm}


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


def _numbers(value: Any, n: int, key: str) -> tuple[float, ...] | str:
    """Validate a JSON list of ``n`` finite numbers; return a reason string if it is not one."""
    if not isinstance(value, list) or len(value) != n:
        return f"'{key}' must be a list of {n} numbers, got {str(value)[:60]!r}"
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"'{key}' must hold finite numbers, got {str(value)[:60]!r}"
        out.append(float(v))
    return tuple(out)


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

    @classmethod
    def for_family(
        cls, family: str, fmt: AnswerFormat = "think_answer", **kw: Any
    ) -> GroundingCodec:
        return cls(fmt=fmt, space=coord_space_for(family), **kw)

    # ----------------------------------------------------------------------------- render
    def render(
        self, target_box_norm: tuple[float, ...], frame: Frame, think: str | None = None
    ) -> str:
        """Answer text for a target box (its centre when ``kind == "point"``).

        Args:
            target_box_norm: target (x0, y0, x1, y1) in normalized coordinates.
            frame: the sample's original and resized sizes.
            think: optional reasoning text for ``think_answer``.
        """
        if self.kind == "point":
            x0, y0, x1, y1 = target_box_norm
            px, py = point_from_norm(((x0 + x1) / 2, (y0 + y1) / 2), self.space, frame)
            nums = [self._int(px), self._int(py)]
        else:
            nums = [self._int(v) for v in box_from_norm(target_box_norm, self.space, frame)]
        if self.fmt == "think_answer":
            key = "point" if self.kind == "point" else "bbox"
            body = json.dumps({key: nums})
            prefix = f"<think>{think}</think>" if think is not None else ""
            return f"{prefix}<answer>{body}</answer>"
        if self.kind == "point":
            return json.dumps({"point_2d": nums})
        return json.dumps([{"bbox_2d": nums, "label": "target"}])

    def _int(self, v: float) -> int:
        upper = 999 if self.space == CoordSpace.K1000 else math.inf
        return int(min(max(round(v), 0), upper))

    # ------------------------------------------------------------------------------ parse
    def parse(self, text: str, frame: Frame) -> Answer | ParseError:
        """Parse model text into an ``Answer`` or a ``ParseError``; never raises."""
        try:
            return self._parse(text, frame)
        except Exception as exc:  # noqa: BLE001 - parsing must never raise into a rollout
            return ParseError(f"unparseable answer ({type(exc).__name__}: {exc})", str(text)[:200])

    def _parse(self, text: str, frame: Frame) -> Answer | ParseError:
        if not isinstance(text, str):
            return ParseError(f"expected text, got {type(text).__name__}", repr(text)[:200])
        if len(text) > _MAX_TEXT:
            return ParseError(f"answer text longer than {_MAX_TEXT} characters", text[:200])
        if self.fmt == "think_answer":
            matches = _ANSWER_RE.findall(text)
            if not matches:
                return ParseError("no <answer>…</answer> block", text)
            if self.require_think and not _THINK_RE.match(text):
                return ParseError("answer must start with a <think>…</think> block", text)
            body = matches[-1].strip()
        else:
            body = text.strip()
            fence = _FENCE_RE.match(body)
            if fence:
                body = fence.group(1)
        try:
            obj = json.loads(body)
        except (json.JSONDecodeError, RecursionError) as exc:
            return ParseError(
                f"answer is not valid JSON ({exc.msg if hasattr(exc, 'msg') else exc})", text
            )
        return self._from_json(obj, text, frame)

    def _from_json(self, obj: Any, text: str, frame: Frame) -> Answer | ParseError:
        if isinstance(obj, list):
            if len(obj) != 1 or not isinstance(obj[0], dict):
                return ParseError("a JSON list answer must hold exactly one object", text)
            obj = obj[0]
        if not isinstance(obj, dict):
            return ParseError("answer JSON must be an object with a point or a box", text)
        point_keys = ("point", "point_2d")
        box_keys = ("bbox", "bbox_2d", "box")
        for key in box_keys:
            if key in obj:
                nums = _numbers(obj[key], 4, key)
                if isinstance(nums, str):
                    return ParseError(nums, text)
                if not (nums[0] < nums[2] and nums[1] < nums[3]):
                    return ParseError(
                        f"'{key}' must satisfy x0 < x1 and y0 < y1, got {list(nums)}", text
                    )
                box = box_to_norm(nums, self.space, frame)
                center = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
                return Answer(point_norm=center, box_norm=box, text=text)
        for key in point_keys:
            if key in obj:
                nums = _numbers(obj[key], 2, key)
                if isinstance(nums, str):
                    return ParseError(nums, text)
                return Answer(
                    point_norm=point_to_norm(nums, self.space, frame), box_norm=None, text=text
                )
        return ParseError(f"answer JSON has none of {point_keys + box_keys}", text)
