"""Baselines that read the screen but not (all of) the instruction, for grounding with elements.

A policy that finds objects but ignores the instruction scores ``random_element``; one that
always picks the most conspicuous object scores ``largest_element``; one that reads only the
colour word scores ``same_colour`` ("right colour, any shape"), only the shape word
``same_shape``, only the element kind ``same_kind`` ("right kind, any label"). Each is the
exact expected accuracy of clicking the centre of an element drawn uniformly from the
candidates, averaged over screens. On a screen with one element they are all 1: a level must
have several elements for them to mean anything.

>>> from sim.screens.screen import Element
>>> a = Element("shape", (0.0, 0.0, 0.2, 0.2), "", "red", "circle", None, "img")
>>> b = Element("shape", (0.5, 0.5, 0.9, 0.9), "", "red", "square", None, "img")
>>> c = Element("shape", (0.3, 0.0, 0.4, 0.1), "", "blue", "circle", None, "img")
>>> m = screen_baselines((a, b, c), a.box_norm)
>>> m["random_element"], m["largest_element"], m["same_colour"], m["same_shape"]
(0.3333333333333333, 0.0, 0.5, 0.5)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from perception_tools.geometry import box_area, point_in_box

NAMES = ("random_element", "largest_element", "same_colour", "same_shape", "same_kind")
"""Baselines :func:`screen_baselines` computes, in order."""


def _centre(box: Sequence[float]) -> tuple[float, float]:
    return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


def _hit_rate(candidates: Sequence[Any], target_box: Sequence[float]) -> float:
    """Expected accuracy of clicking the centre of a uniformly drawn candidate."""
    if not candidates:
        return 0.0
    return sum(point_in_box(_centre(e.box_norm), target_box) for e in candidates) / len(candidates)


def _target(elements: Sequence[Any], target_box: Sequence[float]) -> Any:
    """The element whose box is the target box (closest centre when none is equal)."""
    exact = [e for e in elements if tuple(e.box_norm) == tuple(target_box)]
    if exact:
        return exact[0]
    cx, cy = _centre(target_box)
    return min(
        elements,
        key=lambda e: (_centre(e.box_norm)[0] - cx) ** 2 + (_centre(e.box_norm)[1] - cy) ** 2,
    )


def screen_baselines(elements: Sequence[Any], target_box: Sequence[float]) -> dict[str, float]:
    """The baselines of one screen (``elements``: ``sim.screens.Element`` s, boxes in [0, 1]).

    Raises:
        ValueError: ``elements`` is empty.
    """
    if not elements:
        raise ValueError("screen_baselines: the screen lists no elements")
    target = _target(elements, target_box)
    largest = max(elements, key=lambda e: box_area(e.box_norm))

    def same(attr: Callable[[Any], Any]) -> list[Any]:
        return [e for e in elements if attr(e) == attr(target)]

    return {
        "random_element": _hit_rate(elements, target_box),
        "largest_element": float(point_in_box(_centre(largest.box_norm), target_box)),
        "same_colour": _hit_rate(same(lambda e: e.colour), target_box),
        "same_shape": _hit_rate(same(lambda e: e.shape), target_box),
        "same_kind": _hit_rate(same(lambda e: e.kind), target_box),
    }


def mean_baselines(screens: Iterable[tuple[Sequence[Any], Sequence[float]]]) -> dict[str, float]:
    """Means of :func:`screen_baselines` over ``(elements, target_box)`` pairs; screens without
    elements are skipped; ``{}`` when none has any."""
    rows = [screen_baselines(els, box) for els, box in screens if els]
    if not rows:
        return {}
    return {k: sum(r[k] for r in rows) / len(rows) for k in NAMES}
