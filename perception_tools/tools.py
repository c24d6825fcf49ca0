"""Visual tools a policy calls mid-reasoning: ``zoom_in`` / ``crop`` and ``ground`` (Set-of-Mark).

Observations of one episode: ``images[0]`` is the ORIGINAL full-resolution image
(``observation_0``, also called ``"original"``); ``images[i]`` for ``i >= 1`` is the result of the
``i``-th successful tool call (``observation_i``). :class:`ToolContext` carries, per observation,
its :class:`~perception_tools.geometry.Frame` (its size and the size the vision encoder saw)
and its :class:`~perception_tools.crop.CropMap` (where it sits in the original); after each
successful call the loop appends the result with :meth:`ToolContext.observe`.

Arguments arrive in the model's coordinate space (``ctx.space``) of the *source* observation, or
normalized [0, 1] with ``"coords": "norm"``. Tools never raise on bad arguments: they return a
:class:`ToolResult` with ``error`` set and a text that says what to fix. Tools never advance the
env; their results are observations (no loss on their tokens).
"""

from __future__ import annotations

import abc
import json
import math
import re
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from perception_tools.crop import (
    CropMap,
    ToolContext,
    ToolError,
    ToolResult,
    crop_resize,
    draw_marks,
    plan_crop,
    zoom_size,
)
from perception_tools.geometry import Box, ImageSize, space_scale

__all__ = [
    "MAX_MARKS",
    "TOOLS",
    "CropMap",
    "GroundTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ZoomTool",
    "TOOLS_FOOTER",
    "TOOLS_HEADER",
    "call_tool",
    "render_tool_block",
    "render_tool_prompt",
    "tool_schemas",
]

MAX_MARKS = 20
"""Most points one ``ground`` call may mark."""
_SOURCE_RE = re.compile(r"observation_(\d{1,6})")
_SHOW = reprlib.Repr()  # bounded reprs of hostile arguments in error texts
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxstring, _SHOW.maxother = 2, 6, 4, 40, 40


class _BadArgs(Exception):
    """Internal: the model's arguments are unusable; the message is shown to the model."""


class Tool(Protocol):
    """A visual tool: a name, an OpenAI / Qwen function schema and a call that never raises on
    bad ``args``."""

    name: str
    schema: dict[str, Any]

    def __call__(
        self, images: Sequence[np.ndarray], args: Mapping[str, Any], ctx: ToolContext
    ) -> ToolResult: ...


def _is_num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _numbers(value: object, n: int, what: str) -> tuple[float, ...]:
    """``value`` as ``n`` finite floats, or _BadArgs naming ``what``."""
    if (
        not isinstance(value, (list, tuple))
        or len(value) != n
        or not all(_is_num(v) for v in value)
    ):
        raise _BadArgs(f"{what}, got {_SHOW.repr(value)}")
    try:
        out = tuple(float(v) for v in value)
    except OverflowError:
        out = (math.inf,)
    if not all(math.isfinite(v) for v in out):
        raise _BadArgs(f"{what} (finite), got {_SHOW.repr(value)}")
    return out


@dataclass(frozen=True)
class _Call:
    """Validated common arguments of a call."""

    source: int
    norm: bool
    label: str | None
    range_text: str


