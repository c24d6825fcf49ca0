"""Env workers on Ray (vlagent/rollout/ray_envs.py): a remote env behaves as a local one, a group
resets alike, a dead or hung worker ends only its episodes and is replaced, the runner carries on
over a killed worker, and close leaves no actor or Ray process behind.

One Ray (2 CPUs, started by the module's pool) serves the whole module; the last test closes it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from tests.vlagent.rollout.ray_toy_env import ColourSteps
from vlagent.rollout.ray_envs import EnvWorkerError, RayEnvPool, gym_factory

try:
    import ray
except ImportError:
    ray = None

needs_ray = pytest.mark.skipif(
    ray is None, reason="ray is not installed (the `dist` extra): pip install 'vlagent[dist]'"
)
REPO = Path(__file__).resolve().parents[3]
TOY = functools.partial(ColourSteps, length=3)
GROUNDING = gym_factory(
    "gui:vlagent/GroundingSynthetic-v0", level="basic", disable_env_checker=True
)


def same(a, b) -> bool:
    """Deep equality of env outputs (arrays by value, dataclasses by field)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b) and np.asarray(a).dtype == np.asarray(b).dtype
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return same(dataclasses.asdict(a), dataclasses.asdict(b))
    return bool(a == b) or (a != a and b != b)  # noqa: PLR0124 (NaN equals NaN here)


