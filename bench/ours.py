"""Worker side of "ours": the job as a ``run_grpo`` config, timed from its own metrics.jsonl.

Buckets (per measured step, seconds), read from the recipe's named phases:
    generate  ``time/generate``: draw and render the B screens, encode prompts, sample B·G
              completions (behaviour log-probs kept), decode, score each with the reward
    logprob   ``time/old_logprob`` + ``time/ref``: extra no-grad log-prob passes (none in this
              job: β = 0 and the sampler's log-probs serve as the old ones)
    update    ``time/update``: forward with grad, PPO-clip loss, backward, clip, AdamW step
    other     the rest of the step's wall time (advantages, metrics logging, bookkeeping)
Wall time per step comes from the ``time`` stamp each metrics row gets when it is written, so
``samples_per_s`` = completions of the measured steps / (time of the last row − time of the
last warm-up row), the same end-of-step-to-end-of-step window as the TRL side.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.common import BenchError, JobConfig, ThresholdConfig, max_rss_mb, threshold_result

KNOWN_PHASES = {
    "time/generate": "generate",
    "time/old_logprob": "logprob",
    "time/ref": "logprob",
    "time/update": "update",
}


def overrides(
    job: JobConfig,
    model_dir: str,
    family: str,
    run_dir: Path,
    total_steps: int,
    ttt: ThresholdConfig | None,
) -> list[str]:
    """Dotted overrides: every knob of the shared job, written out (no reliance on defaults)."""
    reward = "{" + ", ".join(f"{k}: {v}" for k, v in job.reward) + "}"
    eval_keys = (
        [
            f"eval.every={ttt.eval_every}",
            f"eval.monitor_screens={ttt.val_screens}",
            f"eval.batch_size={ttt.eval_batch_size}",
            f"eval.max_new_tokens={ttt.eval_max_new_tokens}",
        ]
        if ttt
        else ["eval.every=0", "eval.monitor_screens=0"]
    )
    return [
        "recipe=grpo",
        "algo=grpo",
        f"model.path={model_dir}",
        "model.build_tiny=false",
        f"model.family={family}",
        f"model.device={job.device}",
        "model.dtype=float32",
        f"task.level={job.level}",
        f"task.answer_format={job.answer_format}",
        f"task.reward={reward}",
        f"grpo.steps={total_steps}",
        "grpo.max_seconds=0",
        "grpo.max_samples=0",
        f"grpo.prompts_per_step={job.prompts_per_step}",
        f"grpo.group_size={job.group_size}",
        f"grpo.temperature={job.temperature}",
        f"grpo.max_new_tokens={job.max_new_tokens}",
        f"grpo.lr={job.lr}",
        "grpo.lr_schedule=constant",
        "grpo.warmup_steps=0",
        f"grpo.max_grad_norm={job.max_grad_norm}",
        "grpo.advantage=grpo",
        "grpo.scale_by_std=true",
        "grpo.std_level=group",
        "grpo.loss=ppo_clip",
        f"grpo.clip_eps_low={job.clip_eps}",
        f"grpo.clip_eps_high={job.clip_eps}",
        "grpo.dual_clip=0",
        "grpo.aggregation=token_mean",
        "grpo.kl_coef=0",
        "grpo.dynamic_sampling=false",
        "grpo.mask_truncated=false",
        "grpo.epochs=1",
        "grpo.minibatches=1",
        "grpo.micro_batch_size=0",
        "grpo.recompute_old_logprobs=false",
        "grpo.gradient_checkpointing=false",
        *eval_keys,
        f"run.out_dir={run_dir}",
        f"run.seed={job.seed}",
        f"run.threads={job.resolved_threads()}",
        "run.checkpoint_every=0",
        "run.samples_every=0",
        "run.progress=false",
        "run.resume=false",
    ]


class _StopAtThreshold:
    """Wraps the recipe's ``monitor``: times each eval and ends the run once it passes.

    The recipe loop reads ``cfg.grpo.steps`` every iteration, so setting it to 0 ends the run
    cleanly after the current step is logged. The recipe's one extra eval after the loop is
    answered from the last report (its result is known) so it costs nothing.
    """

    def __init__(self, real: Any, cfg: Any, threshold: float, in_loop_evals: int) -> None:
        self.real, self.cfg, self.threshold = real, cfg, threshold
        self.in_loop_evals = in_loop_evals
        self.evals: list[dict[str, float]] = []
        self.last: Any = None
        self.stopped = False

    def __call__(self, policy: Any, task: Any, ecfg: Any, *args: Any, **kwargs: Any) -> Any:
        if self.stopped or len(self.evals) >= self.in_loop_evals:
            return self.last
        start_wall, t0 = time.time(), time.perf_counter()
        report = self.real(policy, task, ecfg, *args, **kwargs)
        self.evals.append(
            {
                "accuracy": report.accuracy,
                "start_time": start_wall,
                "eval_seconds": time.perf_counter() - t0,
            }
        )
        self.last = report
        if report.accuracy >= self.threshold:
            self.stopped = True
            self.cfg.grpo.steps = 0
        return report


def run(job_dict: dict[str, Any]) -> dict[str, Any]:
    """Run our GRPO recipe on the job; return throughput or time-to-threshold numbers."""
    import vlagent.train.grpo as recipe
    from vlagent.config import load_config
    from vlagent.train.outputs import read_metrics

    job = JobConfig(**{**job_dict["job"], "reward": tuple(map(tuple, job_dict["job"]["reward"]))})
    ttt = ThresholdConfig(**job_dict["ttt"]) if job_dict["mode"] == "ttt" else None
    run_dir = Path(job_dict["run_dir"])
    total = ttt.max_steps if ttt else job.total_steps
    cfg = load_config(
        None,
        overrides(job, job_dict["model_dir"], job_dict["family"], run_dir, total, ttt)
        + list(job_dict.get("ours_set", [])),
    )
    hook = None
    if ttt:
        if not callable(getattr(recipe, "monitor", None)):
            raise BenchError("vlagent.train.grpo.monitor is gone: update bench/ours.py's eval hook")
        hook = _StopAtThreshold(recipe.monitor, cfg, ttt.threshold, total // ttt.eval_every)
        recipe.monitor = hook
    recipe.run_grpo(cfg)
    rows = sorted(read_metrics(run_dir / "metrics.jsonl", "grpo"), key=lambda r: r["step"])
    import torch

    out: dict[str, Any] = {
        "system": "ours",
        "maxrss_mb": max_rss_mb(),
        "torch_threads": torch.get_num_threads(),
        "steps_run": len(rows),
    }
    if ttt:
        out.update(_threshold_result(rows, hook, ttt))
    else:
        out.update(_throughput(rows, job.warmup_steps))
    return out


def _throughput(rows: list[dict[str, Any]], warmup: int) -> dict[str, Any]:
    measured = rows[warmup:]
    wall = measured[-1]["time"] - rows[warmup - 1]["time"]
    completions = sum(r.get("sampled", r.get("rows", 0.0)) for r in measured)
    n = len(measured)
    phases = sorted({k for r in measured for k in r if k.startswith("time/")})
    per_phase = {k: sum(r.get(k, 0.0) for r in measured) / n for k in phases}
    buckets = {"generate": 0.0, "logprob": 0.0, "update": 0.0}
    for k, v in per_phase.items():
        if k in KNOWN_PHASES:
            buckets[KNOWN_PHASES[k]] += v
    step_s = wall / n
    buckets["other"] = step_s - sum(buckets.values())
    return {
        "steps_measured": n,
        "completions": completions,
        "wall_seconds": wall,
        "samples_per_s": completions / wall,
        "step_seconds": step_s,
        "buckets": buckets,
        "phases": per_phase,
        "reward_mean": sum(r.get("reward/mean", 0.0) for r in measured) / n,
        "completion_tokens_mean": sum(r.get("response_tokens", 0.0) for r in measured) / n,
    }


def _threshold_result(
    rows: list[dict[str, Any]], hook: _StopAtThreshold, ttt: ThresholdConfig
) -> dict[str, Any]:
    # The first step started train_seconds (its own duration) before its row was written.
    t0 = rows[0]["time"] - rows[0]["train_seconds"]
    val_rows = [r for r in rows if r.get("val/accuracy") is not None]
    evals = [
        (r["step"], e["accuracy"], e["start_time"], e["eval_seconds"])
        for r, e in zip(val_rows, hook.evals, strict=False)
    ]
    return threshold_result(evals, t0, ttt.threshold)
