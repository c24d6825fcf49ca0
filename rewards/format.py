"""Format reward: did the answer follow the expected output format."""

from __future__ import annotations

import numpy as np

from rewards.types import RewardResult


def format_reward(ok: object) -> RewardResult:
    """1 if ``ok`` is a true boolean (the codec parsed the answer), else 0.

    Anything that is not a ``bool`` (or numpy bool), e.g. ``None`` or ``nan``, scores 0.

    Args:
        ok: the codec's verdict on the answer's format.

    Returns:
        ``RewardResult`` with value in {0, 1} and term ``"format"``.

    >>> format_reward(True).value, format_reward(False).value
    (1.0, 0.0)
    """
    value = 1.0 if isinstance(ok, (bool, np.bool_)) and bool(ok) else 0.0
    return RewardResult(value=value, terms={"format": value})
