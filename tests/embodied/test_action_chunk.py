"""embodied.ActionChunk: k rows as k env steps, early stops, summed terms, invalid rows/chunks."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # before the first `import mujoco`
pytest.importorskip("mujoco")

from embodied.chunk import ActionChunk  # noqa: E402
from embodied.robot_env import RobotEnv  # noqa: E402
from embodied.scripted import ScriptedController  # noqa: E402
from embodied.tasks import RobotTaskError  # noqa: E402

S = 64
WEIGHTS = {"success": 1.0, "distance": 10.0, "grasp": 0.5, "invalid_action": -0.3}


def _pair(kind: str = "reach", **kw) -> tuple[ActionChunk, RobotEnv]:
    """A chunked env and a plain twin, both reset to the same state."""
    chunked = ActionChunk(RobotEnv(kind, image_size=S, reward=WEIGHTS, **kw), 4)
    twin = RobotEnv(kind, image_size=S, reward=WEIGHTS, **kw)
    chunked.reset(seed=5, options={"task_id": 1})
    twin.reset(seed=5, options={"task_id": 1})
    return chunked, twin


def test_a_chunk_runs_its_rows_as_env_steps_and_sums_the_terms() -> None:
    chunked, twin = _pair()
    rows = np.array([[1, 0, -1, -1], [0, 1, 0, -1], [np.nan, 0, 0, 0], [-1, -1, 0, 1]], np.float32)
    obs, reward, terminated, truncated, info = chunked.step(rows)
    expected: dict[str, float] = {}
    for row in rows:
        t_obs, _, _, _, t_info = twin.step(row)
        for name, value in t_info["reward_terms"].items():
            expected[name] = expected.get(name, 0.0) + value
    assert info["steps_run"] == 4 and info["steps"] == 4
    assert info["reward_terms"] == pytest.approx(expected, abs=1e-12)
    assert info["reward_terms"]["invalid_action"] == -0.3  # one bad row
    assert reward == sum(info["reward_terms"].values())
    assert info["invalid_action"] is True and info["invalid_reason"].startswith("row 2:")
    assert np.array_equal(obs["image"], t_obs["image"]), "the last step's observation"
    np.testing.assert_array_equal(chunked.unwrapped.scene.ee_position(), twin.scene.ee_position())
    assert not (terminated or truncated)


def test_the_chunk_stops_at_success() -> None:
    chunked, twin = _pair()
    controller = ScriptedController(twin)
    rows, obs = [], None
    while True:  # the scripted path on the twin, to learn when success comes
        rows.append(controller.act(obs))
        obs, _, terminated, _, _ = twin.step(rows[-1])
        if terminated:
            break
    needed = len(rows)
    assert needed <= 8
    chunk = ActionChunk(chunked.env, 8)
    padded = np.zeros((8, 4), np.float32)
    padded[:needed] = rows
    c_obs, reward, terminated, truncated, info = chunk.step(padded)
    assert terminated and not truncated and info["success"] is True
    # the rows before the last run unrendered (``RobotEnv.advance``): the frame of the row
    # that ended the chunk is still the one returned
    assert np.array_equal(c_obs["image"], obs["image"])
    assert info["steps_run"] == needed == info["steps"]
    assert info["reward_terms"]["success"] == 1.0 and reward > 1.0  # plus distance progress


def test_the_chunk_stops_at_the_budget() -> None:
    chunked, _ = _pair(max_steps=6)
    first = chunked.step(np.zeros((4, 4)))
    assert first[4]["steps_run"] == 4 and not first[3]
    second = chunked.step(np.zeros((4, 4)))
    assert second[3] is True and second[4]["steps_run"] == 2 and second[4]["steps"] == 6


@pytest.mark.parametrize(
    "action",
    [np.zeros(4), np.zeros((3, 4)), np.zeros((4, 5)), "1 2 3 4", None, [[0, 0, 0, 0], [0]]],
    ids=["flat", "short", "wide", "text", "none", "ragged"],
)
def test_a_malformed_chunk_holds_still_for_k_invalid_steps(action) -> None:
    chunked, _ = _pair()
    ee = chunked.unwrapped.scene.ee_position()
    _, reward, terminated, truncated, info = chunked.step(action)
    assert (
        info["invalid_action"] is True and "action chunk must be 4 rows" in info["invalid_reason"]
    )
    assert info["steps_run"] == 4 and info["steps"] == 4
    np.testing.assert_array_equal(chunked.unwrapped.scene.ee_position(), ee)
    assert info["reward_terms"]["invalid_action"] == pytest.approx(4 * -0.3)
    assert reward == sum(info["reward_terms"].values())
    assert not (terminated or truncated)


def test_chunk_space_and_bad_k() -> None:
    chunked, _ = _pair()
    assert chunked.action_space.shape == (4, 4) and chunked.action_space.dtype == np.float32
    assert chunked.action_space.contains(np.zeros((4, 4), np.float32))
    for k in (0, -1, 2.0, True, 65):
        with pytest.raises(RobotTaskError, match="chunk length k"):
            ActionChunk(RobotEnv(image_size=S), k)  # type: ignore[arg-type]
