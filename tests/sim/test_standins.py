"""Stand-in screenshots for ScreenSpot annotations: sizes, boxes, determinism, scaling, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sim.screens.standins import StandinError, make_standins

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "screenspot_v2"
    / "screenspot_desktop_v2.json"
)


def _pixels(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def test_fixture_records_get_images_of_their_size_with_the_target_drawn(tmp_path):
    made = make_standins(FIXTURE, tmp_path / "a", version="v2", limit=6)
    records = json.loads(FIXTURE.read_text())[:6]
    written = json.loads(made.annotation_file.read_text())
    assert made.records == 6 and made.images == len({r["img_filename"] for r in records})
    assert written == records  # nothing scaled: the same records, same fields
    for rec in records:
        img = _pixels(made.image_dir / rec["img_filename"])
        assert (img.shape[1], img.shape[0]) == tuple(rec["img_size"])
        x0, y0, x1, y1 = (int(v) for v in rec["bbox"])
        inside = img[y0:y1, x0:x1].reshape(-1, 3)
        # a widget is drawn at the target: more than one colour, not the bare background
        assert len(np.unique(inside, axis=0)) > 1
    again = make_standins(FIXTURE, tmp_path / "b", version="v2", limit=6)
    for rec in records:
        name = rec["img_filename"]
        assert np.array_equal(_pixels(made.image_dir / name), _pixels(again.image_dir / name))


def test_downscaled_standins_keep_boxes_consistent_for_the_loader(tmp_path):
    from gui.grounding import ScreenSpotSource

    records = [r for r in json.loads(FIXTURE.read_text()) if r["img_size"][0] >= 2560][:3]
    ann = tmp_path / "big.json"
    ann.write_text(json.dumps(records))
    made = make_standins(ann, tmp_path / "s", version="v2", max_side=640)
    assert made.scaled == len({r["img_filename"] for r in records})
    written = json.loads(made.annotation_file.read_text())
    source = ScreenSpotSource(made.annotation_file, made.image_dir, version="v2")
    for i, (old, new) in enumerate(zip(records, written, strict=True)):
        w, h = old["img_size"]
        assert max(new["img_size"]) == 640 and new["standin_scale"] == pytest.approx(640 / w)
        sample = source.sample(i)
        assert sample.image_size == tuple(new["img_size"])
        want = (old["bbox"][0] / w, old["bbox"][1] / h, old["bbox"][2] / w, old["bbox"][3] / h)
        assert sample.target_box_norm == pytest.approx(want, abs=2e-3)


def test_v1_records_without_img_size_get_a_canvas_that_contains_the_box(tmp_path):
    recs = [
        {"img_filename": "m/a.jpg", "bbox": [100, 50, 40, 20], "instruction": "open mail",
         "data_type": "icon", "data_source": "ios"},
        {"img_filename": "m/b.png", "bbox": [2000, 1200, 30, 30], "instruction": "tap ok",
         "data_type": "text", "data_source": "android"},
    ]  # fmt: skip
    ann = tmp_path / "v1.json"
    ann.write_text(json.dumps(recs))
    made = make_standins(ann, tmp_path / "out", version="v1")
    written = json.loads(made.annotation_file.read_text())
    assert written[0]["img_size"] == [1920, 1080] and written[0]["bbox"] == [100, 50, 40, 20]
    assert written[1]["img_size"] == [2030, 1230]  # widened to hold x + w, y + h
    assert _pixels(tmp_path / "out" / "m" / "b.png").shape == (1230, 2030, 3)
    with Image.open(tmp_path / "out" / "m" / "a.jpg") as im:
        assert im.format == "JPEG"


@pytest.mark.parametrize(
    ("record", "version", "needle"),
    [
        ({"img_filename": "a.png", "bbox": [10, 10, 5, 5], "img_size": [50, 50]}, "v2",
         "record 0: field 'bbox'"),
        ({"img_filename": "a.png", "bbox": [40, 40, 30, 30], "img_size": [50, 50]}, "v1",
         "leaves the image of size [50, 50]"),
        ({"img_filename": "../a.png", "bbox": [1, 1, 5, 5]}, "v2", "field 'img_filename'"),
        ({"img_filename": "a.png", "bbox": [1, 1, 5]}, "v2", "needs 4 finite numbers"),
        ({"img_filename": "a.png", "bbox": [1, 1, 5, 5], "img_size": [0, 5]}, "v2",
         "field 'img_size'"),
        ({"img_filename": "a.png", "bbox": [1, 1, 5, 5]}, "v3", "version 'v3' is unknown"),
    ],
)  # fmt: skip
def test_bad_records_name_file_record_and_field(tmp_path, record, version, needle):
    ann = tmp_path / "bad.json"
    ann.write_text(json.dumps([record]))
    with pytest.raises(StandinError) as err:
        make_standins(ann, tmp_path / "out", version=version)
    assert needle in str(err.value)
    if "record 0" in needle:
        assert str(ann) in str(err.value)


def test_shared_image_with_two_sizes_and_missing_file_are_errors(tmp_path):
    ann = tmp_path / "two.json"
    rec = {"img_filename": "a.png", "bbox": [1, 1, 5, 5], "instruction": "x"}
    ann.write_text(json.dumps([{**rec, "img_size": [50, 50]}, {**rec, "img_size": [60, 50]}]))
    with pytest.raises(StandinError, match="records \\[0, 1\\] name 'a.png' with different"):
        make_standins(ann, tmp_path / "out")
    with pytest.raises(StandinError, match="does not exist"):
        make_standins(tmp_path / "nope.json", tmp_path / "out")
