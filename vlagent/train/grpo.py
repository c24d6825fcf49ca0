"""Recipe ``grpo``: group-relative policy optimization on screens scored by the reward.

One iteration, in named and timed phases (as in verl's driver loop):
    generate   B screens × G samples (behaviour log-probs kept); with dynamic sampling, groups
               whose rewards do not vary are dropped and more screens are drawn (≤ N rounds)
    reward     parse each completion with the codec and step the env → reward and terms
    ref        reference log-probs (only when grpo.kl_coef > 0; β = 0 loads no reference)
    old        recomputed old log-probs (only with grpo.recompute_old_logprobs)
    advantage  advantages by explicit group id (grpo | dr_grpo | rloo | reinforce_pp)
    update     epochs × minibatches × micro-batches of PPO-clip or GSPO (``grpo_update``)
Which screens, sampling seeds and minibatch orders are used are functions of (run.seed, step)
and a key cursor saved in the checkpoint, so a resumed run reproduces an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import torch
from tqdm.auto import tqdm

from vlagent.algo_config import GRPOConfig
from vlagent.algos.advantages import compute_advantages
from vlagent.algos.filters import DynamicSampler, overlong_mask
from vlagent.algos.kl import kl_in_reward
from vlagent.algos.schedule import lr_lambda
from vlagent.batching import encode_prompts
from vlagent.config import TrainConfig
from vlagent.eval.grounding import EvalRecord
from vlagent.rollout.hf import Rollout, concat_rollouts, generate
from vlagent.tasks import GroundingTask
from vlagent.train.checkpoint import save_checkpoint
from vlagent.train.common import (
    Timer,
    export_final,
    load_or_resume,
    monitor,
    quiet_transformers,
    save_samples,
    setup_threads,
)
from vlagent.train.grpo_update import (
    UpdateBatch,
    policy_update,
    recompute_logprobs,
    sequence_logprobs,
)
from vlagent.train.keys import KeyStream
from vlagent.train.outputs import MetricsLogger, prepare_run_dir
from vlagent.viz import annotate_records, save_png

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


def score_rollout(
    task: GroundingTask, rollout: Rollout, keys: list[int], group_size: int
) -> tuple[torch.Tensor, list[dict[str, Any]]]:
    """Rewards [N] and env infos for every completion (row i answers screen keys[i // G])."""
    rewards, infos = [], []
    frames = rollout.frames
    for i, text in enumerate(rollout.texts):
        r, info = task.score(text, keys[i // group_size], frames[i])
        info["key"] = keys[i // group_size]
        rewards.append(r)
        infos.append(info)
    return torch.tensor(rewards, dtype=torch.float32), infos


def collect(
    policy: Any, task: GroundingTask, cfg: TrainConfig, step: int, keys: KeyStream
) -> tuple[Rollout, torch.Tensor, list[dict[str, Any]], dict[str, float]]:
    """Sample and score one training batch (with dynamic-sampling rounds when enabled).

    Returns:
        (rollout [N rows], rewards [N], infos, sampling stats).
    """
    g = cfg.grpo
    sampler = (
        DynamicSampler(g.prompts_per_step, g.max_resample_rounds) if g.dynamic_sampling else None
    )
    parts, part_rewards, part_infos = [], [], []
    round_, sampled = 0, 0
    while True:
        batch_keys = keys.take(g.prompts_per_step)
        samples = [task.sample(k) for k in batch_keys]
        prompts = encode_prompts(
            policy.processor, [s.image for s in samples], [s.instruction for s in samples]
        )
        rollout = generate(
            policy,
            prompts,
            group_size=g.group_size,
            max_new_tokens=g.max_new_tokens,
            temperature=g.temperature,
            generator_seed=step_seed(cfg.run.seed, step, round_),
            engine="prefix" if g.shared_prefix else "hf_generate",
        )
        rewards, infos = score_rollout(task, rollout, batch_keys, g.group_size)
        sampled += len(rollout)
        keys.record([i["key"] for i in infos], [bool(i["success"]) for i in infos])
        round_ += 1
        if sampler is None:
            return rollout, rewards, infos, {"sampled": float(sampled)}
        keep = sampler.offer(rewards, rollout.group_ids.cpu())
        rows = torch.nonzero(keep).flatten()
        if len(rows):
            parts.append(rollout.select(rows))
            part_rewards.append(rewards[rows])
            part_infos += [infos[i] for i in rows.tolist()]
        if sampler.done:
            break
    stats = {f"dynamic_sampling/{k}": v for k, v in sampler.stats().items()}
    stats["sampled"] = float(sampled)
    if not parts:  # every group was constant: train on nothing this step
        return rollout.select(torch.arange(0)), rewards[:0], [], stats
    return (
        concat_rollouts(parts, policy.tokenizer.pad_token_id),
        torch.cat(part_rewards),
        part_infos,
        stats,
    )


def make_scheduler(opt: torch.optim.Optimizer, g: GRPOConfig) -> torch.optim.lr_scheduler.LambdaLR:
    """LR schedule over all optimizer steps of the run (steps × epochs × minibatches)."""
    total = max(g.steps * g.epochs * g.minibatches, 1)
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lr_lambda(g.lr_schedule, g.warmup_steps, total, g.min_lr_ratio)
    )


def reference_logprobs(
    policy: Any, reference: Any, rollout: Rollout, g: GRPOConfig
) -> torch.Tensor:
    """Reference log-probs [N, T]: a frozen copy, or the LoRA base with adapters disabled."""
    rows = torch.arange(len(rollout))
    with torch.no_grad():
        if reference is None:  # LoRA: the base model is the reference
            with policy.model.disable_adapter():
                return sequence_logprobs(policy, rollout, rows, g, rollout.mask).cpu()
        ref_policy = dataclasses.replace(policy, model=reference)
        return sequence_logprobs(ref_policy, rollout, rows, g, rollout.mask).cpu()


def run_grpo(cfg: TrainConfig, phase: str = "grpo") -> GRPOResult:
    """Run the GRPO recipe described by ``cfg`` (see module docstring)."""
    quiet_transformers()
    setup_threads(cfg.run.threads)
    torch.manual_seed(cfg.run.seed)
    run_dir = prepare_run_dir(cfg)
    g, e = cfg.grpo, cfg.eval
    resumed, opt = load_or_resume(
        cfg,
        phase,
        run_dir,
        lambda p: torch.optim.AdamW(
            [q for q in p.model.parameters() if q.requires_grad], lr=g.lr, weight_decay=0.0
        ),
    )
    policy = resumed.policy
    if g.gradient_checkpointing:
        policy.model.activation_checkpointing_enable() if hasattr(
            policy.model, "activation_checkpointing_enable"
        ) else policy.model.gradient_checkpointing_enable()
    sched = make_scheduler(opt, g)
    if resumed.state and resumed.state.get("scheduler"):
        sched.load_state_dict(resumed.state["scheduler"])
    reference = None
    if g.kl_coef > 0 and not cfg.model.lora.enabled:
        from vlagent.models.loading import load_policy
        from vlagent.train.common import ensure_model

        reference = load_policy(
            ensure_model(cfg.model), dtype=cfg.model.dtype, device=cfg.model.device
        ).model.eval()
    extra = resumed.state["extra"] if resumed.state else {"train_seconds": 0.0}
    step = resumed.state["step"] if resumed.state else 0
    task = GroundingTask(cfg.task, policy.family)
    keys = KeyStream.restore(task, extra.get("keys"), list(g.difficulty_band))
    metrics = MetricsLogger(run_dir, phase, resume_step=step if resumed.state else None)
    bar = tqdm(
        total=g.steps, initial=step, desc=phase, disable=not cfg.run.progress, dynamic_ncols=True
    )
    stop_reason = "steps"
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
            rollout, rewards, infos, row = collect(policy, task, cfg, step, keys)
        mask = overlong_mask(rollout.mask, rollout.truncated) if g.mask_truncated else rollout.mask
        ref_logp = None
        if g.kl_coef > 0 and len(rollout):
            with timer("ref"):
                ref_logp = reference_logprobs(policy, reference, rollout, g)
            if g.kl_in_reward:
                rewards = kl_in_reward(
                    rewards, rollout.behaviour_logprobs, ref_logp, mask, g.kl_coef, g.kl_estimator
                )
        old_logp = rollout.behaviour_logprobs
        if g.recompute_old_logprobs and len(rollout):
            with timer("old_logprob"):
                old_logp = recompute_logprobs(policy, rollout, g, g.micro_batch_size)
        with timer("advantage"):
            opts: dict[str, Any] = {}
            if g.advantage == "grpo":
                opts = {"scale_by_std": g.scale_by_std, "std_level": g.std_level}
            elif g.advantage == "reinforce_pp":
                opts = {"group_baseline": g.reinforce_group_baseline}
            adv = compute_advantages(g.advantage, rewards, rollout.group_ids.cpu(), **opts)
        if len(rollout):
            with timer("update"):
                batch = UpdateBatch(rollout, adv, old_logp, mask, ref_logp)
                row.update(
                    policy_update(
                        policy, batch, g, opt, sched, shuffle_seed=step_seed(cfg.run.seed, step, 99)
                    )
                )
        step += 1
        extra["samples"] = extra.get("samples", 0) + int(row["sampled"])
        row["samples_total"] = float(extra["samples"])
        elapsed = time.perf_counter() - t0
        extra["train_seconds"] += elapsed
        row.update(_batch_metrics(rollout, rewards, infos, elapsed, extra["train_seconds"]))
        row.update(timer.times)
        bar.update(1)
        bar.set_postfix(
            reward=f"{row.get('reward/mean', 0.0):.3f}", hit=f"{row.get('hit_rate', 0.0):.2f}"
        )
        if e.every and step % e.every == 0:
            report = monitor(policy, task, e)
            row.update({f"val/{k}": v for k, v in report.summary().items()})
        if cfg.run.samples_every and step % cfg.run.samples_every == 0 and infos:
            _save_rollout_samples(
                task, rollout, infos, g.group_size, run_dir, f"{phase}_step_{step:06d}"
            )
        metrics.log(step, row)
        if cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0:
            extra["keys"] = keys.state()
            save_checkpoint(run_dir, phase, step, policy, opt, extra, scheduler=sched)
    bar.close()
    extra["keys"] = keys.state()
    save_checkpoint(run_dir, phase, step, policy, opt, extra, scheduler=sched)
    final = export_final(policy, run_dir)
    if e.monitor_screens:
        save_samples(task, monitor(policy, task, e), run_dir, f"{phase}_final")
    metrics.close()
    task.close()
    log.info(
        "%s stopped after %d steps (%s), %.1f s of training",
        phase,
        step,
        stop_reason,
        extra["train_seconds"],
    )
    return GRPOResult(str(final), step, extra["train_seconds"], stop_reason)


def _batch_metrics(
    rollout: Rollout,
    rewards: torch.Tensor,
    infos: list[dict[str, Any]],
    elapsed: float,
    total: float,
) -> dict[str, float]:
    n = max(len(infos), 1)
    out = {
        "rows": float(len(infos)),
        "samples_per_s": len(infos) / max(elapsed, 1e-9),
        "train_seconds": total,
    }
    if not infos:
        return out
    out.update(
        {
            "reward/mean": float(rewards.mean()),
            "reward/std": float(rewards.std()) if len(rewards) > 1 else 0.0,
            "hit_rate": sum(i["success"] for i in infos) / n,
            "format_rate": sum(not i["invalid_action"] for i in infos) / n,
            "response_tokens": float(rollout.mask.sum(1).mean()),
            "truncated_frac": float(rollout.truncated.float().mean()),
        }
    )
    for k in infos[0]["reward_terms"]:
        out[f"reward_terms/{k}"] = sum(i["reward_terms"].get(k, 0.0) for i in infos) / n
    return out


def _save_rollout_samples(
    task: GroundingTask,
    rollout: Rollout,
    infos: list[dict[str, Any]],
    group_size: int,
    run_dir: Any,
    name: str,
) -> None:
    """Annotated PNG of the first group's samples (predicted point vs target)."""
    records = []
    for i in range(min(group_size, 8, len(infos))):
        ans = infos[i]["answer"]
        records.append(
            EvalRecord(
                key=infos[i]["key"],
                text=rollout.texts[i],
                point_norm=getattr(ans, "point_norm", None),
                box_norm=getattr(ans, "box_norm", None),
                hit=bool(infos[i]["success"]),
                reward=0.0,
                error=None,
            )
        )
    save_png(annotate_records(task, records), run_dir / "samples" / f"{name}.png")
