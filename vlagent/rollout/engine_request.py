"""What every rollout engine checks before it samples, and the error it raises.

Kept apart from :mod:`vlagent.rollout.engines` (which picks an engine) so that the engines
themselves (``vllm_engine``) import it without a cycle.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from vlagent.errors import VlagentError
from vlagent.rollout.trajectory import Segment

__all__ = ["EngineError", "Turn", "check_request"]

Turn = tuple[list[int], list[float], bool]


class EngineError(VlagentError, RuntimeError):
    """A rollout engine could not start, was asked something malformed, or its worker died."""


def check_request(
    segments: Sequence[Segment],
    max_new: Sequence[int],
    temperature: float,
    greedy: bool,
    vocab_size: int | None = None,
) -> None:
    """Raise :class:`EngineError` naming what is malformed in a sampling request (``vocab_size``:
    the model's embedding rows V; context ids must lie in [0, V))."""
    if len(segments) != len(max_new):
        raise EngineError(
            f"sample_turns: {len(segments)} segments but {len(max_new)} max_new allowances"
        )
    if not segments:
        raise EngineError("sample_turns: no segments to continue")
    bad = [(i, n) for i, n in enumerate(max_new) if int(n) != n or n < 1]
    if bad:
        i, n = bad[0]
        raise EngineError(f"sample_turns: max_new[{i}]={n!r}; each allowance must be an int >= 1")
    if not greedy and not (temperature > 0 and math.isfinite(temperature)):
        raise EngineError(f"sample_turns: temperature={temperature!r} must be > 0 when sampling")
    for i, s in enumerate(segments):
        if not isinstance(s, Segment):
            raise EngineError(f"sample_turns: segments[{i}] is a {type(s).__name__}, not a Segment")
        if len(s.prompt) == 0:
            raise EngineError(f"sample_turns: segments[{i}] has an empty prompt")
        if vocab_size is not None:
            lo = min(int(s.prompt.input_ids.min()), min(s.ids, default=0))
            hi = max(int(s.prompt.input_ids.max()), max(s.ids, default=0))
            if lo < 0 or hi >= vocab_size:
                raise EngineError(
                    f"sample_turns: segments[{i}] holds token id {hi if hi >= vocab_size else lo}"
                    f" outside the vocabulary [0, {vocab_size})"
                )
