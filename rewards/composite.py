"""Weighted sums of named reward terms, configured by a :class:`RewardSpec`."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perception_tools import geometry as geo
from rewards import grounding
from rewards.actions import action_type_match, text_f1
from rewards.custom import call_reward, is_import_path, load_reward_fn
from rewards.format import format_reward
from rewards.types import (
    Prediction,
    RewardError,
    RewardResult,
    RewardSpecError,
    RewardTarget,
    check_positive,
    norm_box_or_none,
    norm_point_or_none,
)

log = logging.getLogger(__name__)

TermFn = Callable[..., RewardResult]


@dataclass(frozen=True)
class _TermKind:
    fn: TermFn
    input: str  # "point", "box", "format", "action", "text" or "elements": what the term reads
    params: tuple[str, ...] = ()


REGISTRY: Mapping[str, _TermKind] = {
    "point_in_box": _TermKind(grounding.point_in_box, "point"),
    "iou": _TermKind(grounding.iou_reward, "box"),
    "giou": _TermKind(grounding.giou_reward, "box"),
    "giou01": _TermKind(grounding.giou01, "box"),
    "gaussian_point": _TermKind(grounding.gaussian_point, "point", ("sigma_scale",)),
    "gaussian_plane": _TermKind(grounding.gaussian_plane, "box", ("sigma_scale",)),
    "gaussian_mass_ratio": _TermKind(grounding.gaussian_mass_ratio, "box", ("sigma_scale",)),
    "distance_decay": _TermKind(grounding.distance_decay, "point", ("scale",)),
    "attribute_match": _TermKind(grounding.attribute_match, "elements"),
    "format": _TermKind(format_reward, "format"),
    "action_type": _TermKind(action_type_match, "action"),
    "text_f1": _TermKind(text_f1, "text", ("threshold",)),
}
KNOWN_TERMS: tuple[str, ...] = tuple(sorted(REGISTRY))
RENAMED_TERMS: Mapping[str, str] = {
    "gaussian_coverage": "use 'gaussian_plane' (GUI-G²'s box reward, exp(-Bhattacharyya "
    "distance) of the two boxes' Gaussians) or 'gaussian_mass_ratio' (what 'gaussian_coverage' "
    "computed: the ground truth Gaussian's mass inside the predicted box; ours, not the paper's)",
}
"""Former term names, each with what to write instead."""


@dataclass(frozen=True)
class RewardTerm:
    """One weighted term of a composite reward.

    Attributes:
        name: a key of :data:`REGISTRY` (see :data:`KNOWN_TERMS`), or for a custom term the name
            it is logged under (``reward_terms/<name>``).
        weight: finite multiplier of the term's raw value (negative weights make penalties).
        params: keyword parameters of the term's function, e.g. ``{"sigma_scale": 0.5}``; a
            custom term's are passed through unchecked.
        fn: a custom term's import path ``module.path:function`` (``rewards.custom``), else None.
    """

    name: str
    weight: float = 1.0
    params: dict[str, Any] = field(default_factory=dict)
    fn: str | None = None

    def __post_init__(self) -> None:
        if self.fn is not None:
            if self.name in REGISTRY:
                raise RewardSpecError(
                    f"custom reward {self.fn!r}: its name {self.name!r} is a built-in term's; "
                    "give it another name: {name: {weight: w, fn: path}}"
                )
            object.__setattr__(self, "_fn", load_reward_fn(self.fn))
        elif self.name in RENAMED_TERMS:
            raise RewardSpecError(
                f"reward term {self.name!r} no longer exists: {RENAMED_TERMS[self.name]}"
            )
        elif self.name not in REGISTRY:
            raise RewardSpecError(
                f"reward term {self.name!r} is unknown; known: {', '.join(KNOWN_TERMS)}, or a "
                "custom reward's import path 'module.path:function'"
            )
        w = self.weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
            raise RewardSpecError(
                f"reward term {self.name!r}: weight must be a finite number, got {w!r}"
            )
        if not isinstance(self.params, Mapping):
            raise RewardSpecError(
                f"reward term {self.name!r}: params must be a mapping, got {self.params!r}"
            )
        object.__setattr__(self, "weight", float(w))
        if self.fn is not None:
            object.__setattr__(self, "params", dict(self.params))
            return
        allowed = REGISTRY[self.name].params
        params: dict[str, float] = {}
        for key, value in self.params.items():
            if key not in allowed:
                raise RewardSpecError(
                    f"reward term {self.name!r}: parameter {key!r} is unknown; "
                    f"known: {', '.join(allowed) or '(none)'}"
                )
            params[key] = check_positive(f"reward term {self.name!r}: {key}", value)
        object.__setattr__(self, "params", params)


@dataclass(frozen=True)
class RewardSpec:
    """A composite reward: weighted terms plus an optional box-size guard.

    Attributes:
        terms: the terms, with distinct names.
        size_guard: if set, the largest ``area(pred) / area(gt)`` that box terms (iou, giou,
            giou01, gaussian_plane, gaussian_mass_ratio) are paid for; bigger boxes get 0 on
            those terms.
    """

    terms: tuple[RewardTerm, ...]
    size_guard: float | None = None

    def __post_init__(self) -> None:
        terms = tuple(self.terms)
        if not terms:
            raise RewardSpecError("RewardSpec.terms is empty; give at least one term")
        for term in terms:
            if not isinstance(term, RewardTerm):
                raise RewardSpecError(f"RewardSpec.terms: expected RewardTerm, got {term!r}")
        names = [t.name for t in terms]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise RewardSpecError(f"RewardSpec.terms: duplicate term names {duplicates}")
        if self.size_guard is not None:
            check_positive("RewardSpec.size_guard", self.size_guard)
        object.__setattr__(self, "terms", terms)

    @classmethod
    def from_dict(
        cls, weights: Mapping[str, float | Mapping[str, float]], size_guard: float | None = None
    ) -> RewardSpec:
        """Build a spec from ``{name: weight}`` or ``{name: {"weight": w, **params}}``.

        A custom reward is named by its import path, ``{"my_pkg.rewards:fn": w}`` (logged as
        ``fn``), or given a name of its own, ``{"mine": {"weight": w, "fn": "my_pkg.rewards:fn",
        **params}}``.

        Args:
            weights: term name -> weight, or -> a mapping with a ``"weight"`` key and the
                term's parameters.
            size_guard: see :attr:`size_guard`.

        Returns:
            The validated spec, terms in the mapping's order.

        >>> spec = RewardSpec.from_dict(
        ...     {"point_in_box": 1.0, "gaussian_point": {"weight": 0.5, "sigma_scale": 0.5}}
        ... )
        >>> [(t.name, t.weight, t.params) for t in spec.terms]
        [('point_in_box', 1.0, {}), ('gaussian_point', 0.5, {'sigma_scale': 0.5})]
        """
        terms = []
        for name, entry in weights.items():
            if isinstance(entry, Mapping):
                if "weight" not in entry:
                    raise RewardSpecError(
                        f"reward term {name!r}: a mapping entry needs a 'weight' key, got "
                        f"{dict(entry)!r}"
                    )
                params = {k: v for k, v in entry.items() if k not in ("weight", "fn")}
                fn = entry.get("fn")
                if fn is None and is_import_path(name):
                    fn, name = name, name.split(":")[1]
                terms.append(RewardTerm(name, entry["weight"], params, fn))
            elif is_import_path(name):
                terms.append(RewardTerm(name.split(":")[1], entry, {}, name))  # type: ignore[arg-type]
            else:
                terms.append(RewardTerm(name, entry))  # type: ignore[arg-type]
        return cls(tuple(terms), size_guard)


def _point_of(prediction: Prediction) -> object:
    """The prediction's point, or the centre of its valid box when it gave only a box."""
    if prediction.point is not None:
        return prediction.point
    box = norm_box_or_none(prediction.box)
    return None if box is None else geo.box_center(box)


