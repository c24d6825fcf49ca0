"""Apps world through the one runner, with scripted turns (no sampling): group resets, history
prompts, env-reported rewards, crashes, and credit (broadcast per turn, GiGPO anchors)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gui.actions import parse_action
from gui.apps.env import PhoneEnv, TaskBudgetLimit
from gui.apps.evaluate import POLICIES
from vlagent.algo_config import GRPOConfig
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import EpisodeSpec, Limits, group_specs, run_episodes
from vlagent.rollout.tokens import content_key
from vlagent.rollout.trajectory import Prompt, Segment, Trajectory, Turn
from vlagent.train.credit import episode_rewards, turn_advantages
from vlagent.worlds import make_world
from vlagent.worlds.apps import SYSTEM_PROMPT, AppsAdapter, turn_text

APPS = [
    "world=apps",
    "apps.train_seeds=1",
    "apps.heldout_seeds=1",
    "apps.screen_width=64",
    "apps.screen_height=128",
]
LIMITS = Limits(max_turns=8, max_turn_tokens=256)


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return load_policy(tiny_dir)  # the runner needs its tokenizer; nothing is sampled here


@pytest.fixture(scope="module")
def world(policy):
    return make_world(load_config(None, APPS), policy)


class Scripted:
    """Demonstrator: a ``gui.apps`` scripted policy plays; its actions rendered by the codec.
    Remembers the first observation of every episode."""

    def __init__(self, world, name: str) -> None:
        self.world, self.name = world, name
        self.policies: dict[int, object] = {}
        self.first: dict[int, dict] = {}

    def text(self, traj, obs, info):
        key = id(traj)
        if key not in self.policies:
            task = self.world.suite("train").get(traj.task_id)
            self.policies[key] = POLICIES[self.name](task, traj.seed)
            self.first[key] = obs
        action = parse_action(self.policies[key].act(obs))
        return self.world.codec.render(action, traj.segment.prompt.frame)


def _run(world, specs, make_env=None, demonstrator=None):
    return run_episodes(
        world.policy,
        world.adapter(),
        make_env or (lambda: world.make_env("train")),
        specs,
        LIMITS,
        demonstrator=demonstrator or world.demonstrator(),
    )


def test_group_members_start_from_the_same_state(world):
    actor = Scripted(world, "random")
    ids = world.suite("train").ids[:2]
    trajs = _run(world, group_specs(ids, group_size=4, seeds=7), demonstrator=actor)
    assert [t.group_id for t in trajs] == [0] * 4 + [1] * 4
    assert all(t.error is None and t.turns for t in trajs)
    for g in (0, 1):
        members = [t for t in trajs if t.group_id == g]
        firsts = [actor.first[id(t)] for t in members]
        for obs in firsts[1:]:
            assert np.array_equal(obs["image"], firsts[0]["image"])
            assert obs["a11y"] == firsts[0]["a11y"]
        assert len({t.turns[0].obs_key for t in members}) == 1
        # identical first prompts are one Prompt object (one prefill per group)
        assert all(t.segments[0].prompt is members[0].segments[0].prompt for t in members)
    assert not np.array_equal(
        actor.first[id(trajs[0])]["image"], actor.first[id(trajs[4])]["image"]
    )
    assert trajs[0].segments[0].prompt is not trajs[4].segments[0].prompt  # other task


def test_history_keeps_last_k_images_and_older_turns_as_text(policy):
    cfg = load_config(None, [*APPS, "apps.keep_images=2", "apps.max_text_turns=2"]).apps
    text = turn_text("Turn on Wi-Fi.", ["open_app Settings", "key back", "scroll down"], cfg)
    assert "2. key back; 3. scroll down" in text and "open_app" not in text
    assert text.startswith("Task: Turn on Wi-Fi.")
    assert "Previous actions: none" in turn_text("Turn on Wi-Fi.", [], cfg)
    # the adapter's prompts: the last k screens as images, one new segment per turn
    adapter = AppsAdapter(policy.processor, None, cfg)
    screens = [np.full((128, 64, 3), 40 * i, np.uint8) for i in range(4)]
    traj = Trajectory("t", instruction="Turn on Wi-Fi.")
    adapter.start(traj, {"image": screens[0]}, {})
    for i, screen in enumerate(screens[1:]):
        traj.extras["past"].append(f"action {i}")
        adapter.observe(traj, {"image": screen}, {})
    assert [s.prompt.image_grid_thw.shape[0] for s in traj.segments] == [1, 2, 2, 2]
    past = [f"action {i}" for i in range(3)]
    want = content_key(screens[2:], turn_text("Turn on Wi-Fi.", past, cfg), SYSTEM_PROMPT)
    assert traj.segments[-1].prompt.key == want  # screens 2 and 3, the history as text


@pytest.mark.parametrize("success", [1.0, 2.5])
def test_oracle_episodes_succeed_and_rewards_are_the_envs(policy, success):
    world = make_world(load_config(None, [*APPS, f"apps.reward.success={success}"]), policy)
    ids = world.suite("train").ids[:5]
    trajs = _run(world, [EpisodeSpec(t) for t in ids])
    for t in trajs:
        assert t.success and t.error is None and t.status == "terminated"
        assert t.reward == pytest.approx(success)  # the env's success weight, nothing added
        assert t.reward_terms == {"success": success, "invalid_action": 0.0}
        for turn in t.turns:  # each turn carries what the env reported for its step
            assert turn.kind == "env" and turn.reward_terms == turn.info["reward_terms"]
            assert turn.reward == pytest.approx(sum(turn.reward_terms.values()))
        assert [x.reward_terms["success"] for x in t.turns[:-1]] == [0.0] * (len(t.turns) - 1)
    # an invalid action costs what the env says, per step
    (bad,) = run_episodes(
        world.policy,
        world.adapter(),
        lambda: world.make_env("train"),
        [EpisodeSpec(ids[0])],
        LIMITS,
        demonstrator=type("Garbage", (), {"text": lambda self, *a: "no action here"})(),
    )
    assert bad.status == "truncated" and not bad.success
    assert all(x.invalid and x.reward_terms["invalid_action"] == -0.1 for x in bad.turns)
    assert bad.reward == pytest.approx(-0.1 * len(bad.turns))


class CrashingEnv:
    """Delegates to a phone env but raises on its ``crash_at``-th step (adb gone)."""

    def __init__(self, env, crash_at: int):
        self.env, self.crash_at, self.steps = env, crash_at, 0
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


def test_backend_crash_ends_only_that_episode(world):
    made = []

    def factory():
        made.append(CrashingEnv(world.make_env("train"), crash_at=1 if not made else 99))
        return made[-1]

    task = world.suite("train").ids[0]
    trajs = _run(world, [EpisodeSpec(task)] * 3, make_env=factory)
    assert "ConnectionError: adb: device offline" in trajs[0].error
    assert trajs[0].status == "error" and len(trajs[0].turns) == 1
    assert all(t.success and t.error is None for t in trajs[1:])
    assert math.isnan(trajs[0].reward) and torch.isnan(episode_rewards(trajs))[0]
    adv = turn_advantages(trajs, GRPOConfig())
    assert adv[0] == [0.0]
    rows = build_rows(trajs, adv, world.policy.tokenizer.pad_token_id)
    assert 0 not in rows.traj_index.tolist()  # the crashed episode contributes no rows
    assert len(rows) == sum(len(t.turns) for t in trajs[1:])


def test_reset_failure_is_recorded(world):
    def broken():
        raise RuntimeError("emulator did not boot")

    (traj,) = _run(world, [EpisodeSpec("x")], make_env=broken)
    assert traj.error.startswith("reset: RuntimeError") and traj.turns == []
    assert traj.status == "error" and math.isnan(traj.reward)


def test_phone_env_is_what_the_world_builds(world):
    env = world.make_env("train")
    assert isinstance(env, TaskBudgetLimit) and isinstance(env.unwrapped, PhoneEnv)
    assert env.unwrapped.reward_config.success == 1.0


# ------------------------------------------------------------------ constructed batches
def _prompts() -> dict[str, Prompt]:
    """One prompt object per observation key (equal observations share a prompt)."""
    out = {}
    for i, key in enumerate(["a", "b", "c", "d", "e", "f", "launcher", "settings"]):
        out[key] = Prompt(
            input_ids=torch.tensor([100 + i, 7]),
            mm_token_type_ids=torch.zeros(2, dtype=torch.long),
            pixel_values=torch.zeros(0, 4),
            image_grid_thw=torch.zeros(0, 3, dtype=torch.long),
            frames=[],
            key=key,
        )
    return out


PROMPTS = _prompts()


def _episode(group: int, keys: list[str], success: bool, lens: list[int]) -> Trajectory:
    """An apps-style episode: one segment per turn; the env pays success on the last turn."""
    t = Trajectory("t", 0, group, success=success, status="terminated")
    for k, (key, n) in enumerate(zip(keys, lens, strict=True)):
        seg = Segment(PROMPTS.get(key) or PROMPTS["a"])
        start, end = seg.append(list(range(10, 10 + n)), policy=True, logprobs=[-0.5] * n)
        t.segments.append(seg)
        last = k == len(keys) - 1
        r = 1.0 if success and last else 0.0
        t.turns.append(Turn(k, start, end, "x", reward=r, reward_terms={"success": r}, obs_key=key))
    return t


def test_episode_advantage_broadcast_to_every_turn_and_mask_on_policy_tokens():
    eps = [
        _episode(0, ["a", "b", "c"], True, [3, 5, 2]),
        _episode(0, ["a", "d"], False, [4, 1]),
        _episode(1, ["e"], True, [2]),
        _episode(1, ["e", "f"], True, [6, 3]),
    ]
    adv = turn_advantages(eps, GRPOConfig(scale_by_std=False))
    # group 0: rewards (1, 0) -> centred (+0.5, -0.5) on every turn; group 1 constant -> 0
    assert adv == [[0.5] * 3, [-0.5] * 2, [0.0], [0.0, 0.0]]
    batch = build_rows(eps, adv, pad_id=0)
    lens = [3, 5, 2, 4, 1, 2, 6, 3]
    assert batch.ids.shape == (8, 6)
    assert batch.traj_index.tolist() == [0, 0, 0, 1, 1, 2, 3, 3]
    assert batch.group_ids.tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert batch.mask.sum(dim=1).tolist() == lens  # exactly the generated tokens, no prompt
    for i, n in enumerate(lens):
        assert batch.mask[i, :n].eq(1).all() and batch.mask[i, n:].eq(0).all()
        assert batch.old_logp[i, :n].eq(-0.5).all() and batch.old_logp[i, n:].eq(0).all()
    assert batch.advantages.tolist() == [0.5, 0.5, 0.5, -0.5, -0.5, 0.0, 0.0, 0.0]
    # rows on equal observations continue one shared prompt
    assert len(batch.prompts) == 6 and batch.row_prompt[0] == batch.row_prompt[3]
    assert batch.row_prompt[5] == batch.row_prompt[6]


def test_gigpo_gives_turns_on_equal_observations_step_level_advantages():
    eps = [
        _episode(0, ["launcher", "settings"], True, [1, 1]),
        _episode(0, ["launcher", "settings", "settings2"], False, [1, 1, 1]),
        _episode(0, ["launcher", "contacts"], False, [1, 1]),
        _episode(1, ["launcher"], True, [1]),
    ]
    g0 = GRPOConfig(scale_by_std=False)
    g = GRPOConfig(scale_by_std=False, gigpo_weight=0.5, gamma=1.0)
    episode = [x for a in turn_advantages(eps, g0) for x in a]
    combined = [x for a in turn_advantages(eps, g) for x in a]
    # episode part: group 0 rewards (1, 0, 0), broadcast; group 1 alone -> 0
    assert episode == pytest.approx([2 / 3] * 2 + [-1 / 3] * 5 + [0.0])
    step = [(c - e) / 0.5 for c, e in zip(combined, episode, strict=True)]
    # (group 0, launcher) turns 0, 2, 5: returns (1, 0, 0) -> (2/3, -1/3, -1/3)
    assert [step[i] for i in (0, 2, 5)] == pytest.approx([2 / 3, -1 / 3, -1 / 3])
    # (group 0, settings) turns 1, 3: returns (1, 0) -> (+0.5, -0.5)
    assert [step[i] for i in (1, 3)] == pytest.approx([0.5, -0.5])
    # singletons (settings2, contacts) and (group 1, launcher), apart from group 0's -> 0
    assert [step[i] for i in (4, 6, 7)] == pytest.approx([0.0, 0.0, 0.0])
    # a crashed member takes no part: its turns get 0 and the others' anchors ignore it
    crashed = _episode(0, ["launcher"], True, [1])
    crashed.error = "step 1: ConnectionError: gone"
    with_crash = turn_advantages([*eps, crashed], g)
    assert with_crash[-1] == [0.0]
    assert [x for a in with_crash[:-1] for x in a] == pytest.approx(combined)
    # grpo.episode_weight scales the episode part: 0 leaves GiGPO's step groups alone
    only_step = [
        x for a in turn_advantages(eps, GRPOConfig(**{**vars(g), "episode_weight": 0.0})) for x in a
    ]
    assert only_step == pytest.approx([0.5 * x for x in step])
    doubled = turn_advantages(eps, GRPOConfig(**{**vars(g), "episode_weight": 2.0}))
    assert [x for a in doubled for x in a] == pytest.approx(
        [2 * e + 0.5 * s for e, s in zip(episode, step, strict=True)]
    )


def test_episode_weight_zero_needs_gigpo():
    from vlagent.errors import ConfigError

    with pytest.raises(ConfigError, match="grpo.episode_weight"):
        GRPOConfig(episode_weight=0.0)
    with pytest.raises(ConfigError, match="grpo.episode_weight"):
        GRPOConfig(episode_weight=-1.0, gigpo_weight=1.0)


def test_eval_of_a_suite_file_with_the_oracle(policy, tmp_path):
    """The oracle on a suite JSON file (``apps.eval_suite``), two episodes per task: success,
    turns, per-template success, and the saved pictures and records."""
    import json

    from vlagent.eval.evaluate import report_of
    from vlagent.worlds.apps_tasks import toggle_suites, write_suite

    train, _ = toggle_suites(train_seeds=1, heldout_seeds=1)
    train["tasks"] = train["tasks"][:3]
    path = write_suite(train, tmp_path / "suite.json")
    suites = [f"apps.train_suite={path}", f"apps.eval_suite={path}"]  # the oracle plays demo
    world = make_world(load_config(None, [*APPS, *suites]), policy)
    ids = list(world.suite("test").ids)
    assert len(ids) == 3 and ids == list(world.suite("demo").ids)
    trajs = run_episodes(
        policy,
        world.adapter(),
        lambda: world.make_env("test"),
        [EpisodeSpec(t, seed) for seed in range(2) for t in ids],
        LIMITS,
        demonstrator=world.demonstrator(),
    )
    summary = report_of(world, trajs).summary()
    assert summary["success_rate"] == 1.0 and summary["n"] == 6
    assert summary["success/set_toggles"] == 1.0 and summary["mean_turns"] == 2.0
    assert summary["format_rate"] == 1.0 and summary["invalid_action_rate"] == 0.0
    world.save_pictures(trajs, tmp_path / "pictures", "eval")
    names = sorted(p.name for p in (tmp_path / "pictures").iterdir())
    assert names == [f"eval_{k:02d}.{ext}" for k in range(6) for ext in ("json", "png")]
    record = json.loads((tmp_path / "pictures" / "eval_00.json").read_text())
    assert record["success"] and len(record["turns"]) == 2


def test_chain_suites_hold_out_unseen_combinations_and_seeds(policy):
    """``apps.train_suite=chains``: 3-5 switch tasks; held-out combinations and phone seeds never
    appear in training, and the first demonstrated tasks are distinct combinations."""
    from vlagent.worlds.apps_tasks import chain_suites

    train, heldout = chain_suites(train_seeds=3, heldout_seeds=4)
    combo = lambda t: tuple(sorted(t["params"]["toggles"].items()))  # noqa: E731
    assert len(heldout["tasks"]) == 384 and len(train["tasks"]) == 288
    assert not {combo(t) for t in train["tasks"]} & {combo(t) for t in heldout["tasks"]}
    assert not {t["seed"] for t in train["tasks"]} & {t["seed"] for t in heldout["tasks"]}
    assert len({combo(t) for t in train["tasks"][:96]}) == 96
    assert {len(t["params"]["toggles"]) for t in heldout["tasks"]} == {3, 4, 5}
    cfg = load_config(None, [*APPS, "apps.train_suite=chains", "apps.eval_suite=chains"])
    world = make_world(cfg, policy)
    assert world.num_tasks("train") == 96 and world.num_tasks("test") == 96
    first = world.task(world.task_ids("test", 0, 1)[0])
    assert (
        first.task_id == heldout["tasks"][0]["id"]
        and first.max_steps == len(first.params.toggles) + 3
    )
