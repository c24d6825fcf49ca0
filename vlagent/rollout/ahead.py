"""Asynchronous rollouts with bounded staleness: batches sampled ahead of the trainer.

With ``grpo.max_staleness`` k > 0 a background thread samples the episodes of step s with the
policy weights of version ``max(s - k, v0)`` (``v0``: the version the run started or resumed
at) on a copy of the policy, while the trainer updates on step s - 1, ..., s - k. Each
trajectory carries the version that sampled it (``Trajectory.policy_version``); the trainer
drops episodes more than k versions old (:func:`split_stale`, counted, never silently) and
corrects the rest by importance: the PPO ratio is taken against the sampler's own behaviour
log-probs, so ``grpo.recompute_old_logprobs`` must stay off (config check). The lag is fixed —
batch s always uses version ``s - k`` — so a run does not depend on thread timing.

The trainer publishes weights after each update (:meth:`AheadSampler.publish`); the thread keeps
the snapshots it still needs and loads version ``s - k`` into its copy before sampling step s.
:meth:`AheadSampler.paused` stops the thread between batches (validation and checkpoints use
the same world). A failure in the thread is raised in the trainer at its next :meth:`take`.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from vlagent.errors import VlagentError
from vlagent.rollout.trajectory import Trajectory

Collect = Callable[[Any, int, int], tuple[list[Trajectory], dict[str, float], Any]]
"""``collect(rollout_policy, step, version) -> (trajectories, stats, cursor_state)``."""


class AheadSamplerError(VlagentError, RuntimeError):
    """The sampling thread failed (the cause is chained) or the sampler is closed."""


@dataclass
class AheadBatch:
    """One step's episodes, sampled by policy ``version``; ``cursor`` is the task cursor's
    state after drawing them (what a checkpoint of this step records)."""

    step: int
    version: int
    trajectories: list[Trajectory]
    stats: dict[str, float] = field(default_factory=dict)
    cursor: Any = None


def split_stale(
    trajectories: Sequence[Trajectory], version: int, max_staleness: int
) -> tuple[list[Trajectory], list[Trajectory]]:
    """``(kept, dropped)``: episodes at most ``max_staleness`` versions behind ``version``."""
    kept = [t for t in trajectories if version - t.policy_version <= max_staleness]
    dropped = [t for t in trajectories if version - t.policy_version > max_staleness]
    return kept, dropped


def staleness_metrics(
    trajectories: Sequence[Trajectory], dropped: Sequence[Trajectory], version: int
) -> dict[str, float]:
    """Mean / max staleness (versions behind the trainer) of the kept episodes, and how many
    episodes were dropped as too stale."""
    lags = [version - t.policy_version for t in trajectories]
    return {
        "staleness/mean": sum(lags) / max(len(lags), 1),
        "staleness/max": float(max(lags, default=0)),
        "staleness/dropped": float(len(dropped)),
    }


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


class AheadSampler:
    """Samples steps ``first .. last - 1`` on a thread, ``lag`` versions behind the trainer.

    Args:
        collect: samples one step's episodes with the given policy (see :data:`Collect`).
        rollout_policy: the thread's own copy of the policy (its weights are overwritten).
        trainer_model: the trained model; its weights now are version ``first``.
        first: the step the run starts at (= the current version).
        last: the run's step count (the thread stops there).
        lag: k >= 1, the fixed staleness.
    """

    def __init__(
        self,
        collect: Collect,
        rollout_policy: Any,
        trainer_model: torch.nn.Module,
        first: int,
        last: int,
        lag: int,
    ) -> None:
        if lag < 1:
            raise ValueError(f"AheadSampler: lag must be >= 1, got {lag}")
        self.collect, self.policy, self.lag = collect, rollout_policy, lag
        self.first, self.last = first, last
        self._weights: dict[int, dict[str, torch.Tensor]] = {first: _snapshot(trainer_model)}
        self._cond = threading.Condition()
        self._gate = threading.Lock()  # held while a batch is sampled; paused() takes it
        self._out: queue.Queue[AheadBatch | BaseException] = queue.Queue(maxsize=lag)
        self._closed = False
        self._loaded: int | None = None
        self._thread = threading.Thread(target=self._run, name="ahead-sampler", daemon=True)
        self._thread.start()

    def version_for(self, step: int) -> int:
        """The policy version that samples step ``step``."""
        return max(step - self.lag, self.first)

    def publish(self, version: int, model: torch.nn.Module) -> None:
        """Record the trainer's weights after its update to ``version``."""
        with self._cond:
            self._weights[version] = _snapshot(model)
            self._cond.notify_all()

    def _wait_weights(self, version: int) -> dict[str, torch.Tensor] | None:
        with self._cond:
            while version not in self._weights and not self._closed:
                self._cond.wait(timeout=0.5)
            if self._closed:
                return None
            for old in [v for v in self._weights if v < version]:
                del self._weights[old]  # later steps never need older versions
            return self._weights[version]

    def _run(self) -> None:
        try:
            for step in range(self.first, self.last):
                version = self.version_for(step)
                weights = self._wait_weights(version)
                if weights is None:
                    return
                with self._gate:
                    if self._closed:
                        return
                    if self._loaded != version:
                        self.policy.model.load_state_dict(weights)
                        self._loaded = version
                    trajs, stats, cursor = self.collect(self.policy, step, version)
                self._put(AheadBatch(step, version, trajs, stats, cursor))
        except BaseException as err:  # handed to the trainer at the take() of its step
            self._put(err)

    def _put(self, item: AheadBatch | BaseException) -> None:
        while not self._closed:
            try:
                self._out.put(item, timeout=0.5)
                return
            except queue.Full:
                continue

    def take(self, step: int, timeout_s: float = 3600.0) -> AheadBatch:
        """The batch of ``step`` (blocks until sampled)."""
        if self._closed:
            raise AheadSamplerError("AheadSampler is closed")
        try:
            item = self._out.get(timeout=timeout_s)
        except queue.Empty as err:
            raise AheadSamplerError(f"no batch for step {step} within {timeout_s:.0f} s") from err
        if isinstance(item, BaseException):
            raise AheadSamplerError(f"sampling thread failed before step {step}") from item
        if item.step != step:
            raise AheadSamplerError(f"expected the batch of step {step}, got step {item.step}")
        return item

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No sampling inside the block (the thread waits between batches)."""
        with self._gate:
            yield

    def close(self) -> None:
        """Stop the thread (a batch being sampled is finished first) and drop what is queued."""
        self._closed = True
        with self._cond:
            self._cond.notify_all()
        self._thread.join(timeout=600)
        while not self._out.empty():
            self._out.get_nowait()
