"""Recipe ``grpo``: group-relative policy optimization on fresh screens scored by the reward.

One iteration, in named and timed phases (as in verl's driver loop):
    generate   B fresh screens × G samples each (behaviour log-probs kept)
    reward     parse each completion with the codec and step the env → reward and terms
    advantage  group-relative advantages by explicit group id
    ref        reference log-probs (only when grpo.kl_coef > 0)
    update     grpo.epochs passes of PPO-clip on token-level mean loss
Screens, sampling seeds and everything random are functions of (run.seed, step), so a resumed
run reproduces an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import torch
from tqdm.auto import tqdm

from vlagent.algos.grpo import group_advantages, ppo_clip_loss
from vlagent.batching import completion_logprobs, encode_prompts, forbidden_token_ids
from vlagent.config import TrainConfig
from vlagent.eval.grounding import EvalRecord
from vlagent.rollout.hf import Rollout, generate
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


def step_seed(seed: int, step: int) -> int:
    """Sampling seed of ``step``: distinct per (seed, step), stable across resumes."""
    return (seed * 1_000_003 + step * 7919 + 17) % (2**31 - 1)


def score_rollout(
    task: GroundingTask, rollout: Rollout, keys: list[int], group_size: int
) -> tuple[torch.Tensor, list[dict[str, Any]]]:
    """Rewards [N] and env infos for every completion (row i answers screen keys[i // G])."""
    rewards, infos = [], []
    for i, text in enumerate(rollout.texts):
        r, info = task.score(text, keys[i // group_size], rollout.prompts.frames[i])
        rewards.append(r)
        infos.append(info)
    return torch.tensor(rewards, dtype=torch.float32), infos


def grpo_update(
    policy: Any,
    rollout: Rollout,
    advantages: torch.Tensor,
    opt: torch.optim.Optimizer,
    cfg: TrainConfig,
    ref_logp: torch.Tensor | None,
) -> dict[str, float]:
    """``grpo.epochs`` PPO-clip steps on one rollout batch; returns the last step's stats."""
    g = cfg.grpo
    device = policy.model.device
    mask = rollout.mask.to(device)
    stats: dict[str, float] = {}
    policy.model.train()
    for _ in range(g.epochs):
        logp = completion_logprobs(
            policy.model,
            rollout.prompts,
            rollout.completion_ids,
            mask,
            temperature=g.temperature,
            forbidden=forbidden_token_ids(policy.tokenizer),
        )
        loss, stats = ppo_clip_loss(
            logp,
            rollout.behaviour_logprobs.to(device),
            advantages.to(device),
            mask,
            clip_eps=g.clip_eps,
            ref_logp=ref_logp,
            kl_coef=g.kl_coef,
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        stats["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0))
        opt.step()
        stats["loss"] = loss.item()
    return stats


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
        lambda p: torch.optim.AdamW(p.model.parameters(), lr=g.lr, weight_decay=0.0),
    )
    policy = resumed.policy
    # β = 0 never builds a reference model; otherwise the reference is the starting policy.
    reference = None
    if g.kl_coef > 0:
        from vlagent.models.loading import load_policy
        from vlagent.train.common import ensure_model

        reference = load_policy(
            ensure_model(cfg.model), dtype=cfg.model.dtype, device=cfg.model.device
        ).model.eval()
    extra = resumed.state["extra"] if resumed.state else {"train_seconds": 0.0}
    step = resumed.state["step"] if resumed.state else 0
    task = GroundingTask(cfg.task, policy.family)
    metrics = MetricsLogger(run_dir, phase, resume_step=step if resumed.state else None)
    bar = tqdm(
        total=g.steps, initial=step, desc=phase, disable=not cfg.run.progress, dynamic_ncols=True
    )
    stop_reason = "steps"
    while step < g.steps:
        if g.max_seconds > 0 and extra["train_seconds"] >= g.max_seconds:
            stop_reason = "max_seconds"
            break
        timer = Timer()
        t0 = time.perf_counter()
        keys = task.keys("train", step * g.prompts_per_step, g.prompts_per_step)
        with timer("generate"):
            samples = [task.sample(k) for k in keys]
            prompts = encode_prompts(
                policy.processor, [s.image for s in samples], [s.instruction for s in samples]
            )
            rollout = generate(
                policy,
                prompts,
                group_size=g.group_size,
                max_new_tokens=g.max_new_tokens,
                temperature=g.temperature,
                generator_seed=step_seed(cfg.run.seed, step),
            )
        with timer("reward"):
            rewards, infos = score_rollout(task, rollout, keys, g.group_size)
        with timer("advantage"):
            adv = group_advantages(rewards, rollout.group_ids.cpu(), scale_by_std=g.scale_by_std)
        ref_logp = None
        if reference is not None:
            with timer("ref"), torch.no_grad():
                ref_logp = completion_logprobs(
                    reference,
                    rollout.prompts,
                    rollout.completion_ids,
                    rollout.mask,
                    temperature=g.temperature,
                    forbidden=forbidden_token_ids(policy.tokenizer),
                )
        with timer("update"):
            stats = grpo_update(policy, rollout, adv, opt, cfg, ref_logp)
        step += 1
        elapsed = time.perf_counter() - t0
        extra["train_seconds"] += elapsed
        n = len(infos)
        row = {
            "reward/mean": float(rewards.mean()),
            "reward/std": float(rewards.std()),
            "hit_rate": sum(i["success"] for i in infos) / n,
            "format_rate": sum(not i["invalid_action"] for i in infos) / n,
            "response_tokens": float(rollout.mask.sum(1).mean()),
            "truncated_frac": float(rollout.truncated.float().mean()),
            "samples_per_s": n / max(elapsed, 1e-9),
            "train_seconds": extra["train_seconds"],
            **{
                f"reward_terms/{k}": sum(i["reward_terms"].get(k, 0.0) for i in infos) / n
                for k in infos[0]["reward_terms"]
            },
            **stats,
            **timer.times,
        }
        bar.update(1)
        bar.set_postfix(reward=f"{row['reward/mean']:.3f}", hit=f"{row['hit_rate']:.2f}")
        if e.every and step % e.every == 0:
            report = monitor(policy, task, e)
            row.update({f"val/{k}": v for k, v in report.summary().items()})
        if cfg.run.samples_every and step % cfg.run.samples_every == 0:
            _save_rollout_samples(
                task, rollout, infos, keys, g.group_size, run_dir, f"{phase}_step_{step:06d}"
            )
        metrics.log(step, row)
        if cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0:
            save_checkpoint(run_dir, phase, step, policy, opt, extra)
    bar.close()
    save_checkpoint(run_dir, phase, step, policy, opt, extra)
    final = export_final(policy, run_dir)
    report = monitor(policy, task, e)
    save_samples(task, report, run_dir, f"{phase}_final")
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


def _save_rollout_samples(
    task: GroundingTask,
    rollout: Rollout,
    infos: list[dict[str, Any]],
    keys: list[int],
    group_size: int,
    run_dir: Any,
    name: str,
) -> None:
    """Annotated PNG of the first group's samples (predicted point vs target)."""
    records = []
    for i in range(min(group_size, 8)):
        ans = infos[i]["answer"]
        records.append(
            EvalRecord(
                key=keys[i // group_size],
                text=rollout.texts[i],
                point_norm=getattr(ans, "point_norm", None),
                box_norm=getattr(ans, "box_norm", None),
                hit=bool(infos[i]["success"]),
                reward=0.0,
                error=None,
            )
        )
    save_png(annotate_records(task, records), run_dir / "samples" / f"{name}.png")
