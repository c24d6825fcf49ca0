"""Config of the "thinking with images" agent recipes (``agent_sft``, ``agent_grpo``).

Nested dataclasses hold every default once; ``__post_init__`` names the field and the allowed
range. Load with ``vlagent.config.load_config(path, overrides, schema=AgentTrainConfig)``.
``model`` and ``run`` reuse the single-turn recipes' sections, so the shared helpers
(``load_or_resume``, ``prepare_run_dir``, checkpoints) work unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vlagent.config import ModelConfig, RunConfig
from vlagent.errors import ConfigError


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{field}: {msg}")


@dataclasses.dataclass
class AgentTaskConfig:
    """Which screens, at which pixel budget, scored how."""

    level: str = "hires_tiny_small"
    """Synthetic screen level (``sim.screens.LEVELS``)."""
    pixel_budget: int = 448 * 256
    """Processor ``max_pixels`` for every observation (screenshot and zooms); 0 keeps the
    checkpoint's. At 448x256 the glyph textures of ``hires_tiny_small`` are unreadable."""
    answer_format: str = "qwen_json"
    """qwen_json ({"point_2d": [x, y]}) | think_answer (<answer>{"point": [x, y]}</answer>)."""
    reward: dict[str, Any] = dataclasses.field(
        default_factory=lambda: {"point_in_box": 1.0, "format": 0.1}
    )
    """Answer reward terms and weights (``rewards.RewardSpec.from_dict``), in ORIGINAL coords."""
    train_seed_offset: int = 0
    """Training screens use seeds from here on."""
    demo_seed_offset: int = 500_000_000
    """SFT demonstration screens use seeds from here on."""
    eval_seed_offset: int = 1_000_000_000
    """Held-out test screens use seeds from here on (val = +20,000,000)."""

    def __post_init__(self) -> None:
        _check(
            self.pixel_budget >= 0, "task.pixel_budget", f"must be >= 0, got {self.pixel_budget}"
        )
        _check(
            self.answer_format in ("qwen_json", "think_answer"),
            "task.answer_format",
            f"{self.answer_format!r} is unknown; use qwen_json or think_answer",
        )
        _check(
            abs(self.eval_seed_offset - self.train_seed_offset) >= 10_000_000,
            "task.eval_seed_offset",
            "must be at least 10,000,000 away from task.train_seed_offset",
        )


@dataclasses.dataclass
class ToolsConfig:
    """Which tools the policy may call and how their calls are read."""

    enabled: bool = True
    """False = the no-tools baseline: one turn, no tool prompt, answers on observation_0."""
    names: list[str] = dataclasses.field(default_factory=lambda: ["zoom_in"])
    """Tools offered (keys of ``perception_tools.tools.TOOLS``)."""
    system_prompt: str = "schema"
    """schema (Qwen function-calling text with the JSON schemas) | short (one line, for tiny
    models: the schema costs ~750 tokens of the tiny tokenizer) | none."""
    min_side_px: int = 28
    """Smallest zoom side in ORIGINAL pixels."""
    max_aspect: float = 50.0
    """Largest zoom long/short side."""
    answer_observation: str = "latest"
    """Observation a final answer's numbers refer to: latest (the last image) | original.
    An answer JSON with ``"source": "observation_<i>"`` overrides it."""

    def __post_init__(self) -> None:
        from perception_tools.tools import TOOLS

        unknown = [n for n in self.names if n not in TOOLS]
        _check(not unknown, "tools.names", f"unknown {unknown}; known: {', '.join(TOOLS)}")
        _check(
            self.system_prompt in ("schema", "short", "none"),
            "tools.system_prompt",
            f"{self.system_prompt!r} is unknown; use schema, short or none",
        )
        _check(self.min_side_px >= 1, "tools.min_side_px", f"must be >= 1, got {self.min_side_px}")
        _check(
            1.0 <= self.max_aspect <= 100.0,
            "tools.max_aspect",
            f"must be in [1, 100], got {self.max_aspect}",
        )
        _check(
            self.answer_observation in ("latest", "original"),
            "tools.answer_observation",
            f"{self.answer_observation!r} is unknown; use latest or original",
        )


