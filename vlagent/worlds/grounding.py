"""World ``grounding``: one screenshot, one instruction, one answer (GUI-R1 / UI-R1 style).

Env: ``gui.grounding.GroundingEnv`` over procedural screens (``task.source=synthetic``), a
ScreenSpot file, or your own data (``task.source=file``: ``task.data``, a
``gui.grounding.DatasetSource``; val / test read ``task.data.eval_path`` when given); it
scores the answer with the ``task.reward`` terms. Adapter: the screenshot and instruction
become one user turn; the reply is read by the grounding codec (the model family's
coordinate space → normalized) into the env's action. Seeds are split into disjoint ranges so
held-out numbers are about screens the policy never saw: ``train``, ``demo``, ``val``, ``test``
(a finite source has no ranges: every split indexes its records).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perception_tools.geometry import box_area, point_in_box
from rewards import RewardSpec, parse_stages, spec_at
from vlagent.batching import image_frame
from vlagent.codec import Answer, GroundingCodec
from vlagent.codec.grounding import instruction_phrase
from vlagent.rollout.runner import Decision
from vlagent.rollout.tokens import PromptCache, set_pixel_budget
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.world_config import SEED_GAP
from vlagent.worlds.base import Split, World

log = logging.getLogger(__name__)


def _data_source(data: Any, path: str, split: str, avoid_name: str | None = None) -> Any:
    """A ``gui.grounding.DatasetSource`` of ``path`` under ``task.data`` (its name differs
    from ``avoid_name``, so the sample ids of two files differ)."""
    from gui.grounding import DatasetSource

    name = Path(path.rstrip("/")).stem or "data"
    return DatasetSource(
        path,
        data.mapping(),
        format=data.format,
        image_root=data.image_root or None,
        split=split,
        max_rows=data.max_rows,
        success_only=data.success_only,
        min_reward=data.min_reward,
        point_radius=data.point_radius,
        name=f"{name}_eval" if name == avoid_name else name,
        cache_size=256,
    )


class GroundingAdapter:
    """Screenshot + instruction → one user turn; reply → the env's point / box action."""

    def __init__(
        self,
        processor: Any,
        codec: GroundingCodec,
        system: str | None = None,
        text_first: bool = False,
    ) -> None:
        self.prompts = PromptCache(processor, text_first=text_first)
        self.codec, self.system = codec, system

    def start(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        text = str(obs["instruction"])
        point = (info.get("meta") or {}).get("describe_point")
        if point is not None:  # a describe task asks in the codec's coordinate space
            h, w = obs["image"].shape[:2]
            frame = image_frame(self.prompts.processor, w, h)
            text = f"What is at {self.codec.point_text(tuple(point), frame)}?"
        prompt = self.prompts.get([obs["image"]], text, self.system)
        traj.segments = [Segment(prompt)]
        traj.extras["image"] = obs["image"]
        traj.extras["target_box_norm"] = info.get("target_box_norm")
        traj.extras["meta"] = dict(info.get("meta") or {})

    def read(self, traj: Trajectory, turn: Turn, last: bool) -> Decision:
        if "describe_answer" in traj.extras["meta"]:  # the env reads the reply's words
            return Decision("env", {"completion": turn.text})
        answer = self.codec.parse(turn.text, traj.segment.prompt.frame)
        traj.extras["answer"] = answer
        return Decision("env", {**answer.to_action(), "completion": turn.text})

    def observe(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        raise AssertionError("GroundingEnv episodes end after one step")

    def finish(self, trajectories: Sequence[Trajectory]) -> None:
        pass


class GroundingDemonstrator:
    """The ground-truth answer rendered by the codec (point at the target's centre), or with
    ``demo_text="recorded"`` the sample's recorded answer ``meta["demo_text"]`` (a trajectory
    log's completion: SFT on the model's own successful answers). A sample without recorded
    text falls back to the rendered target. Recorded text is replayed verbatim: its numbers
    are in the coordinate space of the run that wrote it (same model family and
    ``task.pixel_budget`` keep them right)."""

    def __init__(
        self, codec: GroundingCodec, demo_text: str = "target", label: str = "fixed"
    ) -> None:
        if demo_text not in ("target", "recorded"):
            raise ValueError(f"demo_text {demo_text!r} is unknown; use target or recorded")
        if label not in ("fixed", "phrase"):
            raise ValueError(f"label {label!r} is unknown; use fixed or phrase")
        self.codec, self.demo_text, self.label = codec, demo_text, label

    def text(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> str | None:
        described = (info.get("meta") or {}).get("describe_answer")
        if isinstance(described, str):
            return described
        if self.demo_text == "recorded":
            recorded = (info.get("meta") or {}).get("demo_text")
            if isinstance(recorded, str) and recorded.strip():
                return recorded
        label = instruction_phrase(str(obs["instruction"])) if self.label == "phrase" else None
        return self.codec.render(
            tuple(info["target_box_norm"]), traj.segment.prompt.frame, label=label
        )


class GroundingWorld(World):
    """Screens from ``task`` scored by ``task.reward``."""

    def __init__(self, cfg: Any, policy: Any) -> None:
        super().__init__(cfg, policy)
        from gui.grounding import ScreenSpotSource, SyntheticSource

        t = cfg.task
        set_pixel_budget(policy.processor, t.pixel_budget)
        self.codec = GroundingCodec.for_family(
            policy.family, fmt=t.answer_format, kind=t.answer_kind
        )
        if t.source == "synthetic":
            self.source: Any = SyntheticSource(
                t.level,
                cache_size=256,
                targets_per_screen=t.targets_per_screen,
                describe_mix=t.describe_mix,
            )
        elif t.source == "screenspot":
            self.source = ScreenSpotSource(
                t.annotation_file, t.image_dir, version=t.screenspot_version
            )
        else:
            self.source = _data_source(t.data, t.data.path, t.data.split)
        self.eval_source: Any = self.source
        """Source of the val / test splits (``task.data.eval_path``; else ``source``, and
        always one target per screen)."""
        if t.source == "synthetic" and (t.targets_per_screen > 1 or t.describe_mix > 0):
            self.eval_source = SyntheticSource(t.level, cache_size=256)
        if t.source == "file" and t.data.eval_path:
            self.eval_source = _data_source(
                t.data, t.data.eval_path, t.data.eval_split or t.data.split, self.source.name
            )
        elif t.source == "file":
            log.warning(
                "task.data.eval_path is not set: the val and test splits reuse the training "
                "data %s, so held-out numbers are measured on training rows",
                t.data.path,
            )
        self.base_reward_spec = RewardSpec.from_dict(dict(t.reward))
        self.reward_stages = parse_stages(list(t.reward_stages), self.base_reward_spec)
        self.reward_spec = self.base_reward_spec
        """The spec training envs score with (``task.reward_stages`` at the current step)."""
        self._offsets = t.split_offsets()

    def make_env(self, split: Split) -> Any:
        from gui.grounding import GroundingEnv

        spec = self.reward_spec if split in ("train", "demo") else self.base_reward_spec
        return GroundingEnv(self._split_source(split), spec)

    def env_factory(self, split: Split) -> Any:
        """``functools.partial(GroundingEnv, source, spec)`` for Ray env workers: the split's
        source (a synthetic one afresh, so no cached screens travel; a file's source as it is)
        and the reward spec its envs score with.

        None (local envs) for the training splits (train, demo) when ``task.reward_stages`` is
        set: ``on_step`` swaps the local training envs' spec, remote envs would keep the spec
        they were built with."""
        import functools

        from gui.grounding import GroundingEnv, SyntheticSource

        if self.reward_stages and split in ("train", "demo"):
            return None
        source = self._split_source(split)
        if isinstance(source, SyntheticSource):
            source = SyntheticSource(
                source.level,
                cache_size=256,
                targets_per_screen=source.targets_per_screen,
                describe_mix=source.describe_mix,
            )
        return functools.partial(GroundingEnv, source, self.base_reward_spec)

    def _split_source(self, split: Split) -> Any:
        return self.source if split in ("train", "demo") else self.eval_source

    def on_step(self, step: int) -> None:
        """Training envs score with the reward stage in force at ``step``."""
        self.reward_spec = spec_at(self.base_reward_spec, self.reward_stages, step)

    def adapter(self) -> GroundingAdapter:
        return GroundingAdapter(
            self.policy.processor,
            self.codec,
            text_first=self.cfg.task.prompt_order == "text_first",
        )

    def demonstrator(self) -> GroundingDemonstrator:
        t = self.cfg.task
        return GroundingDemonstrator(
            self.codec, t.data.demo_text if t.source == "file" else "target", t.answer_label
        )

    def num_tasks(self, split: Split) -> int | None:
        return self._split_source(split).num_samples

    def task_ids(self, split: Split, start: int, count: int) -> list[Any]:
        """Seeds of the split's range (synthetic), or record indices of the split's source
        (finite): ints for ``source``, ``"<eval source name>:<index>"`` sample ids for a
        separate ``eval_source`` (so ids of the two files never collide)."""
        src = self._split_source(split)
        n = src.num_samples
        if n is None:
            return [self._offsets[split] + i for i in range(start, start + count)]
        if src is not self.source:
            return [f"{src.name}:{i % n}" for i in range(start, start + count)]
        return [i % n for i in range(start, start + count)]

    def sample(self, key: int | str) -> Any:
        """The screen of task ``key`` (image, instruction, target); a ``"<name>:<index>"`` id
        of the eval source reads that source."""
        if isinstance(key, str) and self.eval_source is not self.source:
            name, _, index = key.rpartition(":")
            if name == self.eval_source.name and index.isdecimal():
                return self.eval_source.sample(int(index))
        if isinstance(key, int) and self.eval_source is not self.source and self._held_out(key):
            return self.eval_source.sample(key)  # task.targets_per_screen: held-out seeds
        return self.source.sample(key)

    def _held_out(self, seed: int) -> bool:
        """Whether a synthetic seed lies in the test or val range (each ``SEED_GAP`` wide)."""
        return any(0 <= seed - self._offsets[s] < SEED_GAP for s in ("test", "val"))

    def summarize(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        n = max(len(trajectories), 1)
        return {
            "accuracy": sum(t.success for t in trajectories) / n,
            "format_rate": sum(isinstance(t.extras.get("answer"), Answer) for t in trajectories)
            / n,
            "reward_errors": float(
                sum(len(x.info.get("reward_errors") or ()) for t in trajectories for x in t.turns)
            ),
        }

    def categories(self, traj: Trajectory) -> dict[str, str]:
        """From the sample's meta, where present: the synthetic screens' ``reference`` (how the
        instruction names the target: colour, text, icon …), ScreenSpot's ``platform``
        (``platform`` or v1/v2 ``data_source``) and ``ui_type`` (``ui_type`` or ``data_type``),
        and a data file's ``category``."""
        meta = traj.extras.get("meta") or {}
        out = {}
        for key, names in (
            ("reference", ("reference",)),
            ("platform", ("platform", "data_source")),
            ("ui_type", ("ui_type", "data_type")),
            ("category", ("category",)),
        ):
            value = next((meta[k] for k in names if str(meta.get(k) or "").strip()), None)
            if value is not None:
                out[key] = str(value).strip().lower() if key != "category" else str(value)
        return out

    def baselines(self, task_ids: Sequence[Any]) -> dict[str, float]:
        """``random_click``: the exact expected accuracy of a uniformly random click (mean
        target area); ``center_click``: accuracy of always clicking (0.5, 0.5). Where the
        screens list their elements (synthetic levels), also the instruction-blind element
        baselines of :mod:`gui.grounding.baselines` (random / largest element, right colour /
        shape / kind only)."""
        from gui.grounding.baselines import mean_baselines

        samples = [self.sample(k) for k in task_ids]
        boxes = [s.target_box_norm for s in samples]
        return {
            "random_click": float(np.mean([box_area(b) for b in boxes])),
            "center_click": float(np.mean([point_in_box((0.5, 0.5), b) for b in boxes])),
            **mean_baselines((s.elements, s.target_box_norm) for s in samples),
        }

    def save_pictures(self, trajectories: Sequence[Trajectory], folder: Path, name: str) -> None:
        from perception_tools.annotate import draw_prediction, tile_images
        from vlagent.viz import save_png

        tiles = []
        for t in trajectories:
            ans = t.extras.get("answer")
            tiles.append(
                draw_prediction(
                    t.extras["image"],
                    t.extras["target_box_norm"],
                    point_norm=getattr(ans, "point_norm", None),
                    box_norm=getattr(ans, "box_norm", None),
                    caption=f"{t.instruction} -> {t.turns[0].text.strip()[:40] if t.turns else ''}",
                    hit=t.success,
                )
            )
        if tiles:
            save_png(tile_images(tiles, cols=4), folder / f"{name}.png")
