"""Hostile rows: each is skipped with a message naming the file, the row and the field; the
rest of the data survives and the load report counts them."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from PIL import Image

from gui.errors import GroundingDataError
from gui.grounding.datasets import DatasetSource

W, H = 200, 100


def _png(path, size=(W, H), box=(20, 10, 60, 40), colour=(255, 0, 0)):
    """A screenshot with one coloured rectangle (xyxy pixels)."""
    a = np.full((size[1], size[0], 3), 230, np.uint8)
    a[box[1] : box[3], box[0] : box[2]] = colour
    Image.fromarray(a).save(path, format="PNG")
    return path


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ---- hostile rows -----------------------------------------------------------------------------

GOOD = {"image": "s.png", "instruction": "click", "bbox": [20, 10, 60, 40]}
HOSTILE = {
    "missing_image": ({**GOOD, "image": "gone.png"}, "image", "gone.png does not exist"),
    "missing_image_size_given": (
        {**GOOD, "image": "gone.png", "img_size": [W, H]},
        "image",
        "gone.png does not exist",
    ),
    "bbox_outside_image": (
        {**GOOD, "bbox": [20, 10, 260, 40]},
        "bbox",
        "reaches past the image of size [200, 100]",
    ),
    "bbox_outside_given_size": (
        {**GOOD, "bbox": [20, 10, 60, 140], "img_size": [W, H]},
        "bbox",
        "reaches past the image",
    ),
    "x1_below_x0": ({**GOOD, "bbox": [60, 10, 20, 40]}, "bbox", "empty or inverted"),
    "bbox_wrong_type": ({**GOOD, "bbox": ["a", 10, 60, 40]}, "bbox", "valid number (got 'a')"),
    "bbox_bool": ({**GOOD, "bbox": [True, 10, 60, 40]}, "bbox", "valid number"),
    "bbox_three_numbers": ({**GOOD, "bbox": [1, 2, 3]}, "bbox", "needs 4 numbers"),
    "instruction_wrong_type": (
        {**GOOD, "instruction": 5},
        "instruction",
        "must be a string, got int",
    ),
    "image_wrong_type": ({**GOOD, "image": 3.5}, "image", "must be a path, bytes"),
    "empty_instruction": ({**GOOD, "instruction": "   "}, "instruction", "is empty"),
    "nan_bbox": ({**GOOD, "bbox": [float("nan"), 10, 60, 40]}, "bbox", "finite number"),
    "missing_instruction": (
        {k: v for k, v in GOOD.items() if k != "instruction"},
        "instruction",
        "is missing",
    ),
    "img_size_wrong": ({**GOOD, "img_size": [0, 100]}, "img_size", "greater than 0"),
    "not_an_object": ([1, 2], "(row)", "expected an object"),
    "undecodable_image": ({**GOOD, "image": "junk.png"}, "image", "cannot read image"),
}


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_hostile_row_is_skipped_with_a_message_naming_file_row_field(tmp_path, kind):
    _png(tmp_path / "s.png")
    (tmp_path / "junk.png").write_bytes(b"not a png")
    bad, field, words = HOSTILE[kind]
    rows = [GOOD, GOOD, bad, GOOD]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # NaN written as NaN
    src = DatasetSource(path, {"img_size": "img_size"})
    assert src.num_samples == 3  # the rest of the data survives
    (p,) = src.problems
    assert (p.file, p.row, p.field) == (str(path), 2, field)
    assert words in p.message
    assert str(p).startswith(f"{path}: row 2: field {field!r}: ")
    assert src.report(log_summary=False)["skipped"] == 1


def test_bad_json_line_and_parquet_nan(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    _png(tmp_path / "s.png")
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(GOOD) + "\n{oops\n" + json.dumps(GOOD) + "\n")
    src = DatasetSource(path)
    (p,) = src.problems
    assert (p.row, p.field, p.reason) == (1, "(line)", "bad_row") and "not valid JSON" in p.message
    rows = [GOOD, {**GOOD, "bbox": [20.0, float("nan"), 60.0, 40.0]}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    src = DatasetSource(tmp_path / "d.parquet")
    (p,) = src.problems
    assert (p.file, p.row, p.field) == (str(tmp_path / "d.parquet"), 1, "bbox")
    assert "finite number" in p.message


def test_report_counts_and_logs_one_summary(tmp_path, caplog):
    _png(tmp_path / "s.png")
    rows = [
        GOOD,
        {**GOOD, "image": "a.png"},
        {**GOOD, "image": "b.png"},
        {**GOOD, "instruction": ""},
        GOOD,
    ]
    with caplog.at_level(logging.WARNING, logger="gui.grounding.datasets"):
        src = DatasetSource(_jsonl(tmp_path / "d.jsonl", rows))
    warnings = [r for r in caplog.records if r.name == "gui.grounding.datasets"]
    assert len(warnings) == 1
    assert "kept 2 of 5 rows; skipped 3 (empty_instruction 1, missing_image 2)" in (
        warnings[0].getMessage()
    )
    rep = src.report(log_summary=False)
    assert rep == {
        "file": str(tmp_path / "d.jsonl"),
        "rows_read": 5,
        "kept": 2,
        "skipped": 3,
        "skipped_by_reason": {"empty_instruction": 1, "missing_image": 2},
        "missing_images": 2,
        "filtered": 0,
    }
    assert DatasetSource(tmp_path / "d.jsonl", max_rows=2).report()["rows_read"] == 2


def test_no_usable_row_names_the_first_problems(tmp_path):
    rows = [{**GOOD, "image": "a.png"}, {**GOOD, "instruction": ""}]
    with pytest.raises(
        GroundingDataError,
        match=r"no usable row among 2 \(2 skipped.*row 0: "
        r"field 'image': image .*a.png does not exist; .*row 1: field "
        r"'instruction': is empty",
    ):
        DatasetSource(_jsonl(tmp_path / "d.jsonl", rows))
