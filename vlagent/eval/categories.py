"""Success per category with counts and 95 % intervals, and avg@k / pass@k over repeated tasks.

Pure functions over finished episodes (no model). A world names each episode's categories with
``World.categories(traj) -> {key: value}`` (``{"template": "set_toggles"}``, ``{"task":
"click-button"}``); :func:`category_tables` counts, for every key, the episodes and successes of
each value and gives the success rate with its 95 % Wilson interval
(:func:`vlagent.eval.stats.wilson_interval`). An episode without a value for a key counts under
``"?"`` in that key's table, so every table covers every episode. Errored episodes count as
failures, as in the headline success rate.

:func:`at_k` reads ``k`` episodes per task (``vlagent eval --episodes k``): avg@k is the mean
success over all episodes (the headline success rate), pass@k the share of tasks with at least
one success, with the Wilson interval over tasks (tasks are independent; episodes of one task
are not, so avg@k gets no interval of its own here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vlagent.eval.stats import wilson_interval
from vlagent.rollout.trajectory import Trajectory

MISSING = "?"
"""Value of an episode that has no category under a key another episode has."""


def count_row(successes: int, n: int) -> dict[str, Any]:
    """``{"n", "successes", "success_rate", "ci95": [low, high]}`` (rate None when n is 0)."""
    lo, hi = wilson_interval(successes, n)
    rate = successes / n if n else None
    return {"n": n, "successes": successes, "success_rate": rate, "ci95": [lo, hi]}


def tables_of(
    labels: Sequence[Mapping[str, str]], successes: Sequence[bool]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per key, per value: the counts of the episodes labelled so.

    Args:
        labels: one ``{key: value}`` per episode (``World.categories``), in episode order.
        successes: whether each episode succeeded.

    Returns:
        ``{key: {value: count_row}}``; keys sorted, values sorted with ``"?"`` last.

    Raises:
        ValueError: the two sequences differ in length.
    """
    if len(labels) != len(successes):
        raise ValueError(f"tables_of: {len(labels)} label sets but {len(successes)} outcomes")
    keys = sorted({str(k) for lab in labels for k in lab})
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key in keys:
        counts: dict[str, list[int]] = {}
        for lab, ok in zip(labels, successes, strict=True):
            value = str(lab.get(key, MISSING))
            c = counts.setdefault(value, [0, 0])
            c[0] += bool(ok)
            c[1] += 1
        order = sorted(counts, key=lambda v: (v == MISSING, v))
        out[key] = {v: count_row(*counts[v]) for v in order}
    return out


def category_tables(
    categories: Callable[[Trajectory], Mapping[str, str]], trajectories: Sequence[Trajectory]
) -> dict[str, dict[str, dict[str, Any]]]:
    """:func:`tables_of` the episodes, labelled by ``categories`` (a world's hook)."""
    labels = [dict(categories(t)) for t in trajectories]
    return tables_of(labels, [bool(t.success) for t in trajectories])


def at_k(task_ids: Sequence[Any], successes: Sequence[bool]) -> dict[str, float]:
    """avg@k and pass@k of episodes grouped by task.

    Args:
        task_ids: each episode's task (repeated ``k`` times for ``k`` episodes per task).
        successes: whether each episode succeeded.

    Returns:
        ``{"k", "tasks", "avg@k", "pass@k", "pass@k_ci_low", "pass@k_ci_high"}`` as floats:
        ``k`` the most episodes any task had (every task has ``k`` under ``--episodes k``),
        ``tasks`` the distinct tasks; empty when there is no episode.
    """
    if len(task_ids) != len(successes):
        raise ValueError(f"at_k: {len(task_ids)} task ids but {len(successes)} outcomes")
    if not task_ids:
        return {}
    by: dict[str, list[bool]] = {}
    for t, ok in zip(task_ids, successes, strict=True):
        by.setdefault(repr(t), []).append(bool(ok))
    passed = sum(any(v) for v in by.values())
    lo, hi = wilson_interval(passed, len(by))
    return {
        "k": float(max(len(v) for v in by.values())),
        "tasks": float(len(by)),
        "avg@k": sum(map(bool, successes)) / len(successes),
        "pass@k": passed / len(by),
        "pass@k_ci_low": lo,
        "pass@k_ci_high": hi,
    }