def _common(
    name: str, images: Sequence[np.ndarray], args: object, ctx: ToolContext, allowed: frozenset[str]
) -> _Call:
    if not images or len(images) != ctx.n_observations:
        raise ToolError(
            f"{name}: got {len(images)} images for a context of {ctx.n_observations} observations"
        )
    if not isinstance(args, Mapping):
        raise _BadArgs(f"arguments must be a JSON object, got {_SHOW.repr(args)}")
    unknown = sorted(str(k) for k in args if k not in allowed)
    if unknown:
        raise _BadArgs(f"unknown argument(s) {unknown[:5]}; known: {', '.join(sorted(allowed))}")
    source = args.get("source", f"observation_{len(images) - 1}")
    match = _SOURCE_RE.fullmatch(source) if isinstance(source, str) else None
    index = 0 if source == "original" else int(match.group(1)) if match else -1
    if not 0 <= index < len(images):
        raise _BadArgs(
            f"source must be 'original' or 'observation_<i>' with i in 0..{len(images) - 1}, "
            f"got {_SHOW.repr(source)}"
        )
    coords = args.get("coords", "model")
    if coords not in ("model", "norm"):
        raise _BadArgs(f"coords must be 'model' or 'norm', got {_SHOW.repr(coords)}")
    label = args.get("label")
    if label is not None and not isinstance(label, str):
        raise _BadArgs(f"label must be a string, got {_SHOW.repr(label)}")
    sx, sy = (1.0, 1.0) if coords == "norm" else space_scale(ctx.space, ctx.frame(index))
    range_text = f"in 0..{sx:g}" if sx == sy else f"in 0..{sx:g} x 0..{sy:g}"
    return _Call(index, coords == "norm", label[:80] if label else None, range_text)


def _box_norm(value: object, call: _Call, ctx: ToolContext) -> Box:
    """The ``bbox_2d`` argument in the source observation's normalized space, clamped to it."""
    what = f"bbox_2d must be 4 numbers [x0, y0, x1, y1] {call.range_text}"
    x0, y0, x1, y1 = _numbers(value, 4, what)
    if not (x0 < x1 and y0 < y1):
        raise _BadArgs(f"bbox_2d needs x0 < x1 and y0 < y1, got {_SHOW.repr(value)}")
    sx, sy = (1.0, 1.0) if call.norm else space_scale(ctx.space, ctx.frame(call.source))
    box = (x0 / sx, y0 / sy, x1 / sx, y1 / sy)
    cx0, cy0, cx1, cy1 = (min(1.0, max(0.0, v)) for v in box)
    if not (cx0 < cx1 and cy0 < cy1):
        raise _BadArgs(
            f"bbox_2d {_SHOW.repr(value)} lies outside observation_{call.source} ({call.range_text})"
        )
    return cx0, cy0, cx1, cy1


def _fmt(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{round(float(v), 1):g}" for v in values) + "]"


class _ToolBase(abc.ABC):
    """Shared ``__call__``: run :meth:`_apply`, turning bad arguments into an error result."""

    name: str
    schema: dict[str, Any]

    def __call__(
        self, images: Sequence[np.ndarray], args: Mapping[str, Any], ctx: ToolContext
    ) -> ToolResult:
        try:
            return self._apply(images, args, ctx)
        except _BadArgs as err:
            return ToolResult(image=None, text=f"{self.name}: {err}", error=str(err))

    @abc.abstractmethod
    def _apply(
        self, images: Sequence[np.ndarray], args: Mapping[str, Any], ctx: ToolContext
    ) -> ToolResult:
        """The tool's work on valid input; raises ``_BadArgs`` for invalid arguments."""


class ZoomTool(_ToolBase):
    """Crop a region from the ORIGINAL full-resolution image and enlarge it to the pixel budget.

    Args: ``bbox_2d`` (region in the source observation), ``source`` (``"original"`` or
    ``"observation_<i>"``, default the latest), ``coords`` (``"norm"`` for [0, 1] boxes),
    ``label`` (echoed). The region is clamped to the source, mapped to the original, grown to
    ``min_side_px`` and ``max_aspect`` (:func:`~perception_tools.crop.plan_crop`), cropped from
    ``images[0]`` and resized (Lanczos) to ``zoom_size`` (multiples of ``factor``).
    """

    def __init__(self, name: str = "zoom_in") -> None:
        self.name = name
        self.schema = _schema(name, _ZOOM_DOC, {"bbox_2d": _BOX_PROP}, ["bbox_2d"])

    def _apply(
        self, images: Sequence[np.ndarray], args: Mapping[str, Any], ctx: ToolContext
    ) -> ToolResult:
        call = _common(self.name, images, args, ctx, _ZOOM_KEYS)
        if "bbox_2d" not in args:
            raise _BadArgs(f"bbox_2d is required: [x0, y0, x1, y1] {call.range_text}")
        box_src = _box_norm(args["bbox_2d"], call, ctx)
        original = _rgb(images[0], self.name)
        orig = ImageSize(int(original.shape[1]), int(original.shape[0]))
        box_orig = ctx.crops[call.source].to_original(box_src)
        x0, y0, x1, y1 = plan_crop(box_orig, orig, ctx.min_side_px, ctx.max_aspect)
        crop = CropMap((x0 / orig.width, y0 / orig.height, x1 / orig.width, y1 / orig.height))
        size = zoom_size(x1 - x0, y1 - y0, ctx.pixel_budget, ctx.factor)
        image = crop_resize(original, (x0, y0, x1, y1), size)
        sx, sy = _scales(ctx, call)
        shown = (box_src[0] * sx, box_src[1] * sy, box_src[2] * sx, box_src[3] * sy)
        what = f" ({call.label})" if call.label else ""
        text = (
            f"Zoomed into {_fmt(shown)}{what} of observation_{call.source}: "
            f"observation_{len(images)}, {size[0]}x{size[1]} px."
        )
        return ToolResult(image=image, text=text, crop=crop)


