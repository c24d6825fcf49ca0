"""The env calls of one runner round (resets, steps): one after another, or on a thread pool.

Slow envs mostly wait (a desktop's settle sleep, a browser, a Ray worker's round trip), so the
runner may run the env calls of one round on ``loop.env_threads`` threads. Only the env calls
run there: the runner decides every action before and records every outcome after, on its own
thread and in episode order, so the trajectories do not depend on the number of threads.

An outcome is the call's return value or the ``Exception`` it raised (the runner records it as
that episode's error); anything else (``KeyboardInterrupt``) propagates after the calls that
already run have returned.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

StepResult = tuple[dict[str, Any], float, bool, bool, dict[str, Any]]
"""``env.step``'s ``(obs, reward, terminated, truncated, info)``."""


@contextlib.contextmanager
def env_executor(env_threads: int) -> Iterator[concurrent.futures.Executor | None]:
    """A pool of ``env_threads`` threads (None for 1: calls run on the caller's thread).

    Raises:
        ValueError: ``env_threads`` < 1.
    """
    if env_threads < 1:
        raise ValueError(f"env_threads must be >= 1, got {env_threads}")
    if env_threads == 1:
        yield None
        return
    with concurrent.futures.ThreadPoolExecutor(env_threads, "vlagent-env") as pool:
        yield pool


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as err:  # the env's failure ends only its episode: the runner records it
        return err


def call_all(
    calls: Sequence[Callable[[], Any]], executor: concurrent.futures.Executor | None
) -> list[Any]:
    """Run ``calls`` (on ``executor``, else in order here); their outcomes in ``calls`` order."""
    if executor is None:
        return [_outcome(c) for c in calls]
    futures = [executor.submit(_outcome, c) for c in calls]
    try:
        return [f.result() for f in futures]
    finally:  # interrupted: start no more calls, and let the running ones end before envs close
        for f in futures:
            f.cancel()
        concurrent.futures.wait(futures)


def reset_env(env: Any, seed: int, task_id: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``env.reset(seed=seed, options={"task_id": task_id})`` as ``(obs, info)`` (a malformed
    return raises here, in the call, like an env failure)."""
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    return obs, info


def step_env(env: Any, action: Any) -> StepResult:
    """``env.step(action)`` as its 5-tuple (a malformed return raises here, in the call)."""
    obs, reward, terminated, truncated, info = env.step(action)
    return obs, reward, terminated, truncated, info
