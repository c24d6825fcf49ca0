"""Recipe ``sft``: supervised fine-tuning on demonstration trajectories, in any world.

Reads top to bottom: set up → loop (a batch of demonstration episodes → teacher-forced loss on
the policy tokens → AdamW step → log / monitor / checkpoint) → export ``final/``. A world's
demonstrator writes the turns (the ground-truth answer, a zoom trace, the phone oracle's
actions) and the episode runner plays them in the env, so a demonstration is exactly the
context the policy will see. Demonstrations come either from a fixed set of ``sft.num_demos``
tasks (the scarce-demonstration setting of the quickstart; played once and kept) or from a fresh
task for every sample. Every data choice is a function of (seed, step), so a resumed run sees
exactly the batches an uninterrupted one would.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import numpy as np
import torch

from vlagent.algos.schedule import lambda_scheduler, lr_lambda
from vlagent.batching import policy_forbidden_ids
from vlagent.config import SFTConfig, TrainConfig
from vlagent.rollout.forward import row_logprobs
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import EpisodeSpec, Limits
from vlagent.rollout.trajectory import Trajectory
from vlagent.train.common import Timer, start_run
from vlagent.worlds.base import World

log = logging.getLogger(__name__)

DEMO_TURN_TOKENS = 1024
"""Token budget of one demonstration turn (demonstrations are never cut)."""


@dataclasses.dataclass
class SFTResult:
    """What an SFT run produced."""

    final_dir: str
    steps: int
    train_seconds: float
    best_val_accuracy: float
    stop_reason: str


def demonstrations(policy: Any, world: World, task_ids: list[Any]) -> list[Trajectory]:
    """Demonstration episodes of ``task_ids`` (the world's demonstrator plays every turn).

    Episodes the demonstrator did not finish successfully are dropped (with a warning).
    """
    base = world.limits(DEMO_TURN_TOKENS)
    limits = Limits(base.max_turns, DEMO_TURN_TOKENS, 0, "none", 0.0)
    trajs = world.episodes(
        policy,
        "demo",
        [EpisodeSpec(t) for t in task_ids],
        DEMO_TURN_TOKENS,
        limits=limits,
        demonstrator=world.demonstrator(),
        chunk_size=len(task_ids) or 1,
    )
    kept = [t for t in trajs if t.success and t.error is None]
    if len(kept) < len(trajs):
        log.warning(
            "%d of %d demonstrations failed and were skipped", len(trajs) - len(kept), len(trajs)
        )
    return kept


def batch_task_ids(cfg: TrainConfig, world: World, step: int) -> list[Any]:
    """The demonstration tasks of ``step``: drawn from the fixed demo set, or fresh tasks."""
    s = cfg.sft
    if s.num_demos > 0:
        rng = np.random.default_rng([cfg.run.seed, step])
        return [
            world.task_ids("demo", int(i), 1)[0] for i in rng.integers(0, s.num_demos, s.batch_size)
        ]
    return world.task_ids("train", step * s.batch_size, s.batch_size)


def sft_loss(policy: Any, trajs: list[Trajectory]) -> tuple[torch.Tensor, float]:
    """Mean negative log-likelihood of the policy tokens of ``trajs`` (and the token count)."""
    rows = build_rows(trajs, None, policy.tokenizer.pad_token_id)
    # The full forward: demonstrations rarely share a prompt, so prefix sharing saves nothing.
    # The sampler's distribution: placeholders and ids past the tokenizer are masked (no update).
    pad, forbidden = policy.tokenizer.pad_token_id, policy_forbidden_ids(policy)
    logp = row_logprobs(
        policy.model,
        rows,
        pad,
        forbidden=forbidden,
        shared=False,
        grammar=getattr(policy, "grammar", None),
    )
    mask = rows.mask.to(logp.device)
    return -(logp.sum() / mask.sum()), float(mask.sum())


def early_stop(s: SFTConfig, extra: dict[str, float]) -> str | None:
    """Why SFT stops before its step budget (``max_seconds`` | ``stop_accuracy`` | ``plateau``),
    from the run's counters ``extra`` (saved in checkpoints), or None to go on."""
    if s.max_seconds > 0 and extra["train_seconds"] >= s.max_seconds:
        return "max_seconds"
    if s.stop_accuracy > 0 and extra["best_val"] >= s.stop_accuracy:
        return "stop_accuracy"
    if s.plateau_patience > 0 and extra["since_best"] >= s.plateau_patience:
        return "plateau"
    return None


def run_sft(cfg: TrainConfig, phase: str = "sft") -> SFTResult:
    """Run the SFT recipe described by ``cfg`` (see module docstring)."""
    s, e = cfg.sft, cfg.eval
    run = start_run(
        cfg,
        phase,
        lambda p: torch.optim.AdamW(
            [q for q in p.model.parameters() if q.requires_grad], lr=s.lr, weight_decay=0.0
        ),
        total=s.steps,
        extra={"train_seconds": 0.0, "best_val": -1.0, "since_best": 0},
    )
    policy, opt, world, extra = run.policy, run.opt, run.world, run.extra
    sched = lambda_scheduler(
        opt,
        lr_lambda(s.lr_schedule, s.warmup_steps, max(s.steps, 1), s.min_lr_ratio),
        run.state.get("scheduler") if run.state else None,
    )
    learner, par = run.learner, run.par
    cache: dict[Any, Trajectory | None] = {}
    step = run.step
    stop_reason = "steps"
    while step < s.steps:
        # checked before a step, so a run resumed after its stop (a relaunched driver) stops
        # again at once instead of training one step past it
        reason = early_stop(s, extra)
        if reason is not None:
            stop_reason = reason
            break
        timer = Timer()
        t0 = time.perf_counter()
        with timer("data"):
            ids = par.share(batch_task_ids(cfg, world, step))  # torchrun: this rank's share
            if s.num_demos > 0:  # a fixed set: play each demonstration once
                missing = sorted({t for t in ids if t not in cache}, key=ids.index)
                if missing:
                    played = {t.task_id: t for t in demonstrations(policy, world, missing)}
                    cache.update({t: played.get(t) for t in missing})
                trajs = [cache[t] for t in ids if cache[t] is not None]
            else:
                trajs = demonstrations(policy, world, ids)
        fewest = -par.slowest(-len(trajs))  # over ranks: every one needs rows to run
        if fewest == 0:
            raise RuntimeError(f"{phase}: no demonstration of step {step} succeeded ({ids[:4]}…)")
        with timer("update"):
            learner.model.train()
            loss, tokens = sft_loss(learner, trajs)  # type: ignore[arg-type]
            total_tokens = par.total(tokens)
            # FSDP averages gradients over W ranks: weight this rank's mean by its token share
            share = par.info.world_size * tokens / total_tokens
            opt.zero_grad(set_to_none=True)
            (loss * share).backward()
            params = [q for q in learner.model.parameters() if q.requires_grad]
            grad_norm = torch.nn.utils.clip_grad_norm_(params, s.max_grad_norm or float("inf"))
            lr = opt.param_groups[0]["lr"]  # the rate this step used
            opt.step()
            sched.step()
            loss_value = par.total(loss.item() * tokens) / total_tokens if par.on else loss.item()
        step += 1
        if par.on:
            with timer("sync_weights"):
                run.sync()
        extra["train_seconds"] += par.slowest(time.perf_counter() - t0)
        row = {
            "loss": loss_value,
            "grad_norm": float(grad_norm),
            "lr": lr,
            "tokens": total_tokens,
            "train_seconds": extra["train_seconds"],
            "samples_per_s": par.total(len(trajs)) / max(time.perf_counter() - t0, 1e-9),
            **timer.times,
        }
        run.bar.update(1)
        run.bar.set_postfix(loss=f"{loss_value:.3f}", best=f"{extra['best_val']:.3f}")
        if e.every and step % e.every == 0:
            val = run.validate(step)
            row.update(val)
            if val["val/success_rate"] > extra["best_val"]:
                extra["best_val"], extra["since_best"] = val["val/success_rate"], 0
            else:
                extra["since_best"] += 1
        run.metrics.log(step, row)
        if cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0:
            run.checkpoint(step, scheduler=sched)
    if stop_reason == "steps":  # a stop met on the very last step still names its cause
        stop_reason = early_stop(s, extra) or stop_reason
    final = run.finish(step, stop_reason, scheduler=sched)
    return SFTResult(str(final), step, extra["train_seconds"], extra["best_val"], stop_reason)
