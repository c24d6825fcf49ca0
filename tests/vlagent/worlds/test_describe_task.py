"""``task.describe_mix``: a seeded fraction of training tasks ask "What is at (x, y)?" about
the target and are answered with its description; held-out screens never do."""

from __future__ import annotations

import pytest

from gui.grounding.env import GroundingEnv
from gui.grounding.sources import SyntheticSource
from rewards import RewardSpec
from sim.screens.instruction import refer
from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.worlds import make_world


def _first_describe(src: SyntheticSource) -> int:
    return next(k for k in range(1000) if src.describes(k))


def test_source_turns_a_seeded_fraction_into_describe_tasks():
    src = SyntheticSource("shapes", describe_mix=0.3)
    share = sum(src.describes(k) for k in range(3000)) / 3000
    assert 0.26 < share < 0.34
    assert [src.describes(k) for k in range(50)] == [
        SyntheticSource("shapes", describe_mix=0.3).describes(k) for k in range(50)
    ]
    k = _first_describe(src)
    plain = SyntheticSource("shapes").sample(k)
    ex = src.sample(k)
    assert (ex.image == plain.image).all() and ex.target_box_norm == plain.target_box_norm
    target = next(e for e in ex.elements if e.box_norm == ex.target_box_norm)
    assert ex.meta["describe_answer"] == f"the {target.colour} {target.shape}"
    x0, y0, x1, y1 = ex.target_box_norm
    assert ex.meta["describe_point"] == pytest.approx(((x0 + x1) / 2, (y0 + y1) / 2))
    assert not SyntheticSource("shapes").describes(k)
    with pytest.raises(ValueError, match="describe_mix"):
        SyntheticSource("shapes", describe_mix=1.0)


def test_refer_names_what_the_element_looks_like():
    ex = SyntheticSource("shapes").sample(3)
    assert {refer(e) for e in ex.elements} == {f"the {e.colour} {e.shape}" for e in ex.elements}


def test_env_scores_the_reply_words():
    src = SyntheticSource("shapes", describe_mix=0.5)
    k = _first_describe(src)
    answer = src.sample(k).meta["describe_answer"]
    env = GroundingEnv(src, RewardSpec.from_dict({"point_in_box": 1.0}))
    replies = {
        f"  {answer.upper()}. ": 1.0,
        answer.replace("the ", "the big "): 0.0,
        '{"point_2d": [500, 500]}': 0.0,
    }
    for reply, want in replies.items():
        env.reset(options={"task_id": k})
        _, reward, done, _, info = env.step({"completion": reply})
        assert (reward, info["success"], done) == (want, want == 1.0, True)
    env.reset(options={"task_id": k})
    info = env.step({"point": (0.5, 0.5)})[4]
    assert info["invalid_action"] and not info["success"]


def test_world_asks_in_model_space_and_demonstrates_the_answer(tiny_dir):
    from vlagent.train.sft import demonstrations

    cfg = load_config(
        None,
        [f"model.path={tiny_dir}", "task.level=shapes", "task.describe_mix=0.5", "run.seed=0"],
    )
    policy = load_policy(tiny_dir)
    world = make_world(cfg, policy)
    ids = world.task_ids("train", 0, 12)
    kinds = [world.source.describes(k) for k in ids]
    assert any(kinds) and not all(kinds)
    trajs = demonstrations(policy, world, ids)
    assert len(trajs) == len(ids)  # every demonstration, describe or click, succeeds
    for traj, is_describe in zip(trajs, kinds, strict=True):
        sample = world.sample(traj.task_id)
        reply = traj.turns[0].text
        if is_describe:
            x, y = sample.meta["describe_point"]
            frame = traj.segments[0].prompt.frame
            asked = world.codec.point_text((x, y), frame)
            assert asked == f"({round(x * 1000)}, {round(y * 1000)})"  # qwen3: 0-1000
            prompt = policy.tokenizer.decode(traj.segments[0].prompt.input_ids)
            assert f"What is at {asked}?" in prompt
            assert reply == sample.meta["describe_answer"]
        else:
            assert reply.startswith('{"point_2d"')
    held = [world.sample(k) for k in world.task_ids("test", 0, 40)]
    assert not any("describe_answer" in s.meta for s in held)
    remote = world.env_factory("train")
    assert remote is not None and remote.args[0].describe_mix == 0.5


def test_config_and_zoom_world_refuse_describe(tiny_dir):
    with pytest.raises(ConfigError, match="describe_mix"):
        load_config(None, ["task.describe_mix=1.5"])
    with pytest.raises(ConfigError, match="synthetic"):
        load_config(None, ["task.describe_mix=0.2", "task.source=screenspot"])
    cfg = load_config(None, [f"model.path={tiny_dir}", "world=zoom", "task.describe_mix=0.2"])
    with pytest.raises(ConfigError, match="single-turn"):
        make_world(cfg, load_policy(tiny_dir))
