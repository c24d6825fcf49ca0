"""Worker side of TRL: the same job through ``trl.GRPOTrainer``, timed by wrapping its methods.

Same model (the SFT start loaded with our ``load_policy``), same processor and chat template,
same prompts (``vlagent.batching.user_message`` with the screenshot), same reward
(the grounding world's codec parses the text, its ``GroundingEnv`` scores it: the path our
runner takes), same sampling knobs and optimizer, β = 0.
``loss_type="dapo"`` is TRL's token-level mean (sum over completion tokens / tokens in the
generation batch); with one process, ``gradient_accumulation_steps=1`` and
``steps_per_generation=1`` it is exactly our ``token_mean``.

Buckets (per measured step, seconds):
    generate  screen rendering in the dataset transform (TRL fetches rows through it) +
              ``_generate_and_score_completions`` (chat template + image processing, HF
              ``generate``, decode, reward, advantages, the second processor call that builds
              the forward inputs) minus the no-grad log-prob passes inside it
    logprob   ``_get_per_token_logps_and_entropies`` called without grad (old / reference
              log-probs; none in this job: ``num_iterations=1`` and β = 0)
    update    ``training_step`` minus ``_prepare_inputs`` (loss forward with grad, backward)
              + end of ``training_step`` → ``on_step_end`` (grad clip, AdamW step, LR
              scheduler step, zero_grad)
    other     the rest of the end-of-step-to-end-of-step wall time (TRL / Trainer logging,
              batch fetching bookkeeping)
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import JobConfig, ThresholdConfig, max_rss_mb, threshold_result


def grpo_config_kwargs(job: JobConfig, run_dir: Path, max_steps: int) -> dict[str, Any]:
    """Every ``GRPOConfig`` field the benchmark sets (docs/BENCHMARKS.md says why each)."""
    n = job.completions_per_step
    return {
        "output_dir": str(run_dir),
        # batch: one generation batch of B·G completions per optimizer step
        "per_device_train_batch_size": n,
        "gradient_accumulation_steps": 1,
        "steps_per_generation": 1,
        "num_generations": job.group_size,
        "max_steps": max_steps,
        "shuffle_dataset": False,
        "seed": job.seed,
        # sampling
        "max_completion_length": job.max_new_tokens,
        "temperature": job.temperature,
        "top_p": 1.0,
        "top_k": 0,
        "min_p": None,
        "repetition_penalty": 1.0,
        "use_vllm": False,
        # objective
        "beta": 0.0,
        "num_iterations": 1,
        "epsilon": job.clip_eps,
        "epsilon_high": job.clip_eps,
        "loss_type": "dapo",
        "importance_sampling_level": "token",
        "scale_rewards": "group",
        "mask_truncated_completions": False,
        "top_entropy_quantile": 1.0,
        # optimization (the AdamW itself is passed in, see build_trainer)
        "learning_rate": job.lr,
        "lr_scheduler_type": "constant",
        "warmup_steps": 0,
        "weight_decay": 0.0,
        "max_grad_norm": job.max_grad_norm,
        # precision and memory: TRL defaults are bf16=True and gradient_checkpointing=True
        "bf16": False,
        "fp16": False,
        "gradient_checkpointing": False,
        "use_cpu": job.device == "cpu",
        # bookkeeping: log every step like our recipe, save nothing, no external reporting
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "log_completions": False,
        "dataloader_num_workers": 0,
        "remove_unused_columns": False,
    }


class ScreenTask:
    """The grounding world's screens and scoring, as TRL's dataset and reward function need them.

    ``score`` is what our runner does with a reply: the world's codec parses the text in the
    screen's frame and a ``GroundingEnv`` reset on the same screen scores the action.
    """

    def __init__(self, world: Any) -> None:
        self.world = world
        self.env = world.make_env("train")

    def keys(self, split: str, start: int, count: int) -> list[int]:
        return self.world.task_ids(split, start, count)

    def sample(self, key: int) -> Any:
        return self.world.sample(key)

    def score(self, text: str, key: int, frame: Any) -> tuple[float, dict[str, Any]]:
        answer = self.world.codec.parse(text, frame)
        self.env.reset(options={"task_id": key})
        _, reward, _, _, info = self.env.step(answer.to_action())
        return reward, info


class PhaseClock:
    """Per-step seconds of named phases, filled by method wrappers and callbacks."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.steps: list[dict[str, float]] = []
        self.train_begin = 0.0
        self.last_step_end = 0.0
        self.training_step_end = 0.0

    def wrap(self, fn: Any, name: str, nograd_only: bool = False) -> Any:
        import torch

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                if not nograd_only or not torch.is_grad_enabled():
                    self.current[name] += dt
                if name == "training_step":
                    self.training_step_end = time.perf_counter()

        return timed

    def end_step(self) -> None:
        now = time.perf_counter()
        c = self.current
        start = self.last_step_end or self.train_begin
        self.steps.append(
            {
                "wall": now - start,
                "end": now,
                "generate": c["render"] + c["gen_score"] - c["logprob_nograd"],
                "logprob": c["logprob_nograd"],
                "update": c["training_step"] - c["prepare"] + (now - self.training_step_end),
                **{f"raw/{k}": v for k, v in c.items()},
            }
        )
        self.current = defaultdict(float)
        self.last_step_end = now


