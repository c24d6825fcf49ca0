"""Synthetic cold-start traces for "thinking with images": zoom in on the target, then answer.

A trace is the assistant side of one episode, step by step, for SFT warm starts before RL
(DeepEyes / Mini-o3 / Pixel Reasoner all start from such traces):

1. (with probability ``p_wrong_first``) a zoom on a nearby region that misses the target;
2. a zoom whose box contains the target with a random margin (``"source": "original"`` after a
   miss, since a box is read in its source observation's space);
3. the answer ``{"point_2d": [x, y]}``.

Each tool step carries the call and the result the real tool returns for it, so the agent loop
can replay the trace (assistant text gets loss, tool results do not).

Answer space (``TraceConfig.answer_space``):
    ``"crop"`` (default): the point is in the model space of the LAST observation (the zoomed
    view the model is looking at); the loop maps it back with that observation's ``CropMap``:
    ``ctx.to_original_norm(point, observation=-1)``. This teaches reading coordinates off the
    enlarged view, where they are precise.
    ``"original"``: the point is in the model space of ``observation_0``, as in single-turn
    grounding; the zoom is then only evidence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from gui.errors import GuiError
from gui.grounding.sources import GroundingSample
from perception_tools.geometry import (
    Box,
    Frame,
    ImageSize,
    intersection_area,
    point_in_box,
    space_scale,
)
from perception_tools.tools import TOOLS, ToolContext, ToolResult

AnswerSpace = Literal["crop", "original"]


class TraceError(GuiError, ValueError):
    """A trace cannot be built: bad config, or a context that does not fit the sample."""


@dataclass(frozen=True)
class TraceConfig:
    """Knobs of :func:`zoom_trace`."""

    zoom_scale: tuple[float, float] = (2.0, 6.0)
    """Range of zoom side / target side, drawn per axis (>= 1)."""
    max_zoom_aspect: float = 4.0
    """The zoom box's short side grows until ``long / short <= max_zoom_aspect``."""
    p_wrong_first: float = 0.2
    """Probability of a first zoom that misses the target, followed by a corrected one."""
    answer_space: AnswerSpace = "crop"
    """``"crop"``: point in the last (zoomed) observation's space; ``"original"``: in
    observation_0's space (see the module docstring)."""
    answer_jitter: float = 0.3
    """Largest offset of the answer from the target centre, as a fraction of the half-size."""

    def __post_init__(self) -> None:
        lo, hi = self.zoom_scale
        if not 1.0 <= lo <= hi:
            raise TraceError(f"TraceConfig.zoom_scale must satisfy 1 <= lo <= hi, got {lo, hi}")
        if not self.max_zoom_aspect >= 1.0:
            raise TraceError(
                f"TraceConfig.max_zoom_aspect must be >= 1, got {self.max_zoom_aspect}"
            )
        if not 0.0 <= self.p_wrong_first <= 1.0:
            raise TraceError(
                f"TraceConfig.p_wrong_first must be in [0, 1], got {self.p_wrong_first}"
            )
        if self.answer_space not in ("crop", "original"):
            raise TraceError(
                f"TraceConfig.answer_space must be 'crop' or 'original', got {self.answer_space!r}"
            )
        if not 0.0 <= self.answer_jitter < 1.0:
            raise TraceError(
                f"TraceConfig.answer_jitter must be in [0, 1), got {self.answer_jitter}"
            )


@dataclass(frozen=True, eq=False)
class TraceStep:
    """One assistant turn of a trace.

    Attributes:
        text: the assistant's text: ``<tool_call>{...}</tool_call>`` or ``{"point_2d": [x, y]}``.
        tool_call: ``{"name": "zoom_in", "arguments": {...}}`` as written in ``text``, or None.
        result: what the tool returns for ``tool_call`` (the next observation), or None.
        frame: ``result.image``'s frame as ``ctx.observe`` records it (None without frames).
        answer_point: the answer's ``[x, y]`` integers in the model space of observation
            ``answer_observation``, or None.
        answer_observation: index of the observation the answer is read in, or None.
        answer_point_norm: the answer mapped back to original-normalized coordinates, or None.
    """

    text: str
    tool_call: dict[str, Any] | None = None
    result: ToolResult | None = None
    frame: Frame | None = None
    answer_point: tuple[int, int] | None = None
    answer_observation: int | None = None
    answer_point_norm: tuple[float, float] | None = None


def _zoom_box(target: Box, size: ImageSize, cfg: TraceConfig, rng: np.random.Generator) -> Box:
    """A normalized box containing ``target`` with random margins, inside the image."""
    tx0, ty0, tx1, ty1 = target
    lo, hi = cfg.zoom_scale
    w_px = (tx1 - tx0) * size.width * rng.uniform(lo, hi)
    h_px = (ty1 - ty0) * size.height * rng.uniform(lo, hi)
    w_px, h_px = max(w_px, h_px / cfg.max_zoom_aspect), max(h_px, w_px / cfg.max_zoom_aspect)
    w, h = min(1.0, w_px / size.width), min(1.0, h_px / size.height)
    x0 = tx0 - rng.uniform(0.0, 1.0) * max(0.0, w - (tx1 - tx0))
    y0 = ty0 - rng.uniform(0.0, 1.0) * max(0.0, h - (ty1 - ty0))
    x0, y0 = min(max(x0, 0.0), 1.0 - w), min(max(y0, 0.0), 1.0 - h)
    return x0, y0, x0 + w, y0 + h


