"""Held-out evaluation of a policy in any world: greedy episodes through the one runner.

``evaluate(world, policy, "test", n)`` runs one greedy episode on each of the split's first
``n`` tasks and reports the success rate with its 95 % Wilson interval, the mean reward and each
reward term, mean turns and generated tokens, plus the world's own metrics (``World.summarize``:
e.g. the grounding accuracy and format rate, the tool calls per episode, the per-app success),
the success per category of each ``World.categories`` key with counts and intervals, and avg@k /
pass@k over the ``episodes_per_task`` episodes of each task (``vlagent.eval.categories``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from vlagent.eval.categories import at_k, category_tables
from vlagent.eval.stats import wilson_interval
from vlagent.rollout.runner import EpisodeSpec
from vlagent.rollout.trajectory import Trajectory
from vlagent.worlds.base import Split, World


@dataclasses.dataclass
class EvalReport:
    """What an evaluation measured.

    Attributes:
        n: episodes; success_rate and its 95 % interval ``success_ci``.
        metrics: means over episodes (reward, terms, turns, tokens, the world's own metrics).
        trajectories: the episodes, in task order.
        categories: ``{key: {value: {n, successes, success_rate, ci95}}}`` per
            ``World.categories`` key (empty when the world names none).
        sampling: avg@k and pass@k (``vlagent.eval.categories.at_k``).
    """

    n: int
    success_rate: float
    success_ci: tuple[float, float]
    metrics: dict[str, float]
    trajectories: list[Trajectory]
    categories: dict[str, dict[str, dict[str, Any]]] = dataclasses.field(default_factory=dict)
    sampling: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        """The success rate (point-in-box accuracy in the grounding worlds)."""
        return self.success_rate

    def summary(self) -> dict[str, float]:
        """The scalars (training logs them as ``val/<key>``); see :meth:`details`."""
        return {
            "n": float(self.n),
            "success_rate": self.success_rate,
            "success_ci_low": self.success_ci[0],
            "success_ci_high": self.success_ci[1],
            **self.metrics,
        }

    def details(self) -> dict[str, Any]:
        """What ``eval_summary.json`` adds to :meth:`summary`: avg@k / pass@k keys and
        ``category_tables``."""
        return {**self.sampling, "category_tables": self.categories}


def report_of(world: World, trajectories: Sequence[Trajectory]) -> EvalReport:
    """Summarize finished episodes."""
    n = len(trajectories)
    k = sum(t.success for t in trajectories)
    d = max(n, 1)
    finite = [t.reward for t in trajectories if not math.isnan(t.reward)]
    metrics: dict[str, float] = {
        "mean_reward": sum(finite) / max(len(finite), 1),
        "mean_turns": sum(len(t.turns) for t in trajectories) / d,
        "generated_tokens": sum(t.n_generated for t in trajectories) / d,
        "invalid_action_rate": sum(x.invalid for t in trajectories for x in t.turns)
        / max(sum(len(t.turns) for t in trajectories), 1),
        "over_limit_frac": sum(t.status == "over_limit" for t in trajectories) / d,
        "errored": float(sum(t.error is not None for t in trajectories)),
    }
    for name in sorted({k for t in trajectories for k in t.reward_terms}):
        metrics[f"reward_terms/{name}"] = (
            sum(t.reward_terms.get(name, 0.0) for t in trajectories) / d
        )
    metrics.update(world.summarize(trajectories))
    ok = [bool(t.success) for t in trajectories]
    return EvalReport(
        n,
        k / d,
        wilson_interval(k, n),
        metrics,
        list(trajectories),
        category_tables(getattr(world, "categories", lambda _t: {}), trajectories),
        at_k([t.task_id for t in trajectories], ok),
    )


def evaluate(
    world: World,
    policy: Any,
    split: Split,
    n: int,
    *,
    batch_size: int = 64,
    max_new_tokens: int = 24,
    episodes_per_task: int = 1,
    task_ids: Sequence[Any] | None = None,
    keep_inputs: int = 16,
    temperature: float | None = None,
    seed: int = 0,
) -> EvalReport:
    """Greedy episodes on the first ``n`` tasks of ``split`` (or on ``task_ids``).

    Args:
        world: where to evaluate.
        policy: a loaded ``Policy``.
        split: which task ids (``val`` for monitoring, ``test`` for reported numbers).
        n: tasks (a finite split is cut to its size).
        batch_size: episodes advanced together.
        max_new_tokens: token budget of each turn.
        episodes_per_task: episodes per task (reset seeds 0 .. k-1).
        keep_inputs: the first this many episodes keep their prompts and screenshots (for
            pictures); the others keep only their outcomes (turns, rewards, extras).
        temperature: None for greedy decoding; else sample at this temperature (e.g. k
            sampled episodes per task for rejection sampling), seeded by ``seed``.
    """
    if task_ids is None:
        total = world.num_tasks(split)
        task_ids = world.task_ids(split, 0, n if total is None else min(n, total))
    specs = [EpisodeSpec(t, seed) for seed in range(episodes_per_task) for t in task_ids]
    adapter = world.adapter()
    trajs: list[Trajectory] = []
    for lo in range(0, len(specs), batch_size):
        trajs += world.episodes(
            policy,
            split,
            specs[lo : lo + batch_size],
            max_new_tokens,
            adapter=adapter,
            greedy=temperature is None,
            temperature=1.0 if temperature is None else temperature,
            seed=seed + lo,
            chunk_size=batch_size,
        )
        for t in trajs[keep_inputs:]:
            release_inputs(t)
    return report_of(world, trajs)


def release_inputs(traj: Trajectory) -> None:
    """Drop what only training and pictures need (token ids, pixel values, screenshots, a
    robot's camera frames), so an evaluation over many tasks holds the outcomes, not every
    prompt's tensors."""
    traj.segments = []
    for key in ("image", "images", "screens", "frames"):
        traj.extras.pop(key, None)
