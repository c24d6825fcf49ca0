"""Static GUI grounding: a screenshot, an instruction, one click scored against a box.

Samples come from procedural screens (:class:`SyntheticSource`), ScreenSpot files
(:class:`ScreenSpotSource`) or your own data through a column mapping (:class:`DatasetSource`:
JSONL / JSON / Parquet / ``datasets``; presets in :data:`DATA_PRESETS`).

>>> from gui.grounding import GroundingEnv, SyntheticSource
>>> from rewards import RewardSpec
>>> env = GroundingEnv(SyntheticSource("basic"), RewardSpec.from_dict({"point_in_box": 1.0}))
>>> obs, info = env.reset(seed=0)
>>> obs["image"].shape
(224, 224, 3)
"""

from __future__ import annotations

from gui.grounding.actions import parse_action
from gui.grounding.dataset_presets import PRESETS as DATA_PRESETS
from gui.grounding.dataset_presets import resolve_mapping
from gui.grounding.dataset_schema import ColumnMapping, RowProblem
from gui.grounding.datasets import DatasetSource
from gui.grounding.env import (
    DEFAULT_REWARD,
    GroundingEnv,
    make_screenspot_env,
    make_synthetic_env,
)
from gui.grounding.sources import (
    GroundingSample,
    GroundingSource,
    ScreenSpotSource,
    SyntheticSource,
)
from gui.grounding.spaces import Screenshot

__all__ = [
    "DATA_PRESETS",
    "DEFAULT_REWARD",
    "ColumnMapping",
    "DatasetSource",
    "GroundingEnv",
    "GroundingSample",
    "GroundingSource",
    "RowProblem",
    "ScreenSpotSource",
    "Screenshot",
    "SyntheticSource",
    "make_screenspot_env",
    "make_synthetic_env",
    "parse_action",
    "resolve_mapping",
]
