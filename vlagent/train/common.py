"""Glue shared by the recipes: model setup, resume, monitoring, final export."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from vlagent.config import ModelConfig, TrainConfig
from vlagent.errors import ConfigError
from vlagent.eval.evaluate import evaluate
from vlagent.io import atomic_dir
from vlagent.models.loading import Policy, load_policy, quiet_transformers
from vlagent.train.checkpoint import latest_checkpoint, load_trainer_state, save_checkpoint
from vlagent.train.outputs import MetricsLogger, check_report_to, prepare_run_dir
from vlagent.train.parallel import (
    DCP_DIR,
    Parallel,
    check_config,
    device_for,
    load_sharded,
    save_checkpoint_sharded,
)
from vlagent.worlds import World, make_world

log = logging.getLogger(__name__)


def ensure_model(cfg: ModelConfig) -> str:
    """Return the checkpoint to load, building the tiny model first when asked and missing."""
    path = Path(cfg.path).expanduser()
    if cfg.tiny:
        from vlagent.models.tiny import TinyModelSpec

        known = {f.name for f in dataclasses.fields(TinyModelSpec)} - {"family", "seed"}
        unknown = sorted(set(cfg.tiny) - known)
        if unknown:
            raise ConfigError(
                f"model.tiny: unknown field(s) {unknown}; use {', '.join(sorted(known))} "
                "(family and seed are model.family and model.tiny_seed)"
            )
    if cfg.build_tiny and not path.exists():
        from vlagent.models.tiny import build_tiny_model

        log.info("building tiny %s model at %s %s", cfg.family, path, cfg.tiny or "")
        build_tiny_model(path, family=cfg.family, seed=cfg.tiny_seed, **cfg.tiny)
    elif cfg.tiny and path.exists():
        _check_tiny_sizes(path, cfg.tiny)
    return str(path) if path.exists() else cfg.path


def _check_tiny_sizes(path: Path, sizes: dict[str, Any]) -> None:
    """Raise when the tiny model at ``path`` was built with other ``model.tiny`` sizes."""
    spec_file = path / "vlagent_tiny_spec.json"
    if not spec_file.is_file():
        raise ConfigError(
            f"model.tiny is set but {path} is not a tiny model built here (no "
            f"{spec_file.name}); remove model.tiny or point model.path at a new folder"
        )
    built = json.loads(spec_file.read_text())
    differ = {k: (built.get(k), v) for k, v in sizes.items() if built.get(k) != v}
    if differ:
        raise ConfigError(
            f"model.tiny: the model at {path} was built with other sizes "
            f"(field: built, asked) {differ}; use a new model.path"
        )


def setup_threads(threads: int) -> None:
    if threads > 0:
        torch.set_num_threads(threads)


def copy_model(model: torch.nn.Module) -> torch.nn.Module:
    """A frozen copy of ``model`` for sampling (no gradients, eval mode)."""
    twin = copy.deepcopy(model)
    twin.requires_grad_(False)
    return twin.eval()


@dataclasses.dataclass
class Resumed:
    """What a recipe needs to continue: the policy and (if resuming) the saved state.

    ``policy`` is the one the optimizer trains (FSDP-sharded under torchrun); ``par.sampler``
    is the unsharded copy that samples (the same object in one process)."""

    policy: Policy
    state: dict[str, Any] | None
    par: Parallel = dataclasses.field(default_factory=Parallel.single)


def load_or_resume(
    cfg: TrainConfig,
    phase: str,
    run_dir: Path,
    make_optimizer: Any,
    par: Parallel | None = None,
) -> tuple[Resumed, Any]:
    """Load the starting policy, or the latest checkpoint of ``phase`` when resuming.

    With ``model.lora.enabled`` the base model is loaded and wrapped with adapters: fresh ones,
    or the checkpoint's adapter when resuming. Under torchrun (``par.on``) the policy is
    copied unsharded into ``par.sampler`` and then sharded (``train/parallel.py``).

    Args:
        make_optimizer: callable(policy) -> optimizer, called once the policy is loaded.
    Returns:
        (Resumed, optimizer) with optimizer and RNG state restored when a checkpoint exists;
        the saved state (incl. ``scheduler``) is in ``Resumed.state``.
    """
    from vlagent.models.lora import load_lora, trainable_parameters, wrap_lora

    par = par or Parallel.single()
    ckpt = latest_checkpoint(run_dir, phase) if cfg.run.resume else None
    lora = cfg.model.lora.enabled
    if ckpt is not None and not lora:
        source = str(ckpt)
    else:  # one process builds the tiny model
        source = par.on_main(lambda: ensure_model(cfg.model))
    device = device_for(cfg.model.device, par.info)
    mixed = par.on and device.startswith("cuda") and cfg.model.dtype == "bfloat16"
    policy = load_policy(
        source,
        dtype="float32" if mixed else cfg.model.dtype,  # type: ignore[arg-type]
        device=device,
        fuse_patch_embed=cfg.model.fuse_patch_embed,
    )
    if lora:
        policy.model = (
            load_lora(policy.model, ckpt)
            if ckpt is not None
            else wrap_lora(policy.model, cfg.model.lora)
        )
        n_train, n_all = trainable_parameters(policy.model)
        log.info("LoRA: %d of %d parameters train", n_train, n_all)
    if par.on:
        from vlagent.train.distributed import shard_policy

        sampler = copy_model(policy.model)
        par.sampler = dataclasses.replace(
            policy, model=sampler.to(torch.bfloat16) if mixed else sampler
        )
        checkpointing = cfg.recipe == "grpo" and cfg.grpo.gradient_checkpointing
        shard_policy(policy.model, mixed_precision=mixed, activation_checkpointing=checkpointing)
    else:
        par.sampler = policy
    optimizer = make_optimizer(policy)
    state = None
    if ckpt is not None:
        sharded = par.on or (ckpt / DCP_DIR).is_dir()
        state = load_trainer_state(ckpt, None if sharded else optimizer)
        if sharded:
            load_sharded(ckpt, policy, optimizer, state)
            par.sync(policy)  # the sampler gets exactly the restored (e.g. float32) weights
        log.info("resumed %s from %s (step %d)", phase, ckpt, state["step"])
    return Resumed(policy=policy, state=state, par=par), optimizer


def export_final(
    policy: Policy, run_dir: Path, card: str | None = None, push_to: str = "", private: bool = True
) -> Path:
    """Write the trained policy as a plain checkpoint folder ``<run_dir>/final`` (atomically).

    The folder is what ``save_pretrained`` writes for the model and its processor (config.json
    naming the architecture, model.safetensors, generation_config.json with eos and pad ids,
    processor_config.json, tokenizer files, chat_template.jinja), plus ``README.md`` when
    ``card`` is given: transformers and vLLM load it without vlagent. A LoRA policy is merged
    first, so the weights carry the release names.

    Args:
        card: the model card (``export.model_card``), written as ``README.md``.
        push_to: a hub repo id to upload the folder to ("" = no upload); a failed upload is a
            warning (see ``export.push_folder``), the folder is kept either way.
        private: create the hub repo as private.
    """
    from vlagent.models.lora import merge_lora
    from vlagent.train.export import generation_config, push_folder

    model = policy.model
    if hasattr(model, "merge_and_unload"):
        model = merge_lora(model)
        policy.model = model
    dest = run_dir / "final"
    with atomic_dir(dest) as tmp:
        model.save_pretrained(tmp)
        generation_config(policy).save_pretrained(tmp)
        policy.processor.save_pretrained(tmp)
        if card is not None:
            (tmp / "README.md").write_text(card, encoding="utf-8")
    if push_to:
        push_folder(dest, push_to, private)
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


class _NoMetrics:
    """The metrics logger of ranks other than 0 under torchrun: writes nothing."""

    path = None

    def log(self, step: int, scalars: dict[str, float]) -> None:
        pass

    def close(self) -> None:
        pass


@dataclasses.dataclass
class Run:
    """Everything a recipe loop needs; ``step`` and ``extra`` continue a resumed run.

    ``policy`` samples, validates and is exported; ``learner`` is the one the optimizer
    trains. They are one object in a single process; under torchrun the learner is sharded and
    ``sync()`` copies its weights into ``policy`` after each update (``train/parallel.py``).
    """

    cfg: TrainConfig
    phase: str
    run_dir: Path
    policy: Policy
    opt: torch.optim.Optimizer
    world: World
    state: dict[str, Any] | None
    extra: dict[str, Any]
    step: int
    metrics: Any
    bar: Any
    learner: Policy | None = None
    par: Parallel = dataclasses.field(default_factory=Parallel.single)

    def __post_init__(self) -> None:
        if self.learner is None:
            self.learner = self.policy

    def sync(self) -> None:
        """After an optimizer step: the sampling policy gets the trained weights (collective)."""
        self.par.sync(self.learner)

    def _evaluate_val(self, n: int) -> Any:
        """Greedy episodes on the first ``n`` val tasks, with the ``eval`` section's budgets."""
        e = self.cfg.eval
        return evaluate(
            self.world,
            self.policy,
            "val",
            n,
            batch_size=e.batch_size,
            max_new_tokens=e.max_new_tokens,
        )

    def validate(self, step: int) -> dict[str, float]:
        """Greedy episodes on ``eval.monitor_screens`` val tasks, as ``val/<name>`` scalars;
        pictures are saved when ``run.samples_every`` is on. Under torchrun rank 0 runs them
        and every rank gets its numbers (so stop rules agree)."""
        e = self.cfg.eval

        def run_val() -> dict[str, float]:
            report = self._evaluate_val(e.monitor_screens)
            if self.cfg.run.samples_every and step % self.cfg.run.samples_every == 0:
                self.world.save_pictures(
                    report.trajectories[: e.rollout_pictures],
                    self.run_dir / "samples",
                    f"{self.phase}_val_{step:06d}",
                )
            return {f"val/{k}": v for k, v in report.summary().items()}

        return self.par.on_main(run_val)

    def checkpoint(self, step: int, scheduler: Any = None) -> None:
        """Save a resumable checkpoint of ``step`` (collective under torchrun)."""
        if self.par.on:
            save_checkpoint_sharded(
                self.par,
                self.run_dir,
                self.phase,
                step,
                self.learner,
                self.opt,
                self.extra,
                scheduler,
            )
        else:
            save_checkpoint(
                self.run_dir,
                self.phase,
                step,
                self.policy,
                self.opt,
                self.extra,
                scheduler=scheduler,
            )

    def finish(self, step: int, stop_reason: str, scheduler: Any = None) -> Path:
        """Last checkpoint, the exported ``final/`` model, closed logs; returns ``final/``."""
        self.bar.close()
        self.checkpoint(step, scheduler)
        final = self.par.on_main(lambda: self._export(step, stop_reason))
        self.metrics.close()
        self.world.close()
        self.par.barrier()
        log.info(
            "%s stopped after %d steps (%s), %.1f s of training",
            self.phase,
            step,
            stop_reason,
            self.extra["train_seconds"],
        )
        return final

    def _export(self, step: int, stop_reason: str) -> Path:
        """``final/`` with its model card, and the final pictures (rank 0's work)."""
        from vlagent.train.export import last_val_metrics, model_card

        card = model_card(
            self.cfg,
            self.policy.family,
            self.phase,
            step,
            stop_reason,
            self.extra["train_seconds"],
            last_val_metrics(self.metrics.path, self.phase),
        )
        r = self.cfg.run
        final = export_final(self.policy, self.run_dir, card, r.push_to_hub, r.hub_private)
        if self.cfg.eval.monitor_screens and self.cfg.eval.rollout_pictures:
            report = self._evaluate_val(self.cfg.eval.rollout_pictures)
            self.world.save_pictures(
                report.trajectories, self.run_dir / "samples", f"{self.phase}_final"
            )
        return final


