"""Recipe ``grpo``: group-relative policy optimization in any world.

One iteration, in named and timed phases (as in verl's driver loop):
    generate   B tasks × G episodes from the same reset, run by the episode runner (behaviour
               log-probs kept); with dynamic sampling, groups whose rewards do not vary are
               dropped and more tasks are drawn (≤ N rounds)
    ref        reference log-probs (only when grpo.kl_coef > 0; β = 0 loads no reference)
    old        recomputed old log-probs (only with grpo.recompute_old_logprobs)
    advantage  credit from the envs' rewards by explicit group id (``train/credit.py``)
    update     epochs × minibatches × micro-batches of PPO-clip or GSPO (``train/update.py``)
Which tasks, sampling seeds and minibatch orders are used are functions of (run.seed, step)
and a key cursor saved in the checkpoint, so a resumed run reproduces an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import torch

from vlagent.algo_config import GRPOConfig
from vlagent.algos.filters import DynamicSampler, overlong_mask
from vlagent.algos.kl import kl_in_reward
from vlagent.algos.schedule import lr_lambda
from vlagent.config import TrainConfig
from vlagent.rollout.rows import build_rows, with_advantages
from vlagent.rollout.runner import group_specs
from vlagent.rollout.trajectory import Trajectory
from vlagent.train.checkpoint import save_checkpoint
from vlagent.train.common import Timer, start_run
from vlagent.train.credit import episode_rewards, turn_advantages
from vlagent.train.keys import KeyStream
from vlagent.train.update import (
    UpdateBatch,
    policy_update,
    recompute_logprobs,
    reference_logprobs,
)
from vlagent.worlds.base import World

log = logging.getLogger(__name__)


@dataclasses.dataclass
class GRPOResult:
    """What a GRPO run produced."""

    final_dir: str
    steps: int
    train_seconds: float
    stop_reason: str


def step_seed(seed: int, step: int, round_: int = 0) -> int:
    """Sampling seed of (step, resampling round): stable across resumes."""
    return (seed * 1_000_003 + step * 7919 + round_ * 104_729 + 17) % (2**31 - 1)


def rollout_group(
    policy: Any,
    world: World,
    cfg: TrainConfig,
    task_ids: Sequence[Any],
    seed: int,
    version: int,
    engine: Any = None,
) -> list[Trajectory]:
    """G sampled episodes of each task (group id = task position), all reset alike; ``engine``
    (``rollout/engines.py``) samples when given, else the transformers sampler."""
    g = cfg.grpo
    specs = group_specs(task_ids, g.group_size, seeds=0)
    return world.episodes(
        policy,
        "train",
        specs,
        g.max_new_tokens,
        temperature=g.temperature,
        seed=seed,
        chunk_size=max(cfg.loop.batch_size, g.group_size),
        shared_prefix=g.shared_prefix,
        policy_version=version,
        **({"engine": engine} if engine is not None else {}),
    )


def collect(
    policy: Any,
    world: World,
    cfg: TrainConfig,
    step: int,
    keys: KeyStream,
    version: int | None = None,
    engine: Any = None,
) -> tuple[list[Trajectory], dict[str, float]]:
    """Sample one training batch of episodes (with dynamic-sampling rounds when enabled) with
    ``policy``, whose weights are version ``version`` (default: ``step``)."""
    g = cfg.grpo
    version = step if version is None else version
    sampler = (
        DynamicSampler(g.prompts_per_step, g.max_resample_rounds) if g.dynamic_sampling else None
    )
    kept: list[Trajectory] = []
    round_, sampled, n_groups = 0, 0, 0
    while True:
        task_ids = keys.take(g.prompts_per_step)
        trajs = rollout_group(
            policy, world, cfg, task_ids, step_seed(cfg.run.seed, step, round_), version, engine
        )
        for t in trajs:  # groups of later rounds never merge with earlier ones
            t.group_id += n_groups
        n_groups += len(task_ids)
        sampled += len(trajs)
        keys.record([t.task_id for t in trajs], [t.success for t in trajs])
        round_ += 1
        if sampler is None:
            return trajs, {"sampled": float(sampled)}
        rewards = episode_rewards(trajs)
        keep = sampler.offer(rewards, torch.tensor([t.group_id for t in trajs]))
        kept += [t for t, k in zip(trajs, keep.tolist(), strict=True) if k]
        if sampler.done:
            break
    stats = {f"dynamic_sampling/{k}": v for k, v in sampler.stats().items()}
    stats["sampled"] = float(sampled)
    return kept, stats


def make_scheduler(opt: torch.optim.Optimizer, g: GRPOConfig) -> torch.optim.lr_scheduler.LambdaLR:
    """LR schedule over all optimizer steps of the run (steps × epochs × minibatches)."""
    total = max(g.steps * g.epochs * g.minibatches, 1)
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lr_lambda(g.lr_schedule, g.warmup_steps, total, g.min_lr_ratio)
    )


def train_step(
    policy: Any,
    trajs: list[Trajectory],
    g: GRPOConfig,
    opt: torch.optim.Optimizer,
    sched: Any,
    reference: Any,
    shuffle_seed: int,
    timer: Timer,
) -> dict[str, float]:
    """Credit, (reference / old log-probs) and the update on one batch of episodes."""
    pad = policy.tokenizer.pad_token_id
    rewards = episode_rewards(trajs)  # [E]
    rows = build_rows(trajs, None, pad)  # advantages attached after credit
    out: dict[str, float] = {}
    if len(rows) == 0:
        return out
    mask = overlong_mask(rows.mask, rows.truncated) if g.mask_truncated else rows.mask
    ref_logp = None
    if g.kl_coef > 0:
        with timer("ref"):
            ref_logp = reference_logprobs(policy, reference, rows, g)
        if g.kl_in_reward:
            per_row = kl_in_reward(
                torch.zeros(len(rows)), rows.old_logp, ref_logp, mask, g.kl_coef, g.kl_estimator
            )
            rewards = rewards + torch.zeros(len(trajs)).index_add(0, rows.traj_index, per_row)
            out["kl_in_reward"] = float(-per_row.mean())
    with timer("advantage"):
        rows = with_advantages(rows, trajs, turn_advantages(trajs, g, rewards))
    old_logp = rows.old_logp
    if g.recompute_old_logprobs or g.engine != "hf":
        with timer("old_logprob"):
            recomputed = recompute_logprobs(policy, rows, g)
        on = rows.mask > 0  # the off-policy error of the sampler: |behaviour - trainer| logp
        out["logp_gap"] = float((rows.old_logp - recomputed).abs()[on].mean()) if on.any() else 0.0
        old_logp = recomputed if g.recompute_old_logprobs else old_logp
    with timer("update"):
        out.update(
            policy_update(
                policy, UpdateBatch(rows, old_logp, mask, ref_logp), g, opt, sched, shuffle_seed
            )
        )
    out["adv_abs_mean"] = float(rows.advantages.abs().mean())
    return out


def batch_metrics(world: World, trajs: Sequence[Trajectory]) -> dict[str, float]:
    """Means over the batch's episodes: reward, success, turns, tokens, each reward term."""
    n = max(len(trajs), 1)
    finite = [t.reward for t in trajs if not math.isnan(t.reward)]
    out = {
        "episodes": float(len(trajs)),
        "reward/mean": sum(finite) / max(len(finite), 1),
        "reward/std": float(torch.tensor(finite).std()) if len(finite) > 1 else 0.0,
        "success_rate": sum(t.success for t in trajs) / n,
        "turns": sum(len(t.turns) for t in trajs) / n,
        "response_tokens": sum(t.n_generated for t in trajs) / n,
        "truncated_frac": sum(t.truncated_turn for t in trajs) / n,
        "invalid_rate": sum(x.invalid for t in trajs for x in t.turns)
        / max(sum(len(t.turns) for t in trajs), 1),
        "masked_frac": sum(t.masked for t in trajs) / n,
        "episodes_errored": float(sum(t.error is not None for t in trajs)),
    }
    for k in sorted({k for t in trajs for k in t.reward_terms}):
        out[f"reward_terms/{k}"] = sum(t.reward_terms.get(k, 0.0) for t in trajs) / n
    out.update(world.summarize(trajs))
    return out


