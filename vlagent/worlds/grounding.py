"""World ``grounding``: one screenshot, one instruction, one answer (GUI-R1 / UI-R1 style).

Env: ``gui.grounding.GroundingEnv`` over procedural screens (``task.source=synthetic``) or a
ScreenSpot file; it scores the answer with the ``task.reward`` terms. Adapter: the screenshot and
instruction become one user turn; the reply is read by the grounding codec (the model family's
coordinate space → normalized) into the env's action. Seeds are split into disjoint ranges so
held-out numbers are about screens the policy never saw: ``train``, ``demo``, ``val``, ``test``
(a finite source has no ranges: every split indexes its records).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perception_tools.geometry import box_area, point_in_box
from rewards import RewardSpec
from vlagent.codec import Answer, GroundingCodec
from vlagent.rollout.runner import Decision
from vlagent.rollout.tokens import PromptCache, set_pixel_budget
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.worlds.base import Split, World

_VAL_OFFSET = 20_000_000  # val seeds sit this far above the test seeds


class GroundingAdapter:
    """Screenshot + instruction → one user turn; reply → the env's point / box action."""

    def __init__(self, processor: Any, codec: GroundingCodec, system: str | None = None) -> None:
        self.prompts = PromptCache(processor)
        self.codec, self.system = codec, system

    def start(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        prompt = self.prompts.get([obs["image"]], str(obs["instruction"]), self.system)
        traj.segments = [Segment(prompt)]
        traj.extras["image"] = obs["image"]
        traj.extras["target_box_norm"] = info.get("target_box_norm")

    def read(self, traj: Trajectory, turn: Turn, last: bool) -> Decision:
        answer = self.codec.parse(turn.text, traj.segment.prompt.frame)
        traj.extras["answer"] = answer
        return Decision("env", answer.to_action())

    def observe(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        raise AssertionError("GroundingEnv episodes end after one step")

    def finish(self, trajectories: Sequence[Trajectory]) -> None:
        pass


class GroundingDemonstrator:
    """The ground-truth answer rendered by the codec (point at the target's centre)."""

    def __init__(self, codec: GroundingCodec) -> None:
        self.codec = codec

    def text(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> str | None:
        return self.codec.render(tuple(info["target_box_norm"]), traj.segment.prompt.frame)


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
            self.source: Any = SyntheticSource(t.level, cache_size=256)
        else:
            self.source = ScreenSpotSource(
                t.annotation_file, t.image_dir, version=t.screenspot_version
            )
        self.reward_spec = RewardSpec.from_dict(dict(t.reward))
        self._offsets = {
            "train": t.train_seed_offset,
            "demo": t.demo_seed_offset,
            "val": t.eval_seed_offset + _VAL_OFFSET,
            "test": t.eval_seed_offset,
        }

    def make_env(self, split: Split) -> Any:
        from gui.grounding import GroundingEnv

        return GroundingEnv(self.source, self.reward_spec)

    def adapter(self) -> GroundingAdapter:
        return GroundingAdapter(self.policy.processor, self.codec)

    def demonstrator(self) -> GroundingDemonstrator:
        return GroundingDemonstrator(self.codec)

    def num_tasks(self, split: Split) -> int | None:
        return self.source.num_samples

    def task_ids(self, split: Split, start: int, count: int) -> list[Any]:
        n = self.source.num_samples
        if n is not None:
            return [i % n for i in range(start, start + count)]
        return [self._offsets[split] + i for i in range(start, start + count)]

    def sample(self, key: int) -> Any:
        """The screen of task ``key`` (image, instruction, target)."""
        return self.source.sample(key)

    def summarize(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        n = max(len(trajectories), 1)
        return {
            "accuracy": sum(t.success for t in trajectories) / n,
            "format_rate": sum(isinstance(t.extras.get("answer"), Answer) for t in trajectories)
            / n,
        }

    def baselines(self, task_ids: Sequence[Any]) -> dict[str, float]:
        """``random_click``: the exact expected accuracy of a uniformly random click (mean
        target area); ``center_click``: accuracy of always clicking (0.5, 0.5)."""
        boxes = [self.source.sample(k).target_box_norm for k in task_ids]
        return {
            "random_click": float(np.mean([box_area(b) for b in boxes])),
            "center_click": float(np.mean([point_in_box((0.5, 0.5), b) for b in boxes])),
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
