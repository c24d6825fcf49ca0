"""LeRobot dataset v2.0 / v2.1 folders read into :class:`~embodied.demo_files.DemoEpisode` lists.

The layout :func:`read_lerobot` reads: ``meta/info.json`` (``codebase_version``, ``fps``,
``chunks_size``, ``data_path`` and ``video_path`` templates, ``features``), ``meta/tasks.jsonl``
(``{"task_index", "task"}``), ``meta/episodes.jsonl`` (``{"episode_index", "tasks", "length"}``),
one parquet file per episode at ``data_path.format(episode_chunk=i // chunks_size,
episode_index=i)`` and, for a ``video`` camera feature, one mp4 per episode at
``video_path.format(..., video_key=camera)``. The layout of ``huggingface/lerobot``
``lerobot/common/datasets/utils.py`` (v2.1); v3.0 (many episodes per file) is refused with a
message.

Every malformed input raises :class:`~embodied.demo_files.DemoFileError` naming the file and the
field. ``pyarrow`` (in ``pip install 'vlagent[data]'``) is imported only when the reader runs;
without it the reader raises ``EmbodiedSuiteMissing`` naming that command.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image, UnidentifiedImageError

from embodied.demo_files import DemoEpisode, DemoFileError, _numbers, _read_json, _read_jsonl
from embodied.suites import import_suite

LEROBOT_VERSIONS = ("v2.0", "v2.1")
_EIGHT_BIT_MODES = {"RGB", "RGBA", "L", "LA", "P", "1"}


def _feature_dims(info: dict[str, Any], key: str, where: Path) -> int:
    feat = info["features"].get(key)
    shape = feat.get("shape") if isinstance(feat, dict) else None
    if not isinstance(shape, list | tuple) or len(shape) != 1 or not isinstance(shape[0], int):
        raise DemoFileError(f"{where}: features[{key!r}].shape must be [D], got {shape!r}")
    return int(shape[0])


def _lerobot_info(root: Path, camera: str | None) -> tuple[dict[str, Any], str, str]:
    """info.json validated; returns (info, camera key, camera dtype 'image' or 'video')."""
    where = root / "meta" / "info.json"
    info = _read_json(where, "meta/info.json of a LeRobot dataset")
    if not isinstance(info, dict):
        raise DemoFileError(f"{where}: must be a JSON object")
    version = info.get("codebase_version")
    if version not in LEROBOT_VERSIONS:
        raise DemoFileError(
            f"{where}: codebase_version {version!r} not supported; this reader knows "
            f"{', '.join(LEROBOT_VERSIONS)} (one parquet file per episode)"
        )
    feats = info.get("features")
    if not isinstance(feats, dict) or not all(isinstance(v, dict) for v in feats.values()):
        raise DemoFileError(f"{where}: 'features' must be an object of feature objects")
    if "action" not in feats:
        raise DemoFileError(f"{where}: features has no 'action'")
    if not isinstance(info.get("data_path"), str):
        raise DemoFileError(f"{where}: 'data_path' must be a path template string")
    fps = info.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, int | float) or not fps > 0:
        raise DemoFileError(f"{where}: 'fps' must be a positive number, got {fps!r}")
    chunks = info.get("chunks_size", 1000)
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise DemoFileError(f"{where}: 'chunks_size' must be an int >= 1, got {chunks!r}")
    cams = [k for k, v in feats.items() if v.get("dtype") in ("image", "video")]
    if not cams:
        raise DemoFileError(f"{where}: features has no image or video feature")
    cam = cams[0] if camera is None else camera
    if cam not in cams:
        raise DemoFileError(f"{where}: camera {cam!r} is not an image/video feature; have {cams}")
    kind = feats[cam]["dtype"]
    if kind == "video" and not isinstance(info.get("video_path"), str):
        raise DemoFileError(f"{where}: camera {cam!r} is a video but 'video_path' is not a string")
    return info, cam, kind


def _template(info: dict[str, Any], key: str, root: Path, **fields: Any) -> Path:
    try:
        return root / info[key].format(**fields)
    except (KeyError, IndexError, ValueError) as exc:
        raise DemoFileError(f"{root}/meta/info.json: {key!r} template bad ({exc!r})") from exc


def _decode_image(cell: Any, root: Path, where: str) -> np.ndarray:
    """One inline image cell ({"bytes", "path"} or raw bytes) as uint8 (H, W, 3)."""
    data = cell.get("bytes") if isinstance(cell, dict) else cell
    if data is None and isinstance(cell, dict) and isinstance(cell.get("path"), str):
        try:
            data = (root / cell["path"]).read_bytes()
        except OSError as exc:
            raise DemoFileError(f"{where}: no bytes and path unreadable ({exc})") from exc
    if not isinstance(data, bytes | bytearray):
        raise DemoFileError(f"{where}: not an image (got {type(cell).__name__})")
    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.mode not in _EIGHT_BIT_MODES:
                raise DemoFileError(f"{where}: image mode {im.mode!r} is not 8-bit (uint8) RGB")
            return np.asarray(im.convert("RGB"), dtype=np.uint8)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        if isinstance(exc, DemoFileError):
            raise
        raise DemoFileError(f"{where}: undecodable image ({exc})") from exc


def _decode_video(path: Path, n: int, where: str) -> np.ndarray:
    """The first ``n`` frames of an mp4 as uint8 (n, H, W, 3) RGB."""
    if not path.is_file() or path.stat().st_size == 0:
        raise DemoFileError(f"{path}: video missing or empty ({where})")
    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            raise DemoFileError(f"{path}: cv2 cannot open this video ({where})")
        fourcc = int(cap.get(cv2.CAP_PROP_FOURCC)) & 0xFFFFFFFF
        frames = []
        while len(frames) < n:
            ok, bgr = cap.read()
            if not ok:
                break
            frames.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    finally:
        cap.release()
    if not frames:
        codec = fourcc.to_bytes(4, "little").decode("latin-1")
        raise DemoFileError(
            f"{path}: cv2 opened the video but decoded no frame (codec {codec!r}). LeRobot "
            "encodes AV1 by default and some OpenCV builds have no AV1 decoder: re-encode it, "
            "e.g. `ffmpeg -i in.mp4 -c:v libx264 -pix_fmt yuv420p out.mp4`"
        )
    if len(frames) < n:
        raise DemoFileError(f"{path}: video has {len(frames)} frames, the episode needs {n}")
    return np.stack(frames)


@dataclass(frozen=True)
class _LeRobotSpec:
    """What every episode of one LeRobot dataset is read with."""

    root: Path
    info: dict[str, Any]
    camera: str
    kind: str  # "image" (inline parquet column) or "video" (one mp4 per episode)
    dims: int
    keep: list[int]
    state_dims: int  # 0: no observation.state
    tasks: dict[int, str]


def _lerobot_episode(pq: Any, spec: _LeRobotSpec, i: int, length: int) -> DemoEpisode:
    """Episode ``i`` (``length`` frames per episodes.jsonl) of a validated dataset."""
    info, cam, fps = spec.info, spec.camera, float(spec.info["fps"])
    chunk = i // int(info.get("chunks_size", 1000))
    path = _template(info, "data_path", spec.root, episode_chunk=chunk, episode_index=i)
    if not path.is_file():
        raise DemoFileError(f"{path}: episode {i}'s parquet file is missing")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
        raise DemoFileError(f"{path}: not a readable parquet file ({exc})") from exc
    need = ["action", "frame_index", "episode_index", "task_index"]
    need += [cam] if spec.kind == "image" else []
    need += ["observation.state"] if spec.state_dims else []
    need += ["timestamp"] if spec.kind == "video" and "timestamp" in table.column_names else []
    missing = [c for c in need if c not in table.column_names]
    if missing:
        raise DemoFileError(f"{path}: missing columns {missing}")
    n = table.num_rows
    if n == 0 or n != length:
        raise DemoFileError(f"{path}: {n} rows but episodes.jsonl says length {length}")
    col = {c: table.column(c).to_pylist() for c in need}
    actions = _numbers(col["action"], f"{path}: column 'action'", spec.dims)[:, spec.keep]
    frame_index = _numbers(col["frame_index"], f"{path}: column 'frame_index'")[:, 0]
    if not np.array_equal(frame_index, np.arange(n)):
        raise DemoFileError(f"{path}: frame_index must run 0..{n - 1} in order")
    if set(col["episode_index"]) != {i}:
        raise DemoFileError(f"{path}: episode_index column is not all {i}")
    task = col["task_index"][0]
    if task not in spec.tasks:
        raise DemoFileError(f"{path}: task_index {task!r} not in meta/tasks.jsonl")
    where = f"{path}: column {cam!r}"
    if spec.kind == "image":
        images = [_decode_image(c, spec.root, f"{where} row {r}") for r, c in enumerate(col[cam])]
        if len({f.shape for f in images}) != 1:
            raise DemoFileError(
                f"{where}: images differ in size {sorted({f.shape for f in images})}"
            )
        frames = np.stack(images)
    else:
        if "timestamp" in col:
            ts = _numbers(col["timestamp"], f"{path}: column 'timestamp'")[:, 0]
            if np.abs(ts - frame_index / fps).max() > 0.5 / fps:
                raise DemoFileError(f"{path}: timestamps do not match frame_index / fps")
        video = _template(
            info, "video_path", spec.root, episode_chunk=chunk, episode_index=i, video_key=cam
        )
        frames = _decode_video(video, n, f"episode {i}, camera {cam!r}")
    proprio = None
    if spec.state_dims:
        state = _numbers(
            col["observation.state"], f"{path}: column 'observation.state'", spec.state_dims
        )
        proprio = state.astype(np.float32)
    actions = actions.astype(np.float32)
    return DemoEpisode(frames, actions, spec.tasks[task], proprio, f"{spec.root}:episode_{i}")


def read_lerobot(
    root: str | Path,
    camera: str | None = None,
    action_dims: Sequence[int] | None = None,
    max_episodes: int | None = None,
) -> list[DemoEpisode]:
    """Episodes of a local LeRobot v2.0/v2.1 dataset folder (see the module docstring).

    Args:
        root: the dataset folder (holding ``meta/`` and ``data/``).
        camera: the image/video feature key (default: the first in ``info.json``'s features).
        action_dims: indices of the action vector to keep, in order (default: all D).
        max_episodes: read only the first this many episodes of ``meta/episodes.jsonl``.

    The instruction is the task of the episode's first frame (``task_index`` -> tasks.jsonl);
    proprio is ``observation.state`` when present. Raises :class:`DemoFileError`.
    """
    pq = import_suite("pyarrow.parquet", "pyarrow", "data", "read_lerobot")
    root = Path(root)
    if not root.is_dir():
        raise DemoFileError(f"{root}: not a LeRobot dataset folder")
    info, cam, kind = _lerobot_info(root, camera)
    meta = root / "meta"
    dims = _feature_dims(info, "action", meta / "info.json")
    keep = list(range(dims)) if action_dims is None else list(action_dims)
    ints = all(isinstance(k, int | np.integer) and not isinstance(k, bool) for k in keep)
    if not keep or not ints or any(not 0 <= k < dims for k in keep):
        raise DemoFileError(f"action_dims {action_dims!r} must index the {dims} action dims")
    has_state = "observation.state" in info["features"]
    state_dims = _feature_dims(info, "observation.state", meta / "info.json") if has_state else 0
    rows = _read_jsonl(meta / "tasks.jsonl", {"task_index": int, "task": str})
    eps = _read_jsonl(meta / "episodes.jsonl", {"episode_index": int, "length": int})
    if not eps:
        raise DemoFileError(f"{meta / 'episodes.jsonl'}: no episodes")
    if info.get("total_episodes", len(eps)) != len(eps):
        raise DemoFileError(
            f"{meta / 'info.json'}: total_episodes {info['total_episodes']!r} but "
            f"episodes.jsonl lists {len(eps)}"
        )
    tasks = {r["task_index"]: r["task"] for r in rows}
    spec = _LeRobotSpec(root, info, cam, kind, dims, [int(k) for k in keep], state_dims, tasks)
    eps = sorted(eps, key=lambda r: r["episode_index"])[:max_episodes]
    return [_lerobot_episode(pq, spec, ep["episode_index"], ep["length"]) for ep in eps]
