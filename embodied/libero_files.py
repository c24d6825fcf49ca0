"""LIBERO / robomimic HDF5 files read into :class:`~embodied.demo_files.DemoEpisode` lists.

The layout :func:`read_libero_hdf5` reads: ``data/demo_N/actions`` (T, 7) and
``data/demo_N/obs/<camera>`` (T, H, W, 3) uint8, as LIBERO's ``scripts/create_dataset.py``
writes them; the instruction from ``data.attrs["problem_info"]`` (JSON), else from the file
name (:func:`~embodied.demo_files.instruction_from_filename`).

Every malformed input raises :class:`~embodied.demo_files.DemoFileError` naming the file and the
field. ``h5py`` (in ``pip install 'vlagent[data]'``) is imported only when the reader runs;
without it the reader raises ``EmbodiedSuiteMissing`` naming that command.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from embodied.demo_files import (
    DemoEpisode,
    DemoFileError,
    _kind,
    _numbers,
    instruction_from_filename,
)
from embodied.libero_env import FINGER_OPEN
from embodied.suites import import_suite


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