def run_grpo(cfg: TrainConfig, phase: str = "grpo") -> GRPOResult:
    """Run the GRPO recipe described by ``cfg`` (see module docstring)."""
    g = cfg.grpo
    run = start_run(
        cfg,
        phase,
        lambda p: torch.optim.AdamW(
            [q for q in p.model.parameters() if q.requires_grad], lr=g.lr, weight_decay=0.0
        ),
        total=g.steps,
        extra={"train_seconds": 0.0},
    )
    policy, opt, world, extra = run.policy, run.opt, run.world, run.extra
    if g.gradient_checkpointing:
        model = policy.model
        enable = getattr(model, "activation_checkpointing_enable", None)
        (enable or model.gradient_checkpointing_enable)()
    sched = make_scheduler(opt, g)
    if run.state and run.state.get("scheduler"):
        sched.load_state_dict(run.state["scheduler"])
    reference = None
    if g.kl_coef > 0 and not cfg.model.lora.enabled:
        from vlagent.models.loading import load_policy
        from vlagent.train.common import ensure_model

        reference = load_policy(
            ensure_model(cfg.model),
            dtype=cfg.model.dtype,
            device=cfg.model.device,
            fuse_patch_embed=cfg.model.fuse_patch_embed,
        ).model.eval()
    keys = KeyStream.restore(world, extra.get("keys"), list(g.difficulty_band))
    step = run.step
    stop_reason = "steps"
    ahead = start_ahead(policy, world, cfg, keys, step) if g.max_staleness > 0 else None
    engine = None
    if g.engine != "hf":
        from vlagent.rollout.engines import make_engine

        engine = make_engine(g.engine, policy, python=g.vllm_python)  # starts at these weights
    try:
        step, stop_reason = _loop(run, sched, reference, keys, ahead, engine)
    finally:
        if ahead is not None:
            ahead.close()
        if engine is not None:
            engine.close()
    extra["keys"] = keys.state() if ahead is None else extra.get("keys", keys.state())
    final = run.finish(step, stop_reason, scheduler=sched)
    return GRPOResult(str(final), step, extra["train_seconds"], stop_reason)


