"""Grounding episodes as JSONL, readable back as training data (rejection sampling).

One line per episode of the grounding world (and of worlds built on it)::

    {"image": "images/<sha1>.png", "instruction": "...", "target_box_norm": [x0, y0, x1, y1],
     "completion": "<the model's text>", "point_norm": [x, y] | null, "box_norm": [...] | null,
     "parse_error": null | "<why>", "reward": 1.1, "reward_terms": {"point_in_box": 1.0, ...},
     "success": true, "masked": false, "sample_id": "data:3", "task_id": 3, "group_id": 0,
     "seed": 0, "policy_version": 12, "meta": {...}}

Boxes and points are normalized xyxy / xy in [0, 1] of the original screenshot. The screenshot
is saved once per distinct image (content hash) under ``image_dir``, and ``image`` is its path
relative to the JSONL file's folder. The preset ``vlagent_trajectory`` of
:mod:`gui.grounding.dataset_presets` reads the file back (``task.data.preset:
vlagent_trajectory``, filters ``success_only`` / ``min_reward``), with ``completion`` as
meta["demo_text"] for SFT with ``task.data.demo_text: recorded``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from vlagent.codec import Answer, ParseError
from vlagent.io import atomic_path, atomic_write_text
from vlagent.rollout.trajectory import Trajectory

_SCALARS = (str, int, float, bool, type(None))


def _number(value: Any) -> float | None:
    """A JSON number, or ``None`` for NaN / infinity (strict JSON has neither)."""
    v = float(value)
    return v if math.isfinite(v) else None


def _json_meta(meta: Any) -> dict[str, Any]:
    """The JSON-friendly part of a meta dict: scalars and lists of scalars."""
    out: dict[str, Any] = {}
    for k, v in dict(meta or {}).items():
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        if isinstance(v, _SCALARS):
            out[str(k)] = v
        elif isinstance(v, (list, tuple)) and all(isinstance(x, _SCALARS) for x in v):
            out[str(k)] = list(v)
    return out


def _save_image(image: Any, image_dir: Path, saved: dict[str, Path]) -> Path:
    """Save a ``uint8 (H, W, 3)`` screenshot as PNG named by its content hash (once)."""
    from PIL import Image

    pixels = np.ascontiguousarray(np.asarray(image, dtype=np.uint8))
    digest = hashlib.sha1(str(pixels.shape).encode() + pixels.tobytes()).hexdigest()[:20]
    if digest not in saved:
        file = image_dir / f"{digest}.png"
        if not file.is_file():
            with atomic_path(file, suffix=".png") as tmp:
                Image.fromarray(pixels).save(tmp, format="PNG")
        saved[digest] = file
    return saved[digest]


def trajectory_record(t: Trajectory, image_file: Path, root: Path) -> dict[str, Any]:
    """The JSONL record of one grounding episode whose screenshot is ``image_file``."""
    answer = t.extras.get("answer")
    point = answer.point_norm if isinstance(answer, Answer) else None
    box = answer.box_norm if isinstance(answer, Answer) else None
    meta = t.extras.get("meta") or t.info.get("meta") or {}
    task_id = t.task_id if isinstance(t.task_id, (str, int)) else str(t.task_id)
    return {
        "image": Path(os.path.relpath(image_file, root)).as_posix(),
        "instruction": t.instruction,
        "target_box_norm": [float(v) for v in t.extras["target_box_norm"]],
        "completion": t.turns[0].text,
        "point_norm": None if point is None else [float(v) for v in point],
        "box_norm": None if box is None else [float(v) for v in box],
        "parse_error": answer.reason if isinstance(answer, ParseError) else None,
        "reward": _number(t.reward),
        "reward_terms": {k: _number(v) for k, v in t.reward_terms.items()},
        "success": bool(t.success),
        "masked": bool(t.masked),
        "sample_id": t.info.get("sample_id"),
        "task_id": task_id,
        "group_id": int(t.group_id),
        "seed": int(t.seed),
        "policy_version": int(t.policy_version),
        "meta": _json_meta(meta),
    }


def write_trajectories_jsonl(
    trajectories: Iterable[Trajectory],
    path: str | Path,
    image_dir: str | Path,
    image_of: Callable[[Trajectory], Any] | None = None,
) -> int:
    """Write grounding episodes to ``path`` (atomically: temp file, then ``os.replace``).

    Episodes without a screenshot, a target or a turn, and episodes a backend error ended, are
    left out.

    Args:
        trajectories: finished episodes (``extras``: image, target_box_norm, answer).
        path: the JSONL file (replaced whole).
        image_dir: folder for the screenshots (PNG, one per distinct image).
        image_of: the screenshot of an episode whose ``extras["image"]`` was released (an
            evaluation keeps only the first few), e.g. ``world.sample(t.task_id).image``.

    Returns:
        The number of lines written.
    """
    path, image_dir = Path(path), Path(image_dir)
    saved: dict[str, Path] = {}
    lines = []
    for t in trajectories:
        image, target = t.extras.get("image"), t.extras.get("target_box_norm")
        if image is None and image_of is not None and t.error is None:
            image = image_of(t)
        if image is None or target is None or not t.turns or t.error is not None:
            continue
        file = _save_image(image, image_dir, saved)
        lines.append(json.dumps(trajectory_record(t, file, path.parent), ensure_ascii=False))
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)
