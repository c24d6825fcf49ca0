"""embodied.demo_files: LeRobot v2.1 (inline images and mp4 videos) and LIBERO HDF5 demos read
back exactly, LIBERO -> our 4-d actions, and every malformed file a DemoFileError naming it."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from embodied.demo_files import (
    DemoEpisode,
    DemoFileError,
    episodes_to_ee_delta4,
    instruction_from_filename,
    read_lerobot,
    read_libero_hdf5,
    to_ee_delta4,
)
from embodied.suites import EmbodiedSuiteMissing

CAM, WRIST = "observation.images.front", "observation.images.wrist"
TASKS = ["push the red cube onto the green square", "lift the blue cube"]
H, W, FPS = 24, 32, 10


def make_episode(seed: int, t: int, dims: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(frames uint8 (t, H, W, 3), actions float32 (t, dims), state float32 (t, 3)), seeded.

    Frame j is one flat colour (mp4 keeps flat colours within a few levels) plus a noise pixel."""
    rng = np.random.default_rng(seed)
    colours = rng.integers(20, 236, (t, 3))
    frames = np.broadcast_to(colours[:, None, None, :], (t, H, W, 3)).astype(np.uint8).copy()
    frames[:, 0, 0] = rng.integers(0, 256, (t, 3))
    actions = rng.uniform(-1, 1, (t, dims)).astype(np.float32)
    return frames, actions, rng.normal(size=(t, 3)).astype(np.float32)


def _png(frame: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="PNG")
    return buf.getvalue()


