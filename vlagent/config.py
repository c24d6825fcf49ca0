"""Run configuration: nested dataclasses (the only place defaults live), YAML recipes, dotted overrides.

``load_config("grpo", ["grpo.lr=1e-5", "run.seed=3"])`` merges a YAML recipe (a file path, or the
name of a recipe shipped in ``vlagent/configs/``) and the overrides into ``TrainConfig`` through
OmegaConf structured configs: an unknown key or a value of the wrong type fails with a message
naming the file and the dotted key; ``__post_init__`` checks ranges and names the field. One
schema serves every world: the world-specific sections live in ``vlagent/world_config.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vlagent.algo_config import PRESETS, SCHEDULES, GRPOConfig, LoRAConfig
from vlagent.errors import ConfigError
from vlagent.robot_config import RobotConfig
from vlagent.screen_config import DesktopConfig, WebConfig
from vlagent.world_config import AppsConfig, LoopConfig, TaskConfig, ToolsConfig

__all__ = [
    "AppsConfig",
    "GRPOConfig",
    "LoRAConfig",
    "LoopConfig",
    "RobotConfig",
    "TaskConfig",
    "ToolsConfig",
    "TrainConfig",
    "load_config",
    "to_yaml",
]
REPORT_SINKS = ("tensorboard", "wandb", "jsonl")
"""Accepted entries of ``run.report_to``."""
WANDB_MODES = ("offline", "online", "disabled")
"""Accepted values of ``run.wandb_mode``."""
RECIPES_DIR = Path(__file__).parent / "configs"
"""The YAML recipes shipped inside the package (``vlagent train --config grpo``)."""


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{field}: {msg}")


@dataclasses.dataclass
class ModelConfig:
    """Which policy to train."""

    path: str = "runs/tiny-qwen3_vl"
    """Checkpoint folder or hub id. With ``build_tiny`` a tiny model is built here if missing."""
    build_tiny: bool = True
    """Build a tiny random model at ``path`` when the folder does not exist (offline)."""
    family: str = "qwen3_vl"
    """Family of the tiny model to build: qwen2_vl | qwen2_5_vl | qwen3_vl."""
    tiny_seed: int = 0
    """Seed of the tiny model's random weights."""
    tiny: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Sizes of the tiny model to build, as fields of ``vlagent.models.tiny.TinyModelSpec``
    (``{text_hidden: 256, text_layers: 4, vision_hidden: 128, vision_layers: 4}``); empty =
    the default 0.73 M-parameter model. A folder already at ``path`` must have been built with
    the same sizes (checked against its ``vlagent_tiny_spec.json``)."""
    dtype: str = "float32"
    """Parameter dtype: float32 | bfloat16 | float16 | auto."""
    device: str = "cpu"
    """Torch device: cpu | cuda | cuda:N."""
    fuse_patch_embed: bool = True
    """Compute the vision tower's patch-embedding Conv3d (kernel = stride) as the equal matmul on
    flattened patches; the checkpoint's parameter names and shapes are unchanged."""
    lora: LoRAConfig = dataclasses.field(default_factory=LoRAConfig)
    """Parameter-efficient training (PEFT LoRA on the language model)."""

    def __post_init__(self) -> None:
        _check(
            self.family in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl"),
            "model.family",
            f"{self.family!r} is unknown; use qwen2_vl, qwen2_5_vl or qwen3_vl",
        )
        _check(
            self.dtype in ("float32", "bfloat16", "float16", "auto"),
            "model.dtype",
            f"{self.dtype!r} is unknown; use float32, bfloat16, float16 or auto",
        )


@dataclasses.dataclass
class SFTConfig:
    """Supervised warm start on demonstrations rendered from ground truth."""

    steps: int = 1000
    """Maximum optimizer steps."""
    max_seconds: float = 0.0
    """Stop after this many seconds of training (0 = no time limit)."""
    batch_size: int = 16
    """Demonstrations per step."""
    lr: float = 1e-3
    """Peak AdamW learning rate."""
    lr_schedule: str = "constant"
    """constant | linear | cosine decay over ``steps`` after warmup. A decaying schedule on a
    short SFT stage started from a checkpoint anneals a constant-lr run (warmup-stable-decay)."""
    warmup_steps: int = 0
    """Optimizer steps of linear warmup."""
    min_lr_ratio: float = 0.0
    """Floor of the decayed learning rate as a fraction of ``lr``."""
    num_demos: int = 0
    """Size of the fixed demonstration set (0 = a fresh task for every sample)."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm (0 = off)."""
    stop_accuracy: float = 0.0
    """Stop once held-out accuracy (on ``eval.monitor_screens``) reaches this (0 = off)."""
    plateau_patience: int = 0
    """Stop after this many monitor evals without improvement (0 = off)."""

    def __post_init__(self) -> None:
        _check(
            self.lr_schedule in SCHEDULES,
            "sft.lr_schedule",
            f"{self.lr_schedule!r} is unknown; use one of {', '.join(SCHEDULES)}",
        )
        _check(
            0 <= self.warmup_steps <= max(self.steps, 0),
            "sft.warmup_steps",
            f"must be in [0, sft.steps={self.steps}], got {self.warmup_steps}",
        )
        _check(
            0 <= self.min_lr_ratio <= 1,
            "sft.min_lr_ratio",
            f"must be in [0, 1], got {self.min_lr_ratio}",
        )


