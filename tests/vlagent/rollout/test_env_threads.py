"""``loop.env_threads``: the env resets and steps of one runner round run on threads, while
everything else stays on the runner's thread in episode order, so the trajectories are the same
as one after another (token ids, log-probs, rewards, actions, infos, statuses); slow envs wait
together; an env that raises ends only its own episode; a bad thread count is a clear error."""

from __future__ import annotations

import dataclasses
import math
import threading
import time

import pytest

from tests.vlagent.rollout.ray_toy_env import ColourSteps
from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import Decision, EpisodeSpec, Limits, run_episodes
from vlagent.rollout.tokens import PromptCache
from vlagent.rollout.trajectory import Segment
from vlagent.worlds import World

RAISE_AT_RESET = 99
"""Task id whose reset raises (:class:`SlowSteps`)."""


class SlowSteps(ColourSteps):
    """:class:`ColourSteps` whose reset and step each sleep ``delay_s``; it counts the calls of
    each kind in flight at once (``peak``) and which threads made them. Task ``RAISE_AT_RESET``
    cannot reset."""

    lock = threading.Lock()
    running = 0
    peak: dict[str, int] = {}  # noqa: RUF012 (shared by every env of a test, on purpose)
    threads: set[str] = set()  # noqa: RUF012

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__(length=3)
        self.delay_s = delay_s

    @classmethod
    def clear(cls) -> None:
        cls.running, cls.peak, cls.threads = 0, {}, set()

    def _wait(self, kind: str) -> None:
        cls = type(self)
        with cls.lock:
            cls.running += 1
            cls.peak[kind] = max(cls.peak.get(kind, 0), cls.running)
            cls.threads.add(threading.current_thread().name)
        time.sleep(self.delay_s)
        with cls.lock:
            cls.running -= 1

    def reset(self, *, seed=None, options=None):
        self._wait("reset")
        if (options or {}).get("task_id") == RAISE_AT_RESET:
            raise OSError("the toy backend cannot start")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self._wait("step")
        return super().step(action)


class StepsAdapter:
    """Each turn re-prompts with the current screen (a new segment, as the robot world does)."""

    def __init__(self, processor) -> None:
        self.prompts = PromptCache(processor)

    def start(self, traj, obs, info):
        traj.segments = [Segment(self.prompts.get([obs["image"]], obs["instruction"]))]

    def read(self, traj, turn, last):
        return Decision("env", turn.text)

    def observe(self, traj, obs, info):
        traj.segments.append(Segment(self.prompts.get([obs["image"]], obs["instruction"])))

    def finish(self, trajectories):
        pass


class Answers:
    """Forces the right colour, ``"raise"`` as task 1's second turn, and (``sample_odd``)
    leaves odd groups to the sampler."""

    def __init__(self, sample_odd: bool = False, raise_task: int | None = None) -> None:
        self.sample_odd, self.raise_task = sample_odd, raise_task

    def text(self, traj, obs, info):
        if self.sample_odd and traj.group_id % 2:
            return None
        if traj.task_id == self.raise_task and len(traj.turns) == 1:
            return "raise"
        return info["answer"]


class StepsWorld(World):
    default_max_turns = 4

    def make_env(self, split):
        assert threading.current_thread() is threading.main_thread()  # factories need no locks
        return SlowSteps(self.delay_s)

    delay_s = 0.0

    def adapter(self):
        return StepsAdapter(self.policy.processor)

    def task_ids(self, split, start, count):
        return list(range(start, start + count))


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return load_policy(str(tiny_dir))


def world_with(policy, env_threads: int, delay_s: float = 0.0) -> StepsWorld:
    world = StepsWorld(load_config(None, [f"loop.env_threads={env_threads}"]), policy)
    world.delay_s = delay_s
    return world


