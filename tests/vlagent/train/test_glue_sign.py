"""The sign of the update in every recipe: one GRPO step on a fixed batch raises the log-prob
of the samples that scored above their group and lowers the others.

Each recipe's packaged config (``grpo``: grounding, single turn; ``zoom_grpo``: zoom, multi-turn
with tool calls; ``apps_grpo``: phone apps, one row per turn, with and without GiGPO;
``robot_grpo``: push in action chunks under the action grammar, one row per turn) drives
``train_step`` on trajectories its own world produced. The rewards are set by the test (2
tasks x 4 episodes, a fixed pattern of 1s and 0s on each episode's last turn), so the
direction each row must move is known without the code under test: up for an episode above
its task's mean reward, down below it. A sign flipped anywhere between the rewards and the
optimizer (credit, GiGPO's step level, the rows' broadcast, the loss) turns every check around.
"""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import group_specs, run_episodes
from vlagent.train.common import Timer
from vlagent.train.grpo import train_step
from vlagent.train.update import recompute_logprobs
from vlagent.worlds import make_world

GROUPS, G = 2, 4
REWARDS = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]  # per episode, in spec order
APPS = [
    "apps.train_seeds=1",
    "apps.heldout_seeds=1",
    "apps.screen_width=64",
    "apps.screen_height=128",
    "grpo.max_new_tokens=6",
]
RECIPES = {
    "grounding": ("grpo", ["grpo.max_new_tokens=12"]),
    # penalize: the untrained model rarely ends a turn, and masked episodes train nothing
    "zoom": (
        "zoom_grpo",
        [
            "task.level=basic",
            f"task.pixel_budget={128 * 96}",
            "loop.max_episode_tokens=100",
            "loop.over_limit=penalize",
            "grpo.max_new_tokens=40",
        ],
    ),
    "apps": ("apps_grpo", APPS),
    "apps_gigpo": ("apps_grpo", [*APPS, "grpo.gigpo_weight=0.5"]),
    # push with 4-action chunks under the action grammar: 2 turns an episode, one row each,
    # scored by the grammar head (the learner path only the constrained robot world takes)
    "robot": (
        "robot_grpo",
        [
            "robot.task=push",
            "robot.image_size=64",
            "robot.cubes=1",
            "robot.zones=1",
            "robot.max_steps=8",
            "robot.chunk=4",
            "robot.action_style=padded",
            "robot.constrained=true",
            "grpo.max_new_tokens=80",
            "grpo.minibatches=1",
        ],
    ),
}
ZOOM = '<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [0, 0, 500, 500]}}</tool_call>'


class ZoomFirstInOddEpisodes:
    """Zoom world: the 2nd, 4th, ... episode calls the tool first, so episodes have 1 or 2
    turns (and 1 or 2 images); every other turn is sampled."""

    def __init__(self) -> None:
        self.order: dict[int, int] = {}

    def text(self, traj, obs, info):
        index = self.order.setdefault(id(traj), len(self.order))
        return ZOOM if index % 2 and not traj.turns else None


def _tasks(world, recipe: str) -> list:
    if recipe.startswith("apps"):  # single-toggle tasks: short episodes
        return [t for t in world.suite("train").ids if t.count("_o") == 1][:GROUPS]
    return world.task_ids("train", 0, GROUPS)