@dataclasses.dataclass
class EvalConfig:
    """Held-out evaluation."""

    num_screens: int = 500
    """Held-out screens for the reported accuracy."""
    monitor_screens: int = 200
    """Held-out screens for in-training monitoring (early stopping, curves)."""
    every: int = 50
    """Monitor eval every this many steps (0 = never)."""
    batch_size: int = 64
    """Prompts per greedy decoding batch."""
    max_new_tokens: int = 24
    """Token budget of each turn when evaluating."""
    rollout_pictures: int = 4
    """Episodes drawn as annotated PNGs per monitor / final eval."""


@dataclasses.dataclass
class RunConfig:
    """Where outputs go and how the run is reproduced."""

    out_dir: str = "runs/latest"
    """Run folder: config, metrics.jsonl, TensorBoard events, checkpoints, samples."""
    seed: int = 0
    """Seed of data order, sampling and initialisation of the training loop."""
    threads: int = 0
    """torch CPU threads (0 = torch's default)."""
    checkpoint_every: int = 100
    """Save a resumable checkpoint every this many steps (and at the end)."""
    resume: bool = True
    """Resume from the run folder's latest checkpoint when one exists."""
    samples_every: int = 100
    """Save annotated sample rollouts every this many steps (0 = only at the end)."""
    progress: bool = True
    """Show a progress bar."""
    report_to: list[str] = dataclasses.field(default_factory=lambda: ["tensorboard", "jsonl"])
    """Where the scalars go: any of tensorboard | wandb | jsonl, with the same names everywhere
    (``<phase>/<name>`` in TensorBoard and W&B). ``metrics.jsonl`` is written in every case
    (resuming, ``vlagent train``'s summary and the reports read it), so listing jsonl is optional;
    ``[]`` means JSONL only."""
    wandb_project: str = "vlagent"
    """W&B project (with ``wandb`` in ``report_to``)."""
    wandb_name: str = ""
    """W&B run name; "" = the name of ``out_dir``."""
    wandb_mode: str = "offline"
    """offline | online | disabled. offline (the default) needs no network or account: the run is
    written under ``<out_dir>/wandb/`` and ``wandb sync <out_dir>/wandb/offline-run-*`` uploads it
    later."""
    push_to_hub: str = ""
    """Hub repo id (``user/name``) the exported ``final/`` folder is uploaded to; "" = no upload.
    A failed upload (no network, no token) is a warning; the run and its folder are kept."""
    hub_private: bool = True
    """Create the hub repo as private (when ``push_to_hub`` creates it)."""
    env_workers: int = 0
    """Ray env workers per split (the ``dist`` extra), for worlds whose envs can be built in
    another process (``World.env_factory``: grounding, zoom); 0 = envs in this process. Raise
    ``loop.env_threads`` too so one round's steps reach the workers together."""

    def __post_init__(self) -> None:
        _check(
            0 <= self.env_workers <= 1024,
            "run.env_workers",
            f"must be in [0, 1024] (0 = envs in this process), got {self.env_workers}",
        )
        unknown = [s for s in self.report_to if s not in REPORT_SINKS]
        _check(
            not unknown,
            "run.report_to",
            f"unknown {', '.join(map(repr, unknown))}; use any of {', '.join(REPORT_SINKS)}",
        )
        _check(
            self.wandb_mode in WANDB_MODES,
            "run.wandb_mode",
            f"{self.wandb_mode!r} is unknown; use {' | '.join(WANDB_MODES)}",
        )
        repo = self.push_to_hub
        _check(
            not repo or (repo.count("/") == 1 and all(repo.split("/")) and " " not in repo),
            "run.push_to_hub",
            f"{repo!r} is not a hub repo id; write it as user/name (or leave it empty)",
        )


