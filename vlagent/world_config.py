"""Config sections that describe a world: its tasks, tools, episode limits and env rewards.

Each world reads the sections it needs (``docs/DESIGN.md``, "Adding a world"): ``task`` for
screens scored by a grounding reward (worlds ``grounding`` and ``zoom``), ``tools`` for visual
tools, ``loop`` for multi-turn limits, ``apps`` for the phone tasks. The algorithm's knobs live
in ``vlagent.algo_config`` and are the same in every world.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from vlagent.errors import ConfigError


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{field}: {msg}")


_DATA_FORMATS = ("auto", "jsonl", "json", "parquet", "hf_disk", "hf_hub")
VAL_SEED_SHIFT = 20_000_000
"""Validation screens use seeds from ``task.eval_seed_offset`` + this (test screens from
``task.eval_seed_offset``)."""
SEED_GAP = 10_000_000
"""Training seed ranges (train, demo) start at least this far from held-out ones (val, test)."""


@dataclasses.dataclass
class DataConfig:
    """Your own grounding data (``task.source=file``): a file, its column mapping, filters.

    The mapping says which column holds the image, the instruction and the target, and the
    target's coordinate convention (``gui.grounding.dataset_schema``; presets with example rows
    in ``gui.grounding.dataset_presets``). Bad rows are skipped and reported, never fatal.
    """

    path: str = ""
    """Training data: a .jsonl / .json / .parquet file, a ``datasets`` save_to_disk folder, or
    a hub dataset id (online only)."""
    eval_path: str = ""
    """Held-out data for the val / test splits; empty: they reuse ``path`` (with a warning)."""
    format: str = "auto"
    """auto (from the suffix / folder) | jsonl | json | parquet | hf_disk | hf_hub."""
    preset: str = ""
    """A ready-made mapping: screenspot_v1 | screenspot_v2 | screenspot_pro | gui_r1 |
    android_control | gui_odyssey | vlagent_trajectory (empty: ``columns`` alone)."""
    columns: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Column mapping fields over the preset's: image, instruction, bbox | point, coords
    (xyxy_px | xywh_px | xyxy_norm | xyxy_k1000 | point_px | point_norm | point_k1000),
    action_type, text, id, img_size, meta {key: column}. Paths may be nested: ``action.x``."""
    image_root: str = ""
    """Folder relative image paths start from (empty: the data file's folder)."""
    split: str = "train"
    """Split of a ``datasets`` DatasetDict folder or hub dataset."""
    eval_split: str = ""
    """Split of ``eval_path`` (empty: ``split``)."""
    max_rows: int = 0
    """Read only the first rows of each file (0: all)."""
    success_only: bool = False
    """Keep rows whose ``success`` column is true (trajectory logs: rejection sampling)."""
    min_reward: float | None = None
    """Keep rows whose ``reward`` column is >= this (null: no filter)."""
    demo_text: str = "target"
    """What SFT demonstrations say: target (the ground truth rendered by the codec) |
    recorded (the row's recorded answer, e.g. a trajectory log's completion)."""
    point_radius: float = 0.02
    """A point target becomes a box of this half-side (fraction of the image width / height)."""

    def mapping(self) -> Any:
        """The resolved ``gui.grounding.ColumnMapping`` (preset + columns)."""
        from gui.errors import GroundingDataError
        from gui.grounding.dataset_presets import resolve_mapping

        try:
            return resolve_mapping(self.preset or None, dict(self.columns))
        except GroundingDataError as exc:
            msg = str(exc)
            if msg.startswith("preset"):
                raise ConfigError(f"task.data.preset: {msg}") from exc
            raise ConfigError(f"task.data.{msg}") from exc  # "columns.<field>: why"

    def __post_init__(self) -> None:
        _check(
            self.format in _DATA_FORMATS,
            "task.data.format",
            f"{self.format!r} is unknown; use {', '.join(_DATA_FORMATS)}",
        )
        _check(
            self.demo_text in ("target", "recorded"),
            "task.data.demo_text",
            f"{self.demo_text!r} is unknown; use target or recorded",
        )
        _check(self.max_rows >= 0, "task.data.max_rows", f"must be >= 0, got {self.max_rows}")
        _check(
            0.0 < self.point_radius <= 0.5,
            "task.data.point_radius",
            f"must be in (0, 0.5], got {self.point_radius}",
        )
        _check(
            self.min_reward is None or math.isfinite(self.min_reward),
            "task.data.min_reward",
            f"must be a finite number or null, got {self.min_reward}",
        )
        if not (
            self.preset
            or self.columns
            or self.success_only
            or self.min_reward is not None
            or self.demo_text != "target"
        ):
            return  # the default mapping; nothing to resolve (keeps config loads light)
        mapping = self.mapping()
        _check(
            not self.success_only or mapping.success is not None,
            "task.data.success_only",
            "needs a success column (task.data.columns.success, or preset vlagent_trajectory)",
        )
        _check(
            self.min_reward is None or mapping.reward is not None,
            "task.data.min_reward",
            "needs a reward column (task.data.columns.reward, or preset vlagent_trajectory)",
        )
        _check(
            self.demo_text == "target" or mapping.demo_text is not None,
            "task.data.demo_text",
            "recorded needs a demo_text column (task.data.columns.demo_text, or preset "
            "vlagent_trajectory)",
        )


