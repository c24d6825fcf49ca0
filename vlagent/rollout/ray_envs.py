"""Environment workers on Ray: gymnasium envs that live in Ray actors, leased one per episode.

``RayEnvPool(factory, num_workers)`` starts Ray here (or joins ``address``, or the Ray already
initialised) and keeps ``num_workers`` :class:`EnvWorker` actors that build envs with ``factory``:
a picklable zero-argument callable the workers can import (a module-level class or function, or a
``functools.partial`` of one: :func:`gym_factory`), never one that captures a policy. Its
``make_env`` (an ``EnvFactory`` for ``run_episodes``) leases a :class:`RemoteEnv` on the live
worker with the fewest leases; a worker hosts one env per lease and reuses envs across leases, as
``worlds/pool.py``'s ``EnvPool`` does. ``reset(seed=, options=)`` and ``step`` reach the env
unchanged (a GRPO group resets alike) and wait at most ``call_timeout_s``; arrays come back
writable. An exception the env raises comes back as itself (the runner records the episode's
error); a worker that dies or hangs ends each episode it hosts with :class:`EnvWorkerError`
(naming worker and episode) and is killed and, with ``restart``, replaced for later leases.

A world opts in with ``run.env_workers`` (0: local envs; N: per split, ``RayEnvPool(partial(
GroundingEnv, source, spec), N).make_env`` as ``run_episodes``' factory, closed by ``World.close``).
Ray (the ``dist`` extra) is imported inside functions only: this module imports without it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium

from vlagent.errors import VlagentError
from vlagent.rollout.env_worker import EnvWorker, Spaces, gym_factory, writable

log = logging.getLogger(__name__)
__all__ = ["EnvWorker", "EnvWorkerError", "PendingCall", "RayEnvPool", "RemoteEnv", "gym_factory"]


class EnvWorkerError(VlagentError, RuntimeError):
    """An env worker died, hung or could not start, or the pool is closed."""


@dataclasses.dataclass
class _Worker:
    index: int
    actor: Any
    generation: int
    pid_ref: Any
    pid: int | None = None
    leased: int = 0
    free: list[int] = dataclasses.field(default_factory=list)
    next_slot: int = 0
    alive: bool = True


class PendingCall:
    """A call sent to a worker; :meth:`result` waits for it (at most ``call_timeout_s``)."""

    def __init__(self, env: RemoteEnv, ref: Any, what: str) -> None:
        self.env, self.ref, self.what, self.t0 = env, ref, what, time.perf_counter()

    def result(self) -> Any:
        """The env's return value (arrays writable), or the env's own exception, or
        :class:`EnvWorkerError` when the worker died or hung (the pool then replaces it)."""
        import ray

        env, timeout = self.env, self.env._pool.call_timeout_s
        try:
            out = ray.get(self.ref, timeout=timeout)
        except ray.exceptions.RayTaskError as err:  # the env raised: re-raise its exception
            env._pool._record(time.perf_counter() - self.t0)
            cause = getattr(err, "cause", None)
            if isinstance(cause, Exception) and not isinstance(cause, ray.exceptions.RayError):
                cause.add_note(f"raised by the env on env worker {env.worker} during {self.what}")
                raise cause from None
            raise
        except ray.exceptions.GetTimeoutError:
            raise env._lose(self.what, f"no answer within {timeout:g} s") from None
        except ray.exceptions.RayError as err:  # actor died, node lost, object lost
            line = (str(err).strip().splitlines() or [""])[0][:300]
            raise env._lose(self.what, f"{type(err).__name__}: {line}") from err
        env._pool._record(time.perf_counter() - self.t0)
        return writable(out)


class RemoteEnv(gymnasium.Env):
    """A ``gymnasium.Env`` whose env lives in an env worker; ``close()`` gives it back.

    Attributes:
        worker: index of the worker hosting the env; slot: the env's slot there.
        seed, options: what the last ``reset`` was given (passed to the env unchanged).
    """

    def __init__(self, pool: RayEnvPool, worker: _Worker, slot: int) -> None:
        self._pool, self._actor = pool, worker.actor
        self.worker, self.generation, self.slot = worker.index, worker.generation, slot
        self.seed: int | None = None
        self.options: dict[str, Any] | None = None
        self._steps, self._closed, self._lost = 0, False, ""

    @property
    def episode(self) -> str:
        """The episode this env runs, for messages (``task_id=…, seed=…``)."""
        return f"episode task_id={(self.options or {}).get('task_id')!r} seed={self.seed!r}"

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        return self.reset_async(seed=seed, options=options).result()

    def reset_async(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> PendingCall:
        """Send ``reset`` without waiting (reset several envs at once)."""
        self.seed, self.options, self._steps = seed, options, 0
        return self._call("reset", f"reset of {self.episode}", seed, options, self.slot)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.step_async(action).result()

    def step_async(self, action: Any) -> PendingCall:
        """Send ``step`` without waiting (step several envs at once)."""
        self._steps += 1
        return self._call("step", f"step {self._steps} of {self.episode}", action, self.slot)

    def close(self) -> None:
        """Give the env back to its worker (idempotent; a lost worker takes nothing back)."""
        if not self._closed and not self._lost:
            self._pool._give_back(self)
        self._closed = True

    def _call(self, method: str, what: str, *args: Any) -> PendingCall:
        if self._closed or self._pool.closed:
            gone = "this env was closed" if self._closed else "the RayEnvPool is closed"
            raise EnvWorkerError(f"{what}: {gone}")
        if self._lost:
            raise EnvWorkerError(f"{what}: env worker {self.worker} was lost ({self._lost})")
        return PendingCall(self, getattr(self._actor, method).remote(*args), what)

    def _lose(self, what: str, reason: str) -> EnvWorkerError:
        self._lost = reason
        self._pool._record(None)
        who, after = self._pool._worker_lost(self, reason)
        return EnvWorkerError(f"env worker {who} lost during {what}: {reason}; {after}")


def _import_ray(factory: Any, workers: int, call_s: float, start_s: float, cpus: float) -> Any:
    """Check the pool's arguments (clear errors before Ray starts) and import ray."""
    if not callable(factory):
        raise TypeError(f"RayEnvPool: factory must be callable, got {type(factory).__name__}")
    if workers < 1 or call_s <= 0 or start_s <= 0 or cpus < 0:
        raise ValueError(
            "RayEnvPool: need num_workers >= 1, call_timeout_s > 0, start_timeout_s > 0, "
            f"cpus_per_worker >= 0; got {workers}, {call_s}, {start_s}, {cpus}"
        )
    try:
        import ray
    except ImportError as err:
        raise EnvWorkerError("RayEnvPool needs ray: pip install 'vlagent[dist]'") from err
    try:
        ray.cloudpickle.dumps(factory)
    except Exception as err:
        raise EnvWorkerError(
            f"RayEnvPool: the env factory {factory!r} cannot be pickled for the workers "
            f"({type(err).__name__}: {err}); pass a module-level class or function, or a "
            "functools.partial of one with plain arguments"
        ) from err
    return ray