@dataclasses.dataclass
class TrainConfig:
    """Everything a run needs. ``recipe`` picks the loop (sft | grpo), ``world`` the env."""

    recipe: str = "grpo"
    """sft | grpo."""
    world: str = "grounding"
    """The env + adapter the recipe trains in: grounding | zoom | apps | robot | desktop | web, or any name
    added with
    ``vlagent.worlds.register_world``."""
    algo: str = "grpo"
    """Preset of grpo.* values: grpo | dr_grpo | dapo | gspo | rloo | reinforce_pp (see docs/ALGORITHMS.md)."""
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    task: TaskConfig = dataclasses.field(default_factory=TaskConfig)
    tools: ToolsConfig = dataclasses.field(default_factory=ToolsConfig)
    loop: LoopConfig = dataclasses.field(default_factory=LoopConfig)
    apps: AppsConfig = dataclasses.field(default_factory=AppsConfig)
    robot: RobotConfig = dataclasses.field(default_factory=RobotConfig)
    desktop: DesktopConfig = dataclasses.field(default_factory=DesktopConfig)
    web: WebConfig = dataclasses.field(default_factory=WebConfig)
    sft: SFTConfig = dataclasses.field(default_factory=SFTConfig)
    grpo: GRPOConfig = dataclasses.field(default_factory=GRPOConfig)
    eval: EvalConfig = dataclasses.field(default_factory=EvalConfig)
    run: RunConfig = dataclasses.field(default_factory=RunConfig)

    def __post_init__(self) -> None:
        _check(
            self.recipe in ("sft", "grpo"), "recipe", f"{self.recipe!r} is unknown; use sft or grpo"
        )
        _check(
            self.algo in PRESETS, "algo", f"{self.algo!r} is unknown; presets: {', '.join(PRESETS)}"
        )
        _check(
            not (self.grpo.difficulty_band and self.task.source == "synthetic"),
            "grpo.difficulty_band / task.source",
            "synthetic screens are never repeated, so per-task success rates do not exist; "
            "use the band with a finite source (task.source=screenspot) or use grpo.dynamic_sampling",
        )


def _dict_fields(schema: type, prefix: str = "") -> list[str]:
    """Dotted paths of the mapping-valued fields of a (nested) config dataclass."""
    import typing

    out = []
    for name, hint in typing.get_type_hints(schema).items():
        if dataclasses.is_dataclass(hint):
            out += _dict_fields(hint, f"{prefix}{name}.")
        elif typing.get_origin(hint) is dict or hint is dict:
            out.append(prefix + name)
    return out


def _preset_layer(sources: list, schema: type) -> tuple[str, Any, list[str]] | None:
    """The grpo.* values of the preset named by the last source that sets ``algo``."""
    from omegaconf import OmegaConf

    if "algo" not in {f.name for f in dataclasses.fields(schema)}:
        return None
    name = None
    for _, src, _ in sources:
        value = OmegaConf.select(src, "algo", default=None)
        if value is not None:
            name = str(value)
    if name is None or name not in PRESETS:
        return None  # unknown names are reported by TrainConfig.__post_init__
    return (f"preset algo={name}", OmegaConf.create({"grpo": PRESETS[name]}), [])


def load_config(
    path: str | Path | None = None, overrides: Sequence[str] = (), schema: type = TrainConfig
) -> Any:
    """Build a config from defaults, an optional YAML file and dotted ``key=value`` overrides.

    Raises:
        ConfigError: the file is missing or not YAML, a key is unknown, a value has the wrong
            type, or a field is out of range; the message names the file and the dotted key.
    """
    import yaml
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    base = OmegaConf.structured(schema)
    replace_paths = _dict_fields(schema)
    where = "defaults"
    try:
        sources = []
        if path is not None:
            where = str(path)
            p = Path(path)
            if (
                not p.is_file()
                and "/" not in str(path)
                and (RECIPES_DIR / f"{path}.yaml").is_file()
            ):
                p = RECIPES_DIR / f"{path}.yaml"  # a packaged recipe name: grpo, quickstart, ...
            if not p.is_file():
                raise ConfigError(
                    f"config file {where} does not exist (packaged recipes: "
                    + ", ".join(sorted(q.stem for q in RECIPES_DIR.glob("*.yaml")))
                    + ")"
                )
            loaded = OmegaConf.load(p)
            if not isinstance(loaded, DictConfig):
                raise ConfigError(
                    f"config file {where} must hold a mapping of sections, got a list"
                )
            sources.append((where, loaded, replace_paths))
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"override {item!r} must look like key=value (e.g. grpo.lr=1e-5)")
            key = item.split("=", 1)[0].strip()
            replaced = [key] if key in replace_paths else []
            try:
                layer = OmegaConf.from_dotlist([item])
            except yaml.YAMLError as exc:
                raise ConfigError(f"override {item!r} is not valid YAML: {exc}") from exc
            sources.append((f"override {item!r}", layer, replaced))
        preset = _preset_layer(sources, schema)
        if preset is not None:
            sources.insert(0, preset)
        for label, src, replaced in sources:
            where = label  # named in the error message if this layer fails
            base = OmegaConf.merge(base, src)
            # A mapping-valued field (e.g. task.reward) written whole is replaced, not merged key
            # by key: {point_in_box: 1.0} must not silently keep the default's other terms.
            # A dotted override into it (task.reward.format=0.3) updates that one key.
            for dotted in replaced:
                value = OmegaConf.select(src, dotted, default=None)
                if value is not None:
                    OmegaConf.update(base, dotted, value, merge=False)
        where = "resolved config" + (f" ({path} + overrides)" if path is not None else "")
        return OmegaConf.to_object(base)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "?"
        msg = str(exc).splitlines()[0]
        raise ConfigError(f"{where}: key {key!r}: {msg}") from exc
    except ConfigError as exc:
        if where == "defaults" or str(exc).startswith(("config file", "override")):
            raise
        raise ConfigError(f"{where}: {exc}") from exc


def to_yaml(cfg: Any) -> str:
    """The resolved config as YAML text (saved with every run)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(OmegaConf.structured(cfg))
