"""Held-out action error of a robot policy's first reply against the scripted expert's:
hand-computed slot errors, zero for the expert's own episodes (each scored against its own
task), malformed replies counted and not scored."""

from __future__ import annotations

import numpy as np
import pytest

from vlagent.config import load_config
from vlagent.eval.action_error import score_first_replies, slot_errors, summarize
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import EpisodeSpec
from vlagent.worlds import make_world

ROBOT = [
    "world=robot",
    "robot.task=push",
    "robot.image_size=32",
    "robot.action_frame=target",
    "robot.max_step=0.2",
    "robot.paced=true",
    "robot.cubes=1",
    "robot.zones=1",
    "robot.chunk=2",
]  # push: an expert episode takes several replies


def test_slot_errors_by_hand() -> None:
    lo, hi = np.zeros(3), np.array([2.0, 4.0, 2.0])  # spans 2, 4, 2 m: a unit action is half
    a = np.array([[0.0, 0.0, 0.0, 1.0], [0.5, 0.0, 0.0, -1.0]])
    b = np.array([[0.5, 0.0, 0.0, 1.0], [0.5, 0.5, 0.0, 1.0]])
    e, g = slot_errors(a, b, "target", lo, hi, 0.2)
    assert e.tolist() == pytest.approx([0.5, 1.0])  # 0.5/2*2 m in x; 0.5/2*4 m in y
    assert g.tolist() == [True, False]
    e, _ = slot_errors(a, b, "delta", lo, hi, 0.2)
    assert e.tolist() == pytest.approx([0.1, 0.1])  # half a unit move of 0.2 m
    s = summarize([e, 2 * e], [g, g])
    assert s[0]["mean_m"] == pytest.approx(0.15) and s[1]["grip_agree"] == 0.0
    assert s[0]["within_1.5cm"] == 0.0 and len(s) == 2
    with pytest.raises(ValueError, match="frame"):
        slot_errors(a, b, "joint", lo, hi, 0.2)


@pytest.fixture(scope="module")
def world(tiny_dir):
    w = make_world(load_config(None, ROBOT), load_policy(tiny_dir))
    yield w
    w.close()


def _episodes(world, demonstrator, n):
    specs = [EpisodeSpec(t, seed) for seed, t in enumerate(world.task_ids("test", 0, n))]
    return world.episodes(world.policy, "test", specs, 64, demonstrator=demonstrator, chunk_size=n)


def test_the_experts_own_episodes_score_zero(world) -> None:
    """Played by the expert, every first reply equals the expert's: any pairing of an episode
    with another task or reset seed would show as an error."""
    trajs = _episodes(world, world.demonstrator(), 4)
    assert all(len(t.turns) > 1 for t in trajs)  # a later reply is not the first one
    out = score_first_replies(world, trajs)
    assert (out["scored"], out["malformed_first_reply"], out["chunk"]) == (4, 0, 2)
    assert [s["mean_m"] for s in out["slots"]] == [0.0, 0.0]
    # the same replies put on other tasks are wrong somewhere
    for t, other in zip(trajs, trajs[1:] + trajs[:1], strict=True):
        t.task_id, t.seed = other.task_id, other.seed
    moved = score_first_replies(world, trajs)
    assert moved["slots"][0]["mean_m"] > 0.01


class _Fixed:
    def __init__(self, reply: str) -> None:
        self.reply = reply

    def text(self, traj, obs, info):
        return self.reply


def test_malformed_first_replies_are_counted_not_scored(world) -> None:
    trajs = _episodes(world, _Fixed("move left please"), 2)
    out = score_first_replies(world, trajs)
    assert (out["episodes"], out["scored"], out["malformed_first_reply"]) == (2, 0, 2)
    assert out["slots"] == []


def test_cli_writes_the_json_with_its_command(tmp_path, tiny_dir) -> None:
    import json

    from vlagent.eval.action_error import main

    out = tmp_path / "e.json"
    args = ["--config", "robot_sft", "--model", str(tiny_dir), "--episodes", "2", "--out",
            str(out), "robot.image_size=32", "robot.action_frame=target", "run.threads=1"]  # fmt: skip
    assert main(args) == 0
    got = json.loads(out.read_text())
    assert got["episodes"] == 2 and got["scored"] + got["malformed_first_reply"] == 2
    assert got["command"] == "python -m vlagent.eval.action_error " + " ".join(args)
