"""The grounding task as the trainer sees it: samples by split, answer codec, reward via the env.

Seeds are split into disjoint ranges so held-out numbers are about screens the policy never saw:
``train`` (fresh GRPO / SFT screens), ``demo`` (the fixed demonstration set), ``val`` (monitoring
and early stopping) and ``test`` (the reported accuracy). A finite source (ScreenSpot) has no
seed ranges: every split indexes its records.
"""

from __future__ import annotations

from typing import Any, Literal

from perception_tools.geometry import Frame
from rewards import RewardSpec
from vlagent.codec import GroundingCodec
from vlagent.config import TaskConfig

Split = Literal["train", "demo", "val", "test"]
_VAL_OFFSET = 20_000_000  # val seeds sit this far above the test seeds


class GroundingTask:
    """Samples, codec and scoring for one grounding task config and model family."""

    def __init__(self, cfg: TaskConfig, family: str, demo_seed_offset: int = 500_000_000) -> None:
        from gui.grounding import GroundingEnv, ScreenSpotSource, SyntheticSource

        self.cfg = cfg
        self.codec = GroundingCodec.for_family(family, fmt=cfg.answer_format, kind=cfg.answer_kind)
        if cfg.source == "synthetic":
            self.source: Any = SyntheticSource(cfg.level, cache_size=256)
        else:
            self.source = ScreenSpotSource(
                cfg.annotation_file, cfg.image_dir, version=cfg.screenspot_version
            )
        self.reward_spec = RewardSpec.from_dict(dict(cfg.reward))
        self.env = GroundingEnv(self.source, self.reward_spec)
        self._offsets = {
            "train": cfg.train_seed_offset,
            "demo": demo_seed_offset,
            "val": cfg.eval_seed_offset + _VAL_OFFSET,
            "test": cfg.eval_seed_offset,
        }

    def key(self, split: Split, index: int) -> int:
        """Source key of the ``index``-th sample of ``split``."""
        n = self.source.num_samples
        if n is not None:
            return index % n
        return self._offsets[split] + index

    def keys(self, split: Split, start: int, count: int) -> list[int]:
        return [self.key(split, i) for i in range(start, start + count)]

    def sample(self, key: int) -> Any:
        return self.source.sample(key)

    def score(self, text: str, key: int, frame: Frame) -> tuple[float, dict[str, Any]]:
        """Parse ``text`` and step the env on sample ``key``.

        Returns:
            (reward, info) where info holds ``reward_terms``, ``success``, ``invalid_action``
            and the parsed ``answer`` (an ``Answer`` or a ``ParseError``).
        """
        answer = self.codec.parse(text, frame)
        self.env.reset(options={"task_id": key})
        _, reward, _, _, info = self.env.step(answer.to_action())
        info["answer"] = answer
        return reward, info

    def close(self) -> None:
        self.env.close()
