"""Confidence intervals of success rates (pure Python, no torch), shared by the evaluators."""

from __future__ import annotations

import math


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a success rate (``(0, 1)`` when ``n`` is 0).

    >>> tuple(round(v, 3) for v in wilson_interval(8, 10))
    (0.49, 0.943)
    """
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)
