"""embodied.lerobot_files: LeRobot v2.1 datasets (inline images and mp4 videos) read back
exactly, and every malformed dataset a DemoFileError naming the file and the field."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from embodied.demo_files import DemoFileError
from embodied.lerobot_files import read_lerobot
from tests.embodied.demo_fixtures import CAM, FPS, WRIST, H, W, png_bytes, write_lerobot


# ----------------------------------------------------------------------------- round trips
def test_lerobot_inline_images_round_trip(tmp_path: Path) -> None:
    eps = write_lerobot(tmp_path, video=False)
    got = read_lerobot(tmp_path)
    assert len(got) == 2
    for ep, (frames, actions, state, task, _) in zip(got, eps, strict=True):
        assert np.array_equal(ep.frames, frames)  # PNG is lossless
        assert ep.actions.dtype == np.float32 and np.array_equal(ep.actions, actions)
        assert ep.proprio is not None and np.array_equal(ep.proprio, state)
        assert ep.instruction == task
    assert got[1].source.endswith(":episode_1")
    wrist = read_lerobot(tmp_path, camera=WRIST, action_dims=(3, 0), max_episodes=1)
    assert len(wrist) == 1 and np.array_equal(wrist[0].frames, eps[0][4])
    assert np.array_equal(wrist[0].actions, eps[0][1][:, [3, 0]])


def test_lerobot_video_round_trip(tmp_path: Path) -> None:
    eps = write_lerobot(tmp_path, video=True, chunks_size=1)  # episode 1 in chunk-001
    assert (tmp_path / f"videos/chunk-001/{CAM}/episode_000001.mp4").is_file()
    got = read_lerobot(tmp_path)
    for ep, (frames, actions, _, task, _) in zip(got, eps, strict=True):
        assert ep.frames.shape == frames.shape and ep.frames.dtype == np.uint8
        # mp4v is lossy: each frame's colour within a few levels, and in the right order
        diff = np.abs(ep.frames[:, 8:, 8:].astype(int) - frames[:, 8:, 8:]).mean(axis=(1, 2, 3))
        assert diff.max() < 8, diff
        assert np.array_equal(ep.actions, actions) and ep.instruction == task
    wrist = read_lerobot(tmp_path, camera=WRIST)
    assert np.abs(wrist[0].frames[:, 8:, 8:].astype(int) - eps[0][4][:, 8:, 8:]).mean() < 8


# ------------------------------------------------------------------------------- hostile
def _edit_json(rel: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / rel
        info = json.loads(path.read_text())
        change(info)
        path.write_text(json.dumps(info))

    return edit


def _rewrite_parquet(change: Callable[[dict], None], episode: int = 0) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        path = root / f"data/chunk-000/episode_{episode:06d}.parquet"
        table = pq.read_table(path)
        cols = {k: table.column(k).to_pylist() for k in table.column_names}
        change(cols)
        pq.write_table(pa.table(cols), path)

    return edit


def _png16(root: Path) -> None:
    def change(cols: dict) -> None:
        buf = io.BytesIO()
        Image.fromarray(np.zeros((H, W), np.uint16)).save(buf, format="PNG")
        cols[CAM][2] = {"bytes": buf.getvalue(), "path": None}

    _rewrite_parquet(change)(root)


def _truncate_video(root: Path) -> None:
    path = root / f"videos/chunk-000/{CAM}/episode_000001.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (W, H))
    for _ in range(3):
        writer.write(np.zeros((H, W, 3), np.uint8))
    writer.release()


def _undecodable_video(root: Path) -> None:
    """Zero the coded frames of an mp4 (the container stays valid: cv2 opens, decodes none)."""
    path = root / f"videos/chunk-000/{CAM}/episode_000000.mp4"
    data = bytearray(path.read_bytes())
    start, end = data.find(b"mdat") + 4, data.find(b"moov")
    assert 4 < start < end
    data[start:end] = bytes(end - start)
    path.write_bytes(bytes(data))


def _set(key: str, value: object) -> Callable[[dict], None]:
    return lambda d: d.__setitem__(key, value)


def _row(key: str, row: int, value: object) -> Callable[[dict], None]:
    return lambda cols: cols[key].__setitem__(row, value)


CHUNK0 = "data/chunk-000/episode_000000.parquet"
LEROBOT_HOSTILE: dict[str, tuple[bool, Callable[[Path], None], str, str]] = {
    # name: (video dataset?, break it, message pattern, file the message names)
    "no_info": (False, lambda r: (r / "meta/info.json").unlink(), "missing", "info.json"),
    "info_not_json": (
        False,
        lambda r: (r / "meta/info.json").write_text("{nope"),
        "not valid JSON",
        "info.json",
    ),
    "v3": (
        False,
        _edit_json("meta/info.json", _set("codebase_version", "v3.0")),
        "codebase_version 'v3.0' not supported",
        "info.json",
    ),
    "no_action_feature": (
        False,
        _edit_json("meta/info.json", lambda d: d["features"].pop("action")),
        "no 'action'",
        "info.json",
    ),
    "bad_fps": (False, _edit_json("meta/info.json", _set("fps", 0)), "'fps'", "info.json"),
    "bad_template": (
        False,
        _edit_json("meta/info.json", _set("data_path", "data/{chunk_index}.parquet")),
        "'data_path' template",
        "info.json",
    ),
    "no_tasks": (False, lambda r: (r / "meta/tasks.jsonl").unlink(), "missing", "tasks.jsonl"),
    "bad_episode_line": (
        False,
        lambda r: (r / "meta/episodes.jsonl").write_text('{"episode_index": 0}\n'),
        "lacks",
        "episodes.jsonl",
    ),
    "empty_episodes": (
        False,
        lambda r: (r / "meta/episodes.jsonl").write_text(""),
        "no episodes",
        "episodes.jsonl",
    ),
    "parquet_missing": (
        False,
        lambda r: (r / "data/chunk-000/episode_000001.parquet").unlink(),
        "parquet file is missing",
        "episode_000001.parquet",
    ),
    "parquet_garbage": (
        False,
        lambda r: (r / CHUNK0).write_bytes(b"PAR1 not really"),
        "not a readable parquet",
        CHUNK0,
    ),
    "no_action_column": (
        False,
        _rewrite_parquet(lambda c: c.pop("action")),
        r"missing columns \['action'\]",
        CHUNK0,
    ),
    "action_wrong_width": (
        False,
        _rewrite_parquet(lambda c: c.__setitem__("action", [[0.0] * 5] * len(c["action"]))),
        r"column 'action': expected shape \(T, 4\)",
        CHUNK0,
    ),
    "action_ragged": (
        False,
        _rewrite_parquet(_row("action", 1, [0.0, 0.0])),
        "column 'action'",
        CHUNK0,
    ),
    "action_nan": (
        False,
        _rewrite_parquet(_row("action", 1, [0.0, float("nan"), 0.0, 0.0])),
        "non-finite",
        CHUNK0,
    ),
    "length_mismatch": (
        False,
        _rewrite_parquet(lambda c: [v.pop() for v in c.values()]),
        "4 rows but episodes.jsonl says length 5",
        CHUNK0,
    ),
    "frame_index_order": (
        False,
        _rewrite_parquet(_row("frame_index", 0, 3)),
        "frame_index must run",
        CHUNK0,
    ),
    "unknown_task": (
        False,
        _rewrite_parquet(_row("task_index", 0, 9)),
        "task_index 9 not in",
        CHUNK0,
    ),
    "image_garbage": (
        False,
        _rewrite_parquet(_row(CAM, 1, {"bytes": b"not a png", "path": None})),
        "row 1: undecodable image",
        CHUNK0,
    ),
    "image_16_bit": (False, _png16, "row 2: image mode 'I;16' is not 8-bit", CHUNK0),
    "unknown_camera": (
        False,
        _edit_json("meta/info.json", lambda d: d["features"].pop(CAM)),
        "not an image/video feature",
        "info.json",
    ),
    "no_camera_feature": (
        False,
        _edit_json("meta/info.json", lambda d: [d["features"].pop(k) for k in (CAM, WRIST)]),
        "no image or video feature",
        "info.json",
    ),
    "total_episodes_off": (
        False,
        _edit_json("meta/info.json", _set("total_episodes", 3)),
        "total_episodes 3 but episodes.jsonl lists 2",
        "info.json",
    ),
    "image_sizes_differ": (
        False,
        _rewrite_parquet(
            _row(CAM, 3, {"bytes": png_bytes(np.zeros((8, 8, 3), np.uint8)), "path": None})
        ),
        "images differ in size",
        CHUNK0,
    ),
    "video_missing": (
        True,
        lambda r: (r / f"videos/chunk-000/{CAM}/episode_000000.mp4").unlink(),
        "video missing or empty",
        "episode_000000.mp4",
    ),
    "video_garbage": (
        True,
        lambda r: (r / f"videos/chunk-000/{CAM}/episode_000000.mp4").write_bytes(b"x" * 64),
        "cv2 cannot open",
        "episode_000000.mp4",
    ),
    "video_short": (
        True,
        _truncate_video,
        "video has 3 frames, the episode needs 7",
        "episode_000001.mp4",
    ),
    "video_undecodable": (
        True,
        _undecodable_video,
        "decoded no frame \\(codec 'FMP4'\\).*AV1",
        "episode_000000.mp4",
    ),
    "timestamps_off": (
        True,
        _rewrite_parquet(_row("timestamp", 2, 0.9)),
        "timestamps do not match",
        CHUNK0,
    ),
}


@pytest.mark.parametrize("case", sorted(LEROBOT_HOSTILE))
def test_lerobot_hostile_files_name_file_and_field(tmp_path: Path, case: str) -> None:
    video, breaker, message, file = LEROBOT_HOSTILE[case]
    write_lerobot(tmp_path, video=video)
    read_lerobot(tmp_path, camera=CAM)  # intact: reads
    breaker(tmp_path)
    with pytest.raises(DemoFileError, match=message) as err:
        read_lerobot(tmp_path, camera=CAM)
    assert file in str(err.value)


def test_lerobot_bad_arguments(tmp_path: Path) -> None:
    write_lerobot(tmp_path, video=False)
    for dims in ((0, 4), (), (True,), ("0",), (1.0,)):
        with pytest.raises(DemoFileError, match="action_dims"):
            read_lerobot(tmp_path, action_dims=dims)
    with pytest.raises(DemoFileError, match="camera 'nope'"):
        read_lerobot(tmp_path, camera="nope")
    with pytest.raises(DemoFileError, match="not a LeRobot dataset folder"):
        read_lerobot(tmp_path / "absent")
