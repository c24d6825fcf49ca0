"""Rewards and advantages land on the sample they belong to (no group <-> sample index mix-up).

A GRPO batch is indexed three ways: episodes (specs order), groups (``group_id``) and rows
(``RowBatch.traj_index``). Here the three never coincide: group members are interleaved
irregularly (screens A, B, A, C, B, C, C, ...), group ids are not positions, the runner's
chunks split groups, and two episodes (one masked, one crashed) give no rows, so row r is not
episode r. Every expectation is computed from the screen each episode was given (a fresh env,
a fresh prompt) and from task ids, never from the indices under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import vlagent.train.grpo as grpo
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import EpisodeSpec, run_episodes
from vlagent.rollout.tokens import encode_prompt
from vlagent.train.common import Timer
from vlagent.train.keys import KeyStream
from vlagent.worlds import make_world

SMALL = [
    "grpo.max_new_tokens=24",  # the short SFT writes a whole answer in about 16 tokens
    "eval.every=0",
    "run.progress=false",
    "run.samples_every=0",
]


def _grpo_by_task(trajs, valid) -> list[float]:
    """GRPO advantages computed here: (r - mean) / (population std + 1e-6) over the valid
    episodes of the same task; 0 for invalid episodes and constant groups."""
    out = []
    for i, t in enumerate(trajs):
        group = [u.reward for j, u in enumerate(trajs) if valid[j] and u.task_id == t.task_id]
        if not valid[i] or max(group) - min(group) < 1e-9:
            out.append(0.0)
            continue
        mean = sum(group) / len(group)
        std = math.sqrt(sum((x - mean) ** 2 for x in group) / len(group))
        out.append((t.reward - mean) / (std + 1e-6))
    return out


def _spy_update(monkeypatch) -> list:
    """Record the UpdateBatch that train_step hands to the update."""
    seen = []
    real = grpo.policy_update

    def spy(policy, batch, *args, **kwargs):
        seen.append(batch)
        return real(policy, batch, *args, **kwargs)

    monkeypatch.setattr(grpo, "policy_update", spy)
    return seen


def test_interleaved_episodes_keep_their_screen_reward_and_advantage(sft_dir, monkeypatch):
    policy = load_policy(sft_dir)
    cfg = load_config("grpo", [f"model.path={sft_dir}", *SMALL])
    world = make_world(cfg, policy)
    tasks = world.task_ids("train", 700, 3)
    group_of = dict(zip(tasks, (11, 4, 7), strict=True))  # group ids that are not positions
    screen_of = dict(zip("ABC", tasks, strict=True))
    order = "ABACBCCABACB"  # 4 episodes per screen, irregularly interleaved
    specs = [EpisodeSpec(screen_of[c], 0, group_of[screen_of[c]]) for c in order]
    trajs = run_episodes(
        policy,
        world.adapter(),
        lambda: world.make_env("train"),
        specs,
        world.limits(cfg.grpo.max_new_tokens),
        seed=5,
        chunk_size=5,  # chunks split groups
    )
    assert [t.task_id for t in trajs] == [s.task_id for s in specs]
    trajs[0].mask_out()  # e.g. an over-limit episode: no loss, no advantage
    trajs[1].error, trajs[1].status = "step 0: RuntimeError: device gone", "error"
    valid = [not t.masked and t.error is None for t in trajs]
    tok = policy.tokenizer
    for t in trajs:
        seg = t.segments[0]
        screen = world.sample(t.task_id)
        fresh = encode_prompt(policy.processor, [screen.image], screen.instruction)
        assert np.array_equal(t.extras["image"], screen.image), t.task_id
        assert torch.equal(seg.prompt.input_ids, fresh.input_ids), t.task_id
        assert torch.equal(seg.prompt.pixel_values, fresh.pixel_values), t.task_id
        if t.error is not None:
            continue
        # its own tokens, decoded afresh, scored by a fresh env on its own screen
        (turn,) = t.turns
        text = tok.decode(seg.ids[turn.start : turn.end], skip_special_tokens=True)
        env = world.make_env("train")
        env.reset(seed=0, options={"task_id": t.task_id})
        _, reward, *_ = env.step(world.codec.parse(text, fresh.frame).to_action())
        assert t.reward == pytest.approx(reward, abs=1e-9), (t.task_id, text)
    rewards = [t.reward for t, ok in zip(trajs, valid, strict=True) if ok]
    assert len(set(rewards)) > 4, f"rewards barely vary, the test has no power: {rewards}"

    rows = build_rows(trajs, None, tok.pad_token_id)
    owner = [i for i, ok in enumerate(valid) if ok]  # one row per valid single-turn episode
    assert rows.traj_index.tolist() == owner
    assert rows.group_ids.tolist() == [group_of[trajs[i].task_id] for i in owner]
    for r, i in enumerate(owner):
        n = len(trajs[i].segments[0].ids)
        assert rows.ids[r, :n].tolist() == trajs[i].segments[0].ids
    # each row's tokens were sampled from its own screen: teacher forcing reproduces them
    again = grpo.recompute_logprobs(policy, rows, cfg.grpo)
    assert torch.allclose(again * rows.mask, rows.old_logp, atol=1e-4)

    seen = _spy_update(monkeypatch)
    opt = torch.optim.SGD(policy.model.parameters(), lr=0.0)
    grpo.train_step(policy, trajs, cfg.grpo, opt, None, None, 0, Timer())
    (batch,) = seen
    want = _grpo_by_task(trajs, valid)
    assert batch.rows.traj_index.tolist() == owner
    got = batch.rows.advantages.tolist()
    assert got == pytest.approx([want[i] for i in owner], abs=1e-4)
    assert sum(abs(a) > 0.1 for a in got) >= 4


def test_resampled_rounds_give_each_task_its_own_group(sft_dir, monkeypatch):
    """Dynamic sampling: groups kept from later rounds never share a group id with earlier
    ones; a task's group id is its position in the draw order over all rounds."""
    policy = load_policy(sft_dir)
    cfg = load_config(
        "grpo",
        [
            f"model.path={sft_dir}",
            *SMALL,
            "task.reward={format: 1.0}",  # binary: many groups are constant and dropped
            "grpo.prompts_per_step=2",
            "grpo.group_size=2",
            "grpo.dynamic_sampling=true",
            "grpo.max_resample_rounds=4",
        ],
    )
    world = make_world(cfg, policy)
    # a batch whose kept groups come from two rounds; steps differ so sampling seeds do too
    for step, cursor in enumerate(range(500, 1500, 100)):
        trajs, stats = grpo.collect(policy, world, cfg, step, KeyStream(world, cursor=cursor))
        drawn = world.task_ids("train", cursor, 2 * int(stats["dynamic_sampling/rounds"]))
        assert stats["dynamic_sampling/target_reached"] == 1.0 and len(trajs) == 4
        assert [t.group_id for t in trajs] == [drawn.index(t.task_id) for t in trajs]
        if len({t.group_id // 2 for t in trajs}) == 2:
            break
    else:
        pytest.fail("every batch kept groups of one round only: the test has no power")
    seen = _spy_update(monkeypatch)
    opt = torch.optim.SGD(policy.model.parameters(), lr=0.0)
    grpo.train_step(policy, trajs, cfg.grpo, opt, None, None, 0, Timer())
    (batch,) = seen
    want = _grpo_by_task(trajs, [True] * len(trajs))
    assert batch.rows.traj_index.tolist() == list(range(len(trajs)))
    assert batch.rows.advantages.tolist() == pytest.approx(want, abs=1e-4)
    assert all(abs(a) > 0.5 for a in want)
