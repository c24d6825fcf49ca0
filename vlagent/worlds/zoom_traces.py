"""The forced assistant texts the zoom world's SFT replays: zoom traces and direct answers.

``rt`` is the world's :class:`~vlagent.worlds.zoom.ZoomAdapter` (processor, codec, tools and the
tools' starting context).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from gui.grounding.sources import GroundingSample
from gui.grounding.traces import TraceConfig, zoom_trace
from perception_tools.geometry import (
    Box,
    box_area,
    box_center,
    intersection_area,
    point_in_box,
    space_scale,
)
from perception_tools.tools import TOOLS, ToolContext
from vlagent.batching import image_frame


def start_context(rt: Any, image: np.ndarray) -> ToolContext:
    """The loop's starting tool context for ``image`` (the frame the processor will use)."""
    return rt.start_context(image_frame(rt.processor, int(image.shape[1]), int(image.shape[0])))


def trace_config(cfg: Any) -> TraceConfig:
    return TraceConfig(
        zoom_scale=(cfg.zoom_scale_lo, cfg.zoom_scale_hi),
        p_wrong_first=cfg.p_wrong_first,
        answer_space="crop",
        answer_jitter=cfg.answer_jitter,
    )


def demo_texts(rt: Any, sample: GroundingSample, rng: np.random.Generator, cfg: Any) -> list[str]:
    """Assistant texts of one demonstration: a zoom trace (tools on; ``cfg.trace`` picks the
    random or the grid trace) or the direct answer in observation_0's space (tools off)."""
    if not rt.tools.enabled:
        frame = image_frame(rt.processor, *sample.image_size)
        return [rt.codec.render(tuple(sample.target_box_norm), frame)]
    if cfg.trace == "grid":
        return grid_zoom_texts(rt, sample, rng, cfg)
    if cfg.trace == "panel":
        return grid_zoom_texts(rt, sample, rng, cfg, window=panel_window(sample))
    ctx = start_context(rt, sample.image)
    return [step.text for step in zoom_trace(sample, ctx, rng, trace_config(cfg))]


def _starts(side: float) -> list[float]:
    """Window starts along one axis: every half window, plus one flush with the far edge."""
    n = int(math.floor((1.0 - side) / (side / 2) + 1e-9))
    starts = [i * side / 2 for i in range(n + 1)]
    return starts + [1.0 - side] if starts[-1] < 1.0 - side - 1e-9 else starts


def grid_window(sample: GroundingSample, width: float, height: float) -> Box:
    """The grid window (normalized) that contains the target and whose centre is nearest the
    centre of the target's colour cluster (of the target itself without elements)."""
    target = tuple(float(v) for v in sample.target_box_norm)
    anchor = box_center(cluster_box(sample) or target)
    windows = [(x, y, x + width, y + height) for x in _starts(width) for y in _starts(height)]
    inside = [w for w in windows if intersection_area(w, target) >= box_area(target) * 0.999]
    if not inside:  # a target larger than the window: take the window nearest it
        inside, anchor = windows, box_center(target)
    return min(inside, key=lambda w: math.dist(box_center(w), anchor))


def panel_window(sample: GroundingSample, pad: float = 0.06) -> Box:
    """The panel around the target (``sample.meta["panel_box_norm"]``), grown by ``pad`` of its
    size on every side and clipped to the screen (normalized xyxy).

    Raises:
        ValueError: the sample's level draws no panel (use a level with ``panel_frac``).
    """
    panel = sample.meta.get("panel_box_norm")
    if panel is None:
        raise ValueError(
            f"tools.trace=panel: sample {sample.sample_id} has no panel; use a screen level "
            "with panel_frac (e.g. hires_panel)"
        )
    x0, y0, x1, y1 = (float(v) for v in panel)
    dx, dy = pad * (x1 - x0), pad * (y1 - y0)
    return max(0.0, x0 - dx), max(0.0, y0 - dy), min(1.0, x1 + dx), min(1.0, y1 + dy)


def grid_zoom_texts(
    rt: Any,
    sample: GroundingSample,
    rng: np.random.Generator,
    cfg: Any,
    window: Box | None = None,
) -> list[str]:
    """[zoom call on ``window`` (default ``grid_window``), answer ``{"point_2d": ...}`` in the
    zoomed view's space] with the answer jittered by ``cfg.answer_jitter`` of the target's
    half-size."""
    ctx = start_context(rt, sample.image)
    if window is None:
        window = grid_window(sample, cfg.grid_window_w, cfg.grid_window_h)
    sx, sy = space_scale(ctx.space, ctx.frame(0))
    x0, y0, x1, y1 = window
    box = [round(x0 * sx), round(y0 * sy), round(x1 * sx), round(y1 * sy)]
    call = {"name": "zoom_in", "arguments": {"bbox_2d": box}}
    result = TOOLS["zoom_in"]([sample.image], call["arguments"], ctx)
    if result.image is None:
        raise ValueError(f"grid trace of {sample.sample_id}: zoom failed: {result.text}")
    frame = image_frame(rt.processor, result.image.shape[1], result.image.shape[0])
    ctx = ctx.observe(result, frame=frame)
    tx0, ty0, tx1, ty1 = (float(v) for v in sample.target_box_norm)
    dx, dy = rng.uniform(-1.0, 1.0, 2) * cfg.answer_jitter
    aims = [((tx0 + tx1) / 2 + dx * (tx1 - tx0) / 2, (ty0 + ty1) / 2 + dy * (ty1 - ty0) / 2)]
    aims.append(((tx0 + tx1) / 2, (ty0 + ty1) / 2))
    for aim in aims:  # integer rounding may step off a small target: fall back to its centre
        px, py = ctx.from_original_norm(aim, 1)
        point = [int(round(px)), int(round(py))]
        if point_in_box(ctx.to_original_norm(point, 1), sample.target_box_norm):
            break
    return [f"<tool_call>{json.dumps(call)}</tool_call>", json.dumps({"point_2d": point})]


def oracle_zoom_text(rt: Any, sample: GroundingSample, trace: TraceConfig) -> str:
    """The first zoom call of a trace (no miss) around the target: a probe's forced turn."""
    ctx = start_context(rt, sample.image)
    rng = np.random.default_rng(int(sample.meta.get("seed", 0)))
    cfg = TraceConfig(
        zoom_scale=trace.zoom_scale,
        max_zoom_aspect=trace.max_zoom_aspect,
        p_wrong_first=0.0,
        answer_space="crop",
        answer_jitter=trace.answer_jitter,
    )
    return zoom_trace(sample, ctx, rng, cfg)[0].text


def cluster_box(sample: GroundingSample) -> tuple[float, float, float, float] | None:
    """Union box (normalized) of the elements sharing the target's colour (its glyph cluster
    on ``hires_tiny_small``), or None when the target is not among ``sample.elements``."""
    target = tuple(sample.target_box_norm)
    match = [e for e in sample.elements if tuple(e.box_norm) == target]
    if not match:
        return None
    same = [e.box_norm for e in sample.elements if e.colour == match[0].colour]
    return (
        min(b[0] for b in same),
        min(b[1] for b in same),
        max(b[2] for b in same),
        max(b[3] for b in same),
    )
