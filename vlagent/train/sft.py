"""Recipe ``sft``: supervised fine-tuning on demonstrations rendered from ground-truth boxes.

Reads top to bottom: set up → loop (batch of demos → teacher-forced loss on the answer tokens →
AdamW step → log / monitor / checkpoint) → export ``final/``. Demonstrations come either from a
fixed set of ``sft.num_demos`` screens (the scarce-demonstration setting of the quickstart) or
from a fresh screen per sample. Every data choice is a function of (seed, step), so a resumed
run sees exactly the batches an uninterrupted one would.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from vlagent.batching import PromptBatch, completion_logprobs, encode_prompts
from vlagent.config import TrainConfig
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

log = logging.getLogger(__name__)


@dataclasses.dataclass
class SFTResult:
    """What an SFT run produced."""

    final_dir: str
    steps: int
    train_seconds: float
    best_val_accuracy: float
    stop_reason: str


def demo_batch(
    policy: Any, task: GroundingTask, keys: list[int]
) -> tuple[PromptBatch, torch.Tensor, torch.Tensor]:
    """Prompts and right-padded answer ids (+ eos) for demonstration samples ``keys``.

    Returns:
        (prompts, target_ids [B, T], mask [B, T]).
    """
    samples = [task.sample(k) for k in keys]
    prompts = encode_prompts(
        policy.processor, [s.image for s in samples], [s.instruction for s in samples]
    )
    tok = policy.tokenizer
    targets = [
        tok(task.codec.render(s.target_box_norm, f), add_special_tokens=False)["input_ids"]
        + [tok.eos_token_id]
        for s, f in zip(samples, prompts.frames, strict=True)
    ]
    t = max(len(x) for x in targets)
    ids = torch.full((len(targets), t), tok.pad_token_id, dtype=torch.long)
    mask = torch.zeros(len(targets), t)
    for i, x in enumerate(targets):
        ids[i, : len(x)] = torch.tensor(x)
        mask[i, : len(x)] = 1.0
    return prompts, ids, mask


def batch_keys(cfg: TrainConfig, task: GroundingTask, step: int) -> list[int]:
    """The demonstration keys of ``step``: drawn from the fixed demo set, or fresh screens."""
    s = cfg.sft
    if s.num_demos > 0:
        rng = np.random.default_rng([cfg.run.seed, step])
        return [task.key("demo", int(i)) for i in rng.integers(0, s.num_demos, s.batch_size)]
    return task.keys("train", step * s.batch_size, s.batch_size)


def run_sft(cfg: TrainConfig, phase: str = "sft") -> SFTResult:
    """Run the SFT recipe described by ``cfg`` (see module docstring)."""
    quiet_transformers()
    setup_threads(cfg.run.threads)
    torch.manual_seed(cfg.run.seed)
    run_dir = prepare_run_dir(cfg)
    resumed, opt = load_or_resume(
        cfg,
        phase,
        run_dir,
        lambda p: torch.optim.AdamW(p.model.parameters(), lr=cfg.sft.lr, weight_decay=0.0),
    )
    policy = resumed.policy
    extra = (
        resumed.state["extra"]
        if resumed.state
        else {"train_seconds": 0.0, "best_val": -1.0, "since_best": 0}
    )
    step = resumed.state["step"] if resumed.state else 0
    task = GroundingTask(cfg.task, policy.family, demo_seed_offset=cfg.sft.demo_seed_offset)
    metrics = MetricsLogger(run_dir, phase, resume_step=step if resumed.state else None)
    s, e = cfg.sft, cfg.eval
    bar = tqdm(
        total=s.steps, initial=step, desc=phase, disable=not cfg.run.progress, dynamic_ncols=True
    )
    stop_reason = "steps"
    while step < s.steps:
        if s.max_seconds > 0 and extra["train_seconds"] >= s.max_seconds:
            stop_reason = "max_seconds"
            break
        timer = Timer()
        t0 = time.perf_counter()
        policy.model.train()
        with timer("data"):
            prompts, ids, mask = demo_batch(policy, task, batch_keys(cfg, task, step))
            prompts = prompts.to(policy.model.device)
        with timer("update"):
            logp = completion_logprobs(
                policy.model, prompts, ids.to(policy.model.device), mask.to(policy.model.device)
            )
            loss = -(logp.sum() / mask.sum())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
            opt.step()
        step += 1
        extra["train_seconds"] += time.perf_counter() - t0
        row = {
            "loss": loss.item(),
            "grad_norm": float(grad_norm),
            "train_seconds": extra["train_seconds"],
            **timer.times,
        }
        row["samples_per_s"] = s.batch_size / max(time.perf_counter() - t0, 1e-9)
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", best=f"{extra['best_val']:.3f}")
        if e.every and step % e.every == 0:
            report = monitor(policy, task, e)
            row.update({f"val/{k}": v for k, v in report.summary().items()})
            if report.accuracy > extra["best_val"]:
                extra["best_val"], extra["since_best"] = report.accuracy, 0
            else:
                extra["since_best"] += 1
            if cfg.run.samples_every and step % cfg.run.samples_every == 0:
                save_samples(task, report, run_dir, f"{phase}_step_{step:06d}")
        metrics.log(step, row)
        if cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0:
            save_checkpoint(run_dir, phase, step, policy, opt, extra)
        if s.stop_accuracy > 0 and extra["best_val"] >= s.stop_accuracy:
            stop_reason = "stop_accuracy"
            break
        if s.plateau_patience > 0 and extra["since_best"] >= s.plateau_patience:
            stop_reason = "plateau"
            break
    bar.close()
    save_checkpoint(run_dir, phase, step, policy, opt, extra)
    final = export_final(policy, run_dir)
    metrics.close()
    task.close()
    log.info(
        "%s stopped after %d steps (%s), %.1f s of training",
        phase,
        step,
        stop_reason,
        extra["train_seconds"],
    )
    return SFTResult(str(final), step, extra["train_seconds"], extra["best_val"], stop_reason)
