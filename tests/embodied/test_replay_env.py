"""embodied.ReplayEnv: the env contract, frame-by-frame replay with the recorded actions,
truncation, invalid actions, resizing, proprio, and SFT pairs read back from demo files."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
from PIL import Image

from embodied.chunk import ActionChunk
from embodied.demo_files import DemoEpisode, episodes_to_ee_delta4
from embodied.lerobot_files import read_lerobot
from embodied.libero_files import read_libero_hdf5
from embodied.replay_env import ReplayEnv, ReplayEnvError, recorded_action
from tests.embodied.demo_fixtures import make_episode, write_lerobot, write_libero
from tests.env_contract import check_contract

VALID = [
    np.zeros(4, np.float32),
    np.array([1, -1, 0.5, 1], np.float32),
    [0.2, 0.1, -0.3, -1.0],
    np.array([5, -5, 0, 0]),  # out of range: still valid (it changes nothing anyway)
]
INVALID = [
    np.array([np.nan, 0, 0, 0], np.float32),
    np.array([0, np.inf, 0, 0]),
    np.zeros(3),
    np.zeros((2, 4)),
    "move left",
    None,
    [0, 0, "a", 0],
    {"dx": 1},
    np.array([True, False, True, False]),
]


def episodes() -> list[DemoEpisode]:
    """Two episodes: 5 frames with proprio (3,) and "é?" in the instruction; 3 without."""
    f0, a0, p0 = make_episode(0, 5)
    f1, a1, _ = make_episode(1, 3)
    return [
        DemoEpisode(f0, a0, "put the bowl on the plate, é?", p0, "mem:0"),
        DemoEpisode(f1, a1, "lift the blue cube", None, "mem:1"),
    ]


def test_env_contract() -> None:
    eps = episodes()
    check_contract(lambda: ReplayEnv(eps, image_size=16), VALID, INVALID)
    check_contract(lambda: ReplayEnv(eps, image_size=16, proprio=False), VALID, INVALID)
    chunk_valid = [np.zeros((2, 4), np.float32)]
    chunk_invalid = [np.full((2, 4), np.nan), "x"]
    check_contract(
        lambda: ActionChunk(ReplayEnv(eps, image_size=16), 2), chunk_valid, chunk_invalid
    )


def test_replay_walks_the_recording_and_reports_recorded_actions() -> None:
    eps = episodes()
    env = ReplayEnv(eps, image_size=32, render_mode="rgb_array")  # frames are 24 x 32: resized
    for task_id, ep in ((0, eps[0]), (3, eps[1])):  # task_id 3 -> episode 3 % 2 = 1
        obs, info = env.reset(seed=0, options={"task_id": task_id})
        assert info["episode"] == ep.source and info["max_steps"] == len(ep)
        assert obs["instruction"] == ep.instruction and obs["image"].shape == (32, 32, 3)
        for t in range(len(ep)):
            expected = np.asarray(Image.fromarray(ep.frames[t]).resize((32, 32), Image.BILINEAR))
            assert np.array_equal(obs["image"], expected)
            assert np.array_equal(env.render(), expected)
            proprio = np.zeros(3) if ep.proprio is None else ep.proprio[t]
            assert np.array_equal(obs["proprio"], proprio)
            action = recorded_action(env)
            assert np.array_equal(action, ep.actions[t])
            obs, reward, terminated, truncated, info = env.step(-action)  # any action
            assert np.array_equal(info["recorded_action"], ep.actions[t])
            assert info["success"] is False and not terminated and reward == 0.0
            assert info["steps"] == t + 1 and truncated == (t == len(ep) - 1)
        assert np.array_equal(obs["image"], expected)  # the last frame repeats
        with pytest.raises(ReplayEnvError, match="recording is over"):
            env.step(np.zeros(4))
        with pytest.raises(ReplayEnvError, match="recording is over"):
            recorded_action(env)


def test_same_size_frames_pass_through_and_invalid_actions_are_penalised_no_ops() -> None:
    eps = episodes()
    env = ReplayEnv(eps, image_size=24, reward={"invalid_action": -0.5})  # 24 != 32: resized
    obs, _ = env.reset(options={"task_id": 0})
    assert obs["image"].shape == (24, 24, 3)
    square = [DemoEpisode(np.zeros((2, 8, 8, 3), np.uint8) + 7, np.zeros((2, 4), np.float32), "x")]
    env = ReplayEnv(square, image_size=8, reward={"invalid_action": -0.5})
    obs, _ = env.reset(options={"task_id": 0})
    assert np.array_equal(obs["image"], square[0].frames[0])
    _, reward, _, _, info = env.step([np.nan, 0, 0, 0])
    assert info["invalid_action"] and "non-finite" in info["invalid_reason"]
    assert reward == -0.5 == info["reward_terms"]["invalid_action"]
    assert info["steps"] == 1  # time advances on a no-op, as in RobotEnv
    assert "proprio" in env.observation_space.spaces and np.array_equal(obs["proprio"], np.zeros(4))


def test_seeded_task_draw_is_deterministic() -> None:
    env = ReplayEnv(episodes(), image_size=8)
    draws = [env.reset(seed=s)[1]["task_id"] for s in range(20)]
    assert draws == [env.reset(seed=s)[1]["task_id"] for s in range(20)]
    assert set(draws) == {0, 1}


def test_bad_arguments_and_misuse_raise_named_errors() -> None:
    eps = episodes()
    f, a, _ = make_episode(2, 2, dims=7)
    cases = {
        "non-empty sequence": lambda: ReplayEnv([]),
        "not a DemoEpisode": lambda: ReplayEnv([eps[0], "x"]),
        "action width": lambda: ReplayEnv([eps[0], DemoEpisode(f, a, "y")]),
        "image_size must be in": lambda: ReplayEnv(eps, image_size=0),
        "image_size must be an int": lambda: ReplayEnv(eps, image_size=True),
        "render_mode": lambda: ReplayEnv(eps, render_mode="human"),
        "invalid_action <= 0": lambda: ReplayEnv(eps, reward={"invalid_action": 1.0}),
        "reset options": lambda: ReplayEnv(eps).reset(options={"task": 1}),
        "task_id must be an int": lambda: ReplayEnv(eps).reset(options={"task_id": "1"}),
        "call reset": lambda: ReplayEnv(eps).step(np.zeros(4)),
        "needs a ReplayEnv": lambda: recorded_action(gymnasium.make("CartPole-v1")),
    }
    for message, call in cases.items():
        with pytest.raises(ReplayEnvError, match=message):
            call()
    proprio_a = DemoEpisode(f, a[:, :4].copy(), "z", np.zeros((2, 5), np.float32))
    with pytest.raises(ReplayEnvError, match="proprio width"):
        ReplayEnv([eps[0], proprio_a])


def test_sft_pairs_from_a_libero_file(tmp_path: Path) -> None:
    path = tmp_path / "demo.hdf5"
    write_libero(path)
    demos, clipped = episodes_to_ee_delta4(read_libero_hdf5(path))
    assert clipped == 0
    env = ReplayEnv(demos, image_size=16)
    assert env.action_space.shape == (4,) and env.observation_space["proprio"].shape == (4,)
    for k, ep in enumerate(demos):
        obs, _ = env.reset(seed=1, options={"task_id": k})
        pairs, done = [], False
        while not done:
            action = recorded_action(env)  # what a demonstrator writes
            pairs.append((obs["instruction"], action))
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
        assert len(pairs) == len(ep)
        assert np.array_equal(np.stack([p[1] for p in pairs]), ep.actions)


def test_replay_of_a_lerobot_video_dataset(tmp_path: Path) -> None:
    write_lerobot(tmp_path, video=True)
    eps = read_lerobot(tmp_path)
    env = ReplayEnv(eps, image_size=16)
    check_contract(lambda: ReplayEnv(eps, image_size=16), VALID, INVALID[:3])
    obs, _ = env.reset(options={"task_id": 1})
    assert obs["instruction"] == eps[1].instruction
    assert np.array_equal(obs["proprio"], eps[1].proprio[0])
