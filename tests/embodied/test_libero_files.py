"""embodied.libero_files: LIBERO HDF5 demos read back exactly (frames turned upright, proprio,
the instruction from problem_info or the file name), and every malformed file a DemoFileError
naming it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from embodied.demo_files import DemoFileError
from embodied.libero_files import read_libero_hdf5
from tests.embodied.demo_fixtures import H, W, write_libero


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
