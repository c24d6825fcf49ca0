"""Worlds on Ray env workers (``run.env_workers``): the grounding world's env factory pickles
and builds the same envs, reward stages keep the training envs local, a GRPO rollout on a worker
equals one on local envs, and ``World.close`` (reached from the screen worlds' ``close``) closes
the workers."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import pickle

import numpy as np
import pytest

from tests.vlagent.worlds.test_grounding_data import COLUMNS, write_jsonl, write_screens
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.worlds import make_world

try:
    import ray
except ImportError:
    ray = None

STAGES = "task.reward_stages=[{until_step: 5, weights: {format: 1.0}}]"


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return load_policy(str(tiny_dir))


def same_first_screen(factory, world, split, task_id) -> None:
    """An env from the unpickled factory resets to the screen of the world's own env."""
    remote = pickle.loads(pickle.dumps(factory))()
    obs, info = remote.reset(seed=0, options={"task_id": task_id})
    want, want_info = world.make_env(split).reset(seed=0, options={"task_id": task_id})
    assert np.array_equal(obs["image"], want["image"]) and obs["instruction"] == want["instruction"]
    assert info["target_box_norm"] == want_info["target_box_norm"]


def test_grounding_env_factory_pickles_and_stages_keep_training_envs_local(
    policy, tmp_path, caplog
):
    from gui.grounding import GroundingEnv

    world = make_world(load_config(None, []), policy)
    factory = world.env_factory("train")
    assert isinstance(factory, functools.partial) and factory.func is GroundingEnv
    world.sample(world.task_ids("train", 0, 1)[0])  # its cached screens do not travel
    assert factory.args[0] is not world.source and len(pickle.dumps(factory)) < 50_000
    same_first_screen(factory, world, "train", world.task_ids("train", 0, 1)[0])
    assert world.env_maker("train")().unwrapped.source is world.source  # env_workers=0: local

    staged = make_world(load_config(None, [STAGES, "run.env_workers=1"]), policy)
    assert staged.env_factory("train") is None and staged.env_factory("demo") is None
    assert staged.env_factory("val") is not None  # held-out envs always score with task.reward
    with caplog.at_level(logging.WARNING, logger="vlagent.worlds.base"):
        env = staged.env_maker("train")()  # no Ray: the staged training envs stay here
    assert isinstance(env, GroundingEnv) and "no env factory for train envs" in caplog.text

    path = write_jsonl(tmp_path / "d.jsonl", write_screens(tmp_path, n=4))
    columns = f"task.data.columns={json.dumps(COLUMNS)}"
    files = make_world(
        load_config(None, ["task.source=file", f"task.data.path={path}", columns]), policy
    )
    same_first_screen(files.env_factory("train"), files, "train", 2)


def test_screen_worlds_close_reaches_the_env_workers(policy, monkeypatch):
    closed = []
    monkeypatch.setattr(
        "vlagent.worlds.base.World.close_env_workers", lambda self: closed.append(self.cfg.world)
    )
    make_world(load_config("desktop_eval", []), policy).close()
    make_world(load_config("web_sft", ["web.tasks=[click-button]"]), policy).close()
    assert closed == ["desktop", "web"]


def record(traj) -> dict:
    """A trajectory as plain comparable values (its screen as bytes, the reward as its repr)."""
    return {
        "segments": [(s.prompt.key, s.ids, s.logprobs) for s in traj.segments],
        "turns": [dataclasses.asdict(x) for x in traj.turns],
        "episode": (traj.task_id, traj.status, traj.error, repr(traj.reward), traj.info),
        "screen": traj.extras["image"].tobytes(),
    }


@pytest.mark.skipif(ray is None, reason="ray is not installed (the `dist` extra)")
def test_grpo_rollout_on_ray_env_workers_equals_local_envs(policy, tmp_path):
    from vlagent.train.grpo import rollout_group

    common = ["grpo.group_size=2", "grpo.max_new_tokens=8", f"run.out_dir={tmp_path}"]
    cfg = load_config(None, common)
    local = make_world(cfg, policy)
    ids = local.task_ids("train", 0, 2)
    want = rollout_group(policy, local, cfg, ids, seed=5, version=0)

    cfg = load_config(None, [*common, "run.env_workers=1", "loop.env_threads=2"])
    world = make_world(cfg, policy)
    try:
        got = rollout_group(policy, world, cfg, ids, seed=5, version=0)
        pool = world._ray_pools["train"]
        assert pool.stats()["workers"] == 1 and pool.stats()["calls"] >= 8  # resets and steps
    finally:
        world.close()
    assert not world._ray_pools and pool.closed and not ray.is_initialized()
    assert len(got) == 4 and all(t.error is None for t in got)
    assert [record(t) for t in got] == [record(t) for t in want]
