"""Success rates of policies on task suites: the scripted oracle and a random GUI policy.

>>> from gui.apps.evaluate import measure
>>> rates = measure("phone_basic", policies=("oracle",))
>>> rates["oracle"].rate
1.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium

from gui.apps.oracle import Oracle
from gui.apps.spaces import GuiActionSpace
from gui.apps.tasks import PhoneTask
from sim.phone import APPS


class Policy(Protocol):
    """Anything that maps an observation to a GUI action mapping."""

    def act(self, obs: dict[str, Any]) -> dict[str, Any]: ...


PolicyFactory = Callable[[PhoneTask, int], Policy]
"""Builds the policy of one episode from its task and the episode seed."""


class RandomPolicy:
    """Uniformly random valid GUI actions (:meth:`GuiActionSpace.sample`), seeded."""

    def __init__(self, seed: int = 0) -> None:
        self.space = GuiActionSpace(apps=APPS, seed=seed)

    def act(self, obs: dict[str, Any]) -> dict[str, Any]:
        """A random action; ``obs`` is ignored."""
        return self.space.sample()


POLICIES: dict[str, PolicyFactory] = {
    "oracle": lambda task, seed: Oracle(task),
    "random": lambda task, seed: RandomPolicy(seed),
}
"""Builtin policies by name."""


@dataclass(frozen=True)
class EpisodeResult:
    """How one episode ended."""

    task_id: str
    success: bool
    status: str
    steps: int
    ret: float
    truncated: bool


@dataclass(frozen=True)
class SuccessReport:
    """Success rate of a policy over episodes (``rate`` in [0, 1])."""

    rate: float
    episodes: tuple[EpisodeResult, ...]


def run_episode(
    env: gymnasium.Env, task_id: str, policy: PolicyFactory, seed: int = 0
) -> EpisodeResult:
    """Run one episode of ``task_id`` to termination or truncation."""
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    agent = policy(env.unwrapped.task, seed)  # type: ignore[attr-defined]
    ret, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))
        ret += float(reward)
        steps += 1
    return EpisodeResult(task_id, bool(info["success"]), info["status"], steps, ret, truncated)


def success_rate(
    env: gymnasium.Env, task_ids: Sequence[str], policy: PolicyFactory, seeds: Sequence[int] = (0,)
) -> SuccessReport:
    """Success rate of ``policy`` over every task id and seed."""
    results = tuple(run_episode(env, t, policy, s) for t in task_ids for s in seeds)
    return SuccessReport(sum(r.success for r in results) / max(1, len(results)), results)


def measure(
    suite: str = "phone_basic",
    env_id: str = "vlagent/Phone-v0",
    policies: Sequence[str] = ("oracle", "random"),
    seeds: Sequence[int] = (0,),
    **env_kwargs: Any,
) -> dict[str, SuccessReport]:
    """Success rates of builtin policies on every task of ``suite`` through ``env_id``."""
    import gui  # noqa: F401  (registers the env ids)

    env = gymnasium.make(env_id, suite=suite, **env_kwargs)
    try:
        ids = env.unwrapped.suite.ids  # type: ignore[attr-defined]
        return {name: success_rate(env, ids, POLICIES[name], seeds) for name in policies}
    finally:
        env.close()
