"""The seam: a new world is an env plus an adapter (defined here), trained by the one pipeline."""

from __future__ import annotations

import string

import gymnasium
import numpy as np
import torch

from tests.env_contract import check_contract
from vlagent.config import load_config
from vlagent.rollout.runner import Decision
from vlagent.rollout.tokens import PromptCache
from vlagent.rollout.trajectory import Segment
from vlagent.worlds import World, register_world

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 220)}


class ColourEnv(gymnasium.Env):
    """Name the colour of the screen: success 1, a colour word earns format 0.1."""

    def __init__(self) -> None:
        self.observation_space = gymnasium.spaces.Dict(
            {
                "image": gymnasium.spaces.Box(0, 255, (56, 56, 3), np.uint8),
                "instruction": gymnasium.spaces.Text(64, charset=string.ascii_letters + " ?"),
            }
        )
        self.action_space = gymnasium.spaces.Text(32, charset=string.ascii_letters)
        self.answer = "red"

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        task = (options or {}).get("task_id", int(self.np_random.integers(1000)))
        self.answer = list(COLOURS)[int(task) % 3]
        image = np.full((56, 56, 3), COLOURS[self.answer], np.uint8)
        return {"image": image, "instruction": "Which colour is this?"}, {}

    def step(self, action):
        invalid = not isinstance(action, str)
        said = "" if invalid else action.strip().lower()
        terms = {"success": float(said == self.answer), "format": 0.1 * (said in COLOURS)}
        obs, _ = self.reset(options={"task_id": list(COLOURS).index(self.answer)})
        info = {"reward_terms": terms, "success": said == self.answer, "invalid_action": invalid}
        return obs, float(sum(terms.values())), True, False, info


class ColourAdapter:
    def __init__(self, processor):
        self.prompts = PromptCache(processor)

    def start(self, traj, obs, info):
        traj.segments = [Segment(self.prompts.get([obs["image"]], obs["instruction"]))]

    def read(self, traj, turn, last):
        return Decision("env", turn.text)

    def observe(self, traj, obs, info):
        raise AssertionError("one step")

    def finish(self, trajectories):
        pass


class ColourWorld(World):
    def make_env(self, split):
        return ColourEnv()

    def adapter(self):
        return ColourAdapter(self.policy.processor)

    def task_ids(self, split, start, count):
        return list(range(start, start + count))


def test_toy_world_passes_the_contract():
    check_contract(ColourEnv, ["red", "green", "purple"], [None, 3, {"x": 1}])


def test_toy_world_trains_with_the_one_pipeline(tiny_dir, tmp_path):
    from vlagent.models.loading import load_policy
    from vlagent.rollout.rows import build_rows
    from vlagent.rollout.runner import group_specs, run_episodes
    from vlagent.train.grpo import run_grpo
    from vlagent.train.update import UpdateBatch, policy_update, sequence_logprobs

    register_world("toy_colour", ColourWorld)
    cfg = load_config(
        None,
        [
            "world=toy_colour",
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={tmp_path}",
            "grpo.steps=2",
            "grpo.prompts_per_step=2",
            "grpo.group_size=4",
            "grpo.max_new_tokens=4",
            "eval.every=0",
            "eval.rollout_pictures=0",
            "run.progress=false",
            "run.samples_every=0",
            "run.checkpoint_every=0",
            "grpo.lr=1e-2",
        ],
    )
    assert run_grpo(cfg).steps == 2  # the recipe runs the new world end to end
    policy = load_policy(str(tiny_dir))
    world = ColourWorld(cfg, policy)
    trajs = run_episodes(
        policy, world.adapter(), ColourEnv, group_specs([0, 1], 4), world.limits(4), seed=0
    )
    assert all(t.turns[0].reward_terms.keys() == {"success", "format"} for t in trajs)
    adv = [[1.0 if i % 2 == 0 else -1.0] for i in range(len(trajs))]  # +1 / -1 by hand
    rows = build_rows(trajs, adv, policy.tokenizer.pad_token_id)
    g = cfg.grpo
    with torch.no_grad():
        before = (sequence_logprobs(policy, rows, g) * rows.mask).sum(1)
    opt = torch.optim.SGD(policy.model.parameters(), lr=0.5)
    policy_update(policy, UpdateBatch(rows, rows.old_logp, rows.mask), g, opt, None, 0)
    with torch.no_grad():
        after = (sequence_logprobs(policy, rows, g) * rows.mask).sum(1)
    up = (after - before)[rows.advantages > 0].mean()
    down = (after - before)[rows.advantages < 0].mean()
    assert up > 0 > down, (up, down)