def _miss_box(zoom: Box, target: Box, rng: np.random.Generator) -> Box | None:
    """``zoom`` moved to a nearby spot that does not overlap ``target``, or None if none fits."""
    x0, y0, x1, y1 = zoom
    w, h = x1 - x0, y1 - y0
    for k in rng.permutation(8):
        angle = k * np.pi / 4
        step = rng.uniform(1.05, 1.6)
        nx0 = min(max(x0 + np.cos(angle) * w * step, 0.0), 1.0 - w)
        ny0 = min(max(y0 + np.sin(angle) * h * step, 0.0), 1.0 - h)
        box = (float(nx0), float(ny0), float(nx0 + w), float(ny0 + h))
        if intersection_area(box, target) == 0.0:
            return box
    return None


def _model_box(box_norm: Box, ctx: ToolContext) -> list[int]:
    """``box_norm`` in observation_0's model space, rounded outward to integers."""
    x0, y0, x1, y1 = ctx.from_original_norm(box_norm, 0)
    sx, sy = space_scale(ctx.space, ctx.frame(0))
    return [
        int(max(0, np.floor(x0))),
        int(max(0, np.floor(y0))),
        int(min(np.ceil(sx), np.ceil(x1))),
        int(min(np.ceil(sy), np.ceil(y1))),
    ]


def _clamp_int(value: float, extent: float) -> int:
    """``value`` rounded to an int in ``[0, ceil(extent) - 1]`` (pixel or thousandth index)."""
    return int(min(max(round(value), 0), max(0, int(np.ceil(extent)) - 1)))


def _zoom_step(
    images: list[np.ndarray], arguments: dict[str, Any], ctx: ToolContext
) -> tuple[TraceStep, ToolContext]:
    call = {"name": "zoom_in", "arguments": arguments}
    result = TOOLS["zoom_in"](images, arguments, ctx)
    if result.error is not None:
        raise TraceError(f"zoom_trace: the zoom_in call {call} failed: {result.text}")
    ctx = ctx.observe(result)
    text = f"<tool_call>{json.dumps(call)}</tool_call>"
    return TraceStep(text, tool_call=call, result=result, frame=ctx.frame(-1)), ctx


def _answer_step(
    target: Box, ctx: ToolContext, cfg: TraceConfig, rng: np.random.Generator
) -> TraceStep:
    tx0, ty0, tx1, ty1 = target
    cx, cy = (tx0 + tx1) / 2, (ty0 + ty1) / 2
    dx, dy = rng.uniform(-1.0, 1.0, 2) * cfg.answer_jitter
    aims = [(cx + dx * (tx1 - tx0) / 2, cy + dy * (ty1 - ty0) / 2), (cx, cy)]
    obs = ctx.n_observations - 1 if cfg.answer_space == "crop" else 0
    sx, sy = space_scale(ctx.space, ctx.frame(obs))
    for aim in aims:  # rounding to integers may step off a target a few units wide
        x, y = ctx.from_original_norm(aim, obs)
        point = (_clamp_int(x, sx), _clamp_int(y, sy))
        back = ctx.to_original_norm(point, obs)
        if point_in_box(back, target):
            break
    text = json.dumps({"point_2d": list(point)})
    return TraceStep(
        text,
        answer_point=point,
        answer_observation=obs,
        answer_point_norm=(float(back[0]), float(back[1])),
    )


def zoom_trace(
    sample: GroundingSample,
    ctx: ToolContext,
    rng: np.random.Generator,
    cfg: TraceConfig | None = None,
) -> list[TraceStep]:
    """A synthetic "zoom to the region, then answer" trajectory for ``sample``.

    Args:
        sample: the screenshot (``observation_0``) and its target box (normalized).
        ctx: the episode's starting context (one observation, ``ToolContext.start``): the model's
            space and the zoom knobs the loop will use.
        rng: the only source of randomness (seed it for reproducible traces).
        cfg: knobs; ``TraceConfig()`` by default.

    Returns:
        1 or 2 zoom steps, then the answer step (see :class:`TraceStep`).

    Raises:
        TraceError: ``ctx`` holds more than one observation or its frame does not match the image.
    """
    cfg = TraceConfig() if cfg is None else cfg
    if ctx.n_observations != 1:
        raise TraceError(
            f"zoom_trace: ctx must describe only the original image, got {ctx.n_observations} observations"
        )
    size = ImageSize(*sample.image_size)
    frame = ctx.frame(0)
    if frame is not None and frame.orig != size:
        raise TraceError(f"zoom_trace: ctx.frames[0].orig is {frame.orig}, the image is {size}")
    target = tuple(float(v) for v in sample.target_box_norm)
    images: list[np.ndarray] = [sample.image]
    steps: list[TraceStep] = []
    zoom = _zoom_box(target, size, cfg, rng)  # type: ignore[arg-type]
    miss = _miss_box(zoom, target, rng) if rng.random() < cfg.p_wrong_first else None  # type: ignore[arg-type]
    if miss is not None:
        step, after = _zoom_step(images, {"bbox_2d": _model_box(miss, ctx)}, ctx)
        shown = step.result.crop.box_in_original_norm  # type: ignore[union-attr]
        if intersection_area(shown, target) > 0.0:  # grown or rounded onto the target: no miss
            miss = None
        else:
            steps.append(step)
            images.append(step.result.image)  # type: ignore[union-attr, arg-type]
            ctx = after
    args: dict[str, Any] = {"bbox_2d": _model_box(zoom, ctx)}
    if miss is not None:
        args["source"] = "original"
    step, ctx = _zoom_step(images, args, ctx)
    steps.append(step)
    steps.append(_answer_step(target, ctx, cfg, rng))  # type: ignore[arg-type]
    return steps
