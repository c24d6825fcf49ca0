"""The body of a Ray env worker (:class:`EnvWorker`) and what crosses the process boundary.

Kept apart from :mod:`vlagent.rollout.ray_envs` (the pool that leases these workers): this
module needs neither Ray nor the pool, so a worker process imports only what it runs.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np

Spaces = tuple[gymnasium.Space, gymnasium.Space, dict[str, Any]]


def gym_factory(env_id: str, **kwargs: Any) -> Callable[[], gymnasium.Env]:
    """Picklable ``gymnasium.make(env_id, **kwargs)``; ``"module:Id"`` registers via ``module``."""
    return functools.partial(gymnasium.make, env_id, **kwargs)


class EnvWorker:
    """Body of the Ray actor: envs made by ``factory``, one per slot (the pool picks slots;
    ``slot=0`` by default), each built on first use."""

    def __init__(self, factory: Callable[[], gymnasium.Env], index: int = 0) -> None:
        self.factory, self.index = factory, index
        self._envs: dict[int, gymnasium.Env] = {}

    def _env(self, slot: int) -> gymnasium.Env:
        if slot not in self._envs:
            self._envs[slot] = self.factory()
        return self._envs[slot]

    def ping(self) -> int:  # the worker's process id
        return os.getpid()

    def spaces(self, slot: int = 0) -> Spaces:
        """(observation_space, action_space, metadata) of the env in ``slot``."""
        env = self._env(slot)
        return env.observation_space, env.action_space, dict(getattr(env, "metadata", {}) or {})

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None, slot: int = 0
    ) -> tuple[Any, dict[str, Any]]:
        return self._env(slot).reset(seed=seed, options=options)

    def step(self, action: Any, slot: int = 0) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self._env(slot).step(action)

    def close(self) -> None:
        """Close every env; raises after trying them all."""
        failed = []
        for slot, env in self._envs.items():
            try:
                env.close()
            except Exception as err:  # close the others first, then report
                failed.append(f"slot {slot}: {type(err).__name__}: {err}")
        self._envs.clear()
        if failed:
            raise RuntimeError(f"env worker {self.index}: closing envs failed: {'; '.join(failed)}")


def writable(x: Any) -> Any:
    """``x`` with read-only arrays (Ray's zero-copy results) replaced by copies."""
    if isinstance(x, np.ndarray):
        return x if x.flags.writeable else x.copy()
    if type(x) is dict:
        return {k: writable(v) for k, v in x.items()}
    if type(x) in (tuple, list):
        return type(x)(writable(v) for v in x)
    return x
