"""Static GUI grounding: a screenshot, an instruction, one click scored against a box.

>>> from gui.grounding import GroundingEnv, SyntheticSource
>>> from rewards import RewardSpec
>>> env = GroundingEnv(SyntheticSource("basic"), RewardSpec.from_dict({"point_in_box": 1.0}))
>>> obs, info = env.reset(seed=0)
>>> obs["image"].shape
(224, 224, 3)
"""

from __future__ import annotations

from gui.grounding.actions import parse_action
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
    "DEFAULT_REWARD",
    "GroundingEnv",
    "GroundingSample",
    "GroundingSource",
    "ScreenSpotSource",
    "Screenshot",
    "SyntheticSource",
    "make_screenspot_env",
    "make_synthetic_env",
    "parse_action",
]
