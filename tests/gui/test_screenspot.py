"""ScreenSpot loader: record validation, bbox conventions, lazy images and their errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gui.errors import GroundingDataError, GroundingEnvError
from gui.grounding import ScreenSpotSource

REAL = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "screenspot_v2"
    / "screenspot_desktop_v2.json"
)
needs_real = pytest.mark.skipif(not REAL.is_file(), reason=f"fixture {REAL} is not here")


def _write(
    tmp_path: Path, records: list[dict], images: dict[str, tuple[int, int]]
) -> tuple[Path, Path]:
    """Annotation file plus PNGs of the given (w, h) sizes, each a distinct solid colour."""
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps(records))
    image_dir = tmp_path / "images"
    image_dir.mkdir(exist_ok=True)
    for k, (name, (w, h)) in enumerate(sorted(images.items())):
        Image.new("RGB", (w, h), (10 * k, 100, 200)).save(image_dir / name)
    return ann, image_dir


def _real_subset(tmp_path: Path, n: int = 4) -> tuple[Path, Path, list[dict]]:
    records = json.loads(REAL.read_text())[:n]
    sizes = {r["img_filename"]: tuple(r["img_size"]) for r in records}
    ann, image_dir = _write(tmp_path, records, sizes)
    return ann, image_dir, records


@needs_real
def test_real_file_loads_and_names_the_missing_image(tmp_path: Path) -> None:
    source = ScreenSpotSource(REAL, tmp_path)
    assert len(source) == 334 and source.box_format == "xyxy" and source.version is None
    assert source.image_size is None  # sizes vary across the file
    with pytest.raises(GroundingDataError) as err:
        source.sample(2)
    message = str(err.value)
    assert "pc_2c6dc6ea-fd6f-4cbb-9954-2d6a68610a48.png" in message
    assert str(REAL) in message and "record 2" in message and str(tmp_path) in message


@needs_real
def test_real_subset_happy_path(tmp_path: Path) -> None:
    ann, image_dir, records = _real_subset(tmp_path)
    source = ScreenSpotSource(ann, image_dir)
    for i, rec in enumerate(records):
        sample = source.sample(i)
        w, h = rec["img_size"]
        x0, y0, x1, y1 = rec["bbox"]
        assert sample.image.shape == (h, w, 3) and sample.image.dtype == np.uint8
        assert sample.target_box_norm == pytest.approx((x0 / w, y0 / h, x1 / w, y1 / h))
        assert sample.instruction == rec["instruction"]
        assert sample.sample_id == f"ann:{i}" and source.index_of(sample.sample_id) == i
        assert (
            sample.meta["platform"] == rec["platform"] and sample.meta["ui_type"] == rec["ui_type"]
        )
        assert sample.elements == ()
    assert source.sample(0).image is source.sample(0).image  # decoded once, then cached


def test_v1_xywh_is_detected_when_only_it_fits(tmp_path: Path) -> None:
    records = [
        {
            "img_filename": "a.png",
            "bbox": [50, 20, 10, 10],
            "instruction": "open",
            "img_size": [100, 50],
        },
        {
            "img_filename": "a.png",
            "bbox": [5, 5, 20, 10],
            "instruction": "close",
            "img_size": [100, 50],
        },
    ]
    ann, image_dir = _write(tmp_path, records, {"a.png": (100, 50)})
    source = ScreenSpotSource(ann, image_dir)
    assert source.box_format == "xywh"
    assert source.sample(0).target_box_norm == pytest.approx((0.5, 0.4, 0.6, 0.6))


def test_ambiguous_convention_needs_version(tmp_path: Path) -> None:
    records = [
        {
            "img_filename": "a.png",
            "bbox": [10, 10, 20, 20],
            "instruction": "x",
            "img_size": [100, 100],
        }
    ]
    ann, image_dir = _write(tmp_path, records, {"a.png": (100, 100)})
    with pytest.raises(GroundingDataError, match="pass version="):
        ScreenSpotSource(ann, image_dir)
    as_v1 = ScreenSpotSource(ann, image_dir, version="v1").sample(0).target_box_norm
    as_v2 = ScreenSpotSource(ann, image_dir, version="v2").sample(0).target_box_norm
    assert as_v1 == pytest.approx((0.1, 0.1, 0.3, 0.3))
    assert as_v2 == pytest.approx((0.1, 0.1, 0.2, 0.2))


def test_v1_without_img_size_reads_size_from_image(tmp_path: Path) -> None:
    records = [{"img_filename": "sub/b.png", "bbox": [30, 10, 30, 20], "instruction": "tap"}]
    (tmp_path / "images" / "sub").mkdir(parents=True)
    ann, image_dir = _write(tmp_path, records, {"sub/b.png": (120, 40)})
    sample = ScreenSpotSource(ann, image_dir, version="v1").sample(0)
    assert sample.image.shape == (40, 120, 3)
    assert sample.target_box_norm == pytest.approx((0.25, 0.25, 0.5, 0.75))


@pytest.mark.parametrize(
    ("bbox", "field", "value"),
    [
        ([50, 10, 40, 20], "'bbox'", "[50.0, 10.0, 40.0, 20.0]"),  # x1 <= x0
        ([10, 10, 140, 20], "'bbox'", "[10.0, 10.0, 140.0, 20.0]"),  # past the 100 px image
        ([-1, 10, 40, 20], "'bbox'", "[-1.0, 10.0, 40.0, 20.0]"),
        ([1, 2, 3], "'bbox'", "[1, 2, 3]"),  # wrong length
        (["a", 2, 3, 4], "'bbox.0'", "'a'"),
        ([math.nan, 2, 3, 4], "'bbox.0'", "nan"),
    ],
)
def test_bad_bbox_names_file_index_field_value(
    tmp_path: Path, bbox: list, field: str, value: str
) -> None:
    good = {
        "img_filename": "a.png",
        "bbox": [1, 1, 5, 5],
        "instruction": "ok",
        "img_size": [100, 50],
    }
    bad = dict(good, bbox=bbox)
    ann, image_dir = _write(tmp_path, [good, bad], {"a.png": (100, 50)})
    with pytest.raises(GroundingDataError) as err:
        ScreenSpotSource(ann, image_dir, version="v2")
    message = str(err.value)
    assert str(ann) in message and "record 1" in message and field in message and value in message


def test_bad_box_in_v2_file_is_reported_under_auto_detection(tmp_path: Path) -> None:
    records = json.loads(REAL.read_text())[:6] if REAL.is_file() else []
    records = (
        records
        or [
            {
                "img_filename": "a.png",
                "bbox": [60, 30, 90, 40],
                "instruction": "x",
                "img_size": [100, 50],
            }
        ]
        * 3
    )
    records[1] = dict(records[1], bbox=[40, 10, 20, 30])
    ann, image_dir = _write(tmp_path, records, {})
    with pytest.raises(GroundingDataError, match=r"record 1: field 'bbox'.*\[x0, y0, x1, y1\]"):
        ScreenSpotSource(ann, image_dir)


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        ({"records": []}, "expected a JSON list"),
        ([], "holds no records"),
        ([{"img_filename": "a.png", "bbox": [1, 1, 2, 2]}], "record 0: field 'instruction'"),
        ([{"img_filename": "", "bbox": [1, 1, 2, 2], "instruction": "x"}], "field 'img_filename'"),
        (
            [
                {
                    "img_filename": "a.png",
                    "bbox": [1, 1, 2, 2],
                    "instruction": "x",
                    "img_size": [0, 5],
                }
            ],
            "img_size",
        ),
    ],
)
def test_malformed_files(tmp_path: Path, payload: object, match: str) -> None:
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps(payload))
    with pytest.raises(GroundingDataError, match=match) as err:
        ScreenSpotSource(ann, tmp_path, version="v2")
    assert str(ann) in str(err.value)


def test_missing_or_broken_annotation_file(tmp_path: Path) -> None:
    with pytest.raises(GroundingDataError, match="does not exist"):
        ScreenSpotSource(tmp_path / "nope.json", tmp_path)
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(GroundingDataError, match="cannot read annotations as JSON"):
        ScreenSpotSource(tmp_path / "broken.json", tmp_path)
    with pytest.raises(GroundingEnvError, match="version 'v3'"):
        ScreenSpotSource(tmp_path / "broken.json", tmp_path, version="v3")  # type: ignore[arg-type]


def test_image_errors_are_lazy_and_specific(tmp_path: Path) -> None:
    records = [
        {"img_filename": "a.png", "bbox": [1, 1, 5, 5], "instruction": "x", "img_size": [100, 50]},
        {"img_filename": "c.png", "bbox": [1, 1, 5, 5], "instruction": "y", "img_size": [100, 50]},
        {"img_filename": "d.png", "bbox": [1, 1, 5, 5], "instruction": "z"},
    ]
    ann, image_dir = _write(tmp_path, records, {"a.png": (80, 50)})
    (image_dir / "c.png").write_bytes(b"not a png")
    source = ScreenSpotSource(ann, image_dir, version="v2")  # nothing read yet
    with pytest.raises(
        GroundingDataError,
        match=r"record 0: field 'img_size': \[100, 50\] but image .*a.png is \[80, 50\]",
    ):
        source.sample(0)
    with pytest.raises(GroundingDataError, match=r"record 1: cannot decode image .*c.png"):
        source.sample(1)
    with pytest.raises(GroundingDataError, match=r"record 2: image .*d.png does not exist"):
        source.sample(2)
    with pytest.raises(GroundingEnvError, match="not in"):
        source.sample(3)
