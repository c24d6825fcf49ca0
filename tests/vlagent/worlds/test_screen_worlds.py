"""Worlds ``desktop`` (OSWorld-format tasks on the local X desktop) and ``web`` (MiniWoB++ in
headless Chromium) through the one runner: the scripted oracles' demonstrations go through
the codec and the adapter and succeed, rewards are the env's, envs are reused from a pool,
held-out ids never meet training ids, and SFT then GRPO run in the web world."""

from __future__ import annotations

import pytest

from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import EpisodeSpec
from vlagent.worlds import make_world
from vlagent.worlds.pool import EnvPool


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return load_policy(tiny_dir)


def _desktop_ready() -> None:
    from sim.desktop import missing_requirements

    missing = missing_requirements()
    if missing:
        pytest.skip("desktop backend unavailable: " + "; ".join(missing))


def _web_ready() -> None:
    from gui.web.errors import find_browser

    try:
        find_browser()
    except Exception as exc:  # noqa: BLE001 - any missing piece skips with its message
        pytest.skip(str(exc))


class _Counting:
    def __init__(self) -> None:
        self.made = 0
        self.closed = 0

    def make(self):
        import gymnasium

        self.made += 1
        outer = self

        class Env(gymnasium.Env):
            def close(self):
                outer.closed += 1

        return Env()


def test_pool_reuses_returned_envs_and_closes_all_once():
    c = _Counting()
    pool = EnvPool(c.make)
    a, b = pool.lease(), pool.lease()
    assert c.made == 2
    a.close()
    a.close()  # idempotent: returned once
    c_env = pool.lease()
    assert c.made == 2 and c_env.env is a.env
    b.close()
    c_env.close()
    pool.close()
    assert c.closed == 2
    pool.close()
    assert c.closed == 2


@pytest.mark.display
def test_desktop_oracle_demonstrations_succeed_through_the_adapter(policy):
    _desktop_ready()
    cfg = load_config("desktop_eval", ["desktop.screen_width=128", "desktop.screen_height=96"])
    world = make_world(cfg, policy)
    try:
        ids = ["local-chmod-644", "local-editor-append", "local-infeasible-bluetooth"]
        assert set(ids) <= set(world.task_ids("demo", 0, world.num_tasks("demo")))
        trajs = world.episodes(
            policy,
            "demo",
            [EpisodeSpec(t, 0, i) for i, t in enumerate(ids)],
            256,
            demonstrator=world.demonstrator(),
            chunk_size=1,
        )
        assert [t.error for t in trajs] == [None] * 3
        assert [t.success for t in trajs] == [True] * 3
        assert [t.reward for t in trajs] == [pytest.approx(1.0)] * 3
        assert trajs[0].extras["screens"][0].shape == (96, 128, 3)
        assert trajs[2].turns[-1].action["type"] == "fail"
        assert world._pools["train"].size() == 1  # one X display served all three episodes
    finally:
        world.close()


def test_desktop_world_leaves_out_tasks_that_cannot_run(policy):
    cfg = load_config("desktop_eval", ["desktop.eval_suite=os"])
    world = make_world(cfg, policy)
    gone = world.unavailable()
    ids = world.task_ids("test", 0, world.num_tasks("test"))
    assert "37887e8c-da15-4192-923c-08fa390a176d" in gone  # downloads its setup files
    assert "4d2b519e-e872-4100-8ea3-fe71ab0f9133" in gone  # no evaluator
    assert not set(gone) & set(ids)
    assert len(ids) + len(gone) == 24
    assert world.summarize([])["tasks_unavailable"] == len(gone)


@pytest.mark.browser
def test_web_oracle_demonstrations_succeed_and_splits_are_disjoint(policy):
    _web_ready()
    tasks = "web.tasks=[click-button,focus-text]"
    world = make_world(load_config("web_sft", [tasks]), policy)
    try:
        train = set(world.task_ids("train", 0, 50))
        test = set(world.task_ids("test", 0, 50))
        assert not train & test
        ids = world.task_ids("demo", 0, 4)
        trajs = world.episodes(
            policy,
            "demo",
            [EpisodeSpec(t, 0, i) for i, t in enumerate(ids)],
            256,
            demonstrator=world.demonstrator(),
            chunk_size=2,
        )
        assert [t.success for t in trajs] == [True] * 4, [t.error for t in trajs]
        assert all(t.reward == pytest.approx(1.0) for t in trajs)
        assert world._pools["demo"].size() == 2  # two concurrent episodes, two browsers
        assert "page" in trajs[0].turns[0].info  # demonstration envs carry the DOM
    finally:
        world.close()


@pytest.mark.browser
def test_sft_then_grpo_run_in_the_web_world(tiny_dir, tmp_path):
    _web_ready()
    from vlagent.train.grpo import run_grpo
    from vlagent.train.sft import run_sft

    common = [
        "web.tasks=[click-button]",
        "run.progress=false",
        "run.samples_every=0",
        "run.checkpoint_every=0",
        "eval.monitor_screens=2",
        "eval.every=2",
        "model.build_tiny=false",
    ]
    sft_cfg = load_config(
        "web_sft",
        [
            *common,
            f"model.path={tiny_dir}",
            f"run.out_dir={tmp_path / 'sft'}",
            "sft.steps=2",
            "sft.num_demos=2",
            "sft.batch_size=2",
        ],  # fmt: skip
    )
    sft = run_sft(sft_cfg)
    assert sft.steps == 2
    grpo_cfg = load_config(
        "web_grpo",
        [
            *common,
            f"model.path={sft.final_dir}",
            f"run.out_dir={tmp_path / 'grpo'}",
            "grpo.steps=1",
            "grpo.prompts_per_step=1",
            "grpo.group_size=2",
            "grpo.dynamic_sampling=false",
            "loop.max_turns=2",
        ],  # fmt: skip
    )
    grpo = run_grpo(grpo_cfg)
    assert grpo.steps == 1