def record(traj) -> dict:
    """Everything a trajectory holds, as plain comparable values (the reward as its repr: NaN)."""
    fields = ("task_id", "seed", "group_id", "instruction", "status", "success", "masked", "error")
    return {
        "segments": [
            (s.prompt.key, s.prompt.input_ids.tolist(), s.ids, s.mm, s.loss_mask, s.logprobs)
            for s in traj.segments
        ],
        "turns": [dataclasses.asdict(x) for x in traj.turns],
        "episode": [getattr(traj, f) for f in fields] + [traj.info, repr(traj.reward)],
    }


def run(world, policy, specs, demonstrator, **kwargs):
    SlowSteps.clear()
    return world.episodes(
        policy, "train", specs, 6, demonstrator=demonstrator, temperature=1.0, seed=0, **kwargs
    )


@pytest.mark.parametrize("mode", ["forced", "mixed", "sampled"])
def test_threads_give_the_same_trajectories(policy, mode):
    specs = [EpisodeSpec(t, seed=t % 2, group_id=g) for g, t in enumerate([0, 1, 2, 2, 3, 4])]
    demo = {"forced": Answers(), "mixed": Answers(sample_odd=True), "sampled": None}[mode]
    one = run(world_with(policy, 1), policy, specs, demo, chunk_size=4)
    assert SlowSteps.threads == {threading.main_thread().name}
    four = run(world_with(policy, 4), policy, specs, demo, chunk_size=4)
    assert threading.main_thread().name not in SlowSteps.threads  # env calls ran on the pool
    assert [record(t) for t in four] == [record(t) for t in one]
    assert all(len(t.turns) == 3 and t.status == "terminated" for t in one)
    if mode == "forced":
        assert all(t.success and t.reward == pytest.approx(3.3) for t in one)
    if mode != "forced":
        assert all(t.segments[0].logprobs for t in one if t.group_id % 2)  # sampled turns


def test_slow_envs_wait_together(policy):
    specs = [EpisodeSpec(t) for t in range(4)]
    seconds, peaks = {}, {}
    for n in (1, 4):
        t0 = time.perf_counter()
        trajs = run(world_with(policy, n, delay_s=0.2), policy, specs, Answers())
        seconds[n], peaks[n] = time.perf_counter() - t0, SlowSteps.peak
        assert all(t.success and len(t.turns) == 3 for t in trajs)
    # 4 resets, then the 4 steps of each round, in flight together
    assert peaks == {1: {"reset": 1, "step": 1}, 4: {"reset": 4, "step": 4}}
    assert seconds[4] < 0.6 * seconds[1], seconds  # 16 waits of 0.2 s vs 4 rounds of them


@pytest.mark.parametrize("env_threads", [1, 4])
def test_an_env_that_raises_ends_only_its_episode(policy, env_threads):
    specs = [EpisodeSpec(t) for t in (0, 1, RAISE_AT_RESET, 2)]
    trajs = run(world_with(policy, env_threads), policy, specs, Answers(raise_task=1))
    by_id = {t.task_id: t for t in trajs}
    crashed, unstarted = by_id[1], by_id[RAISE_AT_RESET]
    assert crashed.status == "error" and len(crashed.turns) == 2
    assert crashed.error == "step 2: ValueError: the toy env was asked to raise"
    assert math.isnan(crashed.reward) and crashed.turns[0].reward == pytest.approx(1.1)
    assert unstarted.status == "error" and not unstarted.turns
    assert unstarted.error == "reset: OSError: the toy backend cannot start"
    for t in (by_id[0], by_id[2]):
        assert t.error is None and t.success and t.reward == pytest.approx(3.3)


def test_thread_count_is_checked(policy):
    with pytest.raises(ConfigError, match=r"loop\.env_threads: must be in \[1, 256\]"):
        load_config(None, ["loop.env_threads=0"])
    with pytest.raises(ValueError, match="env_threads must be >= 1, got 0"):
        run_episodes(policy, StepsAdapter(policy.processor), SlowSteps, [], Limits(), env_threads=0)
