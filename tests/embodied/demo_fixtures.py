"""Fixture writers for the demo-file tests: seeded episodes, a LeRobot v2.1 dataset folder
(inline PNG images or mp4 videos) and a LIBERO-layout HDF5 file, written into a test's tmp_path.

Imported by tests/embodied/test_{demo,lerobot,libero}_files.py, test_replay_env.py and
tests/vlagent/worlds/test_robot_world.py.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

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


def png_bytes(frame: np.ndarray) -> bytes:
    """``frame`` (uint8 (H, W, 3) or (H, W)) encoded as PNG bytes (lossless)."""
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
                cols[key] = pa.array([{"bytes": png_bytes(f), "path": None} for f in images])
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