def _format_ok(prediction: Prediction) -> bool | object:
    """The prediction's format verdict, False when a point or box it gives is off the image
    (outside [0, 1], not finite, or an empty or inverted box): such an answer earns no format
    credit whatever the parser said."""
    if prediction.point is not None and norm_point_or_none(prediction.point) is None:
        return False
    if prediction.box is not None and norm_box_or_none(prediction.box) is None:
        return False
    return prediction.format_ok


def as_target(gt: object) -> RewardTarget:
    """``gt`` as a :class:`RewardTarget` (a bare box becomes a target with only a box)."""
    return gt if isinstance(gt, RewardTarget) else RewardTarget(box=gt)


def score(spec: RewardSpec, prediction: Prediction, gt: object) -> RewardResult:
    """Score one prediction against its ground truth; never raises on bad input.

    Each term contributes ``weight * raw``; box terms are multiplied by the size guard when the
    spec has one. A box-only prediction is scored on point terms at its box centre; a point-only
    prediction gets 0 on box terms. A point or box off the image gets no ``format`` credit. A
    custom term that fails scores 0 and is listed in ``errors`` (and logged with the sample id).

    Args:
        spec: the composite reward.
        prediction: the parsed answer, normalized coordinates.
        gt: a :class:`RewardTarget`, or just the ground-truth ``(x0, y0, x1, y1)``, normalized.

    Returns:
        ``RewardResult`` whose ``terms`` map each term name to its weighted contribution and
        whose ``value`` is their sum.

    >>> spec = RewardSpec.from_dict({"point_in_box": 1.0, "format": 0.1})
    >>> score(spec, Prediction(point=(0.5, 0.5)), (0.4, 0.4, 0.6, 0.6)).terms
    {'point_in_box': 1.0, 'format': 0.1}
    """
    target = as_target(gt)
    gt_box = target.box
    point = _point_of(prediction)
    guard = 1.0
    if spec.size_guard is not None:
        guard = grounding.box_size_guard(prediction.box, gt_box, spec.size_guard).value
    terms: dict[str, float] = {}
    errors: list[str] = []
    for term in spec.terms:
        if term.fn is not None:
            raw, why = call_reward(term._fn, prediction, target, term.params)  # type: ignore[attr-defined]
            if why is not None:
                errors.append(f"{term.name}: {why}")
                log.warning("custom reward %r on sample %r %s", term.fn, target.sample_id, why)
            terms[term.name] = term.weight * raw
            continue
        kind = REGISTRY[term.name]
        if kind.input == "format":
            raw = kind.fn(_format_ok(prediction)).value
        elif kind.input == "point":
            raw = kind.fn(point, gt_box, **term.params).value
        elif kind.input == "action":
            raw = kind.fn(prediction.action_type, target.action_type).value
        elif kind.input == "text":
            raw = kind.fn(prediction.text, target.text, **term.params).value
        elif kind.input == "elements":
            reference = target.meta.get("reference")
            raw = kind.fn(point, target.elements, target.target_index, reference).value
        else:
            raw = kind.fn(prediction.box, gt_box, **term.params).value * guard
        terms[term.name] = term.weight * raw
    return RewardResult(value=sum(terms.values()), terms=terms, errors=tuple(errors))


def score_many(
    spec: RewardSpec, predictions: Sequence[Prediction], gt_boxes: Sequence[object]
) -> np.ndarray:
    """Score a batch; ``out[i] = score(spec, predictions[i], gt_boxes[i]).value``.

    Args:
        spec: the composite reward.
        predictions: N parsed answers.
        gt_boxes: N ground-truth boxes, normalized xyxy (a sequence or an ``[N, 4]`` array).

    Returns:
        float64 array of shape ``[N]``.

    >>> spec = RewardSpec.from_dict({"point_in_box": 1.0})
    >>> score_many(spec, [Prediction(point=(0.5, 0.5)), Prediction()], [(0, 0, 1, 1)] * 2)
    array([1., 0.])
    """
    if len(predictions) != len(gt_boxes):
        raise RewardError(
            f"score_many: {len(predictions)} predictions but {len(gt_boxes)} gt_boxes"
        )
    return np.array(
        [score(spec, p, gt).value for p, gt in zip(predictions, gt_boxes, strict=True)],
        dtype=np.float64,
    )