def _batch(policy, tiny_dir, recipe: str):
    """The recipe's config, and its world's episodes (GROUPS tasks x G) with REWARDS."""
    name, overrides = RECIPES[recipe]
    cfg = load_config(
        name,
        [
            f"model.path={tiny_dir}",
            f"grpo.prompts_per_step={GROUPS}",
            f"grpo.group_size={G}",
            *overrides,
        ],
    )
    world = make_world(cfg, policy)
    g = cfg.grpo
    trajs = run_episodes(  # as grpo.rollout_group does, plus the zoom world's forced tool call
        policy,
        world.adapter(),
        lambda: world.make_env("train"),
        group_specs(_tasks(world, recipe), g.group_size),
        world.limits(g.max_new_tokens),
        temperature=g.temperature,
        seed=0,
        demonstrator=ZoomFirstInOddEpisodes() if recipe == "zoom" else None,
        shared_prefix=g.shared_prefix,
    )
    assert all(t.error is None and not t.masked and t.turns for t in trajs)
    for t, r in zip(trajs, REWARDS, strict=True):
        for turn in t.turns:
            turn.reward, turn.reward_terms = 0.0, {}
        t.turns[-1].reward, t.turns[-1].reward_terms = r, {"test": r}
    return cfg, trajs


def _on_policy(policy, trajs, g) -> None:
    """Behaviour log-probs of every policy token := the current policy's (forced turns carry
    0), so every ratio is 1 and no clip hides a gradient."""
    rows = build_rows(trajs, None, policy.tokenizer.pad_token_id)
    logp = recompute_logprobs(policy, rows, g)
    for r in range(len(rows)):
        seg = trajs[int(rows.traj_index[r])].segments[int(rows.segment_index[r])]
        lp = logp[r, : len(seg)].tolist()
        seg.logprobs = [x if m > 0 else 0.0 for x, m in zip(lp, seg.loss_mask, strict=True)]


def _direction(trajs) -> list[float]:
    """Per episode: +1 above its task's mean reward, -1 below (computed here, by task id)."""
    out = []
    for t in trajs:
        group = [u.reward for u in trajs if u.task_id == t.task_id]
        centred = t.reward - sum(group) / len(group)
        assert abs(centred) > 0.1  # every episode has a direction
        out.append(math.copysign(1.0, centred))
    return out


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_one_step_raises_better_samples_and_lowers_worse(tiny_dir, recipe):
    policy = load_policy(tiny_dir)
    cfg, trajs = _batch(policy, tiny_dir, recipe)
    g = cfg.grpo
    _on_policy(policy, trajs, g)
    direction = _direction(trajs)
    rows = build_rows(trajs, None, policy.tokenizer.pad_token_id)
    owner = [i for i, t in enumerate(trajs) for s in t.segments if any(s.loss_mask)]
    assert rows.traj_index.tolist() == owner  # row r holds episode owner[r]
    if recipe == "zoom":
        assert sorted({len(t.turns) for t in trajs}) == [1, 2]
    if recipe.startswith("apps") or recipe == "robot":
        assert len(rows) > len(trajs)  # several turns (rows) per episode
    if recipe == "robot":
        assert policy.grammar is not None

    def seq_logp() -> torch.Tensor:  # [N] each row's summed log-prob of its policy tokens
        return (recompute_logprobs(policy, rows, g) * rows.mask).sum(dim=1)

    before = seq_logp()
    opt = torch.optim.SGD(policy.model.parameters(), lr=1e-2)
    stats = train_step(policy, trajs, g, opt, None, None, 0, Timer())
    assert stats["optimizer_steps"] == 1 and stats["adv_abs_mean"] > 0.5
    assert stats["ratio_mean"] == pytest.approx(1.0, abs=1e-4)
    delta = seq_logp() - before
    moved = [direction[owner[r]] * float(delta[r]) for r in range(len(rows))]
    wrong = [(r, owner[r], direction[owner[r]], float(delta[r])) for r, m in enumerate(moved)]
    bad = [w for w, m in zip(wrong, moved, strict=True) if m <= 0]
    if recipe == "robot":
        # the grammar leaves 10 digits (3 for a number's first) at each sampled position, so
        # rows share tokens far more than free text does; a step that raises a + row's digits
        # and lowers a - row's can move a row with the opposite mix against its own sign (2 of
        # the 16 here). A flipped sign turns ~all rows, misassigned credit about half.
        assert len(bad) <= len(moved) // 4 and sum(moved) > 0, bad
    else:
        assert not bad, bad
