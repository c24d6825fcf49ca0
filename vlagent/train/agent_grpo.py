"""Recipe ``agent_grpo``: multi-turn GRPO for a "thinking with images" policy.

One iteration, in named and timed phases:
    generate   B fresh screens x G episodes each, run by the agent loop to the end (tool calls
               and their image turns included; behaviour log-probs kept per token)
    reward     final answer scored in ORIGINAL coordinates + tool-use terms (terms sum to it)
    advantage  group-relative advantages by screen; a masked over-limit episode gets NaN
               reward → advantage 0 and no part in its group's statistics
    update     grpo.epochs passes of PPO-clip over micro-batches; the trajectory's advantage is
               broadcast to every policy token; token-mean over the whole batch
Screens and sampling seeds are functions of (run.seed, step), so a resumed run reproduces an
uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import torch

from vlagent.agent.config import AgentGRPOConfig, AgentTrainConfig
from vlagent.agent.data import AgentTask
from vlagent.agent.logprobs import trajectory_logprobs
from vlagent.agent.loop import AgentRuntime
from vlagent.agent.reward import advantage_rewards, score_trajectories, summarize
from vlagent.agent.trajectory import Trajectory
from vlagent.agent.viz import save_episodes
from vlagent.algos.advantages import compute_advantages
from vlagent.algos.losses import policy_loss
from vlagent.train.agent_run import start_agent_run
from vlagent.train.checkpoint import save_checkpoint
from vlagent.train.common import (
    Timer,
)
from vlagent.train.grpo import step_seed

log = logging.getLogger(__name__)


@dataclasses.dataclass
class AgentGRPOResult:
    """What an agent GRPO run produced."""

    final_dir: str
    steps: int
    train_seconds: float
    stop_reason: str


def agent_grpo_update(
    rt: AgentRuntime,
    trajectories: list[Trajectory],
    advantages: torch.Tensor,
    opt: torch.optim.Optimizer,
    g: AgentGRPOConfig,
) -> dict[str, float]:
    """``g.epochs`` PPO-clip steps on one batch of trajectories.

    Args:
        trajectories: N scored episodes.
        advantages: [N] one advantage per trajectory, broadcast to all of its policy tokens.
    Returns:
        The last epoch's stats (loss, clip fractions, grad norm, tokens).
    """
    model = rt.policy.model
    rows = [i for i, t in enumerate(trajectories) if any(t.loss_mask)]
    total = sum(sum(trajectories[i].loss_mask) for i in rows)
    stats: dict[str, float] = {"policy_tokens": float(total)}
    if not rows:
        return stats
    model.train()
    for _ in range(g.epochs):
        opt.zero_grad(set_to_none=True)
        acc: dict[str, float] = {}
        for lo in range(0, len(rows), g.micro_batch):
            idx = rows[lo : lo + g.micro_batch]
            logp, batch = trajectory_logprobs(
                model,
                [trajectories[i] for i in idx],
                rt.tokens.pad_id,
                temperature=rt.loop.temperature,
                forbidden=rt.tokens.forbidden,
            )
            mask = batch["loss_mask"]  # [b, L]
            adv = advantages[idx].to(logp.device)  # [b] → broadcast to [b, L] by the loss
            loss, st = policy_loss(
                "ppo_clip",
                logp,
                batch["behaviour_logprobs"],
                adv,
                mask,
                clip_eps_low=g.clip_eps_low,
                clip_eps_high=g.clip_eps_high,
                aggregation="token_mean",
            )
            weight = float(mask.sum()) / total  # token-mean over the whole batch
            (loss * weight).backward()
            for k, v in {**st, "loss": loss.item()}.items():
                acc[k] = acc.get(k, 0.0) + weight * v
        acc["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        stats.update(acc)
    return stats


def rollout_batch(
    rt: AgentRuntime, task: AgentTask, g: AgentGRPOConfig, step: int, seed: int
) -> list[Trajectory]:
    """B train screens of ``step`` x G sampled episodes each (group id = screen index)."""
    keys = task.keys("train", step * g.screens_per_step, g.screens_per_step)
    specs = [task.spec(k, group_id=j) for j, k in enumerate(keys) for _ in range(g.group_size)]
    return rt.run(specs, seed=step_seed(seed, step))


def run_agent_grpo(cfg: AgentTrainConfig, phase: str = "agent_grpo") -> AgentGRPOResult:
    """Run the multi-turn GRPO recipe described by ``cfg`` (module docstring)."""
    g, e = cfg.grpo, cfg.eval
    run = start_agent_run(cfg, phase, g.lr, g.steps, {"train_seconds": 0.0})
    run_dir, policy, opt, rt, task = run.run_dir, run.policy, run.opt, run.rt, run.task
    tool_cfg, extra, step, metrics, bar = run.tool_cfg, run.extra, run.step, run.metrics, run.bar
    stop_reason = "steps"
    while step < g.steps:
        if g.max_seconds > 0 and extra["train_seconds"] >= g.max_seconds:
            stop_reason = "max_seconds"
            break
        timer = Timer()
        t0 = time.perf_counter()
        with timer("generate"):
            trajectories = rollout_batch(rt, task, g, step, cfg.run.seed)
        with timer("reward"):
            score_trajectories(
                trajectories,
                task.answer_spec,
                tool_cfg,
                over_limit=cfg.loop.over_limit,
                over_limit_penalty=cfg.loop.over_limit_penalty,
            )
        with timer("advantage"):
            group_ids = torch.tensor([t.group_id for t in trajectories])
            adv = compute_advantages(
                "grpo", advantage_rewards(trajectories), group_ids, scale_by_std=g.scale_by_std
            )  # [N]
        with timer("update"):
            stats = agent_grpo_update(rt, trajectories, adv, opt, g)
        step += 1
        elapsed = time.perf_counter() - t0
        extra["train_seconds"] += elapsed
        row = {
            **summarize(trajectories),
            **stats,
            "episodes_per_s": len(trajectories) / max(elapsed, 1e-9),
            "train_seconds": extra["train_seconds"],
            **timer.times,
        }
        bar.update(1)
        bar.set_postfix(reward=f"{row['reward/mean']:.3f}", acc=f"{row['accuracy']:.2f}")
        if e.every and step % e.every == 0:
            row.update(run.validate(cfg, phase, step))
        if cfg.run.samples_every and step % cfg.run.samples_every == 0:
            save_episodes(
                trajectories, run_dir / "samples", f"{phase}_train_{step:06d}", e.rollout_pictures
            )
        metrics.log(step, row)
        if cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0:
            save_checkpoint(run_dir, phase, step, policy, opt, extra)
    final = run.finish(phase, step, stop_reason)
    return AgentGRPOResult(final, step, extra["train_seconds"], stop_reason)
