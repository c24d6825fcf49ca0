"""DatasetSource: the user's grounding data from JSONL / JSON / Parquet / datasets folders,
through column mappings and presets, with every bad row reported and skipped."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from PIL import Image

from gui.errors import GroundingDataError, GroundingEnvError
from gui.grounding import GroundingEnv
from gui.grounding.dataset_presets import resolve_mapping
from gui.grounding.dataset_readers import detect_format
from gui.grounding.datasets import DatasetSource
from rewards import RewardSpec

W, H = 200, 100
GOOD = {"image": "s.png", "instruction": "click", "bbox": [20, 10, 60, 40]}


def _png(path, size=(W, H), box=(20, 10, 60, 40), colour=(255, 0, 0)):
    """A screenshot with one coloured rectangle (xyxy pixels)."""
    a = np.full((size[1], size[0], 3), 230, np.uint8)
    a[box[1] : box[3], box[0] : box[2]] = colour
    Image.fromarray(a).save(path, format="PNG")
    return path


def _rows(folder, n=20):
    """n rows with varied images, boxes (xyxy px) and instructions; images under folder/img."""
    (folder / "img").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        x0, y0 = 5 + 7 * i, 3 + 3 * i
        box = (x0, y0, x0 + 20, y0 + 15)
        colour = (40 * (i % 6), 255 - 10 * i, 100)
        _png(folder / "img" / f"s{i}.png", box=box, colour=colour)
        rows.append({"image": f"img/s{i}.png", "instruction": f"click box {i}", "bbox": list(box)})
    return rows


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _samples(src):
    return [src.sample(k) for k in range(src.num_samples)]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.image, y.image)
        assert x.instruction == y.instruction
        assert x.target_box_norm == pytest.approx(y.target_box_norm)


# ---- formats ----------------------------------------------------------------------------------


def test_every_format_loads_the_same_samples(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import Dataset, DatasetDict
    from datasets import Image as HFImage

    rows = _rows(tmp_path)
    ref = _samples(DatasetSource(_jsonl(tmp_path / "d.jsonl", rows)))
    assert len(ref) == 20
    assert ref[3].target_box_norm == pytest.approx((26 / W, 12 / H, 46 / W, 27 / H))
    assert ref[3].instruction == "click box 3" and ref[3].image.shape == (H, W, 3)
    assert tuple(ref[3].image[12, 26]) == (120, 225, 100)  # the rectangle's colour

    (tmp_path / "d.json").write_text(json.dumps(rows))
    _same(_samples(DatasetSource(tmp_path / "d.json")), ref)

    # parquet, images as {"bytes", "path"} structs (the HF / GUI-R1 layout)
    blobs = [(tmp_path / r["image"]).read_bytes() for r in rows]
    table = pa.table(
        {
            "image": [{"bytes": b, "path": None} for b in blobs],
            "instruction": [r["instruction"] for r in rows],
            "bbox": [r["bbox"] for r in rows],
        }
    )
    pq.write_table(table, tmp_path / "d.parquet")
    _same(_samples(DatasetSource(tmp_path / "d.parquet")), ref)

    # parquet with path strings, relative to image_root
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "paths.parquet")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "p.parquet").write_bytes((tmp_path / "paths.parquet").read_bytes())
    _same(_samples(DatasetSource(other / "p.parquet", image_root=tmp_path)), ref)

    # a datasets folder with an Image feature (decoded lazily, undecoded at load)
    ds = Dataset.from_dict(
        {
            "image": [str(tmp_path / r["image"]) for r in rows],
            "instruction": [r["instruction"] for r in rows],
            "bbox": [r["bbox"] for r in rows],
        }
    ).cast_column("image", HFImage())
    ds.save_to_disk(str(tmp_path / "hf"))
    assert detect_format(str(tmp_path / "hf")) == "hf_disk"
    _same(_samples(DatasetSource(tmp_path / "hf")), ref)

    DatasetDict({"train": ds.select(range(5)), "test": ds}).save_to_disk(str(tmp_path / "hfd"))
    _same(_samples(DatasetSource(tmp_path / "hfd", split="test")), ref)
    with pytest.raises(GroundingDataError, match=r"split 'val' not found.*'train', 'test'"):
        DatasetSource(tmp_path / "hfd", split="val")


def test_format_detection_and_its_errors(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "folder").mkdir()
    assert detect_format(str(_jsonl(tmp_path / "a.jsonl", []))) == "jsonl"
    with pytest.raises(GroundingDataError, match=r"a.txt: cannot tell the format.*'.txt'"):
        detect_format(str(tmp_path / "a.txt"))
    with pytest.raises(GroundingDataError, match="not a datasets save_to_disk folder"):
        detect_format(str(tmp_path / "folder"))
    with pytest.raises(GroundingDataError, match="nope.jsonl: data file does not exist"):
        DatasetSource(tmp_path / "nope.jsonl")
    # a missing relative file is not taken for a hub id; owner/name is
    with pytest.raises(GroundingDataError, match="data/nope.jsonl: data file does not exist"):
        detect_format("data/nope.jsonl")
    assert detect_format("someone/screens-v2") == "hf_hub"
    with pytest.raises(GroundingDataError, match="format 'xml' is unknown"):
        DatasetSource(tmp_path / "a.jsonl", format="xml")
    # an explicit format reads a file whatever its suffix
    _png(tmp_path / "s.png")
    row = {"image": "s.png", "instruction": "x", "bbox": [1, 1, 5, 5]}
    (tmp_path / "rows.txt").write_text(json.dumps(row) + "\n")
    assert DatasetSource(tmp_path / "rows.txt", format="jsonl").num_samples == 1


def test_hub_id_offline_is_a_clear_error(monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    with pytest.raises(
        GroundingDataError,
        match=r"someone/nothing: cannot load hub dataset.*"
        r"save_to_disk",
    ):
        DatasetSource("someone/nothing")


@pytest.mark.parametrize(
    ("module", "fmt", "path"), [("pyarrow", "parquet", "d.parquet"), ("datasets", "hf_disk", "hf")]
)
def test_missing_optional_package_names_it(tmp_path, monkeypatch, module, fmt, path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "d.parquet").write_bytes(b"PAR1")
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(
        GroundingDataError,
        match=rf"needs the package '{module}'.*"
        r"pip install 'vlagent\[data\]'",
    ):
        DatasetSource(tmp_path / path, format=fmt)


# ---- mapping ----------------------------------------------------------------------------------


def test_column_mapping_nested_paths_conventions_and_point_radius(tmp_path):
    _png(tmp_path / "s.png")
    rows = [
        {"shot": {"file": "s.png"}, "task": "a", "action": {"point": [0.5, 0.5]}},
        {"shot": {"file": "s.png"}, "task": "b", "action": {"point": [0.01, 0.99]}},
    ]
    cols = {
        "image": "shot.file",
        "instruction": "task",
        "point": "action.point",
        "coords": "point_norm",
    }
    src = DatasetSource(_jsonl(tmp_path / "d.jsonl", rows), cols, point_radius=0.05)
    assert src.sample(0).target_box_norm == pytest.approx((0.45, 0.45, 0.55, 0.55))
    assert src.sample(1).target_box_norm == pytest.approx((0.0, 0.94, 0.06, 1.0))  # clipped
    cases = {
        "xyxy_px": ([20, 10, 60, 40], (0.1, 0.1, 0.3, 0.4)),
        "xywh_px": ([20, 10, 40, 30], (0.1, 0.1, 0.3, 0.4)),
        "xyxy_norm": ([0.1, 0.1, 0.3, 0.4], (0.1, 0.1, 0.3, 0.4)),
        "xyxy_k1000": ([100, 100, 300, 400], (0.1, 0.1, 0.3, 0.4)),
        "point_px": ([100, 50], (0.48, 0.48, 0.52, 0.52)),
        "point_k1000": ([500, 500], (0.48, 0.48, 0.52, 0.52)),
    }
    for coords, (values, want) in cases.items():
        key = "point" if coords.startswith("point") else "bbox"
        row = {"image": "s.png", "instruction": "x", key: values}
        path = _jsonl(tmp_path / f"{coords}.jsonl", [row])
        got = DatasetSource(path, {key: key, "coords": coords}).sample(0).target_box_norm
        assert got == pytest.approx(want), coords
    # a two-number bbox is a point in the same space; {"x", "y"} dicts and [[x, y]] too
    for value in ([0.5, 0.5], [[0.5, 0.5]], {"x": 0.5, "y": 0.5}, "[0.5, 0.5]"):
        path = _jsonl(tmp_path / "p.jsonl", [{"image": "s.png", "instruction": "x", "b": value}])
        got = DatasetSource(path, {"bbox": "b", "coords": "xyxy_norm"}).sample(0)
        assert got.target_box_norm == pytest.approx((0.48, 0.48, 0.52, 0.52)), value


def test_bad_mappings_are_rejected():
    with pytest.raises(GroundingDataError, match="not both"):
        resolve_mapping(None, {"bbox": "b", "point": "p", "coords": "point_px"})
    with pytest.raises(GroundingDataError, match="point column needs coords point_px"):
        resolve_mapping(None, {"point": "p"})
    with pytest.raises(GroundingDataError, match="columns.colour: Extra inputs"):
        resolve_mapping(None, {"colour": "red"})
    with pytest.raises(GroundingDataError, match="preset 'nope' is unknown; known: android_"):
        resolve_mapping("nope")
    # columns over a preset: the user's target replaces the preset's, meta keys add up
    m = resolve_mapping(
        "android_control", {"bbox": "box", "coords": "xyxy_px", "meta": {"app": "app"}}
    )
    assert m.point is None and m.bbox == "box" and m.meta["goal"] == "goal"
    assert m.meta["app"] == "app"


def test_optional_columns_go_to_meta(tmp_path):
    _png(tmp_path / "s.png")
    row = {
        "image": "s.png",
        "instruction": "type hello",
        "bbox": [20, 10, 60, 40],
        "act": "TYPE",
        "txt": "hello",
        "uid": 77,
        "plat": "ios",
        "extra": {"k": 1},
    }
    cols = {
        "action_type": "act",
        "text": "txt",
        "id": "uid",
        "meta": {"platform": "plat"},
        "meta_dict": "extra",
    }
    s = DatasetSource(_jsonl(tmp_path / "d.jsonl", [row]), cols).sample(0)
    assert s.meta["action_type"] == "type" and s.meta["text"] == "hello"
    assert s.meta["id"] == "77" and s.meta["platform"] == "ios" and s.meta["k"] == 1
    assert s.meta["row"] == 0 and s.meta["file"].endswith("d.jsonl")
    # the env scores against it and passes meta on
    env = GroundingEnv(
        DatasetSource(tmp_path / "d.jsonl", cols), RewardSpec.from_dict({"point_in_box": 1.0})
    )
    _, info = env.reset(options={"task_id": 0})
    assert info["meta"]["action_type"] == "type"
    _, reward, *_ = env.step({"point": (0.2, 0.25)})
    assert reward == 1.0


# ---- lazy images ------------------------------------------------------------------------------


def test_images_decode_lazily_and_are_cached(tmp_path):
    rows = _rows(tmp_path, n=3)
    src = DatasetSource(_jsonl(tmp_path / "d.jsonl", rows), cache_size=4)
    assert src.image_size == (W, H)
    (tmp_path / "img" / "s2.png").unlink()  # the header was read at load; pixels were not
    a = src.sample(0)
    assert src.sample(0) is a and not a.image.flags.writeable
    with pytest.raises(
        GroundingDataError,
        match=r"d.jsonl: row 2: field 'image': image .*s2.png "
        r"does not exist",
    ):
        src.sample(2)
    with pytest.raises(GroundingEnvError, match=r"index 3 not in \[0, 3\)"):
        src.sample(3)


def test_img_size_that_lies_is_caught_at_decode(tmp_path):
    _png(tmp_path / "s.png")
    row = {**GOOD, "img_size": [400, 200]}
    src = DatasetSource(_jsonl(tmp_path / "d.jsonl", [row]), {"img_size": "img_size"})
    with pytest.raises(
        GroundingDataError,
        match=r"row 0: field 'img_size': size \[400, 200\] "
        r"but the decoded image is \[200, 100\]",
    ):
        src.sample(0)


def test_filters_need_their_columns(tmp_path):
    _png(tmp_path / "s.png")
    path = _jsonl(
        tmp_path / "d.jsonl", [{**GOOD, "ok": True, "r": 0.5}, {**GOOD, "ok": False, "r": 2.0}]
    )
    with pytest.raises(GroundingDataError, match="success_only needs a 'success' column"):
        DatasetSource(path, success_only=True)
    assert DatasetSource(path, {"success": "ok"}, success_only=True).num_samples == 1
    src = DatasetSource(path, {"reward": "r"}, min_reward=1.0)
    assert src.num_samples == 1 and src.sample(0).meta["row"] == 1
    assert src.report()["filtered"] == 1