class RayEnvPool:
    """``num_workers`` Ray actors that host envs made by ``factory``; ``make_env`` leases one.

    Args:
        factory: picklable zero-argument callable returning a ``gymnasium.Env``.
        num_workers: actors to keep (one process each).
        address: Ray cluster to join (``"auto"``, ``"ray://host:10001"``); None: start one.
        restart: replace a worker that died or hung (else it stays down).
        call_timeout_s: longest wait for one call (a worker that takes longer is killed).
        start_timeout_s: longest wait for the first workers to start.
        cpus_per_worker: logical CPUs each actor reserves (Ray schedules by them).
        num_cpus: CPUs of a Ray started here (default: this process's cores, or more to fit).
        actor_options: more ``ray.remote`` options for the actors (``runtime_env``, ``resources``).
        log_to_driver: show the workers' output here (a Ray started here).
    """

    def __init__(
        self,
        factory: Callable[[], gymnasium.Env],
        num_workers: int,
        address: str | None = None,
        restart: bool = True,
        *,
        call_timeout_s: float = 120.0,
        start_timeout_s: float = 120.0,
        cpus_per_worker: float = 1.0,
        num_cpus: int | None = None,
        actor_options: Mapping[str, Any] | None = None,
        log_to_driver: bool = False,
    ) -> None:
        ray = _import_ray(factory, num_workers, call_timeout_s, start_timeout_s, cpus_per_worker)
        self.factory, self.restart, self.call_timeout_s = factory, restart, call_timeout_s
        self.closed, self.owns_ray, self._lock = False, False, threading.Lock()
        self._spaces: Spaces | None = None
        self._restarts = self._calls = self._lost_calls = 0
        self._call_seconds = 0.0
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"log_to_driver": log_to_driver, "include_dashboard": False}
            if address:
                kwargs["address"] = address
            else:
                need = math.ceil(num_workers * cpus_per_worker)
                kwargs["num_cpus"] = num_cpus or max(need, len(os.sched_getaffinity(0)))
            ray.init(**kwargs)
            self.owns_ray = True
        opts = {"num_cpus": cpus_per_worker, "max_restarts": 0, **dict(actor_options or {})}
        self._actor_cls = ray.remote(EnvWorker).options(**opts)
        self._workers = [self._start_worker(i, 0) for i in range(num_workers)]
        try:
            pids = ray.get([w.pid_ref for w in self._workers], timeout=start_timeout_s)
        except ray.exceptions.RayError as err:
            cpus = ray.cluster_resources().get("CPU", 0)
            self.close()
            why = (
                f"did not start within {start_timeout_s:g} s; each reserves {cpus_per_worker:g} "
                f"CPU and the cluster has {cpus:g}: lower cpus_per_worker or num_workers"
                if isinstance(err, ray.exceptions.GetTimeoutError)
                else f"failed to start: {type(err).__name__}: {str(err).strip()[:600]}"
            )
            raise EnvWorkerError(f"RayEnvPool: the {num_workers} env workers {why}") from err
        for w, pid in zip(self._workers, pids, strict=True):
            w.pid = pid

    def _start_worker(self, index: int, generation: int) -> _Worker:
        actor = self._actor_cls.remote(self.factory, index)
        return _Worker(index, actor, generation, pid_ref=actor.ping.remote())

    def make_env(self) -> RemoteEnv:
        """Lease an env on the live worker with the fewest leases (an ``EnvFactory``)."""
        with self._lock:
            if self.closed:
                raise EnvWorkerError("RayEnvPool.make_env: the pool is closed")
            alive = [w for w in self._workers if w.alive]
            if not alive:
                n = len(self._workers)
                raise EnvWorkerError(f"RayEnvPool.make_env: all {n} env workers are down")
            w = min(alive, key=lambda w: (w.leased, w.index))
            slot = w.free.pop() if w.free else w.next_slot
            w.next_slot, w.leased = max(w.next_slot, slot + 1), w.leased + 1
            env, spaces = RemoteEnv(self, w, slot), self._spaces
        if spaces is None:
            try:
                spaces = env._call("spaces", "fetching the env's spaces", slot).result()
            except BaseException:
                env.close()
                raise
            self._spaces = spaces
        env.observation_space, env.action_space, env.metadata = spaces
        return env

    def _give_back(self, env: RemoteEnv) -> None:
        with self._lock:
            w = self._workers[env.worker]
            if w.alive and w.generation == env.generation and not self.closed:
                w.leased -= 1
                w.free.append(env.slot)

    def _worker_lost(self, env: RemoteEnv, reason: str) -> tuple[str, str]:
        """Kill and (with ``restart``) replace the env's worker once; (who, what happened)."""
        import ray

        with self._lock:
            w = self._workers[env.worker]
            who = f"{w.index} (pid {w.pid if w.pid is not None else 'not yet known'})"
            if w.generation != env.generation or self.closed:
                return who, "the worker had already been replaced"
            with contextlib.suppress(Exception):  # a hung actor must go; a dead one is gone
                ray.kill(w.actor)
            if self.restart:
                self._workers[w.index] = self._start_worker(w.index, w.generation + 1)
                self._restarts += 1
                after = f"a replacement worker was started (restart {self._restarts})"
            else:
                w.alive = False
                left = sum(x.alive for x in self._workers)
                after = f"restart=False: it stays down ({left} of {len(self._workers)} alive)"
        log.warning("env worker %s lost (%s); %s", who, reason, after)
        return who, after

    def _record(self, seconds: float | None) -> None:
        """Count a call answered in ``seconds`` (result or env exception), or lost (None)."""
        with self._lock:
            if seconds is None:
                self._lost_calls += 1
            else:
                self._calls += 1
                self._call_seconds += seconds

    def actor(self, index: int) -> Any:
        """The Ray actor handle of worker ``index`` (its current one)."""
        return self._workers[index].actor

    def stats(self) -> dict[str, Any]:
        """workers, alive, leased (envs out now), restarts, calls (answered), lost_calls (the
        worker died or hung), mean_call_ms (of answered calls; None before the first)."""
        with self._lock:
            return {
                "workers": len(self._workers),
                "alive": sum(w.alive for w in self._workers),
                "leased": sum(w.leased for w in self._workers if w.alive),
                "restarts": self._restarts,
                "calls": self._calls,
                "lost_calls": self._lost_calls,
                "mean_call_ms": 1000 * self._call_seconds / self._calls if self._calls else None,
            }

    def close(self, timeout_s: float = 10.0) -> None:
        """Close the envs, kill every actor, and shut Ray down if this pool started it.
        Idempotent; leases still out become unusable."""
        import ray

        with self._lock:
            if self.closed:
                return
            self.closed = True
            workers = [w for w in getattr(self, "_workers", []) if w.alive]
        if ray.is_initialized() and workers:
            refs = [w.actor.close.remote() for w in workers]
            ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
            for w, ref in zip(workers, refs, strict=True):
                try:
                    ray.get(ref, timeout=0)
                except Exception as err:  # a dead or stuck worker must not stop the others
                    log.warning("env worker %d: closing its envs failed: %s", w.index, err)
                with contextlib.suppress(Exception):  # already dead
                    ray.kill(w.actor, no_restart=True)
            _wait_dead([w.actor for w in workers], timeout_s)
        if self.owns_ray and ray.is_initialized():
            ray.shutdown()


def _wait_dead(actors: list[Any], timeout_s: float) -> None:
    """Return once every actor answers with ``RayActorError`` (``ray.kill`` is asynchronous:
    a call sent just after it may still be served), or after ``timeout_s``."""
    import ray

    deadline = time.monotonic() + timeout_s
    for actor in actors:
        while time.monotonic() < deadline:
            try:
                ray.get(actor.ping.remote(), timeout=max(0.1, deadline - time.monotonic()))
            except ray.exceptions.RayActorError:
                break
            except Exception:  # noqa: BLE001 - a timeout or a lost node: stop waiting on it
                break
            time.sleep(0.05)
