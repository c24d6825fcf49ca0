"""Saved trajectories for inspection: per-step annotated screenshots and a JSON of actions.

Layout of one episode folder::

    trajectory.json     task, instruction, outcome, and per step: text, action, flags, reward
    step_00.png         the screen acted on, the click point (crosshair) or swipe (line) drawn,
    step_01.png         and a caption strip with the step's action and outcome
    final.png           the screen after the last step (when the episode ended normally)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from gui.actions import Drag, InvalidAction, Swipe
from vlagent.apps.rollout import Episode, Turn
from vlagent.io import atomic_write_text
from vlagent.viz import save_png

_STRIP = 28


def annotate_turn(image: np.ndarray, turn: Turn, index: int) -> np.ndarray:
    """Copy of the screenshot (uint8 (H, W, 3)) with the turn's action drawn and captioned.

    Returns:
        ``uint8 (H + 28, W, 3)``: the point as a red crosshair (normalized → pixels), a swipe as
        a line, and a two-line caption (step, action; outcome) under the image.
    """
    from PIL import Image, ImageDraw

    h, w = image.shape[:2]
    canvas = Image.new("RGB", (w, h + _STRIP), (20, 20, 20))
    canvas.paste(Image.fromarray(np.asarray(image, dtype=np.uint8)), (0, 0))
    draw = ImageDraw.Draw(canvas)
    action = turn.decision.action
    point = getattr(action, "point", None)
    if point is not None:
        x, y = point[0] * (w - 1), point[1] * (h - 1)
        r = max(4, w // 40)
        draw.ellipse((x - r, y - r, x + r, y + r), outline=(230, 30, 30), width=2)
        draw.line((x - 2 * r, y, x + 2 * r, y), fill=(230, 30, 30), width=1)
        draw.line((x, y - 2 * r, x, y + 2 * r), fill=(230, 30, 30), width=1)
    if isinstance(action, (Swipe, Drag)):
        (x0, y0), (x1, y1) = action.start, action.end
        draw.line((x0 * w, y0 * h, x1 * w, y1 * h), fill=(230, 30, 30), width=3)
    what = "invalid: " + action.reason if isinstance(action, InvalidAction) else action.type
    outcome = turn.info.get("status", "crashed") if turn.info else "crashed"
    draw.text((3, h + 2), f"{index}: {what}"[:60], fill=(255, 255, 255))
    draw.text(
        (3, h + 14), f"{outcome}{' (invalid)' if turn.invalid else ''}"[:60], fill=(200, 200, 200)
    )
    return np.asarray(canvas)


def _action_json(turn: Turn) -> Any:
    action = turn.decision.action
    return {"invalid": action.reason} if isinstance(action, InvalidAction) else action.to_dict()


def episode_record(ep: Episode) -> dict[str, Any]:
    """The JSON record of an episode (no images)."""
    return {
        "task_id": ep.spec.task_id,
        "template": ep.template,
        "instruction": ep.instruction,
        "seed": ep.spec.seed,
        "success": ep.success,
        "status": ep.status,
        "truncated": ep.truncated,
        "error": ep.error,
        "reward": ep.reward if np.isfinite(ep.reward) else None,
        "steps": [
            {
                "text": t.decision.text,
                "action": _action_json(t),
                "format_ok": t.format_ok,
                "invalid": t.invalid,
                "invalid_reason": t.info.get("invalid_reason"),
                "reward_terms": t.info.get("reward_terms"),
                "status": t.info.get("status"),
                "prompt": t.context.text,
            }
            for t in ep.turns
        ],
    }


def save_episode(ep: Episode, folder: str | Path) -> Path:
    """Write ``trajectory.json`` and the annotated step screenshots of ``ep`` into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for i, turn in enumerate(ep.turns):
        image = turn.screen if turn.screen is not None else turn.context.images[-1]
        save_png(annotate_turn(image, turn, i), folder / f"step_{i:02d}.png")
    if ep.final_screen is not None:
        save_png(np.asarray(ep.final_screen, dtype=np.uint8), folder / "final.png")
    atomic_write_text(folder / "trajectory.json", json.dumps(episode_record(ep), indent=1) + "\n")
    return folder