def build_trainer(job: JobConfig, model_dir: str, run_dir: Path, max_steps: int) -> tuple:
    """(trainer, policy, task, clock) for the job, with the timing wrappers installed."""
    import torch
    from datasets import Dataset
    from PIL import Image
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from vlagent.batching import forbidden_token_ids, image_frame, user_message
    from vlagent.config import TaskConfig, TrainConfig
    from vlagent.models.loading import load_policy
    from vlagent.worlds.grounding import GroundingWorld

    policy = load_policy(model_dir, device=job.device)
    task_cfg = TaskConfig(
        level=job.level, answer_format=job.answer_format, reward=job.reward_dict()
    )
    task = ScreenTask(GroundingWorld(TrainConfig(task=task_cfg), policy))
    clock = PhaseClock()
    processor = policy.processor

    def render(batch: dict[str, list]) -> dict[str, list]:
        t0 = time.perf_counter()
        samples = [task.sample(k) for k in batch["key"]]
        out = {
            "key": list(batch["key"]),
            "prompt": [user_message(s.instruction) for s in samples],
            "image": [Image.fromarray(s.image) for s in samples],
        }
        clock.current["render"] += time.perf_counter() - t0
        return out

    def grounding_reward(prompts: list, completions: list, key: list, **_: Any) -> list[float]:
        rewards = []
        for completion, k in zip(completions, key, strict=True):
            text = completion[0]["content"] if isinstance(completion, list) else completion
            h, w = task.sample(k).image.shape[:2]
            rewards.append(task.score(text, k, image_frame(processor, w, h))[0])
        return rewards

    keys = task.keys("train", 0, max_steps * job.prompts_per_step)
    dataset = Dataset.from_dict({"key": keys}).with_transform(render)
    kwargs = grpo_config_kwargs(job, run_dir, max_steps)
    if "activation_checkpointing" in GRPOConfig.__dataclass_fields__:  # transformers' new name
        kwargs["activation_checkpointing"] = kwargs.pop("gradient_checkpointing")
    args = GRPOConfig(**kwargs)
    # Same suppressed ids as our sampler (TRL alone suppresses only <|image_pad|>).
    args.generation_kwargs = {"suppress_tokens": forbidden_token_ids(policy.tokenizer)}
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=job.lr, weight_decay=0.0)

    class Clock(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):  # noqa: ANN001
            clock.train_begin = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):  # noqa: ANN001
            clock.end_step()

    trainer = GRPOTrainer(
        model=policy.model,
        reward_funcs=[grounding_reward],
        args=args,
        train_dataset=dataset,
        processing_class=processor,
        callbacks=[Clock()],
        optimizers=(optimizer, None),
    )
    trainer._generate_and_score_completions = clock.wrap(
        trainer._generate_and_score_completions, "gen_score"
    )
    trainer._get_per_token_logps_and_entropies = clock.wrap(
        trainer._get_per_token_logps_and_entropies, "logprob_nograd", nograd_only=True
    )
    trainer._prepare_inputs = clock.wrap(trainer._prepare_inputs, "prepare")
    trainer.training_step = clock.wrap(trainer.training_step, "training_step")
    return trainer, policy, task, clock


def prompt_parity(trainer: Any, policy: Any, task: Any, keys: list[int]) -> dict[str, Any]:
    """Do TRL and our encoder give the same prompt tokens and pixels for the same screens?"""
    import torch
    from PIL import Image
    from trl.data_utils import prepare_multimodal_messages

    from vlagent.batching import user_message
    from vlagent.rollout.tokens import encode_prompt

    samples = [task.sample(k) for k in keys]
    # The grounding adapter's encoder (one prompt per screen, no system prompt).
    ours = [encode_prompt(policy.processor, [s.image], s.instruction) for s in samples]
    msgs = [
        prepare_multimodal_messages(user_message(s.instruction), images=[Image.fromarray(s.image)])
        for s in samples
    ]
    try:
        trl_ids, _, fields = trainer._tokenize_prompts(msgs)
    except (AttributeError, TypeError) as err:  # private API moved: report, do not fail the run
        return {"checked": False, "reason": f"{type(err).__name__}: {err}"}
    our_ids = [p.input_ids.tolist() for p in ours]
    same_ids = [list(map(int, t)) for t in trl_ids] == our_ids
    pv = fields.get("pixel_values")
    our_pv = torch.cat([p.pixel_values for p in ours])
    diff = (
        float((torch.as_tensor(pv) - our_pv).abs().max())
        if pv is not None and torch.as_tensor(pv).shape == our_pv.shape
        else None
    )
    return {"checked": True, "prompt_ids_equal": same_ids, "pixel_values_max_abs_diff": diff}