def start_ahead(policy: Any, world: World, cfg: TrainConfig, keys: KeyStream, step: int) -> Any:
    """The sampling thread of ``grpo.max_staleness`` k > 0 (``rollout/ahead.py``): step s is
    sampled by version ``s - k`` on a copy of the policy."""
    from vlagent.rollout.ahead import AheadSampler

    def produce(rollout_policy: Any, s: int, version: int) -> tuple[Any, Any, Any]:
        world.on_step(s)
        trajs, stats = collect(rollout_policy, world, cfg, s, keys, version)
        return trajs, stats, keys.state()

    twin = dataclasses.replace(policy, model=copy_model(policy.model))
    return AheadSampler(produce, twin, policy.model, step, cfg.grpo.steps, cfg.grpo.max_staleness)


def copy_model(model: torch.nn.Module) -> torch.nn.Module:
    """A frozen copy of ``model`` for sampling (no gradients, eval mode)."""
    import copy

    twin = copy.deepcopy(model)
    twin.requires_grad_(False)
    return twin.eval()


def _loop(
    run: Any, sched: Any, reference: Any, keys: KeyStream, ahead: Any, engine: Any = None
) -> tuple[int, str]:
    """The step loop of :func:`run_grpo`; returns (steps done, stop reason). ``engine``: a
    rollout engine other than hf, slept during the update and given the weights after it."""
    import contextlib

    from vlagent.rollout.ahead import split_stale, staleness_metrics

    cfg, policy, opt, world, extra = run.cfg, run.policy, run.opt, run.world, run.extra
    g, phase = cfg.grpo, run.phase
    step, stop_reason = run.step, "steps"
    quiet = ahead.paused if ahead is not None else contextlib.nullcontext
    while step < g.steps:
        if g.max_seconds > 0 and extra["train_seconds"] >= g.max_seconds:
            stop_reason = "max_seconds"
            break
        if g.max_samples > 0 and extra.get("samples", 0) >= g.max_samples:
            stop_reason = "max_samples"
            break
        timer = Timer()
        t0 = time.perf_counter()
        with timer("generate"):
            if ahead is None:
                world.on_step(step)
                trajs, row = collect(policy, world, cfg, step, keys, engine=engine)
            else:
                batch = ahead.take(step)
                trajs, dropped = split_stale(batch.trajectories, step, g.max_staleness)
                row = {**batch.stats, **staleness_metrics(trajs, dropped, step)}
                extra["keys"] = batch.cursor
        if engine is not None:
            engine.sleep()  # GPU: free vLLM's memory for the update
        row.update(
            train_step(
                policy, trajs, g, opt, sched, reference, step_seed(cfg.run.seed, step, 99), timer
            )
        )
        step += 1
        if engine is not None:
            engine.wake_up()
            with timer("push_weights"):
                engine.push_weights(policy, step)
        if ahead is not None:
            ahead.publish(step, policy.model)
        extra["samples"] = extra.get("samples", 0) + int(row["sampled"])
        row["samples_total"] = float(extra["samples"])
        elapsed = time.perf_counter() - t0
        extra["train_seconds"] += elapsed
        row.update(batch_metrics(world, trajs))
        row.update(
            samples_per_s=len(trajs) / max(elapsed, 1e-9), train_seconds=extra["train_seconds"]
        )
        row.update(timer.times)
        run.bar.update(1)
        run.bar.set_postfix(
            reward=f"{row.get('reward/mean', 0.0):.3f}", hit=f"{row.get('success_rate', 0.0):.2f}"
        )
        with quiet():  # the sampling thread waits: validation and pictures use the world
            if cfg.eval.every and step % cfg.eval.every == 0:
                row.update(run.validate(step))
            if cfg.run.samples_every and step % cfg.run.samples_every == 0 and trajs:
                world.save_pictures(
                    trajs[: min(g.group_size, 8)],
                    run.run_dir / "samples",
                    f"{phase}_step_{step:06d}",
                )
        run.metrics.log(step, row)
        if cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0:
            if ahead is None:
                extra["keys"] = keys.state()
            save_checkpoint(run.run_dir, phase, step, policy, opt, extra, scheduler=sched)
    return step, stop_reason
