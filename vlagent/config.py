"""Run configuration: nested dataclasses (the only place defaults live), YAML recipes, dotted overrides.

``load_config("configs/grpo.yaml", ["grpo.lr=1e-5", "run.seed=3"])`` merges the YAML file and the
overrides into ``TrainConfig`` through OmegaConf structured configs: an unknown key or a value of
the wrong type fails with a message naming the file and the dotted key; ``__post_init__`` checks
ranges and names the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vlagent.algo_config import PRESETS, GRPOConfig, LoRAConfig
from vlagent.errors import ConfigError

__all__ = ["GRPOConfig", "LoRAConfig", "TrainConfig", "load_config", "to_yaml"]


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
    dtype: str = "float32"
    """Parameter dtype: float32 | bfloat16 | float16 | auto."""
    device: str = "cpu"
    """Torch device: cpu | cuda | cuda:N."""
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
class TaskConfig:
    """The grounding task: where screens come from, how answers are written, how they are scored."""

    source: str = "synthetic"
    """synthetic (procedural screens) | screenspot (annotation file + image folder)."""
    level: str = "basic"
    """Synthetic difficulty level (see ``sim.screens.LEVELS``)."""
    annotation_file: str = ""
    """ScreenSpot JSON file (source=screenspot)."""
    image_dir: str = ""
    """Folder with the ScreenSpot images (source=screenspot)."""
    screenspot_version: str = "v2"
    """v1 (bbox = x,y,w,h) | v2 | pro (bbox = x0,y0,x1,y1)."""
    answer_format: str = "qwen_json"
    """think_answer (<answer>{"point": [x, y]}</answer>) | qwen_json ({"point_2d": [x, y]})."""
    answer_kind: str = "point"
    """point | box: what demonstrations answer with."""
    reward: dict[str, Any] = dataclasses.field(
        default_factory=lambda: {"point_in_box": 1.0, "gaussian_point": 0.5, "format": 0.1}
    )
    """Reward terms and weights (``rewards.RewardSpec.from_dict``)."""
    train_seed_offset: int = 0
    """Training screens use seeds from here on."""
    eval_seed_offset: int = 1_000_000_000
    """Held-out screens use seeds from here on (disjoint from training)."""

    def __post_init__(self) -> None:
        _check(
            self.source in ("synthetic", "screenspot"),
            "task.source",
            f"{self.source!r} is unknown; use synthetic or screenspot",
        )
        _check(
            self.answer_format in ("think_answer", "qwen_json"),
            "task.answer_format",
            f"{self.answer_format!r} is unknown; use think_answer or qwen_json",
        )
        _check(
            self.answer_kind in ("point", "box"),
            "task.answer_kind",
            f"{self.answer_kind!r} is unknown; use point or box",
        )
        if self.source == "screenspot":
            _check(
                bool(self.annotation_file),
                "task.annotation_file",
                "required when task.source=screenspot",
            )
        _check(
            abs(self.eval_seed_offset - self.train_seed_offset) >= 10_000_000,
            "task.eval_seed_offset",
            "must be at least 10,000,000 away from task.train_seed_offset so eval screens stay unseen",
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
    """AdamW learning rate."""
    num_demos: int = 0
    """Size of the fixed demonstration set (0 = a fresh screen for every sample)."""
    demo_seed_offset: int = 500_000_000
    """Demonstration screens use seeds from here on."""
    stop_accuracy: float = 0.0
    """Stop once held-out accuracy (on ``eval.monitor_screens``) reaches this (0 = off)."""
    plateau_patience: int = 0
    """Stop after this many monitor evals without improvement (0 = off)."""


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
    """Completion budget when evaluating."""


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


@dataclasses.dataclass
class TrainConfig:
    """Everything a run needs. ``recipe`` picks the loop: sft | grpo."""

    recipe: str = "grpo"
    algo: str = "grpo"
    """Preset of grpo.* values: grpo | dr_grpo | dapo | gspo | rloo | reinforce_pp (see docs/ALGORITHMS.md)."""
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    task: TaskConfig = dataclasses.field(default_factory=TaskConfig)
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
            if not p.is_file():
                raise ConfigError(f"config file {where} does not exist")
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
            sources.append((f"override {item!r}", OmegaConf.from_dotlist([item]), replaced))
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


AGENT_RECIPES = ("agent_sft", "agent_grpo")


def recipe_of(path: str | Path | None, overrides: Sequence[str] = ()) -> str | None:
    """The ``recipe`` a config file + overrides name (the last ``recipe=`` override wins).

    Reads only the top-level ``recipe`` key; the full config is validated by ``load_config``.
    """
    recipe = None
    if path is not None and Path(path).is_file():
        import yaml

        try:
            loaded = yaml.safe_load(Path(path).read_text())
        except yaml.YAMLError:
            loaded = None  # load_config reports the YAML error with the file name
        if isinstance(loaded, dict) and loaded.get("recipe") is not None:
            recipe = str(loaded["recipe"])
    for item in overrides:
        if item.split("=", 1)[0].strip() == "recipe" and "=" in item:
            recipe = item.split("=", 1)[1].strip()
    return recipe


def load_any_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> Any:
    """``load_config`` with the schema chosen by the recipe: ``AgentTrainConfig`` for the
    multi-turn agent recipes (agent_sft | agent_grpo), ``TrainConfig`` for everything else."""
    if recipe_of(path, overrides) in AGENT_RECIPES:
        from vlagent.agent.config import AgentTrainConfig

        return load_config(path, overrides, schema=AgentTrainConfig)
    return load_config(path, overrides)
