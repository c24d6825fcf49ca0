"""Instructions that identify exactly one element, and the rules that decide uniqueness.

A reference (``colour``, ``shape``, ``text``, ``icon``, ``position``, ``relation``) describes the
target by some of its attributes; it is used only when no other element fits the same
description, judged from the elements alone (what an accessibility tree shows).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sim.screens.level import TEXT_KINDS, ScreenLevel
from sim.screens.screen import Element

NOUNS: dict[str, str] = {
    "shape": "shape",
    "button": "button",
    "icon": "icon",
    "toggle": "switch",
    "text_field": "field",
    "list_row": "row",
    "tab": "tab",
}
"""Word an instruction uses for each kind (a shape uses its outline's name instead)."""

VISIBLE_TEXT_KINDS: frozenset[str] = TEXT_KINDS | {"toggle"}
"""Kinds that show their label as text on screen (a toggle shows it next to the switch)."""

POSITION_MARGIN = 0.03
"""A ``position`` target must beat the runner-up by this much (normalized centre distance)."""

EXTREMES: dict[str, tuple[int, int]] = {
    "leftmost": (0, 1),
    "rightmost": (0, -1),
    "topmost": (1, 1),
    "bottommost": (1, -1),
}
"""Position word -> (axis of the box centre, +1 to minimize / -1 to maximize)."""


def noun(element: Element) -> str:
    """The word naming ``element``'s kind (``"circle"``, ``"button"``, ``"menu item"``)."""
    if element.role == "menuitem":
        return "menu item"
    if element.kind == "shape" and element.shape:
        return element.shape
    return NOUNS[element.kind]


def _same_group(a: Element, b: Element) -> bool:
    return a.kind == b.kind and a.role == b.role


def fits(reference: str, target: Element, other: Element) -> bool:
    """Whether ``other`` fits a ``reference`` description of ``target`` (except ``position``)."""
    if reference == "colour":
        return (
            _same_group(target, other)
            and noun(other) == noun(target)
            and other.colour == target.colour
        )
    if reference == "shape":
        return other.kind == "shape" and other.shape == target.shape
    if reference == "text":
        return (
            other.kind in VISIBLE_TEXT_KINDS and other.label.casefold() == target.label.casefold()
        )
    if reference in ("icon", "relation"):
        return other.kind == target.kind and other.label == target.label
    raise ValueError(f"reference {reference!r} has no attribute rule")


def applies(reference: str, target: Element, level: ScreenLevel) -> bool:
    """Whether ``reference`` can describe ``target`` at all on a screen of ``level``."""
    if reference == "colour":
        return (
            target.kind in ("shape", "button", "icon")
            and target.role != "menuitem"
            and target.colour in level.colours
        )
    if reference == "shape":
        return target.kind == "shape"
    if reference == "text":
        return target.kind in TEXT_KINDS
    if reference == "icon":
        return target.kind == "icon"
    if reference == "relation":
        return target.kind == "toggle"
    return reference == "position"


def extreme_of(elements: Sequence[Element], index: int, word: str) -> bool:
    """Whether ``elements[index]`` is the ``word`` (e.g. ``"leftmost"``) of two or more of its
    kind, ahead of every rival by :data:`POSITION_MARGIN`."""
    axis, sign = EXTREMES[word]
    target = elements[index]

    def key(e: Element) -> float:
        return sign * (e.box_norm[axis] + e.box_norm[axis + 2]) / 2

    own = key(target)
    rivals = [key(e) for i, e in enumerate(elements) if i != index and _same_group(e, target)]
    return bool(rivals) and all(r - own >= POSITION_MARGIN for r in rivals)


def _text(reference: str, target: Element, verb: str, word: str = "") -> str:
    if reference == "colour":
        return f"{verb} the {target.colour} {noun(target)}."
    if reference == "shape":
        return f"{verb} the {target.shape}."
    if reference == "icon":
        return f"{verb} the {target.label} icon."
    if reference == "relation":
        return f"{verb} the switch next to '{target.label}'."
    if reference == "position":
        return f"{verb} the {word} {noun(target) if target.kind != 'shape' else 'shape'}."
    if target.kind == "text_field":
        return f"{verb} the '{target.label}' field."
    return f"{verb} '{target.label}'."


def describe(
    elements: Sequence[Element],
    index: int,
    reference: str,
    level: ScreenLevel,
    rng: np.random.Generator,
) -> str | None:
    """Instruction that names ``elements[index]`` via ``reference``, or ``None`` if ambiguous.

    Args:
        elements: every element on the screen (normalized boxes).
        index: the target's index.
        reference: a :data:`sim.screens.level.Reference` value.
        level: supplies the verbs and the colour names a ``colour`` reference may use.
        rng: picks the verb and the position word.
    """
    target = elements[index]
    if not applies(reference, target, level):
        return None
    verb = level.verbs[int(rng.integers(len(level.verbs)))]
    if reference == "position":
        words = list(EXTREMES)
        for k in rng.permutation(len(words)):
            if extreme_of(elements, index, words[k]):
                return _text(reference, target, verb, words[k])
        return None
    if any(fits(reference, target, e) for i, e in enumerate(elements) if i != index):
        return None
    return _text(reference, target, verb)


def pick_instruction(
    elements: Sequence[Element], level: ScreenLevel, rng: np.random.Generator, max_targets: int = 16
) -> tuple[int, str, str] | None:
    """Choose a target and an instruction that identifies it uniquely.

    Elements that some reference of the level can describe are tried in a random order (at
    most ``max_targets``), references in a random order for each.

    Returns:
        ``(target_index, reference, instruction)``, or ``None`` if no tried target can be named.
    """
    refs = level.references
    candidates = [i for i, e in enumerate(elements) if any(applies(r, e, level) for r in refs)]
    if len(candidates) > 1:
        candidates = [candidates[k] for k in rng.permutation(len(candidates))[:max_targets]]
    for index in candidates:
        named = name_element(elements, int(index), level, rng)
        if named is not None:
            return int(index), named[1], named[0]
    return None


def name_element(
    elements: Sequence[Element], index: int, level: ScreenLevel, rng: np.random.Generator
) -> tuple[str, str] | None:
    """``(instruction, reference)`` naming ``elements[index]`` uniquely, the level's references
    tried in a random order; ``None`` if none can. Whether one can does not depend on ``rng``
    (it only picks the order, the verb and the position word)."""
    refs = level.references
    for r in [0] if len(refs) == 1 else rng.permutation(len(refs)):
        text = describe(elements, index, refs[int(r)], level, rng)
        if text is not None:
            return text, refs[int(r)]
    return None


def refer(element: Element) -> str:
    """A noun phrase for ``element`` as a describe task answers it (``"the red circle"``,
    ``"the 'Save' button"``, ``"the wifi icon"``): what the element looks like, not where it
    is. Unlike :func:`describe` it does not check that the phrase is unique on the screen."""
    if element.kind == "shape":
        return f"the {element.colour} {noun(element)}"
    if element.kind == "icon":
        return f"the {element.label} icon"
    if element.kind == "toggle":
        return f"the switch next to '{element.label}'"
    if element.label:
        return f"the '{element.label}' {noun(element)}"
    return f"the {element.colour} {noun(element)}"
