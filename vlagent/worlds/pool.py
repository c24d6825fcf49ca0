"""Reuse envs whose start is expensive (a browser, an X display) across episodes.

The runner makes one env per episode and closes it when the episode's chunk ends. A world
whose env costs seconds to start hands out *leases* from an :class:`EnvPool` instead: closing a
lease returns the env to the pool, and the next episode's ``reset`` starts from the task's own
state as with a fresh env (the envs that use this reset fully: a page reload, a fresh home).
:meth:`EnvPool.close` (called by ``World.close``) closes every env the pool made.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import gymnasium


class LeasedEnv(gymnasium.Wrapper):
    """An env on loan from a pool: ``close()`` gives it back (idempotent) instead of closing."""

    def __init__(self, env: gymnasium.Env, pool: EnvPool) -> None:
        super().__init__(env)
        self._pool: EnvPool | None = pool

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.release(self.env)


class EnvPool:
    """Envs made by ``factory`` on demand and reused; at most ``size()`` ever exist at once —
    as many as were leased together."""

    def __init__(self, factory: Callable[[], gymnasium.Env]) -> None:
        self.factory = factory
        self._free: list[gymnasium.Env] = []
        self._made: list[gymnasium.Env] = []
        self._lock = threading.Lock()

    def lease(self) -> LeasedEnv:
        """A free env, or a new one when none is free."""
        with self._lock:
            env = self._free.pop() if self._free else None
        if env is None:
            env = self.factory()
            with self._lock:
                self._made.append(env)
        return LeasedEnv(env, self)

    def release(self, env: gymnasium.Env) -> None:
        """Return a leased env (called by :meth:`LeasedEnv.close`)."""
        with self._lock:
            if env in self._made and env not in self._free:
                self._free.append(env)

    def size(self) -> int:
        """Envs made so far (leased or free)."""
        return len(self._made)

    def close(self) -> None:
        """Close every env the pool made (leases still out are closed too). Idempotent."""
        with self._lock:
            made, self._made, self._free = self._made, [], []
        for env in made:
            env.close()