def run(job_dict: dict[str, Any]) -> dict[str, Any]:
    """Run TRL's GRPOTrainer on the job; return throughput or time-to-threshold numbers."""
    import torch

    job = JobConfig(**{**job_dict["job"], "reward": tuple(map(tuple, job_dict["job"]["reward"]))})
    ttt = ThresholdConfig(**job_dict["ttt"]) if job_dict["mode"] == "ttt" else None
    torch.set_num_threads(job.resolved_threads())
    run_dir = Path(job_dict["run_dir"])
    max_steps = ttt.max_steps if ttt else job.total_steps
    trainer, policy, task, clock = build_trainer(job, job_dict["model_dir"], run_dir, max_steps)
    parity = prompt_parity(trainer, policy, task, task.keys("train", 0, job.prompts_per_step))
    evaluator = None
    if ttt:
        evaluator = _add_threshold_callback(trainer, policy, task, ttt)
    trainer.train()
    out: dict[str, Any] = {
        "system": "trl",
        "maxrss_mb": max_rss_mb(),
        "torch_threads": torch.get_num_threads(),
        "steps_run": len(clock.steps),
        "checks": parity,
    }
    if ttt:
        out.update(_threshold_result(clock, evaluator, ttt))
    else:
        out.update(_throughput(clock, trainer, job))
    return out


def _throughput(clock: PhaseClock, trainer: Any, job: JobConfig) -> dict[str, Any]:
    measured = clock.steps[job.warmup_steps :]
    n = len(measured)
    wall = measured[-1]["end"] - clock.steps[job.warmup_steps - 1]["end"]
    completions = n * job.completions_per_step
    buckets = {k: sum(s[k] for s in measured) / n for k in ("generate", "logprob", "update")}
    buckets["other"] = wall / n - sum(buckets.values())
    raw_keys = sorted({k for s in measured for k in s if k.startswith("raw/")})
    history = [h for h in trainer.state.log_history if "reward" in h][job.warmup_steps :]
    lengths = [h.get("completions/mean_length", 0.0) for h in history]
    return {
        "steps_measured": n,
        "completions": completions,
        "wall_seconds": wall,
        "samples_per_s": completions / wall,
        "step_seconds": wall / n,
        "buckets": buckets,
        "phases": {k: sum(s.get(k, 0.0) for s in measured) / n for k in raw_keys},
        "reward_mean": sum(h["reward"] for h in history) / max(len(history), 1),
        "completion_tokens_mean": sum(lengths) / max(len(lengths), 1),
    }


def _add_threshold_callback(trainer: Any, policy: Any, task: Any, ttt: ThresholdConfig) -> Any:
    """Evaluate with our ``evaluate`` every k steps; stop training at the threshold."""
    import dataclasses

    from transformers import TrainerCallback

    from vlagent.eval.evaluate import evaluate

    class StopAtThreshold(TrainerCallback):
        def __init__(self) -> None:
            self.evals: list[dict[str, float]] = []

        def on_step_end(self, args, state, control, **kw):  # noqa: ANN001
            if state.global_step % ttt.eval_every:
                return control
            t0 = time.perf_counter()
            model = trainer.accelerator.unwrap_model(trainer.model)
            report = evaluate(
                task.world,
                dataclasses.replace(policy, model=model),
                "val",
                ttt.val_screens,
                batch_size=ttt.eval_batch_size,
                max_new_tokens=ttt.eval_max_new_tokens,
            )
            self.evals.append(
                {
                    "step": state.global_step,
                    "accuracy": report.accuracy,
                    "start": t0,
                    "eval_seconds": time.perf_counter() - t0,
                }
            )
            if report.accuracy >= ttt.threshold:
                control.should_training_stop = True
            return control

    cb = StopAtThreshold()
    trainer.add_callback(cb)
    return cb


def _threshold_result(clock: PhaseClock, cb: Any, ttt: ThresholdConfig) -> dict[str, Any]:
    evals = [(e["step"], e["accuracy"], e["start"], e["eval_seconds"]) for e in cb.evals]
    return threshold_result(evals, clock.train_begin, ttt.threshold)
