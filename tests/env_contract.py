"""The env contract (docs/DESIGN.md, "Contracts") as plain checks any env factory can run.

The gui suites (``tests/gui/test_env_contract.py``, ``tests/gui/test_app_env_contract.py``)
add per-env fuzzing on top; a new world's test calls :func:`check_contract` on its env.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium.utils.env_checker import check_env


def same_obs(a: Any, b: Any) -> bool:
    """Observations equal key by key (arrays by value)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_obs(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and bool((a == b).all())
    return a == b


def check_contract(
    make: Callable[[], Any], valid_actions: Sequence[Any], invalid_actions: Sequence[Any]
) -> None:
    """gymnasium's checker (warnings fail), seeded determinism and equal group resets, reward =
    sum of ``info["reward_terms"]``, ``info["success"]`` a bool, invalid actions recorded as
    ``info["invalid_action"]`` (never raised), and an idempotent ``close``."""
    env = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    env.close()
    group = [make() for _ in range(3)]
    first = [e.reset(seed=7, options={"task_id": 3})[0] for e in group]
    assert all(same_obs(first[0], o) for o in first[1:]), "a group's envs reset differently"
    assert same_obs(first[0], group[0].reset(seed=7, options={"task_id": 3})[0])
    for action, invalid in [(a, False) for a in valid_actions] + [
        (a, True) for a in invalid_actions
    ]:
        env = group[0]
        env.reset(seed=7, options={"task_id": 3})
        _, reward, _, _, info = env.step(action)
        assert abs(reward - sum(info["reward_terms"].values())) < 1e-9, "terms do not sum"
        assert isinstance(info["success"], bool)
        assert bool(info["invalid_action"]) is invalid, f"invalid_action wrong for {action!r}"
    for e in group:
        e.close()
        e.close()
