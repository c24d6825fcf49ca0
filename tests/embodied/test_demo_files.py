"""embodied.demo_files: DemoEpisode validation, LIBERO file names as instructions, LIBERO ->
our 4-d actions, and both readers naming the extra to install when their package is missing."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from embodied.demo_files import (
    DemoEpisode,
    DemoFileError,
    episodes_to_ee_delta4,
    instruction_from_filename,
    to_ee_delta4,
)
from embodied.lerobot_files import read_lerobot
from embodied.libero_files import read_libero_hdf5
from embodied.suites import EmbodiedSuiteMissing


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


@pytest.mark.parametrize(
    ("module", "reader"), [("pyarrow.parquet", read_lerobot), ("h5py", read_libero_hdf5)]
)
def test_missing_package_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, reader: Callable
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what `import` sees when it is not installed
    with pytest.raises(EmbodiedSuiteMissing, match=r"pip install 'vlagent\[data\]'"):
        reader(tmp_path)