class GroundTool(_ToolBase):
    """Draw a box and / or numbered point marks on a copy of an observation (Set-of-Mark).

    Args: ``bbox_2d`` and / or ``points`` (``[[x, y], ...]``, at most :data:`MAX_MARKS`) in the
    source observation's space, ``source``, ``coords``, ``label`` as for :class:`ZoomTool`.
    Points outside the observation are clamped to its border.
    """

    name = "ground"

    def __init__(self) -> None:
        props = {"bbox_2d": _BOX_PROP, "points": _POINTS_PROP}
        self.schema = _schema(self.name, _GROUND_DOC, props, [])
        self.schema["parameters"]["anyOf"] = [{"required": ["bbox_2d"]}, {"required": ["points"]}]

    def _apply(
        self, images: Sequence[np.ndarray], args: Mapping[str, Any], ctx: ToolContext
    ) -> ToolResult:
        call = _common(self.name, images, args, ctx, _GROUND_KEYS)
        if "bbox_2d" not in args and "points" not in args:
            raise _BadArgs(
                f"give bbox_2d [x0, y0, x1, y1] and / or points [[x, y], ...] {call.range_text}"
            )
        box = _box_norm(args["bbox_2d"], call, ctx) if "bbox_2d" in args else None
        raw = args.get("points", [])
        if (
            not isinstance(raw, (list, tuple))
            or len(raw) > MAX_MARKS
            or ("points" in args and not raw)
        ):
            raise _BadArgs(
                f"points must be a list of 1..{MAX_MARKS} [x, y] pairs, got {_SHOW.repr(raw)}"
            )
        sx, sy = _scales(ctx, call)
        what = f"points must be [x, y] pairs {call.range_text}"
        points = [
            (min(1.0, max(0.0, x / sx)), min(1.0, max(0.0, y / sy)))
            for x, y in (_numbers(p, 2, what) for p in raw)
        ]
        image = draw_marks(_rgb(images[call.source], self.name), box, points)
        marks = [f"box {_fmt(args['bbox_2d'])}"] if box is not None else []
        marks += [f"{len(points)} numbered point(s)"] if points else []
        what = f" ({call.label})" if call.label else ""
        text = f"Marked {' and '.join(marks)}{what} on observation_{call.source}: observation_{len(images)}."
        return ToolResult(image=image, text=text, crop=ctx.crops[call.source])


def _scales(ctx: ToolContext, call: _Call) -> tuple[float, float]:
    return (1.0, 1.0) if call.norm else space_scale(ctx.space, ctx.frame(call.source))


