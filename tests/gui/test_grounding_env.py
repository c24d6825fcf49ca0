"""GroundingEnv behaviour: sample choice, scoring, invalid actions, spaces, registration."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import numpy as np
import pytest

import gui
from gui.errors import GroundingEnvError
from gui.grounding import (
    GroundingEnv,
    Screenshot,
    SyntheticSource,
    make_screenspot_env,
    parse_action,
)
from rewards import Prediction, RewardSpec
from sim.screens import generate_screen

SPEC = RewardSpec.from_dict({"point_in_box": 1.0, "format": 0.1})


def _env(level: str = "basic", **kwargs) -> GroundingEnv:
    return GroundingEnv(SyntheticSource(level), SPEC, **kwargs)


def _centre(box: tuple[float, float, float, float]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def test_reset_shows_the_sample_of_the_task_id() -> None:
    env = _env()
    obs, info = env.reset(options={"task_id": 7})
    screen = generate_screen("basic", 7)
    assert np.array_equal(obs["image"], screen.image) and obs["instruction"] == screen.instruction
    assert info["sample_id"] == "basic:7" and info["image_size"] == (224, 224)
    assert info["target_box_norm"] == screen.target_box_norm and info["elements"] == screen.elements
    assert obs["image"].flags.writeable  # a copy the caller may edit
    obs2, _ = env.reset(seed=99, options={"task_id": "basic:7"})
    assert np.array_equal(obs2["image"], screen.image)


def test_seeded_reset_is_reproducible_and_unseeded_reset_moves_on() -> None:
    env = _env()
    ids = [env.reset(seed=5)[1]["sample_id"], env.reset()[1]["sample_id"]]
    again = [env.reset(seed=5)[1]["sample_id"], env.reset()[1]["sample_id"]]
    assert ids == again and ids[0] != ids[1]


def test_hit_miss_box_and_terms() -> None:
    env = _env()
    _, info = env.reset(seed=0)
    box = info["target_box_norm"]
    _, reward, terminated, truncated, info = env.step({"point": _centre(box)})
    assert (reward, terminated, truncated) == (pytest.approx(1.1), True, False)
    assert info["reward_terms"] == {"point_in_box": 1.0, "format": 0.1}
    assert (
        info["success"] is True
        and info["invalid_action"] is False
        and info["invalid_reason"] is None
    )

    far = (0.0, 0.0) if box[0] > 0.1 or box[1] > 0.1 else (1.0, 1.0)
    env.reset(seed=0)
    _, reward, _, _, info = env.step({"point": far})
    assert reward == pytest.approx(0.1) and info["success"] is False

    env.reset(seed=0)
    _, reward, _, _, info = env.step({"box": box})
    assert info["success"] is True and reward == pytest.approx(1.1)
    assert info["prediction"] == {"point": None, "box": tuple(float(v) for v in box)}


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ({"parse_error": "no <answer> tag"}, "parse error: 'no <answer> tag'"),
        ({"point": (1.2, 0.5)}, "off-screen"),
        ({"point": (float("nan"), 0.5)}, "finite"),
        ({"point": ("0.5", 0.5)}, "only numbers"),
        ({"box": (0.5, 0.5, 0.2, 0.9)}, "empty or inverted"),
        ({"point": (0.5, 0.5), "click": True}, "unknown action key"),
        ({}, "no 'point'"),
        ("click(0.5, 0.5)", "must be a mapping"),
    ],
)
def test_invalid_actions_score_zero_with_a_reason(action: object, reason: str) -> None:
    env = _env()
    env.reset(seed=1)
    _, reward, terminated, _, info = env.step(action)
    assert reward == 0.0 and terminated
    assert info["invalid_action"] is True and reason in info["invalid_reason"]
    assert info["success"] is False and sum(info["reward_terms"].values()) == 0.0


def test_parse_action_builds_predictions() -> None:
    assert parse_action({"point": np.array([0.25, 1.0], np.float32)}) == (
        Prediction(point=(0.25, 1.0), box=None, format_ok=True, error=None),
        None,
    )
    prediction, reason = parse_action({"parse_error": "bad json"})
    assert prediction.format_ok is False and prediction.error == reason


def test_step_order_errors() -> None:
    env = _env()
    with pytest.raises(gymnasium.error.ResetNeeded, match="before reset"):
        env.step({"point": (0.5, 0.5)})
    env.reset(seed=0)
    env.step({"point": (0.5, 0.5)})
    with pytest.raises(gymnasium.error.ResetNeeded, match="terminated"):
        env.step({"point": (0.5, 0.5)})


def test_bad_reset_options_and_constructor_args() -> None:
    env = _env()
    for task_id in (-1, "other:3", 1.5, True):
        with pytest.raises(GroundingEnvError, match="task_id"):
            env.reset(options={"task_id": task_id})
    with pytest.raises(GroundingEnvError, match="known: task_id"):
        env.reset(options={"level": "x"})
    with pytest.raises(GroundingEnvError, match="RewardSpec"):
        GroundingEnv(SyntheticSource("basic"), {"point_in_box": 1.0})  # type: ignore[arg-type]
    with pytest.raises(GroundingEnvError, match="annotation_file= and image_dir="):
        make_screenspot_env()


def test_spaces_follow_the_source_sizes() -> None:
    assert _env().observation_space["image"] == gymnasium.spaces.Box(
        0, 255, (224, 224, 3), np.uint8
    )
    assert _env("widgets").observation_space["image"].shape == (896, 448, 3)
    assert _env().action_space["point"].shape == (2,)
    space = Screenshot(max_width=64, max_height=32, seed=0)
    sample = space.sample()
    assert sample in space and sample.dtype == np.uint8 and sample.shape[2] == 3
    assert np.zeros((33, 10, 3), np.uint8) not in space
    assert np.zeros((8, 8, 3), np.float32) not in space
    assert np.zeros((8, 8), np.uint8) not in space


def test_render_draws_prediction() -> None:
    env = _env(render_mode="rgb_array")
    obs, info = env.reset(seed=3)
    env.step({"point": _centre(info["target_box_norm"])})
    frame = env.render()
    assert frame.shape == obs["image"].shape and not np.array_equal(frame, obs["image"])
    assert _env().render() is None


def test_custom_reward_spec_via_make() -> None:
    env = gymnasium.make(
        "vlagent/GroundingSynthetic-v0", level="shapes", reward={"point_in_box": 2.0}
    )
    _, info = env.reset(seed=4)
    _, reward, _, _, info = env.step({"point": _centre(info["target_box_norm"])})
    assert reward == 2.0 and info["reward_terms"] == {"point_in_box": 2.0}
    assert info["sample_id"].startswith("shapes:")
    env.close()


def test_synthetic_source_caches_recent_samples() -> None:
    source = SyntheticSource("basic", cache_size=2)
    first = source.sample(1)
    assert source.sample(1) is first
    source.sample(2), source.sample(3)
    assert source.sample(1) is not first and np.array_equal(source.sample(1).image, first.image)


def test_gui_import_is_light_and_registers_ids() -> None:
    assert {"vlagent/GroundingSynthetic-v0", "vlagent/GroundingScreenSpot-v0"} <= set(
        gui.registered_env_ids()
    )
    assert all(env_id in gymnasium.registry for env_id in gui.registered_env_ids())
    code = (
        "import sys, gui; heavy = [m for m in ('PIL', 'sim.screens.generator', 'gui.grounding', "
        "'torch', 'android_env', 'sim.phone') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class _OneSample:
    """A one-sample source whose ground truth has an action type and typed text."""

    name = "one"
    num_samples = 1
    image_size = (64, 48)

    def __init__(self):
        import string

        from gui.grounding.sources import GroundingSample

        self.charset = frozenset(string.printable)
        self._s = GroundingSample(
            image=np.zeros((48, 64, 3), np.uint8),
            instruction="type the city",
            target_box_norm=(0.25, 0.25, 0.75, 0.75),
            sample_id="one:0",
            meta={"action_type": "type", "text": "new york", "platform": "web"},
        )

    def sample(self, key):
        return self._s


def test_action_extras_reach_the_reward_with_the_samples_ground_truth():
    spec = RewardSpec.from_dict({"point_in_box": 1.0, "action_type": 0.5, "text_f1": 0.25})
    env = GroundingEnv(_OneSample(), spec)
    env.reset(seed=0)
    target = env.reward_target()
    assert (target.action_type, target.text, target.sample_id) == ("type", "new york", "one:0")
    action = {"point": (0.5, 0.5), "action_type": "type", "text": "New York", "completion": "c"}
    _, reward, _, _, info = env.step(action)
    assert info["reward_terms"] == {"point_in_box": 1.0, "action_type": 0.5, "text_f1": 0.25}
    assert reward == 1.75 and info["reward_errors"] == [] and not info["invalid_action"]
    env.reset(seed=0)
    _, reward, _, _, info = env.step({"point": (0.5, 0.5), "action_type": "click"})
    assert info["reward_terms"] == {"point_in_box": 1.0, "action_type": 0.0, "text_f1": 0.0}
    env.reset(seed=0)
    _, reward, _, _, info = env.step({"point": (0.5, 0.5), "text": 7})
    assert info["invalid_action"] and "text must be a string" in info["invalid_reason"]