TASK_ANSWER_FORMATS = ("think_answer", "qwen_json", "uitars", "qwen_box")
"""``task.answer_format`` values: ``vlagent.codec.grounding.ANSWER_FORMATS`` (a later layer, so
spelled out here; a test keeps the two equal)."""


@dataclasses.dataclass
class TaskConfig:
    """The grounding task: where screens come from, how answers are written, how they are scored."""

    source: str = "synthetic"
    """synthetic (procedural screens) | screenspot (annotation file + image folder) | file
    (your own data: ``task.data``)."""
    level: str = "basic"
    """Synthetic difficulty level (see ``sim.screens.LEVELS``)."""
    targets_per_screen: int = 1
    """Synthetic training and demo screens only: K > 1 names K different targets on each
    screen (seeds ``K·s … K·s + K − 1`` share screen ``K·s``'s pixels), so consecutive tasks of
    a batch differ only in the instruction and the image alone cannot predict the answer.
    Held-out screens keep one target each."""
    describe_mix: float = 0.0
    """Synthetic training and demo screens only: a seeded fraction of tasks become describe
    tasks (the referring direction: "What is at (x, y)?" about the target's centre, answered
    "the red circle"; scored by the words). An auxiliary task that makes the model say what
    it sees at a place in the words instructions use. Held-out screens are never describe
    tasks."""
    prompt_order: str = "image_first"
    """image_first (the Qwen-VL convention: screenshot, then instruction) | text_first (the
    instruction before the screenshot, so image tokens can attend to it under the causal
    mask). The single-turn grounding world only; the zoom world refuses text_first."""
    annotation_file: str = ""
    """ScreenSpot JSON file (source=screenspot)."""
    image_dir: str = ""
    """Folder with the ScreenSpot images (source=screenspot)."""
    screenspot_version: str = "v2"
    """v1 (bbox = x,y,w,h) | v2 | pro (bbox = x0,y0,x1,y1)."""
    answer_format: str = "qwen_json"
    """think_answer (<answer>{"point": [x, y]}</answer>) | qwen_json ({"point_2d": [x, y]}) |
    uitars (Action: click(start_box='(x,y)')) | qwen_box (<|box_start|>(x0,y0),(x1,y1)<|box_end|>);
    numbers in the model family's space (``vlagent.codec.grounding``)."""
    answer_kind: str = "point"
    """point | box: what demonstrations answer with."""
    answer_label: str = "fixed"
    """qwen_box only: what demonstrations write as the object reference before the
    coordinates: fixed (``target``) | phrase (the instruction's noun phrase, ``the red
    circle``: the answer names what it points at, as Qwen-VL's referring format does, and the
    words sit a few tokens before the first coordinate)."""
    reward: dict[str, Any] = dataclasses.field(
        default_factory=lambda: {"point_in_box": 1.0, "gaussian_point": 0.5, "format": 0.1}
    )
    """Reward terms and weights (``rewards.RewardSpec.from_dict``): built-in terms by name, and
    your own functions by import path (``my_pkg.rewards:fn: 0.5``, logged as ``fn``; or
    ``name: {weight: 0.5, fn: my_pkg.rewards:fn, **kwargs}``). Signature: ``rewards.custom``."""
    reward_stages: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Staged weights (``rewards.schedule``): ``[{until_step: 50, weights: {format: 1.0,
    point_in_box: 0.2}}]`` re-weights the reward's terms in training while ``step < 50``;
    after the last stage ``reward`` applies. Evaluation always scores with ``reward``."""
    train_seed_offset: int = 0
    """Training screens use seeds from here on."""
    eval_seed_offset: int = 1_000_000_000
    """Test screens use seeds from here on, validation screens from here + 20,000,000; the
    train and demo offsets must lie at least 10,000,000 from both (disjoint from training)."""
    demo_seed_offset: int = 500_000_000
    """Demonstration screens use seeds from here on."""
    pixel_budget: int = 0
    """Processor ``max_pixels`` for every observation (screenshot and zooms); 0 keeps the
    checkpoint's."""
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    """Your own data file and its column mapping (``source=file``)."""

    def split_offsets(self) -> dict[str, int]:
        """First task id (seed) of each split: train, demo, and the held-out test and val."""
        return {
            "train": self.train_seed_offset,
            "demo": self.demo_seed_offset,
            "val": self.eval_seed_offset + VAL_SEED_SHIFT,
            "test": self.eval_seed_offset,
        }

    def __post_init__(self) -> None:
        self._check_reward()
        _check(
            self.pixel_budget >= 0, "task.pixel_budget", f"must be >= 0, got {self.pixel_budget}"
        )
        _check(
            self.prompt_order in ("image_first", "text_first"),
            "task.prompt_order",
            f"{self.prompt_order!r} is unknown; use image_first or text_first",
        )
        _check(
            self.targets_per_screen >= 1,
            "task.targets_per_screen",
            f"must be >= 1, got {self.targets_per_screen}",
        )
        _check(
            self.targets_per_screen == 1 or self.source == "synthetic",
            "task.targets_per_screen",
            f"applies to synthetic screens only (task.source={self.source!r})",
        )
        _check(
            self.answer_label in ("fixed", "phrase"),
            "task.answer_label",
            f"{self.answer_label!r} is unknown; use fixed or phrase",
        )
        _check(
            self.answer_label == "fixed" or self.answer_format == "qwen_box",
            "task.answer_label",
            f"phrase needs task.answer_format=qwen_box (the format with an object reference "
            f"before the coordinates), got {self.answer_format!r}",
        )
        _check(
            0.0 <= self.describe_mix < 1.0,
            "task.describe_mix",
            f"must be in [0, 1), got {self.describe_mix}",
        )
        _check(
            self.describe_mix == 0.0 or self.source == "synthetic",
            "task.describe_mix",
            f"applies to synthetic screens only (task.source={self.source!r})",
        )
        if self.targets_per_screen > 1 and self.source == "synthetic":
            from sim.screens import LEVELS

            level = LEVELS.get(self.level)
            _check(
                level is None or level.panel_frac == (0.0, 0.0),
                "task.targets_per_screen",
                f"level {self.level!r} draws a panel around its target; another target "
                "would not have one (use 1)",
            )
        _check(
            self.source in ("synthetic", "screenspot", "file"),
            "task.source",
            f"{self.source!r} is unknown; use synthetic, screenspot or file",
        )
        if self.source == "file":
            _check(bool(self.data.path), "task.data.path", "required when task.source=file")
        _check(
            self.answer_format in TASK_ANSWER_FORMATS,
            "task.answer_format",
            f"{self.answer_format!r} is unknown; use one of {', '.join(TASK_ANSWER_FORMATS)}",
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
        held_out = {"test": self.eval_seed_offset, "val": self.eval_seed_offset + VAL_SEED_SHIFT}
        for name in ("train_seed_offset", "demo_seed_offset"):
            start = getattr(self, name)
            for split, seed in held_out.items():
                _check(
                    abs(start - seed) >= SEED_GAP,
                    f"task.{name}",
                    f"{start:,} is within {SEED_GAP:,} of the {split} seeds (from {seed:,}); "
                    "keep training and held-out seeds apart",
                )

    def _check_reward(self) -> None:
        """Build the reward spec and its stages once, so a bad term, weight, stage or custom
        import path fails at config load with the field's name."""
        from rewards import RewardSpec, parse_stages
        from rewards.types import RewardSpecError

        try:
            spec = RewardSpec.from_dict(dict(self.reward))
        except RewardSpecError as exc:
            raise ConfigError(f"task.reward: {exc}") from exc
        try:
            parse_stages(list(self.reward_stages), spec)
        except RewardSpecError as exc:
            raise ConfigError(f"task.reward_stages: {exc}") from exc


@dataclasses.dataclass
class ToolRewardSection:
    """Tool-use reward terms (``rewards.tool_use.ToolRewardConfig``; same fields)."""

    bonus: float = 0.2
    """Paid for a right answer reached with >= 1 successful tool call (0 = off)."""
    free_calls: int = 1
    """Tool calls that cost nothing."""
    per_call: float = 0.05
    """Cost of each further call."""
    invalid_call: float = 0.0
    """Cost of each failed tool call (malformed, unknown tool, bad box; 0 = free)."""
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
            raise ConfigError(f"tools.reward: {exc}") from exc

    def __post_init__(self) -> None:
        self.to_reward_config()


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
    reward: ToolRewardSection = dataclasses.field(default_factory=lambda: ToolRewardSection())
    """Tool-use reward terms, added to the answer's terms on the episode's last turn."""
    trace: str = "random"
    """SFT demonstrations: random (``gui.grounding.traces.zoom_trace``: a box around the
    target with random margins) | grid (the window of a fixed grid, stride half a window, that
    holds the target and is centred nearest its colour cluster) | panel (the panel drawn around
    the target, on levels with ``panel_frac``, e.g. ``hires_panel``)."""
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
        _check(
            self.trace in ("random", "grid", "panel"),
            "tools.trace",
            f"{self.trace!r} is unknown; use random, grid or panel",
        )
        for name in ("grid_window_w", "grid_window_h"):
            value = getattr(self, name)
            _check(0.0 < value <= 1.0, f"tools.{name}", f"must be in (0, 1], got {value}")
        _check(
            1.0 <= self.zoom_scale_lo <= self.zoom_scale_hi,
            "tools.zoom_scale_lo",
            f"needs 1 <= zoom_scale_lo <= zoom_scale_hi, got {self.zoom_scale_lo}, "
            f"{self.zoom_scale_hi}",
        )


@dataclasses.dataclass
class LoopConfig:
    """Turn and token limits of an episode (the per-turn token budget is ``grpo.max_new_tokens``
    in training and ``eval.max_new_tokens`` in evaluation)."""

    max_turns: int = 0
    """Policy turns per episode, tool turns included (0: the world's default: 1 for grounding,
    4 with tools, the task's step budget + 2 for apps)."""
    max_images: int = 4
    """Images per episode, observation_0 included (tool worlds)."""
    max_episode_tokens: int = 0
    """New tokens over all turns of an episode (0: max_turns x the per-turn budget)."""
    over_limit: str = "none"
    """What a turn that hits a limit does: none (a turn without eos is still read and sent to
    the env) | mask (the episode ends with no loss and no advantage, Mini-o3 style) |
    penalize (it ends and is trained on with the reward term ``over_limit``)."""
    over_limit_penalty: float = 0.5
    """Size of the ``over_limit`` term (subtracted) when ``over_limit=penalize``."""
    batch_size: int = 64
    """Episodes advanced together per sampling call (memory bound)."""
    env_threads: int = 1
    """The env resets and steps of one round run on this many threads (slow envs mostly wait:
    a desktop's settle time, a browser, Ray env workers); 1 = one after another on the runner's
    thread. Trajectories are the same for any value."""

    def __post_init__(self) -> None:
        _check(
            1 <= self.env_threads <= 256,
            "loop.env_threads",
            f"must be in [1, 256] (1 = sequential), got {self.env_threads}",
        )
        for name in ("max_turns", "max_images", "max_episode_tokens"):
            value = getattr(self, name)
            _check(value >= 0, f"loop.{name}", f"must be >= 0, got {value}")
        _check(
            self.over_limit in ("none", "mask", "penalize"),
            "loop.over_limit",
            f"{self.over_limit!r} is unknown; use none, mask or penalize",
        )
        _check(
            self.over_limit_penalty >= 0,
            "loop.over_limit_penalty",
            f"must be >= 0, got {self.over_limit_penalty}",
        )
        _check(self.batch_size >= 1, "loop.batch_size", f"must be >= 1, got {self.batch_size}")


@dataclasses.dataclass
class TurnPromptConfig:
    """What each turn of a screen world shows and how its env scores (the ``apps`` adapter's
    fields; the ``apps``, ``desktop`` and ``web`` sections share them)."""

    keep_images: int = 1
    """The last k screenshots are images (k >= 1); older turns appear only as text."""
    max_text_turns: int = 8
    """At most this many past actions are listed as text (the most recent ones)."""
    screen_width: int = 160
    """Screenshots are resized to this width in pixels before the processor (0: keep)."""
    screen_height: int = 288
    """Screenshots are resized to this height in pixels before the processor (0: keep)."""
    reward: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"success": 1.0, "invalid_action": -0.1}
    )
    """The env's reward terms (weights of ``success`` and ``invalid_action``): the trainer
    reads them from ``info["reward_terms"]`` and never recomputes them."""

    def check_prompt(self, section: str) -> None:
        """Validate the shared fields, naming them ``section.field``."""
        _check(1 <= self.keep_images <= 8, f"{section}.keep_images", "must be in [1, 8]")
        _check(self.max_text_turns >= 0, f"{section}.max_text_turns", "must be >= 0")
        for name in ("screen_width", "screen_height"):
            v = getattr(self, name)
            _check(v == 0 or 32 <= v <= 4096, f"{section}.{name}", "must be 0 or in [32, 4096]")
        unknown = set(self.reward) - {"success", "invalid_action"}
        _check(
            not unknown,
            f"{section}.reward",
            f"unknown terms {sorted(unknown)}; known: success, invalid_action",
        )


@dataclasses.dataclass
class AppsConfig(TurnPromptConfig):
    """Multi-step phone tasks (world ``apps``): suites, what each turn shows, the env's reward."""

    train_suite: str = "toggles"
    """Training tasks: a generated suite (``toggles``: 1-2 Settings switches; ``chains``: 3-5
    switches, 4-6 steps; ``vlagent.worlds.apps_tasks``) or a suite name / JSON file path that
    ``gui.apps.load_suites`` accepts."""
    eval_suite: str = "toggles"
    """Held-out tasks (a generated name: the held-out half of that generated suite)."""
    train_seeds: int = 3
    """Generated suites: phone-state seeds per training task (toggles: per single-toggle task;
    at most 100)."""
    heldout_seeds: int = 2
    """Generated suites: unseen phone-state seeds per held-out task (toggles: per single-toggle
    task; chains: per held-out combination, 96 combinations each)."""

    def __post_init__(self) -> None:
        self.check_prompt("apps")
        _check(  # toggle suites: training seeds 100 x 100 and up are the held-out seeds
            1 <= self.train_seeds <= 100, "apps.train_seeds", "must be in [1, 100]"
        )
        _check(self.heldout_seeds >= 0, "apps.heldout_seeds", "must be >= 0")
