"""Zoom world: an answer off the image it refers to earns nothing, not even format credit.

Driven through the world's own adapter and env with fixed texts (no sampling). The case that
used to pay: ``{"point_2d": [-40, 20]}`` answered on a zoomed crop lies left of the crop, which
maps back *inside* the screenshot, so the env saw a valid point and paid ``format`` (0.1) plus a
little ``gaussian_point``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from gui.grounding.sources import BASE_CHARSET, GroundingSample
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import EpisodeSpec, run_episodes
from vlagent.worlds import make_world

TARGET = (0.6, 0.6, 0.7, 0.7)
CROP = (0.5, 0.5, 1.0, 1.0)  # the target's centre (0.65, 0.65) is (300, 300) thousandths in it


class NoiseSource:
    """Random-noise screens of 320 x 192 with the target at :data:`TARGET`."""

    name = "noise"
    num_samples = None
    image_size = (320, 192)
    charset = BASE_CHARSET

    def sample(self, key: int) -> GroundingSample:
        image = np.random.default_rng(key).integers(0, 256, (192, 320, 3), dtype=np.uint8)
        return GroundingSample(image, "Click the icon.", TARGET, sample_id=f"noise:{key}")


class Forced:
    """Demonstrator: the given texts, one per turn."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def text(self, traj, obs, info):
        k = len(traj.turns)
        return self.texts[k] if k < len(self.texts) else None


@pytest.fixture(scope="module")
def world(tiny_dir):
    knobs = ["world=zoom", "task.pixel_budget=15360", "tools.system_prompt=short"]
    w = make_world(load_config(None, knobs), load_policy(tiny_dir))
    w.source = NoiseSource()
    return w


def _last_turn(world, texts: list[str]):
    (traj,) = run_episodes(
        world.policy,
        world.adapter(),
        lambda: world.make_env("train"),
        [EpisodeSpec(0)],
        world.limits(64),
        demonstrator=Forced(texts),
        seed=0,
    )
    assert traj.status == "terminated" and traj.turns[-1].kind == "env"
    return traj.turns[-1]


def _zoom(box_norm: tuple[float, ...]) -> str:
    call = {"name": "zoom_in", "arguments": {"bbox_2d": list(box_norm), "coords": "norm"}}
    return "<tool_call>" + json.dumps(call) + "</tool_call>"


OFF_IMAGE = [
    '{"point": [1e20, 1]}',
    '{"point_2d": [-40, 20]}',
    '{"point_2d": [500, 1001]}',
    '[{"bbox_2d": [-10, 10, 100, 100], "label": "x"}]',
    '[{"bbox_2d": [900, 10, 1200, 100], "label": "x"}]',
]


@pytest.mark.parametrize("zoomed", [False, True], ids=["screenshot", "crop"])
@pytest.mark.parametrize("answer", OFF_IMAGE)
def test_off_image_answer_earns_no_format_credit(world, answer: str, zoomed: bool) -> None:
    turn = _last_turn(world, ([_zoom(CROP)] if zoomed else []) + [answer])
    assert turn.reward_terms["format"] == 0.0
    assert turn.reward <= 0.0
    assert turn.info["invalid_action"], turn.info


def test_on_image_answer_in_a_crop_is_paid(world) -> None:
    """Positive control: the same path pays a right answer given in the crop's coordinates."""
    turn = _last_turn(world, [_zoom(CROP), '{"point_2d": [300, 300]}'])
    assert turn.reward_terms["format"] == pytest.approx(0.1)
    assert turn.reward_terms["point_in_box"] == 1.0
    assert not turn.info["invalid_action"]
