"""Robot demonstration episodes (:class:`DemoEpisode`) for SFT, and what the file readers share.

The readers live in their own modules, one per on-disk format, and return ``DemoEpisode`` lists:

- :func:`embodied.lerobot_files.read_lerobot`: a LeRobot dataset v2.0 / v2.1 folder
  (``meta/*.json[l]``, one parquet file per episode, inline images or one mp4 per camera).
- :func:`embodied.libero_files.read_libero_hdf5`: a LIBERO / robomimic HDF5 file
  (``data/demo_N/actions`` and ``data/demo_N/obs/<camera>``).

This module holds :class:`DemoEpisode`, :class:`DemoFileError` (every malformed input raises it,
naming the file and the field), the validation helpers both readers use (numbers, JSON and JSON
Lines files), LIBERO's action conversion (:func:`to_ee_delta4`, :func:`episodes_to_ee_delta4`)
and :func:`instruction_from_filename`. It imports no reader module (they import it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np


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


# ------------------------------------------------------------------- JSON / JSON Lines files
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


# ------------------------------------------------------------------------ LIBERO file names
def instruction_from_filename(path: str | Path) -> str:
    """LIBERO's file-name convention as words: ``KITCHEN_SCENE3_turn_on_the_stove_demo.hdf5``
    -> ``turn on the stove`` (upper-case scene words and the ``_demo`` suffix dropped)."""
    words = re.sub(r"_demo$", "", Path(path).stem).split("_")
    while len(words) > 1 and words[0].isupper():
        words.pop(0)
    return " ".join(w for w in words if w) or Path(path).stem