def _rgb(image: np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ToolError(
            f"{name}: observations must be uint8 (H, W, 3), got {array.dtype} {array.shape}"
        )
    return array


_ZOOM_KEYS = frozenset({"bbox_2d", "source", "coords", "label"})
_GROUND_KEYS = _ZOOM_KEYS | {"points"}
_ZOOM_DOC = (
    "Zoom in on a region of the screenshot to see small details: the region is cropped from the "
    "full-resolution screenshot and returned enlarged as a new image."
)
_GROUND_DOC = (
    "Mark a box and / or numbered points on an image to check a location; returns the marked "
    "image as a new image."
)
_BOX_PROP = {
    "type": "array",
    "items": {"type": "number"},
    "minItems": 4,
    "maxItems": 4,
    "description": "Region [x0, y0, x1, y1] of the source image, in the same coordinates as "
    "your answers (normalized 0..1 when coords is 'norm').",
}
_POINTS_PROP = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_MARKS,
    "items": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
    "description": "Points [[x, y], ...] to mark, numbered from 1.",
}


def _schema(name: str, doc: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    common = {
        "source": {
            "type": "string",
            "pattern": "^(original|observation_[0-9]+)$",
            "description": "Image to use: 'original' or 'observation_<i>' (default: the latest).",
        },
        "coords": {
            "type": "string",
            "enum": ["model", "norm"],
            "description": "'norm' when the numbers are fractions 0..1 of the image.",
        },
        "label": {"type": "string", "description": "What you expect there (echoed back)."},
    }
    params = {
        "type": "object",
        "properties": {**props, **common},
        "required": required,
        "additionalProperties": False,
    }
    return {"name": name, "description": doc, "parameters": params}


TOOLS: dict[str, Tool] = {
    "zoom_in": ZoomTool("zoom_in"),
    "crop": ZoomTool("crop"),
    "ground": GroundTool(),
}
"""Every tool by name; ``crop`` is ``zoom_in`` under the name some recipes use."""


def tool_schemas(names: Sequence[str] = ("zoom_in",)) -> list[dict[str, Any]]:
    """OpenAI / Qwen ``tools`` entries ``{"type": "function", "function": schema}`` of ``names``
    (what ``apply_chat_template(tools=...)`` takes)."""
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        raise ToolError(f"tools {unknown} are unknown; known: {', '.join(TOOLS)}")
    return [{"type": "function", "function": TOOLS[n].schema} for n in names]


TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
"""Text before the schemas in the system turn of Qwen2.5 / Qwen3 / Qwen3-VL chat templates."""
TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n"
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
"""Text after the schemas (the call format the model is told to use)."""


def render_tool_block(tools: Sequence[Mapping[str, Any]]) -> str:
    """The tool block of a Qwen system turn for ``tools`` (``tool_schemas`` entries), byte for
    byte as the Qwen2.5 / Qwen3 / Qwen3-VL chat templates render ``tools=``: one
    ``tool | tojson`` line per tool (transformers' ``tojson`` is ``json.dumps`` with
    ``ensure_ascii=False``, keys in insertion order) between :data:`TOOLS_HEADER` and
    :data:`TOOLS_FOOTER`. The templates put it after the system text and a blank line.

    >>> print(render_tool_block(tool_schemas(["zoom_in"])).splitlines()[-2])
    {"name": <function-name>, "arguments": <args-json-object>}
    """
    lines = "".join("\n" + json.dumps(dict(t), ensure_ascii=False) for t in tools)
    return TOOLS_HEADER + lines + TOOLS_FOOTER


def render_tool_prompt(names: Sequence[str] = ("zoom_in",)) -> str:
    """:func:`render_tool_block` of the tools ``names`` (for chat templates without tools)."""
    return render_tool_block(tool_schemas(names))


def call_tool(call: object, images: Sequence[np.ndarray], ctx: ToolContext) -> ToolResult:
    """Run a parsed ``{"name": ..., "arguments": {...}}`` call; unknown names and malformed
    calls give an error result, never an exception."""
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        why = f'a tool call must be {{"name": ..., "arguments": {{...}}}}, got {_SHOW.repr(call)}'
        return ToolResult(image=None, text=why, error=why)
    tool = TOOLS.get(call["name"])
    if tool is None:
        why = f"unknown tool {_SHOW.repr(call['name'])}; known: {', '.join(TOOLS)}"
        return ToolResult(image=None, text=why, error=why)
    return tool(images, call.get("arguments", {}), ctx)
