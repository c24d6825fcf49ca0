"""Rollout pictures: one PNG per episode, its observations side by side, so a person can see
what the policy looked at.

Panel 0 is the screenshot with the target (green), every zoom region (magenta, in order) and
the final answer mapped back to the original (blue = hit, red = miss). Panel i >= 1 is the i-th
tool result with the target and, if the answer was read there, the answer in that view's
coordinates; each zoom box is also drawn on the observation the call was made from. Captions
hold the assistant turn that followed each observation.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from perception_tools.annotate import draw_prediction, tile_images
from perception_tools.crop import draw_marks
from vlagent.rollout.trajectory import Trajectory

PANEL_HEIGHT = 320


def _clip_box(box: tuple[float, ...]) -> tuple[float, float, float, float] | None:
    x0, y0, x1, y1 = (min(1.0, max(0.0, v)) for v in box)
    return (x0, y0, x1, y1) if x0 < x1 and y0 < y1 else None


def _drawable(box: tuple[float, float, float, float] | None, width: int, height: int) -> tuple:
    """``box`` grown to >= 2 px a side (PIL needs x1 >= x0 after the 1 px inset); a box just
    off the canvas (invisible) when there is none."""
    if box is None:
        return (-4 / width, -4 / height, -2 / width, -2 / height)
    x0, y0, x1, y1 = box
    return (x0, y0, max(x1, x0 + 2 / width), max(y1, y0 + 2 / height))


def _fit(image: np.ndarray, height: int) -> np.ndarray:
    h, w = image.shape[:2]
    size = (max(1, round(w * height / h)), height)
    return np.asarray(Image.fromarray(image).resize(size, Image.Resampling.BILINEAR))


def render_episode(traj: Trajectory, height: int = PANEL_HEIGHT) -> np.ndarray:
    """The episode's observations side by side (module docstring).

    Returns:
        uint8 H x W x 3.
    """
    x = traj.extras
    ctx = x["ctx"]
    target = x.get("target_box_norm")
    point = getattr(x.get("answer"), "point_norm", None)
    new_image = list(x.get("new_image", [])) + [None] * len(traj.turns)
    calls_from: dict[int, list[int]] = {}  # observation -> zooms made while it was the latest
    latest = 0
    for k in range(len(traj.turns)):
        if new_image[k] is not None:
            calls_from.setdefault(latest, []).append(new_image[k])
            latest = new_image[k]
    next_turn = {0: 0}  # observation -> index of the assistant turn that followed it
    for k in range(len(traj.turns)):
        if new_image[k] is not None:
            next_turn[new_image[k]] = k + 1
    images = x["images"]
    panels = []
    for i, image in enumerate(images):
        crop = ctx.crops[i]
        local_target = _clip_box(crop.from_original(target)) if target is not None else None
        local_point = None
        if point is not None and (i == 0 or i == x.get("answer_observation")):
            local_point = crop.from_original(point)
        k = next_turn.get(i, len(traj.turns))
        said = traj.turns[k].text[:48] if k < len(traj.turns) else ""
        caption = f"obs {i}: {said!r}"
        if i == 0:
            caption = f"{traj.instruction[:40]} | {caption}"
        fitted = _fit(image, height)
        drawn = draw_prediction(
            fitted,
            _drawable(local_target, fitted.shape[1], height),
            point_norm=local_point,
            caption=caption,
            hit=traj.success,
        )
        body, strip = drawn[:height], drawn[height:]
        boxes = [ctx.crops[j].box_in_original_norm for j in range(1, len(images))] if i == 0 else []
        boxes += [
            crop.from_original(ctx.crops[j].box_in_original_norm) for j in calls_from.get(i, [])
        ]
        for box in boxes:
            clipped = _clip_box(box)
            if clipped is not None:
                body = draw_marks(body, clipped, [])
        panels.append(np.concatenate([body, strip], axis=0))
    return tile_images(panels, cols=len(panels))
