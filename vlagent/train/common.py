"""Glue shared by the recipes: model setup, resume, monitoring, final export."""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

import torch

from vlagent.config import EvalConfig, ModelConfig, TrainConfig
from vlagent.eval.grounding import EvalReport, evaluate_policy
from vlagent.io import atomic_dir
from vlagent.models.loading import Policy, load_policy
from vlagent.tasks import GroundingTask
from vlagent.train.checkpoint import latest_checkpoint, load_trainer_state
from vlagent.viz import annotate_records, save_png

log = logging.getLogger(__name__)


def quiet_transformers() -> None:
    """Silence transformers' per-call progress bars and advisory warnings in training loops."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def ensure_model(cfg: ModelConfig) -> str:
    """Return the checkpoint to load, building the tiny model first when asked and missing."""
    path = Path(cfg.path).expanduser()
    if cfg.build_tiny and not path.exists():
        from vlagent.models.tiny import build_tiny_model

        log.info("building tiny %s model at %s", cfg.family, path)
        build_tiny_model(path, family=cfg.family, seed=cfg.tiny_seed)
    return str(path) if path.exists() else cfg.path


def setup_threads(threads: int) -> None:
    if threads > 0:
        torch.set_num_threads(threads)


@dataclasses.dataclass
class Resumed:
    """What a recipe needs to continue: the policy and (if resuming) the saved state."""

    policy: Policy
    state: dict[str, Any] | None


def load_or_resume(
    cfg: TrainConfig, phase: str, run_dir: Path, make_optimizer: Any
) -> tuple[Resumed, Any]:
    """Load the starting policy, or the latest checkpoint of ``phase`` when resuming.

    With ``model.lora.enabled`` the base model is loaded and wrapped with adapters: fresh ones,
    or the checkpoint's adapter when resuming.

    Args:
        make_optimizer: callable(policy) -> optimizer, called once the policy is loaded.
    Returns:
        (Resumed, optimizer) with optimizer and RNG state restored when a checkpoint exists;
        the saved state (incl. ``scheduler``) is in ``Resumed.state``.
    """
    from vlagent.models.lora import load_lora, trainable_parameters, wrap_lora

    ckpt = latest_checkpoint(run_dir, phase) if cfg.run.resume else None
    lora = cfg.model.lora.enabled
    source = str(ckpt) if ckpt is not None and not lora else ensure_model(cfg.model)
    policy = load_policy(source, dtype=cfg.model.dtype, device=cfg.model.device)  # type: ignore[arg-type]
    if lora:
        policy.model = (
            load_lora(policy.model, ckpt)
            if ckpt is not None
            else wrap_lora(policy.model, cfg.model.lora)
        )
        n_train, n_all = trainable_parameters(policy.model)
        log.info("LoRA: %d of %d parameters train", n_train, n_all)
    optimizer = make_optimizer(policy)
    state = load_trainer_state(ckpt, optimizer) if ckpt is not None else None
    if ckpt is not None:
        log.info("resumed %s from %s (step %d)", phase, ckpt, state["step"])
    return Resumed(policy=policy, state=state), optimizer


def monitor(
    policy: Policy, task: GroundingTask, ecfg: EvalConfig, split: str = "val"
) -> EvalReport:
    """Accuracy on ``ecfg.monitor_screens`` screens of ``split`` (val by default)."""
    keys = task.keys(split, 0, ecfg.monitor_screens)  # type: ignore[arg-type]
    return evaluate_policy(
        policy, task, keys, batch_size=ecfg.batch_size, max_new_tokens=ecfg.max_new_tokens
    )


def save_samples(
    task: GroundingTask, report: EvalReport, run_dir: Path, name: str, n: int = 8
) -> Path:
    """Save the first ``n`` evaluated samples as an annotated PNG grid under ``samples/``."""
    return save_png(annotate_records(task, report.records[:n]), run_dir / "samples" / f"{name}.png")


def export_final(policy: Policy, run_dir: Path) -> Path:
    """Write the trained policy as a plain checkpoint folder ``<run_dir>/final`` (atomically).

    A LoRA policy is merged first, so ``final/`` always loads like any checkpoint.
    """
    from vlagent.models.lora import merge_lora

    model = policy.model
    if hasattr(model, "merge_and_unload"):
        model = merge_lora(model)
        policy.model = model
    dest = run_dir / "final"
    with atomic_dir(dest) as tmp:
        model.save_pretrained(tmp)
        policy.processor.save_pretrained(tmp)
    return dest


class Timer:
    """Accumulates named phase durations (generate, reward, update …) for one step."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self._start = 0.0
        self._name = ""

    def __call__(self, name: str) -> Timer:
        self._name = name
        return self

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.times[f"time/{self._name}"] = (
            self.times.get(f"time/{self._name}", 0.0) + time.perf_counter() - self._start
        )
