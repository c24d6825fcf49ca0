"""Robot demonstration files read into :class:`DemoEpisode` lists, for SFT.

Two on-disk formats:

- **LeRobot dataset v2.0 / v2.1** (:func:`read_lerobot`): ``meta/info.json`` (``codebase_version``,
  ``fps``, ``chunks_size``, ``data_path`` and ``video_path`` templates, ``features``),
  ``meta/tasks.jsonl`` (``{"task_index", "task"}``), ``meta/episodes.jsonl``
  (``{"episode_index", "tasks", "length"}``), one parquet file per episode at
  ``data_path.format(episode_chunk=i // chunks_size, episode_index=i)`` and, for a ``video``
  camera feature, one mp4 per episode at ``video_path.format(..., video_key=camera)``. The layout
  of ``huggingface/lerobot`` ``lerobot/common/datasets/utils.py`` (v2.1); v3.0 (many episodes per
  file) is refused with a message.
- **LIBERO / robomimic HDF5** (:func:`read_libero_hdf5`): ``data/demo_N/actions`` (T, 7) and
  ``data/demo_N/obs/<camera>`` (T, H, W, 3) uint8, as LIBERO's ``scripts/create_dataset.py``
  writes them; the instruction from ``data.attrs["problem_info"]`` (JSON).

Every malformed input raises :class:`DemoFileError` naming the file and the field. ``pyarrow``
and ``h5py`` (both in ``pip install 'vlagent[data]'``) are imported only when a reader runs;
without them a reader raises ``EmbodiedSuiteMissing`` naming that command.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image, UnidentifiedImageError

from embodied.libero_env import FINGER_OPEN
from embodied.suites import import_suite

LEROBOT_VERSIONS = ("v2.0", "v2.1")
_EIGHT_BIT_MODES = {"RGB", "RGBA", "L", "LA", "P", "1"}


class DemoFileError(ValueError):
    """A demonstration file (or an episode built from one) is malformed; names file and field."""


@dataclass(frozen=True, eq=False)
class DemoEpisode:
    """One recorded episode, frame t paired with the action taken at frame t.

    frames: uint8 (T, H, W, 3) RGB, row 0 at the top. actions: float32 (T, D), the file's action
    space (see :func:`to_ee_delta4` for ours). instruction: the task's language. proprio:
    float32 (T, P) or None (LIBERO: end effector x, y, z in m and gripper closure 0 open .. 1
    closed; LeRobot: ``observation.state`` as recorded). source: ``file:episode`` for messages.
    Arrays are made read-only.
    """

    frames: np.ndarray
    actions: np.ndarray
    instruction: str
    proprio: np.ndarray | None = None
    source: str = "<memory>"

    def __post_init__(self) -> None:
        src = self.source
        f, a, p = self.frames, self.actions, self.proprio
        if not isinstance(f, np.ndarray) or f.dtype != np.uint8:
            raise DemoFileError(f"{src}: frames must be a uint8 array, got {_kind(f)}")
        if f.ndim != 4 or f.shape[-1] != 3 or 0 in f.shape:
            raise DemoFileError(f"{src}: frames must be (T, H, W, 3) with T >= 1, got {f.shape}")
        if not isinstance(a, np.ndarray) or a.dtype != np.float32 or a.ndim != 2 or a.shape[1] < 1:
            raise DemoFileError(f"{src}: actions must be float32 (T, D), got {_kind(a)}")
        if len(a) != len(f):
            raise DemoFileError(f"{src}: {len(f)} frames but {len(a)} actions")
        if not np.isfinite(a).all():
            raise DemoFileError(f"{src}: actions hold non-finite values")
        if not isinstance(self.instruction, str) or not self.instruction.strip():
            raise DemoFileError(f"{src}: instruction must be a non-empty str")
        if p is not None:
            if not isinstance(p, np.ndarray) or p.dtype != np.float32 or p.ndim != 2:
                raise DemoFileError(
                    f"{src}: proprio must be float32 (T, P) or None, got {_kind(p)}"
                )
            if len(p) != len(f) or not np.isfinite(p).all():
                raise DemoFileError(f"{src}: proprio must be {len(f)} rows of finite values")
        for name in ("frames", "actions", "proprio"):  # read-only views; the caller's stay as-is
            arr = getattr(self, name)
            if arr is not None:
                view = arr.view()
                view.setflags(write=False)
                object.__setattr__(self, name, view)

    def __len__(self) -> int:
        return len(self.frames)


def _kind(x: Any) -> str:
    return f"{x.dtype} {x.shape}" if isinstance(x, np.ndarray) else type(x).__name__


def _numbers(value: Any, where: str, dims: int | None = None) -> np.ndarray:
    """``value`` as float64 (T, D) finite numbers (D == ``dims`` when given), else an error."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise DemoFileError(f"{where}: not a (T, D) array of numbers ({exc})") from exc
    if arr.dtype.kind not in "iuf":
        raise DemoFileError(f"{where}: must hold numbers, got dtype {arr.dtype} (ragged or null?)")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or (dims is not None and arr.shape[1] != dims):
        raise DemoFileError(f"{where}: expected shape (T, {dims or 'D'}), got {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise DemoFileError(f"{where}: holds non-finite values (NaN or inf)")
    return arr


# ------------------------------------------------------------------------ action conversion
def to_ee_delta4(actions: np.ndarray) -> tuple[np.ndarray, int]:
    """LIBERO's 7-d OSC_POSE actions (T, 7) -> ours (T, 4) = (dx, dy, dz, gripper), and a count.

    Keeps dims 0..2 (position deltas, robosuite world frame, normalised to [-1, 1] = the
    controller's largest step) and dim 6 (gripper); drops the rotation deltas 3..5. Gripper
    convention: LIBERO -1 opens / +1 closes; ours > 0 closes, <= 0 opens, so the sign is kept
    (the inverse of :class:`embodied.libero_env.LiberoEnv`'s ``[dx, dy, dz, 0, 0, 0, g]``).
    Values outside [-1, 1] are clipped; returns ``(float32 (T, 4), number of values clipped)``.
    """
    arr = _numbers(actions, "to_ee_delta4: actions", dims=7)
    four = arr[:, [0, 1, 2, 6]]
    clipped = int(np.count_nonzero(np.abs(four) > 1.0))
    return np.clip(four, -1.0, 1.0).astype(np.float32), clipped


def episodes_to_ee_delta4(episodes: Sequence[DemoEpisode]) -> tuple[list[DemoEpisode], int]:
    """:func:`to_ee_delta4` on every episode's actions; (new episodes, total values clipped)."""
    out, total = [], 0
    for ep in episodes:
        four, clipped = to_ee_delta4(ep.actions)
        out.append(replace(ep, actions=four))
        total += clipped
    return out, total


# --------------------------------------------------------------------------------- LeRobot
def _read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise DemoFileError(f"{path}: missing ({what})")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DemoFileError(f"{path}: not valid JSON ({exc})") from exc


def _read_jsonl(path: Path, keys: dict[str, type]) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DemoFileError(f"{path}: missing")
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DemoFileError(f"{path}: unreadable ({exc})") from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DemoFileError(f"{path}: line {n} is not JSON ({exc})") from exc
        bad = [
            k for k, t in keys.items() if not isinstance(row, dict) or not isinstance(row.get(k), t)
        ]
        if bad:
            raise DemoFileError(f"{path}: line {n} lacks {bad} of types {keys}")
        rows.append(row)
    return rows


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


# ---------------------------------------------------------------------------------- LIBERO
def instruction_from_filename(path: str | Path) -> str:
    """LIBERO's file-name convention as words: ``KITCHEN_SCENE3_turn_on_the_stove_demo.hdf5``
    -> ``turn on the stove`` (upper-case scene words and the ``_demo`` suffix dropped)."""
    words = re.sub(r"_demo$", "", Path(path).stem).split("_")
    while len(words) > 1 and words[0].isupper():
        words.pop(0)
    return " ".join(w for w in words if w) or Path(path).stem


def _libero_instruction(data: Any, path: Path) -> str:
    raw = data.attrs.get("problem_info")
    if raw is None:
        return instruction_from_filename(path)
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        lang = json.loads(text)["language_instruction"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DemoFileError(
            f"{path}: data.attrs['problem_info'] is not JSON with 'language_instruction' ({exc!r})"
        ) from exc
    lang = "".join(lang) if isinstance(lang, list) else lang
    if not isinstance(lang, str) or not lang.strip():
        raise DemoFileError(f"{path}: problem_info language_instruction is empty or not a string")
    return lang.strip().strip('"')


def _h5_array(group: Any, key: str, where: str, h5py: Any) -> np.ndarray:
    node = group.get(key)
    if not isinstance(node, h5py.Dataset):
        raise DemoFileError(f"{where}/{key}: missing (or not a dataset)")
    try:
        return np.asarray(node[()])
    except (OSError, ValueError, TypeError) as exc:
        raise DemoFileError(f"{where}/{key}: unreadable ({exc})") from exc


def read_libero_hdf5(
    path: str | Path,
    camera: str = "agentview_rgb",
    flip: bool | None = None,
    max_episodes: int | None = None,
) -> list[DemoEpisode]:
    """Demos of a LIBERO (robomimic-layout) HDF5 file, in ``demo_N`` order.

    Args:
        path: the ``.hdf5`` file.
        camera: the image dataset under ``obs/`` (``agentview_rgb``, ``eye_in_hand_rgb``).
        flip: rotate frames 180 degrees; None: when ``data.attrs["macros_image_convention"]``
            is ``opengl`` (robosuite's upside-down frames; LiberoEnv applies the same fix).
        max_episodes: read only the first this many demos.

    Actions are LIBERO's raw (T, 7) (convert with :func:`to_ee_delta4`); proprio is
    ``obs/ee_pos`` (m) plus the gripper closure from ``obs/gripper_states`` when present.
    Raises :class:`DemoFileError`; without h5py, ``EmbodiedSuiteMissing``.
    """
    h5py = import_suite("h5py", "h5py", "data", "read_libero_hdf5")
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        raise DemoFileError(f"{path}: missing or empty")
    try:
        fh = h5py.File(path, "r")
    except OSError as exc:
        raise DemoFileError(f"{path}: not an HDF5 file ({exc})") from exc
    with fh:
        data = fh.get("data")
        if not isinstance(data, h5py.Group):
            raise DemoFileError(f"{path}: no 'data' group")
        names = [k for k in data if re.fullmatch(r"demo_\d+", k)]
        if not names:
            raise DemoFileError(f"{path}: 'data' has no demo_N groups")
        instruction = _libero_instruction(data, path)
        convention = data.attrs.get("macros_image_convention", b"")
        convention = convention.decode() if isinstance(convention, bytes) else str(convention)
        flip = convention == "opengl" if flip is None else bool(flip)
        out = []
        for name in sorted(names, key=lambda k: int(k[5:]))[:max_episodes]:
            where = f"{path}:data/{name}"
            actions = _numbers(_h5_array(data[name], "actions", where, h5py), f"{where}/actions", 7)
            if len(actions) == 0:
                raise DemoFileError(f"{where}/actions: empty (an episode needs T >= 1 steps)")
            obs = data[name].get("obs")
            if not isinstance(obs, h5py.Group):
                raise DemoFileError(f"{where}/obs: missing")
            frames = _h5_array(obs, camera, f"{where}/obs", h5py)
            if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
                raise DemoFileError(
                    f"{where}/obs/{camera}: must be uint8 (T, H, W, 3), got {_kind(frames)}"
                )
            if len(frames) != len(actions):
                raise DemoFileError(f"{where}: {len(frames)} frames but {len(actions)} actions")
            proprio = None
            if "ee_pos" in obs:
                pos = _numbers(_h5_array(obs, "ee_pos", f"{where}/obs", h5py), f"{where}/ee_pos", 3)
                cols = [pos]
                if "gripper_states" in obs:
                    q = _h5_array(obs, "gripper_states", f"{where}/obs", h5py)
                    q = _numbers(q, f"{where}/obs/gripper_states", 2)
                    cols.append(1.0 - np.clip((q[:, :1] - q[:, 1:]) / FINGER_OPEN, 0, 1))
                if any(len(c) != len(actions) for c in cols):
                    raise DemoFileError(f"{where}/obs: ee_pos / gripper_states rows != actions")
                proprio = np.concatenate(cols, axis=1).astype(np.float32)
            frames = np.ascontiguousarray(frames[:, ::-1, ::-1]) if flip else frames
            out.append(DemoEpisode(frames, actions.astype(np.float32), instruction, proprio, where))
    return out