def start_run(
    cfg: TrainConfig, phase: str, make_optimizer: Any, total: int, extra: dict[str, Any]
) -> Run:
    """Set up a run of ``phase`` (resuming from its latest checkpoint when there is one).

    Under torchrun (``RANK`` / ``WORLD_SIZE`` set) every process joins the process group and
    the run trains one sharded policy (``train/parallel.py``); rank 0 writes the run folder.

    Args:
        make_optimizer: callable(policy) -> optimizer.
        total: the phase's step budget (for the progress bar).
        extra: the trainer state a fresh run starts with.
    """
    from vlagent.train.distributed import init_distributed

    quiet_transformers()
    setup_threads(cfg.run.threads)
    torch.manual_seed(cfg.run.seed)
    check_report_to(cfg.run.report_to)  # before any work: wandb listed but not installed
    info = init_distributed()
    check_config(cfg, info)
    par = Parallel(info)
    run_dir = par.on_main(lambda: prepare_run_dir(cfg))
    resumed, opt = load_or_resume(cfg, phase, run_dir, make_optimizer, par)
    step = resumed.state["step"] if resumed.state else 0
    metrics = (
        MetricsLogger.for_run(cfg, run_dir, phase, resume_step=step if resumed.state else None)
        if par.is_main
        else _NoMetrics()
    )
    show = cfg.run.progress and par.is_main
    return Run(
        cfg=cfg,
        phase=phase,
        run_dir=run_dir,
        policy=par.sampler,
        opt=opt,
        world=make_world(cfg, par.sampler),
        state=resumed.state,
        extra=resumed.state["extra"] if resumed.state else extra,
        step=step,
        metrics=metrics,
        bar=tqdm(total=total, initial=step, desc=phase, disable=not show, dynamic_ncols=True),
        learner=resumed.policy,
        par=par,
    )
