"""Worker side of "ours": the job as a ``run_grpo`` config, timed from its own metrics.jsonl.

The run is the real pipeline, unchanged: ``vlagent.train.grpo.run_grpo`` in the ``grounding``
world, whose every step is ``collect`` (B tasks × G episodes through the episode runner) then
``train_step`` (credit, rows, ``policy_update``).

Buckets (per measured step, seconds), read from the recipe's named phases:
    generate  ``time/generate`` (``collect``): reset B·G grounding envs (render the B screens),
              encode the prompts, sample B·G completions (behaviour log-probs kept), decode,
              parse each answer and score it in its env
    logprob   ``time/old_logprob`` + ``time/ref``: extra no-grad log-prob passes (none in this
              job: β = 0 and the sampler's log-probs serve as the old ones)
    update    ``time/update``: ``policy_update`` (forward with grad, PPO-clip loss, backward,
              clip, AdamW step)
    other     the rest of the step's wall time (``time/advantage``: credit and rows, metrics
              logging, bookkeeping)
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
    ) + ["eval.rollout_pictures=0"]
    return [
        "recipe=grpo",
        "world=grounding",
        "algo=grpo",
        f"model.path={model_dir}",
        "model.build_tiny=false",
        f"model.family={family}",
        f"model.device={job.device}",
        "model.dtype=float32",
        f"task.level={job.level}",
        f"task.answer_format={job.answer_format}",
        f"task.reward={reward}",
        "loop.max_turns=1",
        f"loop.batch_size={job.completions_per_step}",
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
        "grpo.shared_prefix=true",
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
    """Wraps the recipe's monitor eval (``Run.validate``): times each eval and ends the run
    once held-out accuracy passes the threshold.

    The recipe loop reads ``cfg.grpo.steps`` every iteration, so setting it to 0 ends the run
    cleanly after the current step is logged.
    """

    def __init__(self, real: Any, cfg: Any, threshold: float) -> None:
        self.real, self.cfg, self.threshold = real, cfg, threshold
        self.evals: list[dict[str, float]] = []

    def __call__(self, run: Any, step: int) -> dict[str, float]:
        start_wall, t0 = time.time(), time.perf_counter()
        out = self.real(run, step)
        accuracy = float(out["val/accuracy"])
        self.evals.append(
            {
                "step": step,
                "accuracy": accuracy,
                "start_time": start_wall,
                "eval_seconds": time.perf_counter() - t0,
            }
        )
        if accuracy >= self.threshold:
            self.cfg.grpo.steps = 0
        return out


def run(job_dict: dict[str, Any]) -> dict[str, Any]:
    """Run our GRPO recipe on the job; return throughput or time-to-threshold numbers."""
    from vlagent.config import load_config
    from vlagent.train import common
    from vlagent.train.grpo import run_grpo
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
        real = getattr(common.Run, "validate", None)
        if not callable(real):
            raise BenchError("vlagent.train.common.Run.validate is gone: update bench/ours.py")
        hook = _StopAtThreshold(real, cfg, ttt.threshold)
        common.Run.validate = lambda self, step: hook(self, step)  # type: ignore[method-assign]
    try:
        run_grpo(cfg)
    finally:
        if ttt:
            common.Run.validate = real  # type: ignore[method-assign]
    rows = sorted(read_metrics(run_dir / "metrics.jsonl", "grpo"), key=lambda r: r["step"])
    import torch

    out: dict[str, Any] = {
        "system": "ours",
        "maxrss_mb": max_rss_mb(),
        "torch_threads": torch.get_num_threads(),
        "steps_run": len(rows),
    }
    if ttt:
        assert hook is not None
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
    if not hook.evals:
        return threshold_result([], 0.0, ttt.threshold)
    # Training began train_seconds (evals excluded) before the first eval started.
    first = hook.evals[0]
    trained = {r["step"]: r["train_seconds"] for r in rows}
    t0 = first["start_time"] - trained[first["step"]]
    evals = [(e["step"], e["accuracy"], e["start_time"], e["eval_seconds"]) for e in hook.evals]
    return threshold_result(evals, t0, ttt.threshold)
