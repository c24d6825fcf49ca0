"""Ready-made column mappings: each preset on hand-made rows with hand-computed boxes."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from gui.grounding.dataset_presets import PRESETS
from gui.grounding.datasets import DatasetSource

W, H = 200, 100


def _png(path, size=(W, H), box=(20, 10, 60, 40), colour=(255, 0, 0)):
    """A screenshot with one coloured rectangle (xyxy pixels)."""
    a = np.full((size[1], size[0], 3), 230, np.uint8)
    a[box[1] : box[3], box[0] : box[2]] = colour
    Image.fromarray(a).save(path, format="PNG")
    return path


def _png_bytes(**kw):
    buf = io.BytesIO()
    _png(buf, **kw)
    return buf.getvalue()


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ---- presets ----------------------------------------------------------------------------------


def _one(tmp_path, preset, rows, **kw):
    return DatasetSource(_jsonl(tmp_path / f"{preset}.jsonl", rows), preset=preset, **kw)


def test_screenspot_presets(tmp_path):
    _png(tmp_path / "s.png")
    v1 = {
        "img_filename": "s.png",
        "bbox": [20, 10, 40, 30],
        "instruction": "open menu",
        "data_type": "icon",
        "data_source": "ios",
    }
    s = _one(tmp_path, "screenspot_v1", [v1]).sample(0)
    assert s.target_box_norm == pytest.approx((0.1, 0.1, 0.3, 0.4))
    assert s.meta["data_type"] == "icon" and s.meta["data_source"] == "ios"
    v2 = {
        "img_filename": "s.png",
        "bbox": [20, 10, 60, 40],
        "instruction": "close",
        "img_size": [W, H],
        "platform": "windows",
        "ui_type": "text",
        "group": "desktop",
    }
    s = _one(tmp_path, "screenspot_v2", [v2]).sample(0)
    assert s.target_box_norm == pytest.approx((0.1, 0.1, 0.3, 0.4))
    assert (s.meta["data_type"], s.meta["ui_type"], s.meta["platform"], s.meta["group"]) == (
        "text",
        "text",
        "windows",
        "desktop",
    )
    pro = {**v2, "id": "vscode_0", "application": "vscode", "group": "Dev", "ui_type": "icon"}
    s = _one(tmp_path, "screenspot_pro", [pro]).sample(0)
    assert s.target_box_norm == pytest.approx((0.1, 0.1, 0.3, 0.4))
    assert (s.meta["id"], s.meta["group"], s.meta["application"], s.meta["data_type"]) == (
        "vscode_0",
        "Dev",
        "vscode",
        "icon",
    )


def test_gui_r1_preset_on_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    img = {"bytes": _png_bytes(), "path": None}
    rows = [
        {
            "image": img,
            "instruction": "search",
            "gt_bbox": [0.1, 0.1, 0.3, 0.4],
            "gt_action": "click",
            "gt_input_text": "no input text",
            "history": "None",
            "group": "web",
            "ui_type": "text",
        },
        {
            "image": img,
            "instruction": "tap",
            "gt_bbox": [0.5, 0.5],
            "gt_action": "click",
            "gt_input_text": "no input text",
            "history": "None",
            "group": "web",
            "ui_type": "icon",
        },
        {
            "image": img,
            "instruction": "type shoes",
            "gt_bbox": [-100.0, -100.0],
            "gt_action": "type",
            "gt_input_text": "shoes",
            "history": "None",
            "group": "web",
            "ui_type": "text",
        },
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "r1.parquet")
    src = DatasetSource(tmp_path / "r1.parquet", preset="gui_r1")
    assert src.num_samples == 2
    a, b = src.sample(0), src.sample(1)
    assert a.target_box_norm == pytest.approx((0.1, 0.1, 0.3, 0.4))
    assert b.target_box_norm == pytest.approx((0.48, 0.48, 0.52, 0.52))
    assert a.meta["action_type"] == "click" and a.meta["text"] == "no input text"
    assert a.meta["group"] == "web" and b.meta["data_type"] == "icon"
    (p,) = src.problems
    assert (p.row, p.field, p.reason) == (2, "gt_bbox", "no_target") and "'type'" in p.message


def test_android_control_preset(tmp_path):
    _png(tmp_path / "s.png")
    base = {
        "episode_id": 17,
        "screenshot": "s.png",
        "goal": "turn on wifi",
        "screenshot_width": W,
        "screenshot_height": H,
    }
    rows = [
        {
            **base,
            "step": 0,
            "step_instruction": "tap Settings",
            "action": {"action_type": "click", "x": 100, "y": 50},
        },
        {
            **base,
            "step": 1,
            "step_instruction": "scroll down",
            "action": {"action_type": "scroll", "direction": "down"},
        },
        {
            **base,
            "step": 2,
            "step_instruction": "type wifi",
            "action": {"action_type": "type", "x": 20, "y": 90, "text": "wifi"},
        },
    ]
    src = _one(tmp_path, "android_control", rows)
    assert src.num_samples == 2
    s0, s1 = src.sample(0), src.sample(1)
    assert s0.target_box_norm == pytest.approx((0.48, 0.48, 0.52, 0.52))
    assert s0.instruction == "tap Settings" and s0.meta["goal"] == "turn on wifi"
    assert s1.target_box_norm == pytest.approx((0.08, 0.88, 0.12, 0.92))
    assert s1.meta["action_type"] == "type" and s1.meta["text"] == "wifi"
    (p,) = src.problems
    assert (p.row, p.field, p.reason) == (1, "action.x", "no_target") and "'scroll'" in p.message


def test_gui_odyssey_preset(tmp_path):
    _png(tmp_path / "s.png")
    base = {
        "episode_id": "e1",
        "screenshot": "s.png",
        "instruction": "set a reminder",
        "category": "General_Tool",
    }
    rows = [
        {**base, "step": 0, "action": "CLICK", "info": [[250, 500]]},
        {**base, "step": 1, "action": "CLICK", "info": "KEY_HOME"},
        {**base, "step": 2, "action": "LONG_PRESS", "info": [[900, 100]]},
    ]
    src = _one(tmp_path, "gui_odyssey", rows)
    assert src.num_samples == 2
    assert src.sample(0).target_box_norm == pytest.approx((0.23, 0.48, 0.27, 0.52))
    assert src.sample(1).target_box_norm == pytest.approx((0.88, 0.08, 0.92, 0.12))
    assert src.sample(1).meta["action_type"] == "long_press"
    assert src.sample(0).meta["category"] == "General_Tool"
    (p,) = src.problems
    assert (p.row, p.field) == (1, "info") and "KEY_HOME" in p.message


def test_every_preset_is_documented():
    import gui.grounding.dataset_presets as mod

    for name in PRESETS:
        assert f"``{name}``" in mod.__doc__, name
