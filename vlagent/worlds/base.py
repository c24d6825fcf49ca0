"""What a world is: an env factory, an adapter, task ids by split, and its own metrics.

A world is everything the one pipeline needs to train and evaluate in one kind of env. The
recipes (``train/sft.py``, ``train/grpo.py``) and the evaluator (``eval/evaluate.py``) only talk
to this interface; adding a world means subclassing :class:`World` and registering it. The
adapter and the env carry all world-specific behaviour.

Envs run in this process (``make_env``), or, with ``run.env_workers`` > 0 for a world whose
``env_factory`` gives a picklable factory, in Ray env workers (``rollout/ray_envs.py``: one
``RayEnvPool`` per split, started on first use and closed by :meth:`World.close`).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from vlagent.errors import ConfigError
from vlagent.rollout.runner import Adapter, Demonstrator, EpisodeSpec, Limits, run_episodes
from vlagent.rollout.trajectory import Trajectory

log = logging.getLogger(__name__)
Split = Literal["train", "demo", "val", "test"]


class World(abc.ABC):
    """One kind of env the trainer can train in.

    Args:
        cfg: the run config (a world reads its own sections).
        policy: the loaded policy (its processor and family fix prompts and coordinates).
    """

    default_max_turns: int = 1
    """Turns per episode when ``loop.max_turns`` is 0."""

    def __init__(self, cfg: Any, policy: Any) -> None:
        self.cfg, self.policy = cfg, policy
        self._ray_pools: dict[str, Any] = {}

    @abc.abstractmethod
    def make_env(self, split: Split) -> Any:
        """A new gymnasium env whose ``reset(options={"task_id": id})`` runs task ``id``."""

    def env_factory(self, split: Split) -> Callable[[], Any] | None:
        """A picklable zero-argument callable that builds ``split``'s env in another process
        (a module-level class or a ``functools.partial`` of one, never a closure over the
        world), for Ray env workers (``run.env_workers``); None (the default): this world's
        envs run only in this process."""
        return None

    def env_maker(self, split: Split) -> Callable[[], Any]:
        """What ``episodes`` builds each env of ``split`` with: a lease from the split's Ray env
        workers when ``run.env_workers`` > 0 and ``env_factory(split)`` is not None, else
        ``make_env(split)``.

        Raises:
            EnvWorkerError: Ray is missing, the factory does not pickle, or the workers fail
                to start.
        """
        workers = self.cfg.run.env_workers
        factory = self.env_factory(split) if workers > 0 else None
        if factory is None:
            noted = self.__dict__.setdefault("_local_splits", set())
            if workers > 0 and split not in noted:
                noted.add(split)
                log.warning(
                    "run.env_workers=%d: world %s has no env factory for %s envs (env_factory); "
                    "they run in this process",
                    workers,
                    type(self).__name__,
                    split,
                )
            return lambda: self.make_env(split)
        pools = self.__dict__.setdefault("_ray_pools", {})
        if split not in pools:
            from vlagent.rollout.ray_envs import RayEnvPool

            pools[split] = RayEnvPool(factory, workers)
        return pools[split].make_env

    @abc.abstractmethod
    def adapter(self) -> Adapter:
        """The adapter between this world's envs and the policy's chat."""

    @abc.abstractmethod
    def task_ids(self, split: Split, start: int, count: int) -> list[Any]:
        """Task ids ``start .. start + count - 1`` of ``split`` (cycling a finite split)."""

    def num_tasks(self, split: Split) -> int | None:
        """Number of distinct tasks of ``split`` (None: unbounded, e.g. procedural screens)."""
        return None

    def demonstrator(self) -> Demonstrator:
        """Writes demonstration turns for SFT."""
        raise ConfigError(f"world {type(self).__name__} has no demonstrator: it cannot run sft")

    def limits(self, max_turn_tokens: int) -> Limits:
        """Episode limits from ``loop`` with the given per-turn budget."""
        loop = self.cfg.loop
        return Limits(
            max_turns=loop.max_turns or self.default_max_turns,
            max_turn_tokens=max_turn_tokens,
            max_episode_tokens=loop.max_episode_tokens,
            over_limit=loop.over_limit,
            over_limit_penalty=loop.over_limit_penalty,
        )

    def episodes(
        self,
        policy: Any,
        split: Split,
        specs: Sequence[EpisodeSpec],
        max_turn_tokens: int,
        adapter: Adapter | None = None,
        limits: Limits | None = None,
        **kwargs: Any,
    ) -> list[Trajectory]:
        """Run ``specs`` on fresh envs of ``split`` (:meth:`env_maker`) with this world's
        adapter and limits (or ``limits``), the env calls of a round on ``loop.env_threads``
        threads.

        ``kwargs`` go to ``run_episodes`` (temperature, greedy, seed, demonstrator, chunk_size,
        shared_prefix, policy_version, env_threads); pass ``adapter`` to reuse one (and its
        prompt cache) across calls.
        """
        kwargs.setdefault("env_threads", self.cfg.loop.env_threads)
        return run_episodes(
            policy,
            self.adapter() if adapter is None else adapter,
            self.env_maker(split),
            list(specs),
            self.limits(max_turn_tokens) if limits is None else limits,
            **kwargs,
        )

    def on_step(self, step: int) -> None:
        """Called by the trainer before each step's rollouts (e.g. a staged reward schedule
        switches its weights here). Default: nothing."""
        return None

    def summarize(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        """World-specific means over episodes (added to the common ones)."""
        return {}

    def categories(self, traj: Trajectory) -> dict[str, str]:
        """The episode's category under each key the world groups results by (``{"template":
        "set_toggles"}``, ``{"task": "click-button"}``); the evaluator counts successes per
        value with 95 % intervals (``eval_summary.json`` ``category_tables``). Default: none."""
        return {}

    def baselines(self, task_ids: Sequence[Any]) -> dict[str, float]:
        """Scores of trivial policies on these tasks (reported beside accuracies)."""
        return {}

    def save_pictures(self, trajectories: Sequence[Trajectory], folder: Path, name: str) -> None:
        """Save annotated pictures of some episodes (default: none)."""
        return None

    def close(self) -> None:
        """Release what the world holds (sources, backends). A subclass that overrides it
        calls ``super().close()``: that closes the Ray env workers."""
        self.close_env_workers()

    def close_env_workers(self) -> None:
        """Close the Ray env workers of every split (idempotent; later episodes start new
        ones)."""
        pools = self.__dict__.get("_ray_pools") or {}
        while pools:
            pools.popitem()[1].close()


def save_episode_record(
    traj: Trajectory, path: Path, turn_fields: Sequence[str], **extra: Any
) -> None:
    """Write one episode's JSON record next to its picture (atomically): task id, instruction,
    outcome, reward, ``extra`` keys, and per turn the ``Turn`` attributes ``turn_fields``."""
    import json

    from vlagent.io import atomic_write_text

    record = {
        "task_id": traj.task_id,
        **extra,
        "instruction": traj.instruction,
        "success": traj.success,
        "status": traj.status,
        "reward": traj.reward,
        "turns": [{f: getattr(x, f) for f in turn_fields} for x in traj.turns],
    }
    atomic_write_text(path, json.dumps(record, indent=1, default=str) + "\n")


WorldFactory = Callable[[Any, Any], World]
WORLDS: dict[str, WorldFactory] = {}
"""Registered worlds by name (``world:`` in a config)."""


def register_world(name: str, factory: WorldFactory) -> None:
    """Make ``world: name`` available to every recipe, ``vlagent train`` and ``vlagent eval``."""
    WORLDS[name] = factory


def make_world(cfg: Any, policy: Any) -> World:
    """The world ``cfg.world`` names, built for ``policy``.

    Raises:
        ConfigError: the name is not registered (the message lists the known worlds).
    """
    if cfg.world not in WORLDS:
        raise ConfigError(f"world: {cfg.world!r} is unknown; known: {', '.join(sorted(WORLDS))}")
    return WORLDS[cfg.world](cfg, policy)