@dataclasses.dataclass
class LoopConfig:
    """Limits and sampling of the multi-turn loop."""

    max_turns: int = 4
    """Assistant turns per episode (a tool call on the last one makes the episode over-limit)."""
    max_images: int = 4
    """Images per episode, observation_0 included."""
    max_turn_tokens: int = 64
    """New tokens per assistant turn (a turn without eos within it is over-limit)."""
    max_episode_tokens: int = 192
    """New tokens over all assistant turns of an episode."""
    over_limit: str = "mask"
    """mask: an over-limit trajectory gets loss_mask 0 and no advantage (Mini-o3 style) |
    penalize: it is trained on with the extra reward term ``over_limit``."""
    over_limit_penalty: float = 0.5
    """Size of the ``over_limit`` term (subtracted) when ``over_limit=penalize``."""
    temperature: float = 1.0
    """Sampling temperature (top_k=0, top_p=1, repetition_penalty=1 are fixed)."""
    batch_size: int = 64
    """Episodes advanced together per generate call (lockstep, left padded)."""

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_images", "max_turn_tokens", "max_episode_tokens"):
            value = getattr(self, name)
            _check(value >= 1, f"loop.{name}", f"must be >= 1, got {value}")
        _check(
            self.over_limit in ("mask", "penalize"),
            "loop.over_limit",
            f"{self.over_limit!r} is unknown; use mask or penalize",
        )
        _check(
            self.over_limit_penalty >= 0,
            "loop.over_limit_penalty",
            f"must be >= 0, got {self.over_limit_penalty}",
        )
        _check(self.temperature > 0, "loop.temperature", f"must be > 0, got {self.temperature}")
        _check(self.batch_size >= 1, "loop.batch_size", f"must be >= 1, got {self.batch_size}")


@dataclasses.dataclass
class ToolRewardSection:
    """Tool-use reward terms (``rewards.tool_use.ToolRewardConfig``; same fields)."""

    bonus: float = 0.2
    """Paid for a right answer reached with >= 1 successful tool call (0 = off)."""
    free_calls: int = 1
    """Tool calls that cost nothing."""
    per_call: float = 0.05
    """Cost of each further call."""
    evidence_weight: float = 0.0
    """Weight of the zoom-evidence term (0 = off)."""
    evidence: str = "contains"
    """contains (share of the target inside a zoom) | iou."""
    evidence_mode: str = "max"
    """max (best zoom) | last."""
    curiosity_alpha: float = 0.0
    """Pixel Reasoner curiosity alpha (0 = off)."""
    curiosity_H: float = 0.3
    """Target group rate of tool use for the curiosity bonus."""

    def to_reward_config(self) -> Any:
        from rewards.tool_use import ToolRewardConfig
        from rewards.types import RewardSpecError

        try:
            return ToolRewardConfig(**dataclasses.asdict(self))
        except RewardSpecError as exc:
            raise ConfigError(f"tool_reward: {exc}") from exc

    def __post_init__(self) -> None:
        self.to_reward_config()


@dataclasses.dataclass
class AgentSFTConfig:
    """Cold start on synthetic traces (tools) or direct answers (no tools)."""

    steps: int = 400
    """Maximum optimizer steps."""
    max_seconds: float = 0.0
    """Stop after this many seconds of training (0 = no limit)."""
    batch_size: int = 16
    """Episodes per step."""
    lr: float = 1e-3
    """AdamW learning rate."""
    trace: str = "random"
    """random: ``gui.grounding.traces.zoom_trace`` (a box around the target with random
    margins) | grid: the zoom is the window of a fixed grid (``grid_window_*`` of the screen,
    stride half a window) that holds the target and is centred nearest its colour cluster, so
    the zoom call is a low-entropy function of what the screenshot shows."""
    grid_window_w: float = 0.15
    """Grid trace: window width as a fraction of the screenshot width."""
    grid_window_h: float = 0.2
    """Grid trace: window height as a fraction of the screenshot height."""
    p_wrong_first: float = 0.0
    """Trace knob: probability of a first zoom that misses, then a corrected one."""
    zoom_scale_lo: float = 6.0
    """Trace knob: smallest zoom side / target side (6 covers a 4-tile cluster)."""
    zoom_scale_hi: float = 8.0
    """Trace knob: largest zoom side / target side."""
    answer_jitter: float = 0.3
    """Trace knob: answer offset from the target centre, fraction of the half-size."""
    stop_accuracy: float = 0.0
    """Stop once monitored held-out accuracy reaches this (0 = off)."""

    def __post_init__(self) -> None:
        _check(self.steps >= 0, "sft.steps", f"must be >= 0, got {self.steps}")
        _check(self.batch_size >= 1, "sft.batch_size", f"must be >= 1, got {self.batch_size}")
        _check(self.lr > 0, "sft.lr", f"must be > 0, got {self.lr}")
        _check(
            self.trace in ("random", "grid"),
            "sft.trace",
            f"{self.trace!r} is unknown; use random or grid",
        )
        for name in ("grid_window_w", "grid_window_h"):
            value = getattr(self, name)
            _check(0.0 < value <= 1.0, f"sft.{name}", f"must be in (0, 1], got {value}")
        _check(
            1.0 <= self.zoom_scale_lo <= self.zoom_scale_hi,
            "sft.zoom_scale_lo",
            f"needs 1 <= zoom_scale_lo <= zoom_scale_hi, got {self.zoom_scale_lo}, "
            f"{self.zoom_scale_hi}",
        )


