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
from vlagent.algos.schedule import lambda_scheduler, lr_lambda
from vlagent.config import TrainConfig
from vlagent.rollout.prefill_stash import has_dropout, stash_prefills
from vlagent.rollout.rows import build_rows, with_advantages
from vlagent.rollout.runner import group_specs
from vlagent.rollout.trajectory import Trajectory
from vlagent.train.common import Timer, copy_model, start_run
from vlagent.train.credit import episode_rewards, turn_advantages
from vlagent.train.distributed import distributed_update
from vlagent.train.keys import KeyStream
from vlagent.train.parallel import Parallel, device_for, rank_seed
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
    par: Parallel | None = None,
    filler: list[Trajectory] | None = None,
) -> tuple[list[Trajectory], dict[str, float]]:
    """Sample one training batch of episodes (with dynamic-sampling rounds when enabled) with
    ``policy``, whose weights are version ``version`` (default: ``step``).

    Under torchrun (``par.on``) every rank draws the same tasks and rolls out its share of the
    groups (group ids stay global); task outcomes are gathered so that the key stream and the
    dynamic sampler decide alike on every rank. ``stats["sampled"]`` counts this rank's
    episodes. ``filler``: when given and this rank kept no group, one dropped episode is put
    there (a rank must still run forwards in the update; it trains on nothing).
    """
    g = cfg.grpo
    par = par or Parallel.single()
    version = step if version is None else version
    sampler = (
        DynamicSampler(g.prompts_per_step, g.max_resample_rounds) if g.dynamic_sampling else None
    )
    kept: list[Trajectory] = []
    round_, sampled, n_groups = 0, 0, 0
    while True:
        task_ids = keys.take(g.prompts_per_step)
        mine = par.share(list(range(len(task_ids))))  # this rank's groups (positions)
        seed = rank_seed(step_seed(cfg.run.seed, step, round_), par.info)
        trajs = rollout_group(
            policy, world, cfg, [task_ids[i] for i in mine], seed, version, engine
        )
        for t in trajs:  # global group ids; groups of later rounds never merge with earlier ones
            t.group_id = mine[t.group_id] + n_groups
        n_groups += len(task_ids)
        sampled += len(trajs)
        local = [(t.task_id, t.success, t.group_id) for t in trajs]
        everyone = par.gather((local, episode_rewards(trajs)))
        outcomes = [o for part, _ in everyone for o in part]
        keys.record([o[0] for o in outcomes], [o[1] for o in outcomes])
        round_ += 1
        if sampler is None:
            return trajs, {"sampled": float(sampled)}
        rewards = torch.cat([r for _, r in everyone])
        keep = sampler.offer(rewards, torch.tensor([o[2] for o in outcomes], dtype=torch.long))
        taken = {o[2] for o, k in zip(outcomes, keep.tolist(), strict=True) if k}
        kept += [t for t in trajs if t.group_id in taken]
        if filler is not None and not kept and not filler and trajs:
            filler.append(trajs[0])
        if sampler.done:
            break
    if kept and filler:
        filler.clear()
    stats = {f"dynamic_sampling/{k}": v for k, v in sampler.stats().items()}
    stats["sampled"] = float(sampled)
    return kept, stats