def wait_gone(pids, timeout_s: float = 30.0) -> list[int]:
    """Pids still running (zombies count as gone) after waiting up to ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while True:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > end:
            return alive
        time.sleep(0.1)


def kill_worker(pool: RayEnvPool, index: int) -> None:
    actor = pool.actor(index)
    pid = ray.get(actor.ping.remote(), timeout=60)
    ray.kill(actor)
    assert not wait_gone([pid]), f"env worker {index} (pid {pid}) still runs after ray.kill"


@pytest.fixture(scope="module")
def pool():
    p = RayEnvPool(TOY, 2, num_cpus=2, cpus_per_worker=0.5, call_timeout_s=60)
    yield p
    p.close()


def test_module_imports_without_ray():
    code = (
        "import sys\n"
        "import vlagent.rollout.ray_envs as m\n"
        "assert 'ray' not in sys.modules, 'ray imported at module top'\n"
        "sys.modules['ray'] = None\n"
        "try:\n"
        "    m.RayEnvPool(m.gym_factory('CartPole-v1'), 1)\n"
        "except m.EnvWorkerError as err:\n"
        "    assert 'vlagent[dist]' in str(err), err\n"
        "else:\n"
        "    raise AssertionError('no error without ray')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


@needs_ray
def test_bad_arguments_fail_before_ray_starts():
    with pytest.raises(ValueError, match="num_workers >= 1"):
        RayEnvPool(TOY, 0)
    with pytest.raises(TypeError, match="factory must be callable"):
        RayEnvPool("vlagent/GroundingSynthetic-v0", 1)
    with pytest.raises(EnvWorkerError, match="cannot be pickled"):
        RayEnvPool(functools.partial(ColourSteps, hang_s=threading.Lock()), 1)


@needs_ray
def test_remote_env_matches_a_local_env(pool):
    remote, local = pool.make_env(), TOY()
    calls = pool.stats()["calls"]
    assert remote.observation_space == local.observation_space
    assert remote.action_space == local.action_space
    for seed, task in [(0, 1), (7, 2), (7, 1)]:
        r, loc = (
            remote.reset(seed=seed, options={"task_id": task}),
            local.reset(seed=seed, options={"task_id": task}),
        )
        assert same(r, loc), (seed, task)
        for action in ["red", "green", 3]:
            r, loc = remote.step(action), local.step(action)
            assert same(r, loc), (seed, task, action)
    assert r[0]["image"].flags.writeable  # Ray's zero-copy arrays are read-only: copied
    remote.close()
    stats = pool.stats()
    assert stats["calls"] == calls + 12 and stats["mean_call_ms"] > 0
    assert stats["leased"] == 0

    # A real world's env (the synthetic grounding screens) through a second pool on the same Ray.
    grounding = RayEnvPool(GROUNDING, 1, cpus_per_worker=0.5)
    assert not grounding.owns_ray
    remote, local = grounding.make_env(), GROUNDING()
    for seed, task in [(3, 5), (4, 0)]:
        r = remote.reset(seed=seed, options={"task_id": task})
        assert same(r, local.reset(seed=seed, options={"task_id": task}))
        assert same(remote.step({"point": (0.5, 0.25)}), local.step({"point": (0.5, 0.25)}))
    actor = grounding.actor(0)
    grounding.close()
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actor.ping.remote(), timeout=30)
    assert ray.is_initialized()  # a pool that joined Ray leaves it running


@needs_ray
def test_group_resets_equal(pool):
    envs = [pool.make_env() for _ in range(4)]
    assert sorted(e.worker for e in envs) == [0, 0, 1, 1]  # spread over both workers
    firsts = [e.reset(seed=3, options={"task_id": 5}) for e in envs]
    assert all(same(f, firsts[0]) for f in firsts[1:])
    other = envs[0].reset(seed=4, options={"task_id": 5})[0]["image"]
    assert not np.array_equal(other, firsts[0][0]["image"])  # the seed matters
    assert pool.stats()["leased"] == 4
    for e in envs:
        e.close()
        e.close()  # idempotent
    assert pool.stats()["leased"] == 0


@needs_ray
def test_an_env_exception_comes_back_as_itself(pool):
    restarts = pool.stats()["restarts"]
    env = pool.make_env()
    env.reset(seed=0, options={"task_id": 0})
    with pytest.raises(ValueError, match="asked to raise") as info:
        env.step("raise")
    assert "env worker" in "".join(getattr(info.value, "__notes__", []))
    assert env.reset(seed=0, options={"task_id": 0})[1]["task_id"] == 0  # the worker lives on
    env.close()
    assert pool.stats()["restarts"] == restarts


@needs_ray
def test_a_killed_worker_fails_its_episode_and_is_replaced(pool):
    before = pool.stats()
    env = pool.make_env()
    env.reset(seed=0, options={"task_id": 1})
    env.step("red")
    old = pool.actor(env.worker)
    kill_worker(pool, env.worker)
    pattern = rf"env worker {env.worker} .*lost during step 2 of episode task_id=1 seed=0"
    with pytest.raises(EnvWorkerError, match=pattern):
        env.step("red")
    with pytest.raises(EnvWorkerError, match="was lost"):
        env.step("red")
    env.close()
    after = pool.stats()
    assert after["restarts"] == before["restarts"] + 1
    assert after["lost_calls"] == before["lost_calls"] + 1
    assert after["alive"] == 2 and after["leased"] == 0
    assert pool.actor(env.worker) != old
    envs = [pool.make_env() for _ in range(2)]  # one of them on the replacement
    assert sorted(e.worker for e in envs) == [0, 1]
    for e in envs:
        obs, info = e.reset(seed=1, options={"task_id": 2})
        for _ in range(3):
            obs, reward, done, _, info = e.step(info["answer"])
            assert reward == pytest.approx(1.1)
        assert done
        e.close()


@needs_ray
def test_a_hung_worker_is_killed_and_replaced(pool):
    restarts = pool.stats()["restarts"]
    env = pool.make_env()
    env.reset(seed=0, options={"task_id": 0})
    pool.call_timeout_s = 2.0
    try:
        with pytest.raises(EnvWorkerError, match="no answer within 2 s"):
            env.step("hang")
    finally:
        pool.call_timeout_s = 60.0
    env.close()
    assert pool.stats()["restarts"] == restarts + 1
    fresh = pool.make_env()
    assert fresh.reset(seed=0, options={"task_id": 0})[1]["task_id"] == 0
    fresh.close()


class ToyAdapter:
    """Each turn re-prompts with the current screen; the turn's text is the env action."""

    def __init__(self, processor):
        from vlagent.rollout.tokens import PromptCache

        self.prompts = PromptCache(processor)

    def start(self, traj, obs, info):
        from vlagent.rollout.trajectory import Segment

        traj.segments = [Segment(self.prompts.get([obs["image"]], obs["instruction"]))]

    def read(self, traj, turn, last):
        from vlagent.rollout.runner import Decision

        return Decision("env", turn.text)

    def observe(self, traj, obs, info):
        from vlagent.rollout.trajectory import Segment

        traj.segments.append(Segment(self.prompts.get([obs["image"]], obs["instruction"])))

    def finish(self, trajectories):
        pass


