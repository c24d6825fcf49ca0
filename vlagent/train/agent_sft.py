"""Recipe ``agent_sft``: cold start of a "thinking with images" policy on synthetic traces.

Reads top to bottom: set up → loop (fresh demo screens → forced multi-turn episodes built by
the agent loop's own token-in-token-out path → teacher-forced loss on assistant tokens only →
AdamW step → log / monitor / checkpoint) → export ``final/``.

With ``tools.enabled`` each demonstration is a ``gui.grounding.traces.zoom_trace`` (zoom on the
target's region, then answer in the zoomed view); without tools it is the direct answer in
observation_0's space (the no-tools baseline). Screens and trace randomness are functions of
(run.seed, step), so a resumed run sees the batches an uninterrupted one would.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np
import torch

from vlagent.agent.config import AgentTrainConfig
from vlagent.agent.data import AgentTask, demo_texts
from vlagent.agent.logprobs import trajectory_logprobs
from vlagent.agent.loop import AgentRuntime
from vlagent.agent.trajectory import Trajectory
from vlagent.train.agent_run import start_agent_run
from vlagent.train.checkpoint import save_checkpoint
from vlagent.train.common import (
    Timer,
)

log = logging.getLogger(__name__)


@dataclasses.dataclass
class AgentSFTResult:
    """What an agent SFT run produced."""

    final_dir: str
    steps: int
    train_seconds: float
    best_val_accuracy: float
    stop_reason: str


def demo_batch(
    rt: AgentRuntime, task: AgentTask, cfg: AgentTrainConfig, step: int
) -> list[Trajectory]:
    """The forced demonstration episodes of ``step`` (fresh ``demo`` screens)."""
    s = cfg.sft
    rng = np.random.default_rng([cfg.run.seed, step])
    keys = task.keys("demo", step * s.batch_size, s.batch_size)
    specs = [task.spec(k, group_id=i) for i, k in enumerate(keys)]
    forced = [demo_texts(rt, task.sample(k), rng, s) for k in keys]
    return rt.run(specs, forced=forced)


def sft_loss(rt: AgentRuntime, trajectories: list[Trajectory]) -> tuple[torch.Tensor, float]:
    """Mean negative log-likelihood over the assistant tokens of ``trajectories``.

    Returns:
        (0-dim loss, number of assistant tokens).
    """
    logp, batch = trajectory_logprobs(
        rt.policy.model, trajectories, rt.tokens.pad_id, forbidden=rt.tokens.forbidden
    )
    mask = batch["loss_mask"]  # [B, L]
    n = float(mask.sum())
    return -(logp * mask).sum() / max(n, 1.0), n


def run_agent_sft(cfg: AgentTrainConfig, phase: str = "agent_sft") -> AgentSFTResult:
    """Run the agent SFT recipe described by ``cfg`` (module docstring)."""
    s, e = cfg.sft, cfg.eval
    run = start_agent_run(cfg, phase, s.lr, s.steps, {"train_seconds": 0.0, "best_val": -1.0})
    run_dir, policy, opt, rt, task = run.run_dir, run.policy, run.opt, run.rt, run.task
    extra, step, metrics, bar = run.extra, run.step, run.metrics, run.bar
    stop_reason = "steps"
    while step < s.steps:
        if s.max_seconds > 0 and extra["train_seconds"] >= s.max_seconds:
            stop_reason = "max_seconds"
            break
        timer = Timer()
        t0 = time.perf_counter()
        with timer("data"):
            trajectories = demo_batch(rt, task, cfg, step)
        with timer("update"):
            policy.model.train()
            loss, n_tokens = sft_loss(rt, trajectories)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
            opt.step()
        step += 1
        extra["train_seconds"] += time.perf_counter() - t0
        row = {
            "loss": loss.item(),
            "grad_norm": float(grad_norm),
            "assistant_tokens": n_tokens / len(trajectories),
            "sequence_tokens": sum(len(t) for t in trajectories) / len(trajectories),
            "over_limit_frac": sum(t.over_limit for t in trajectories) / len(trajectories),
            "train_seconds": extra["train_seconds"],
            **timer.times,
        }
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", best=f"{extra['best_val']:.3f}")
        if e.every and step % e.every == 0:
            row.update(run.validate(cfg, phase, step))
            extra["best_val"] = max(extra["best_val"], row["val/accuracy"])
        metrics.log(step, row)
        if cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0:
            save_checkpoint(run_dir, phase, step, policy, opt, extra)
        if s.stop_accuracy > 0 and extra["best_val"] >= s.stop_accuracy:
            stop_reason = "stop_accuracy"
            break
    final = run.finish(phase, step, stop_reason)
    return AgentSFTResult(final, step, extra["train_seconds"], extra["best_val"], stop_reason)