def make_scheduler(
    opt: torch.optim.Optimizer, g: GRPOConfig, state: dict | None = None
) -> torch.optim.lr_scheduler.LambdaLR:
    """LR schedule over all optimizer steps of the run (steps × epochs × minibatches);
    ``state``: a checkpoint's scheduler state to resume from."""
    total = max(g.steps * g.epochs * g.minibatches, 1)
    return lambda_scheduler(
        opt, lr_lambda(g.lr_schedule, g.warmup_steps, total, g.min_lr_ratio), state
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
    *,
    learner: Any = None,
    par: Parallel | None = None,
    filler: Sequence[Trajectory] = (),
) -> dict[str, float]:
    """Credit, (reference / old log-probs) and the update on one batch of episodes.

    ``policy`` sampled the episodes and gives reference-free log-probs (recomputed old ones);
    ``learner`` (default: ``policy``) is the model the optimizer updates: under torchrun the
    FSDP-sharded one, updated by ``distributed_update`` on this rank's rows (``filler``: rows
    run at advantage 0 by a rank with nothing else to train on)."""
    par = par or Parallel.single()
    learner = learner if learner is not None else policy
    pad = policy.tokenizer.pad_token_id
    rewards = episode_rewards(trajs)  # [E]
    everything = list(trajs) + list(filler)
    rows = build_rows(everything, None, pad)  # advantages attached after credit
    out: dict[str, float] = {}
    if len(rows) == 0 and not par.on:
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
            real = rows.traj_index < len(trajs)
            rewards = rewards + torch.zeros(len(trajs)).index_add(
                0, rows.traj_index[real], per_row[real]
            )
            out["kl_in_reward"] = float(-per_row[real].mean()) if real.any() else 0.0
    with timer("advantage"):
        advantages = turn_advantages(trajs, g, rewards) + [[0.0] * len(t.turns) for t in filler]
        rows = with_advantages(rows, everything, advantages)
    old_logp = rows.old_logp
    if g.recompute_old_logprobs or g.engine != "hf":
        with timer("old_logprob"):
            recomputed = recompute_logprobs(policy, rows, g)
        on = rows.mask > 0  # the off-policy error of the sampler: |behaviour - trainer| logp
        out["logp_gap"] = float((rows.old_logp - recomputed).abs()[on].mean()) if on.any() else 0.0
        old_logp = recomputed if g.recompute_old_logprobs else old_logp
    batch = UpdateBatch(rows, old_logp, mask, ref_logp)
    with timer("update"):
        if par.on:
            n_filler = int((rows.traj_index >= len(trajs)).sum())
            out.update(
                distributed_update(
                    learner, batch, g, opt, sched, shuffle_seed, par.info, n_filler=n_filler
                )
            )
        else:
            out.update(policy_update(learner, batch, g, opt, sched, shuffle_seed))
    out["adv_abs_mean"] = float(rows.advantages.abs().mean()) if len(rows) else 0.0
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
    if g.gradient_checkpointing and not run.par.on:  # sharded models got it in shard_policy
        model = policy.model
        enable = getattr(model, "activation_checkpointing_enable", None)
        (enable or model.gradient_checkpointing_enable)()
    sched = make_scheduler(opt, g, run.state.get("scheduler") if run.state else None)
    reference = None
    if g.kl_coef > 0 and not cfg.model.lora.enabled:
        from vlagent.models.loading import load_policy
        from vlagent.train.common import ensure_model

        reference = load_policy(
            ensure_model(cfg.model),
            dtype=cfg.model.dtype,
            device=device_for(cfg.model.device, run.par.info),
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


def prefill_reuse_applies(
    cfg: TrainConfig,
    model: torch.nn.Module,
    *,
    max_turns: int,
    one_process: bool,
    sampler_is_learner: bool,
) -> bool:
    """Whether a step may keep its sampling prefill for its update (``grpo.reuse_prefill``,
    ``rollout/prefill_stash.py``): the shared-prefix hf sampler in this process on the very
    model the optimizer trains (no torchrun, no vLLM, no rollout ahead), episodes of
    ``max_turns`` = 1 (the world's, when ``loop.max_turns`` is 0: rows of later turns carry tool
    images and take the full training forward, so a stash would only hold memory), no dynamic sampling (its dropped rounds would hold graphs), no
    gradient checkpointing (which prefills per row) and no dropout (sampling runs in eval mode)."""
    g = cfg.grpo
    return (
        g.reuse_prefill
        and g.shared_prefix
        and one_process
        and sampler_is_learner
        and g.engine == "hf"
        and g.max_staleness == 0
        and max_turns == 1
        and not g.dynamic_sampling
        and not g.gradient_checkpointing
        and not has_dropout(model)
    )


def _loop(
    run: Any, sched: Any, reference: Any, keys: KeyStream, ahead: Any, engine: Any = None
) -> tuple[int, str]:
    """The step loop of :func:`run_grpo`; returns (steps done, stop reason). ``engine``: a
    rollout engine other than hf, slept during the update and given the weights after it."""
    import contextlib

    from vlagent.rollout.ahead import split_stale, staleness_metrics

    cfg, policy, opt, world, extra = run.cfg, run.policy, run.opt, run.world, run.extra
    g, phase, par = cfg.grpo, run.phase, run.par
    filler: list[Trajectory] = []  # torchrun: a dropped episode for a rank that kept none
    step, stop_reason = run.step, "steps"
    quiet = ahead.paused if ahead is not None else contextlib.nullcontext
    reuse = prefill_reuse_applies(
        cfg,
        policy.model,
        max_turns=cfg.loop.max_turns or world.default_max_turns,
        one_process=not par.on and ahead is None and engine is None,
        sampler_is_learner=run.learner is None or run.learner is policy,
    )
    while step < g.steps:
        if g.max_seconds > 0 and extra["train_seconds"] >= g.max_seconds:
            stop_reason = "max_seconds"
            break
        if g.max_samples > 0 and extra.get("samples", 0) >= g.max_samples:
            stop_reason = "max_samples"
            break
        timer = Timer()
        t0 = time.perf_counter()
        # the sampler's prefills live for this step only (rollout/prefill_stash.py)
        with stash_prefills(policy.model) if reuse else contextlib.nullcontext():
            with timer("generate"):
                if ahead is None:
                    world.on_step(step)
                    trajs, row = collect(
                        policy,
                        world,
                        cfg,
                        step,
                        keys,
                        engine=engine,
                        par=par,
                        filler=filler if par.on else None,
                    )
                else:
                    batch = ahead.take(step)
                    trajs, dropped = split_stale(batch.trajectories, step, g.max_staleness)
                    row = {**batch.stats, **staleness_metrics(trajs, dropped, step)}
                    extra["keys"] = batch.cursor
            if engine is not None:
                engine.sleep()  # GPU: free vLLM's memory for the update
            row.update(
                train_step(
                    policy,
                    trajs,
                    g,
                    opt,
                    sched,
                    reference,
                    step_seed(cfg.run.seed, step, 99),
                    timer,
                    learner=run.learner,
                    par=par,
                    filler=filler,
                )
            )
        filler.clear()
        step += 1
        if par.on:
            with timer("sync_weights"):
                run.sync()
        if engine is not None:
            engine.wake_up()
            with timer("push_weights"):
                engine.push_weights(policy, step)
        if ahead is not None:
            ahead.publish(step, policy.model)
        row.update(batch_metrics(world, trajs))
        row = par.reduce_batch_metrics(row, len(trajs))  # one process: unchanged
        extra["samples"] = extra.get("samples", 0) + int(row["sampled"])
        row["samples_total"] = float(extra["samples"])
        elapsed = par.slowest(time.perf_counter() - t0)  # ranks agree on max_seconds
        extra["train_seconds"] += elapsed
        row.update(
            samples_per_s=row["episodes"] / max(elapsed, 1e-9),
            train_seconds=extra["train_seconds"],
        )
        row.update(timer.times)
        run.bar.update(1)
        run.bar.set_postfix(
            reward=f"{row.get('reward/mean', 0.0):.3f}", hit=f"{row.get('success_rate', 0.0):.2f}"
        )
        with quiet():  # the sampling thread waits: validation and pictures use the world
            if cfg.eval.every and step % cfg.eval.every == 0:
                row.update(run.validate(step))
            if (
                cfg.run.samples_every
                and step % cfg.run.samples_every == 0
                and trajs
                and par.is_main
            ):
                world.save_pictures(
                    trajs[: min(g.group_size, 8)],
                    run.run_dir / "samples",
                    f"{phase}_step_{step:06d}",
                )
        run.metrics.log(step, row)
        if cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0:
            if ahead is None:
                extra["keys"] = keys.state()
            run.checkpoint(step, scheduler=sched)
    return step, stop_reason
