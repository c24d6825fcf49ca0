"""Ready-made column mappings for grounding data layouts users already have.

``screenspot_v1`` — ScreenSpot (SeeClick) JSON; ``bbox`` is ``[x, y, w, h]`` pixels::

    {"img_filename": "mobile_1.png", "bbox": [100, 40, 50, 20], "instruction": "open menu",
     "data_type": "icon", "data_source": "ios"}

``screenspot_v2`` — the same records with ``bbox = [x0, y0, x1, y1]`` pixels (the layout of
``tests/fixtures/screenspot_v2``)::

    {"img_filename": "pc_1.png", "bbox": [910, 78, 954, 112], "instruction": "close this window",
     "img_size": [960, 540], "platform": "windows", "ui_type": "icon", "group": "desktop"}

``screenspot_pro`` — ScreenSpot-Pro; ``bbox`` is ``[x0, y0, x1, y1]`` pixels::

    {"img_filename": "vscode_1.png", "bbox": [10, 20, 60, 44], "instruction": "run the file",
     "id": "vscode_0", "application": "vscode", "platform": "macos", "img_size": [3840, 2160],
     "ui_type": "icon", "group": "Dev"}

``gui_r1`` — the GUI-R1 parquet layout: the image as ``{"bytes": ...}``, ``gt_bbox`` in
[0, 1] of the image (a box of 4 or a point of 2 numbers; GUI-R1's loader multiplies it by the
image size), ``gt_action`` / ``gt_input_text`` the action type and typed text. Rows whose
action has no on-screen target (``gt_bbox = [-100, -100]``) are skipped as ``no_target``.
(UI-R1-style parquet files that follow this layout load the same way; not checked against
a UI-R1 release.)::

    {"image": {"bytes": b"\\x89PNG..."}, "instruction": "search for shoes",
     "gt_bbox": [0.12, 0.05, 0.30, 0.09], "gt_action": "click", "gt_input_text": "no input text",
     "history": "None", "group": "web", "ui_type": "text"}

``android_control`` — AndroidControl flattened to one row per step (the release stores
per-episode lists ``screenshots``, ``actions`` (JSON dicts with ``action_type``, ``x``, ``y``,
``text``), ``step_instructions``, ``screenshot_widths`` / ``heights``); ``x, y`` are pixels.
Steps without a point (scroll, open_app, navigate_back, ...) are skipped as ``no_target``::

    {"episode_id": 17, "step": 0, "screenshot": "17/0.png", "goal": "turn on wifi",
     "step_instruction": "tap Settings", "screenshot_width": 1080, "screenshot_height": 2400,
     "action": {"action_type": "click", "x": 540, "y": 1200}}

``gui_odyssey`` — GUI-Odyssey flattened to one row per step (the release's ``steps`` entries
with the episode's ``task_info.instruction`` copied in); ``info`` holds ``[[x, y]]`` in
[0, 1000] for CLICK / LONG_PRESS (other actions are skipped as ``no_target``)::

    {"episode_id": "e1", "step": 3, "screenshot": "e1_3.png", "instruction": "set a reminder",
     "action": "CLICK", "info": [[500, 250]], "category": "General_Tool"}

``vlagent_trajectory`` — rollouts written by
:func:`vlagent.eval.trajectory_log.write_trajectories_jsonl`; the recorded completion goes to
meta["demo_text"] (SFT on the model's own answers; filter with ``success_only`` /
``min_reward``)::

    {"image": "images/3fa2c1.png", "instruction": "click the red square",
     "target_box_norm": [0.1, 0.2, 0.3, 0.4], "completion": "{\\"point_2d\\": [200, 300]}",
     "point_norm": [0.2, 0.3], "box_norm": null, "reward": 1.1, "success": true,
     "reward_terms": {"point_in_box": 1.0, "format": 0.1}, "sample_id": "data:3", "meta": {}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gui.errors import GroundingDataError
from gui.grounding.dataset_schema import ColumnMapping, mapping_from

_SCREENSPOT_META: dict[str, Any] = {
    "platform": "platform",
    "data_type": ["data_type", "ui_type"],
    "ui_type": "ui_type",
    "data_source": "data_source",
    "group": "group",
    "application": "application",
}

PRESETS: dict[str, ColumnMapping] = {
    "screenspot_v1": ColumnMapping(
        image="img_filename",
        bbox="bbox",
        coords="xywh_px",
        img_size="img_size",
        meta=_SCREENSPOT_META,
    ),
    "screenspot_v2": ColumnMapping(
        image="img_filename",
        bbox="bbox",
        coords="xyxy_px",
        img_size="img_size",
        meta=_SCREENSPOT_META,
    ),
    "screenspot_pro": ColumnMapping(
        image="img_filename",
        bbox="bbox",
        coords="xyxy_px",
        img_size="img_size",
        id="id",
        meta=_SCREENSPOT_META,
    ),
    "gui_r1": ColumnMapping(
        image="image",
        bbox="gt_bbox",
        coords="xyxy_norm",
        action_type="gt_action",
        text="gt_input_text",
        meta={
            "history": "history",
            "group": "group",
            "ui_type": "ui_type",
            "data_type": ["data_type", "ui_type"],
            "platform": "platform",
        },
    ),
    "android_control": ColumnMapping(
        image="screenshot",
        instruction="step_instruction",
        point=["action.x", "action.y"],
        coords="point_px",
        action_type="action.action_type",
        text="action.text",
        img_size=["screenshot_width", "screenshot_height"],
        meta={"goal": "goal", "episode_id": "episode_id", "step": "step"},
    ),
    "gui_odyssey": ColumnMapping(
        image="screenshot",
        instruction="instruction",
        point="info",
        coords="point_k1000",
        action_type="action",
        meta={"episode_id": "episode_id", "step": "step", "category": "category"},
    ),
    "vlagent_trajectory": ColumnMapping(
        image="image",
        instruction="instruction",
        bbox="target_box_norm",
        coords="xyxy_norm",
        action_type="meta.action_type",
        text="meta.text",
        id="sample_id",
        meta_dict="meta",
        demo_text="completion",
        success="success",
        reward="reward",
        meta={"recorded_reward": "reward", "recorded_success": "success"},
    ),
}
"""Preset name -> mapping (examples in the module docstring)."""


def resolve_mapping(
    preset: str | None = None, columns: ColumnMapping | Mapping[str, Any] | None = None
) -> ColumnMapping:
    """A preset's mapping with the fields of ``columns`` put over it (or ``columns`` alone).

    Raises:
        GroundingDataError: unknown preset (lists the known ones) or a bad column field.
    """
    if isinstance(columns, ColumnMapping):
        columns = columns.model_dump(exclude_unset=True)
    columns = dict(columns or {})
    base: dict[str, Any] = {}
    if preset:
        if preset not in PRESETS:
            raise GroundingDataError(
                f"preset {preset!r} is unknown; known: {', '.join(sorted(PRESETS))}"
            )
        base = PRESETS[preset].model_dump()
        if "bbox" in columns or "point" in columns:  # the user's target replaces the preset's
            base.pop("bbox", None)
            base.pop("point", None)
    merged = {**base, **columns}
    if isinstance(base.get("meta"), dict) and isinstance(columns.get("meta"), Mapping):
        merged["meta"] = {**base["meta"], **columns["meta"]}  # extra meta keys add to the preset's
    try:
        return mapping_from(merged)
    except ValueError as err:
        raise GroundingDataError(str(err)) from err
