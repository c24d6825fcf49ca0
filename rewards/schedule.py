"""Reward weights that change with the training step: a staged format → correctness schedule.

Early in RL a policy may not yet write parseable answers, so recipes pay the format first and
correctness later (e.g. a first stage ``{format: 1.0, point_in_box: 0.2}`` until step 50, then
the base weights). A schedule is a list of stages; stage ``k`` applies while
``step < until_step[k]`` (and no earlier stage applies); after the last stage the base spec
applies. A stage names only terms of the base spec and replaces their weights, so the logged
term names never change during a run.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from rewards.composite import RewardSpec
from rewards.types import RewardSpecError


@dataclasses.dataclass(frozen=True)
class RewardStage:
    """Weights used while ``step < until_step``.

    Attributes:
        until_step: first step that no longer uses this stage (> 0).
        weights: term name -> weight, for terms of the base spec (others keep their weight).
    """

    until_step: int
    weights: Mapping[str, float]


def parse_stages(raw: Sequence[Mapping[str, Any]], base: RewardSpec) -> tuple[RewardStage, ...]:
    """Validate ``[{"until_step": n, "weights": {name: w}}, ...]`` against the base spec.

    Raises:
        RewardSpecError: a stage that is not such a mapping, steps not strictly increasing, a
            term the base spec lacks, or a weight that is not a finite number; the message
            names the stage.

    >>> base = RewardSpec.from_dict({"point_in_box": 1.0, "format": 0.1})
    >>> parse_stages([{"until_step": 50, "weights": {"format": 1.0}}], base)[0].until_step
    50
    """
    names = {t.name for t in base.terms}
    stages: list[RewardStage] = []
    last = 0
    for i, entry in enumerate(raw):
        where = f"reward stage {i}"
        if not isinstance(entry, Mapping) or set(entry) != {"until_step", "weights"}:
            raise RewardSpecError(
                f"{where}: expected {{until_step: int, weights: {{term: weight}}}}, got {entry!r}"
            )
        until, weights = entry["until_step"], entry["weights"]
        if isinstance(until, bool) or not isinstance(until, int) or until <= last:
            raise RewardSpecError(
                f"{where}: until_step must be an int above {last} (stages in increasing order), "
                f"got {until!r}"
            )
        if not isinstance(weights, Mapping) or not weights:
            raise RewardSpecError(f"{where}: weights must be a non-empty mapping, got {weights!r}")
        unknown = sorted(set(weights) - names)
        if unknown:
            raise RewardSpecError(
                f"{where}: terms {unknown} are not in the reward; a stage only re-weights the "
                f"reward's terms ({', '.join(sorted(names))})"
            )
        for name, w in weights.items():
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
                raise RewardSpecError(f"{where}: weight of {name!r} must be finite, got {w!r}")
        stages.append(RewardStage(until, {k: float(v) for k, v in weights.items()}))
        last = until
    return tuple(stages)


def spec_at(base: RewardSpec, stages: Sequence[RewardStage], step: int) -> RewardSpec:
    """The reward spec in force at ``step``: the first stage with ``step < until_step`` applied
    to ``base``, or ``base`` itself after the last stage.

    >>> base = RewardSpec.from_dict({"point_in_box": 1.0, "format": 0.1})
    >>> st = parse_stages([{"until_step": 50, "weights": {"format": 1.0, "point_in_box": 0.2}}], base)
    >>> [(t.name, t.weight) for t in spec_at(base, st, 49).terms]
    [('point_in_box', 0.2), ('format', 1.0)]
    >>> spec_at(base, st, 50) is base
    True
    """
    for stage in stages:
        if step < stage.until_step:
            terms = tuple(
                dataclasses.replace(t, weight=stage.weights.get(t.name, t.weight))
                for t in base.terms
            )
            return RewardSpec(terms, base.size_guard)
    return base