class KillingOracle:
    """Answers from ``info["answer"]``; before the victim episode's second turn it kills the
    worker that hosts the victim's env."""

    def __init__(self, pool, envs, victim):
        self.pool, self.envs, self.victim, self.killed = pool, envs, victim, False

    def text(self, traj, obs, info):
        if traj.task_id == self.victim and len(traj.turns) == 1 and not self.killed:
            env = next(e for e in self.envs if (e.options or {}).get("task_id") == self.victim)
            kill_worker(self.pool, env.worker)
            self.killed = True
        return info["answer"]


@needs_ray
def test_run_episodes_carries_on_over_a_killed_worker(pool, tiny_dir):
    from vlagent.models.loading import load_policy
    from vlagent.rollout.runner import EpisodeSpec, Limits, run_episodes

    policy = load_policy(str(tiny_dir))
    restarts = pool.stats()["restarts"]
    made = []

    def make_env():
        made.append(pool.make_env())
        return made[-1]

    oracle = KillingOracle(pool, made, victim=3)
    specs = [EpisodeSpec(task_id=t, seed=0, group_id=t) for t in range(6)]
    trajs = run_episodes(
        policy,
        ToyAdapter(policy.processor),
        make_env,
        specs,
        Limits(max_turns=3, max_turn_tokens=8),
        demonstrator=oracle,
        chunk_size=2,
    )
    assert oracle.killed
    assert [t.task_id for t in trajs] == list(range(6))  # nothing lost
    bad = [t for t in trajs if t.error is not None]
    assert [t.task_id for t in bad] == [3], [t.error for t in trajs]
    assert "EnvWorkerError" in bad[0].error and "task_id=3" in bad[0].error
    assert bad[0].status == "error" and math.isnan(bad[0].reward)
    for t in trajs:
        if t.task_id != 3:
            assert t.status == "terminated" and len(t.turns) == 3, (t.task_id, t.status)
            assert t.success and t.reward == pytest.approx(3.3)
    assert pool.stats()["restarts"] == restarts + 1
    assert pool.stats()["leased"] == 0  # the runner gave every env back


@needs_ray
def test_close_leaves_no_actors_or_processes(pool):
    """Runs last: it closes the module's pool, which started Ray."""
    pids = [ray.get(pool.actor(i).ping.remote(), timeout=60) for i in range(2)]
    out = pool.make_env()  # a lease still out when the pool closes
    assert pool.owns_ray
    pool.close()
    pool.close()  # idempotent
    assert not ray.is_initialized()
    assert not wait_gone(pids), "env worker processes outlived close()"
    me = psutil.Process()
    left = []
    end = time.monotonic() + 30
    while time.monotonic() < end:
        left = [p for p in me.children(recursive=True) if "ray" in " ".join(_cmdline(p))]
        if not left:
            break
        time.sleep(0.2)
    assert not left, f"Ray processes left after close: {[p.pid for p in left]}"
    with pytest.raises(EnvWorkerError, match="closed"):
        out.step("red")
    with pytest.raises(EnvWorkerError, match="closed"):
        pool.make_env()


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline() if p.status() != psutil.STATUS_ZOMBIE else []
    except psutil.Error:
        return []
