"""Multi-step rollouts and credit without a model: group resets, crashes, broadcast, GiGPO."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gui.actions import Click, InvalidAction
from gui.apps.env import PhoneEnv, TaskBudgetLimit
from gui.apps.evaluate import POLICIES
from gui.apps.suite import parse_suite
from vlagent.apps.config import AppsGRPOConfig, HistoryConfig, TrajectoryRewardConfig
from vlagent.apps.credit import score_episodes, turn_credit, turn_rewards
from vlagent.apps.history import TurnContext, turn_context
from vlagent.apps.rollout import (
    Decision,
    Episode,
    EpisodeSpec,
    ScriptedActor,
    Turn,
    group_specs,
    run_episodes,
)
from vlagent.apps.tasks import toggle_suites
from vlagent.apps.update import turn_batch

TRAIN = parse_suite(toggle_suites(train_seeds=1, heldout_seeds=1)[0])
H = HistoryConfig()


def make_env():
    return TaskBudgetLimit(PhoneEnv(TRAIN))


class RecordingActor(ScriptedActor):
    """The random policy, remembering the first observation of every episode."""

    def __init__(self):
        super().__init__(POLICIES["random"])
        self.first: dict[int, dict] = {}

    def act(self, episodes, contexts, observations):
        for ep, obs in zip(episodes, observations, strict=True):
            self.first.setdefault(ep.uid, obs)
        return super().act(episodes, contexts, observations)


def test_group_members_start_from_the_same_state():
    actor = RecordingActor()
    specs = group_specs(TRAIN.ids[:2], group_size=4, seed=7)
    episodes = run_episodes(actor, make_env, specs, H)
    assert [e.spec.group_id for e in episodes] == [0] * 4 + [1] * 4
    for g in (0, 1):
        firsts = [actor.first[e.uid] for e in episodes if e.spec.group_id == g]
        for obs in firsts[1:]:
            assert np.array_equal(obs["image"], firsts[0]["image"])
            assert obs["a11y"] == firsts[0]["a11y"]
        members = [e for e in episodes if e.spec.group_id == g]
        assert len({e.turns[0].obs_key for e in members}) == 1
    assert not np.array_equal(actor.first[0]["image"], actor.first[4]["image"])


def test_history_keeps_last_k_images_and_older_turns_as_text():
    cfg = HistoryConfig(keep_images=2, max_text_turns=2)
    screens = [np.full((4, 4, 3), i, np.uint8) for i in range(4)]
    ctx = turn_context(
        "Turn on Wi-Fi.", screens, ["open_app Settings", "key back", "scroll down"], cfg
    )
    assert [int(im[0, 0, 0]) for im in ctx.images] == [2, 3]
    assert "2. key back; 3. scroll down" in ctx.text and "open_app" not in ctx.text
    assert ctx.text.startswith("Task: Turn on Wi-Fi.")


def test_oracle_episodes_succeed_and_are_scored():
    episodes = run_episodes(
        ScriptedActor(POLICIES["oracle"]), make_env, [EpisodeSpec(t) for t in TRAIN.ids[:5]], H
    )
    cfg = TrajectoryRewardConfig(success=1.0, format=0.2, invalid_action=-0.1)
    score_episodes(episodes, cfg)
    for ep in episodes:
        assert ep.success and ep.error is None and ep.status == "success"
        assert ep.reward == pytest.approx(1.2)
        assert sum(turn_rewards(ep, cfg)) == pytest.approx(ep.reward)


class CrashingEnv:
    """Delegates to a phone env but raises on its ``crash_at``-th step (adb gone)."""

    def __init__(self, crash_at: int):
        self.env, self.crash_at, self.steps = make_env(), crash_at, 0
        self.unwrapped = self.env.unwrapped

    def reset(self, **kw):
        return self.env.reset(**kw)

    def step(self, action):
        self.steps += 1
        if self.steps == self.crash_at:
            raise ConnectionError("adb: device offline")
        return self.env.step(action)

    def close(self):
        self.env.close()


def test_backend_crash_ends_only_that_episode():
    made = []

    def factory():
        made.append(CrashingEnv(crash_at=1 if not made else 99))
        return made[-1]

    specs = [EpisodeSpec(TRAIN.ids[0])] * 3
    episodes = run_episodes(ScriptedActor(POLICIES["oracle"]), factory, specs, H)
    assert "ConnectionError: adb: device offline" in episodes[0].error
    assert len(episodes[0].turns) == 1
    assert all(e.success and e.error is None for e in episodes[1:])
    score_episodes(episodes, TrajectoryRewardConfig())
    assert math.isnan(episodes[0].reward)
    credit = turn_credit(episodes, AppsGRPOConfig(), TrajectoryRewardConfig())
    assert all(e != 0 for e, _ in credit.rows)  # the crashed episode contributes no rows


def test_reset_failure_is_recorded():
    def broken():
        raise RuntimeError("emulator did not boot")

    (ep,) = run_episodes(ScriptedActor(POLICIES["oracle"]), broken, [EpisodeSpec("x")], H)
    assert ep.error.startswith("reset: RuntimeError") and ep.turns == []


# ------------------------------------------------------------------ constructed batches
def _turn(key: str, n_tokens: int, valid: bool = True) -> Turn:
    ctx = TurnContext((np.zeros((4, 4, 3), np.uint8),), "t")
    action = Click(point=(0.5, 0.5)) if valid else InvalidAction("bad")
    ids = list(range(10, 10 + n_tokens))
    return Turn(ctx, Decision("x", action, ids, [-0.5] * n_tokens), key, invalid=not valid)


def _episode(uid: int, group: int, keys: list[str], success: bool, lens: list[int]) -> Episode:
    ep = Episode(EpisodeSpec("t", 0, group), uid, success=success)
    ep.turns = [_turn(k, n) for k, n in zip(keys, lens, strict=True)]
    return ep


def test_episode_advantage_broadcast_to_every_turn_and_mask_on_policy_tokens():
    eps = [
        _episode(0, 0, ["a", "b", "c"], True, [3, 5, 2]),
        _episode(1, 0, ["a", "d"], False, [4, 1]),
        _episode(2, 1, ["e"], True, [2]),
        _episode(3, 1, ["e", "f"], True, [6, 3]),
    ]
    reward = TrajectoryRewardConfig(success=1.0, format=0.0, invalid_action=0.0)
    score_episodes(eps, reward)
    credit = turn_credit(eps, AppsGRPOConfig(scale_by_std=False), reward)
    assert credit.rows == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (3, 0), (3, 1)]
    # group 0: rewards (1, 0) -> centred (+0.5, -0.5) on every turn; group 1 constant -> 0
    assert credit.advantages.tolist() == [0.5, 0.5, 0.5, -0.5, -0.5, 0.0, 0.0, 0.0]
    batch = turn_batch(eps, credit, pad_id=0)
    lens = [3, 5, 2, 4, 1, 2, 6, 3]
    assert batch.completion_ids.shape == (8, 6)
    assert batch.mask.sum(dim=1).tolist() == lens  # exactly the generated tokens, no prompt
    for i, n in enumerate(lens):
        assert batch.mask[i, :n].eq(1).all() and batch.mask[i, n:].eq(0).all()
        assert batch.old_logp[i, n:].eq(0).all()
    assert torch.equal(batch.advantages, credit.advantages)


def test_gigpo_groups_turns_by_anchor_observation():
    eps = [
        _episode(0, 0, ["launcher", "settings"], True, [1, 1]),
        _episode(1, 0, ["launcher", "settings", "settings2"], False, [1, 1, 1]),
        _episode(2, 0, ["launcher", "contacts"], False, [1, 1]),
        _episode(3, 1, ["launcher"], True, [1]),
    ]
    reward = TrajectoryRewardConfig(success=1.0, format=0.0, invalid_action=0.0)
    score_episodes(eps, reward)
    cfg = AppsGRPOConfig(scale_by_std=False, gigpo_weight=0.5, gamma=1.0)
    credit = turn_credit(eps, cfg, reward)
    groups = credit.step_group.tolist()
    # (group 0, launcher) x3, (group 0, settings) x2, singletons, and (group 1, launcher) apart
    assert groups[0] == groups[2] == groups[5]
    assert groups[1] == groups[3]
    assert len(set(groups)) == 5 and groups[7] not in groups[:7]
    # step returns: launcher turns (1, 0, 0) -> step adv (2/3, -1/3, -1/3)
    assert credit.step[[0, 2, 5]].tolist() == pytest.approx([2 / 3, -1 / 3, -1 / 3])
    # settings turns (1, 0) -> (+0.5, -0.5); singleton groups -> 0
    assert credit.step[[1, 3]].tolist() == pytest.approx([0.5, -0.5])
    assert credit.step[[4, 6, 7]].tolist() == [0.0, 0.0, 0.0]
    # episode part: group 0 rewards (1, 0, 0), broadcast; combined = episode + 0.5 * step
    assert credit.episode.tolist() == pytest.approx([2 / 3] * 2 + [-1 / 3] * 5 + [0.0])
    assert torch.allclose(credit.advantages, credit.episode + 0.5 * credit.step)


def test_eval_suite_cli_with_the_oracle(tmp_path, capsys):
    import json

    threads = torch.get_num_threads()
    from vlagent.apps.tasks import write_suite
    from vlagent.cli import main

    train, _ = toggle_suites(train_seeds=1, heldout_seeds=1)
    train["tasks"] = train["tasks"][:3]
    path = write_suite(train, tmp_path / "suite.json")
    out = tmp_path / "eval"
    argv = ["eval-suite", "--baseline", "oracle", "--suite", str(path), "--out", str(out)]
    assert main([*argv, "--episodes", "2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["success_rate"] == 1.0 and summary["n_episodes"] == 6
    assert summary["per_app"] == {"Settings": 1.0} and summary["mean_steps"] == 2.0
    assert len(list((out / "trajectories").iterdir())) == 6
    torch.set_num_threads(threads)  # the CLI sets its own thread count