@dataclasses.dataclass
class AgentGRPOConfig:
    """Multi-turn GRPO: B screens x G episodes, trajectory rewards, group advantages."""

    steps: int = 100
    """Rollout + update iterations."""
    max_seconds: float = 0.0
    """Stop after this many seconds (0 = no limit)."""
    screens_per_step: int = 4
    """B: screens per iteration."""
    group_size: int = 8
    """G: episodes per screen."""
    lr: float = 1e-4
    """AdamW learning rate."""
    clip_eps_low: float = 0.2
    """PPO clip epsilon below 1."""
    clip_eps_high: float = 0.28
    """PPO clip epsilon above 1 (clip-higher)."""
    epochs: int = 1
    """Optimizer passes over each rollout batch."""
    micro_batch: int = 16
    """Trajectories per forward/backward (gradients accumulate to one token-mean loss)."""
    scale_by_std: bool = True
    """Divide advantages by the group's reward std."""

    def __post_init__(self) -> None:
        _check(self.group_size >= 2, "grpo.group_size", f"must be >= 2, got {self.group_size}")
        _check(
            self.screens_per_step >= 1,
            "grpo.screens_per_step",
            f"must be >= 1, got {self.screens_per_step}",
        )
        _check(0 <= self.clip_eps_low < 1, "grpo.clip_eps_low", "must be in [0, 1)")
        _check(self.clip_eps_high >= 0, "grpo.clip_eps_high", "must be >= 0")
        _check(self.epochs >= 1, "grpo.epochs", f"must be >= 1, got {self.epochs}")
        _check(self.micro_batch >= 1, "grpo.micro_batch", f"must be >= 1, got {self.micro_batch}")


@dataclasses.dataclass
class AgentEvalConfig:
    """Held-out evaluation (greedy episodes)."""

    num_screens: int = 300
    """Held-out test screens for the reported accuracy."""
    monitor_screens: int = 64
    """Val screens for in-training monitoring."""
    every: int = 50
    """Monitor every this many steps (0 = never)."""
    rollout_pictures: int = 4
    """Episodes drawn as PNGs (turns side by side) per monitor / final eval."""

    def __post_init__(self) -> None:
        _check(self.num_screens >= 1, "eval.num_screens", "must be >= 1")
        _check(self.monitor_screens >= 1, "eval.monitor_screens", "must be >= 1")


@dataclasses.dataclass
class AgentTrainConfig:
    """Everything an agent run needs. ``recipe`` picks the loop: agent_sft | agent_grpo."""

    recipe: str = "agent_grpo"
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    task: AgentTaskConfig = dataclasses.field(default_factory=AgentTaskConfig)
    tools: ToolsConfig = dataclasses.field(default_factory=ToolsConfig)
    loop: LoopConfig = dataclasses.field(default_factory=LoopConfig)
    tool_reward: ToolRewardSection = dataclasses.field(default_factory=ToolRewardSection)
    sft: AgentSFTConfig = dataclasses.field(default_factory=AgentSFTConfig)
    grpo: AgentGRPOConfig = dataclasses.field(default_factory=AgentGRPOConfig)
    eval: AgentEvalConfig = dataclasses.field(default_factory=AgentEvalConfig)
    run: RunConfig = dataclasses.field(default_factory=RunConfig)

    def __post_init__(self) -> None:
        _check(
            self.recipe in ("agent_sft", "agent_grpo"),
            "recipe",
            f"{self.recipe!r} is unknown; use agent_sft or agent_grpo",
        )