def write_lerobot(
    root: Path, video: bool, lengths: tuple[int, ...] = (5, 7), chunks_size: int = 1000
) -> list[tuple]:
    """A LeRobot v2.1 dataset (2 cameras, action (4,), state (3,)) at ``root``; its episodes."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    kind = "video" if video else "image"
    cam = {"dtype": kind, "shape": [H, W, 3], "names": ["height", "width", "channels"]}
    scalar = {"shape": [1], "names": None}
    info = {
        "codebase_version": "v2.1",
        "robot_type": "test",
        "total_episodes": len(lengths),
        "total_frames": sum(lengths),
        "total_tasks": len(TASKS),
        "chunks_size": chunks_size,
        "fps": FPS,
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
        if video
        else None,
        "features": {
            CAM: cam,
            WRIST: cam,
            "observation.state": {"dtype": "float32", "shape": [3], "names": None},
            "action": {"dtype": "float32", "shape": [4], "names": None},
            "timestamp": {"dtype": "float32", **scalar},
            "frame_index": {"dtype": "int64", **scalar},
            "episode_index": {"dtype": "int64", **scalar},
            "index": {"dtype": "int64", **scalar},
            "task_index": {"dtype": "int64", **scalar},
        },
    }
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4))
    tasks = "".join(json.dumps({"task_index": i, "task": t}) + "\n" for i, t in enumerate(TASKS))
    (root / "meta" / "tasks.jsonl").write_text(tasks)
    eps, lines, index = [], [], 0
    for i, t in enumerate(lengths):
        frames, actions, state = make_episode(i, t)
        wrist = 255 - frames
        eps.append((frames, actions, state, TASKS[i % 2], wrist))
        lines.append(json.dumps({"episode_index": i, "tasks": [TASKS[i % 2]], "length": t}))
        cols = {
            "action": pa.array(actions.tolist(), pa.list_(pa.float32(), 4)),
            "observation.state": pa.array(state.tolist(), pa.list_(pa.float32())),
            "timestamp": pa.array(np.arange(t) / FPS, pa.float32()),
            "frame_index": pa.array(range(t), pa.int64()),
            "episode_index": pa.array([i] * t, pa.int64()),
            "index": pa.array(range(index, index + t), pa.int64()),
            "task_index": pa.array([i % 2] * t, pa.int64()),
        }
        index += t
        for key, images in ((CAM, frames), (WRIST, wrist)):
            if video:
                path = root / f"videos/chunk-{i // chunks_size:03d}/{key}/episode_{i:06d}.mp4"
                path.parent.mkdir(parents=True, exist_ok=True)
                writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (W, H))
                for f in images:
                    writer.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
                writer.release()
            else:
                cols[key] = pa.array([{"bytes": _png(f), "path": None} for f in images])
        path = root / f"data/chunk-{i // chunks_size:03d}/episode_{i:06d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(cols), path)
    (root / "meta" / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return eps


def write_libero(path: Path, lengths: tuple[int, ...] = (4, 6), problem_info: bool = True) -> list:
    """A LIBERO-layout HDF5 (as LIBERO's scripts/create_dataset.py writes); its demos."""
    h5py = pytest.importorskip("h5py")
    demos = []
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        if problem_info:
            info = {"problem_name": "p", "language_instruction": "open the top drawer"}
            data.attrs["problem_info"] = json.dumps(info)
        data.attrs["macros_image_convention"] = "opengl"
        for i, t in enumerate(lengths):
            frames, _, _ = make_episode(10 + i, t)
            rng = np.random.default_rng(i)
            actions = rng.uniform(-1, 1, (t, 7))
            actions[:, 6] = np.where(np.arange(t) % 2, 1.0, -1.0)
            ee = rng.normal(size=(t, 3))
            grip = np.stack([np.linspace(0.04, 0.0, t), np.linspace(-0.04, 0.0, t)], axis=1)
            demo = data.create_group(f"demo_{i}")
            demo.create_dataset("actions", data=actions)
            obs = demo.create_group("obs")
            obs.create_dataset("agentview_rgb", data=frames)
            obs.create_dataset("eye_in_hand_rgb", data=255 - frames)
            obs.create_dataset("ee_pos", data=ee)
            obs.create_dataset("gripper_states", data=grip)
            demos.append((frames, actions, ee, grip))
    return demos


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


def test_libero_round_trip_flip_and_proprio(tmp_path: Path) -> None:
    path = tmp_path / "KITCHEN_SCENE3_turn_on_the_stove_demo.hdf5"
    demos = write_libero(path)
    got = read_libero_hdf5(path)
    assert [len(e) for e in got] == [4, 6]
    for ep, (frames, actions, ee, grip) in zip(got, demos, strict=True):
        assert np.array_equal(ep.frames, frames[:, ::-1, ::-1])  # "opengl" frames turned upright
        assert np.allclose(ep.actions, actions) and ep.actions.shape[1] == 7
        assert ep.instruction == "open the top drawer"
        assert ep.proprio is not None and np.allclose(ep.proprio[:, :3], ee)
        closure = 1 - np.clip((grip[:, 0] - grip[:, 1]) / 0.08, 0, 1)
        assert np.allclose(ep.proprio[:, 3], closure) and ep.proprio[0, 3] == 0.0
    raw = read_libero_hdf5(path, camera="eye_in_hand_rgb", flip=False, max_episodes=1)
    assert len(raw) == 1 and np.array_equal(raw[0].frames, 255 - demos[0][0])
    bare = tmp_path / "KITCHEN_SCENE3_turn_on_the_stove_demo.h5"
    write_libero(bare, problem_info=False)
    assert read_libero_hdf5(bare)[0].instruction == "turn on the stove"


def test_instruction_from_filename() -> None:
    assert instruction_from_filename("a/LIVING_ROOM_SCENE2_put_it_in_the_basket_demo.hdf5") == (
        "put it in the basket"
    )
    assert instruction_from_filename("pick_up_the_bowl_demo.hdf5") == "pick up the bowl"


def test_to_ee_delta4_keeps_position_and_gripper_sign_and_counts_clips() -> None:
    a = np.array([[0.1, -0.2, 0.3, 0.9, 0.9, 0.9, -1.0], [1.5, 0.0, -2.0, 0, 0, 0, 1.0]])
    four, clipped = to_ee_delta4(a)
    assert four.dtype == np.float32 and four.shape == (2, 4)
    assert np.allclose(four, [[0.1, -0.2, 0.3, -1.0], [1.0, 0.0, -1.0, 1.0]])
    assert clipped == 2  # LIBERO +1 (close) stays > 0 = closed for us
    for bad in (np.zeros((2, 6)), np.full((1, 7), np.nan), [["a"] * 7]):
        with pytest.raises(DemoFileError, match="to_ee_delta4"):
            to_ee_delta4(bad)
    ep = DemoEpisode(np.zeros((2, 4, 4, 3), np.uint8), a.astype(np.float32), "x")
    (conv,), total = episodes_to_ee_delta4([ep])
    assert total == 2 and np.array_equal(conv.actions, four) and conv.instruction == "x"


def test_demo_episode_validates_and_is_read_only() -> None:
    f, a = np.zeros((3, 4, 4, 3), np.uint8), np.zeros((3, 2), np.float32)
    ep = DemoEpisode(f, a, "go", np.zeros((3, 4), np.float32), "s")
    for arr in (ep.frames, ep.actions, ep.proprio):
        with pytest.raises(ValueError, match="read-only"):
            arr.flat[0] = 1
    f[0, 0, 0, 0] = 5  # the caller's array stays writable (the episode holds a view of it)
    bad = {
        "frames must be a uint8": dict(frames=f.astype(np.float32)),
        r"\(T, H, W, 3\)": dict(frames=f[:0]),
        "actions must be float32": dict(actions=a.astype(np.float64)),
        "3 frames but 2 actions": dict(actions=a[:2]),
        "non-finite": dict(actions=np.full((3, 2), np.inf, np.float32)),
        "instruction": dict(instruction="  "),
        "proprio must be 3 rows": dict(proprio=np.zeros((2, 4), np.float32)),
    }
    for message, change in bad.items():
        kwargs = {"frames": f, "actions": a, "instruction": "go", "source": "src", **change}
        with pytest.raises(DemoFileError, match=message) as err:
            DemoEpisode(**kwargs)
        assert str(err.value).startswith("src:")


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
            _row(CAM, 3, {"bytes": _png(np.zeros((8, 8, 3), np.uint8)), "path": None})
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


def _h5(edit: Callable) -> Callable[[Path], None]:
    def run(path: Path) -> None:
        h5py = pytest.importorskip("h5py")
        with h5py.File(path, "a") as f:
            edit(f)

    return run


def _replace(key: str, value: object) -> Callable:
    def edit(f) -> None:
        del f[key]
        f[key] = value

    return edit


DEMO0 = "data/demo_0"
LIBERO_HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "empty_file": (lambda p: p.write_bytes(b""), "missing or empty"),
    "not_hdf5": (lambda p: p.write_bytes(b"hello world" * 10), "not an HDF5 file"),
    "no_data_group": (_h5(lambda f: f.move("data", "other")), "no 'data' group"),
    "no_demos": (_h5(lambda f: [f["data"].move(k, "x" + k) for k in list(f["data"])]), "no demo_N"),
    "no_actions": (_h5(lambda f: f[DEMO0].pop("actions")), "demo_0/actions: missing"),
    "actions_6d": (_h5(_replace(f"{DEMO0}/actions", np.zeros((4, 6)))), r"\(T, 7\)"),
    "actions_nan": (_h5(_replace(f"{DEMO0}/actions", np.full((4, 7), np.nan))), "non-finite"),
    "actions_text": (_h5(_replace(f"{DEMO0}/actions", np.array([b"a"] * 4))), "must hold numbers"),
    "no_obs": (_h5(lambda f: f[DEMO0].pop("obs")), "demo_0/obs: missing"),
    "no_camera": (_h5(lambda f: f[f"{DEMO0}/obs"].pop("agentview_rgb")), "agentview_rgb: missing"),
    "float_frames": (
        _h5(_replace(f"{DEMO0}/obs/agentview_rgb", np.zeros((4, H, W, 3), np.float32))),
        "must be uint8",
    ),
    "frames_vs_actions": (
        _h5(_replace(f"{DEMO0}/obs/agentview_rgb", np.zeros((3, H, W, 3), np.uint8))),
        "3 frames but 4 actions",
    ),
    "empty_demo": (
        _h5(
            lambda f: [
                _replace(f"{DEMO0}/actions", np.zeros((0, 7)))(f),
                _replace(f"{DEMO0}/obs/agentview_rgb", np.zeros((0, H, W, 3), np.uint8))(f),
            ]
        ),
        r"actions: empty \(an episode needs T >= 1",
    ),
    "problem_info_bad": (
        _h5(lambda f: f["data"].attrs.__setitem__("problem_info", "{oops")),
        "problem_info",
    ),
    "gripper_shape": (
        _h5(_replace(f"{DEMO0}/obs/gripper_states", np.zeros((4, 3)))),
        r"gripper_states: expected shape \(T, 2\)",
    ),
    "ee_rows": (
        _h5(_replace(f"{DEMO0}/obs/ee_pos", np.zeros((2, 3)))),
        "gripper_states rows != actions",
    ),
}


@pytest.mark.parametrize("case", sorted(LIBERO_HOSTILE))
def test_libero_hostile_files_name_file_and_field(tmp_path: Path, case: str) -> None:
    path = tmp_path / "demo.hdf5"
    write_libero(path)
    read_libero_hdf5(path)  # intact: reads
    breaker, message = LIBERO_HOSTILE[case]
    breaker(path)
    with pytest.raises(DemoFileError, match=message) as err:
        read_libero_hdf5(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    ("module", "reader"), [("pyarrow.parquet", read_lerobot), ("h5py", read_libero_hdf5)]
)
def test_missing_package_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, reader: Callable
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what `import` sees when it is not installed
    with pytest.raises(EmbodiedSuiteMissing, match=r"pip install 'vlagent\[data\]'"):
        reader(tmp_path)
