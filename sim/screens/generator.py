"""``generate_screen``: plan, name a target, then draw; deterministic in ``(level, seed)``."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from sim.errors import ScreenGenerationError
from sim.screens.desktop import plan_desktop
from sim.screens.hires import plan_hires
from sim.screens.instruction import name_element, pick_instruction
from sim.screens.layout import BoxPx, ElementSpec, Plan, boxes_overlap, plan_free
from sim.screens.level import ScreenLevel, get_level
from sim.screens.palette import LIGHT_BACKGROUNDS, RGB
from sim.screens.phone import plan_phone
from sim.screens.screen import Element, Screen
from sim.screens.widgets import draw_decor, draw_element

MAX_ATTEMPTS = 25
"""Re-plans allowed before giving up on a seed (a plan fails when no target can be named)."""

_PLANNERS = {"free": plan_free, "phone": plan_phone, "desktop": plan_desktop, "hires": plan_hires}
_NOISE_VARIANTS = 2


@lru_cache(maxsize=24)
def _textured(kind: str, width: int, height: int, base_index: int, variant: int) -> Image.Image:
    """A ``gradient`` or ``noise`` background, cached: masked pastes cost ~2 ms per 448x896.

    ``gradient`` blends the base colour (top) into the next light colour (bottom); ``noise``
    darkens the base by a fixed grain (values 0..47 of 255) from a seeded generator, so it is
    identical on every machine.
    """
    base = LIGHT_BACKGROUNDS[base_index]
    image = Image.new("RGB", (width, height), base)
    if kind == "gradient":
        mask = Image.linear_gradient("L").resize((width, height))
        other = LIGHT_BACKGROUNDS[(base_index + 1) % len(LIGHT_BACKGROUNDS)]
        image.paste(other, (0, 0, width, height), mask)
    else:
        grain = np.random.default_rng(10_000 + variant).integers(0, 48, (height, width), np.uint8)
        dark = tuple(max(0, c - 90) for c in base)
        image.paste(dark, (0, 0, width, height), Image.fromarray(grain, mode="L"))
    return image


def _background(
    kind: str, rng: np.random.Generator, width: int, height: int
) -> tuple[Image.Image, RGB]:
    """The screen's base image and its base colour (what holes in icons show)."""
    index = int(rng.integers(len(LIGHT_BACKGROUNDS)))
    if kind == "plain":
        return Image.new("RGB", (width, height), LIGHT_BACKGROUNDS[index]), LIGHT_BACKGROUNDS[index]
    variant = int(rng.integers(_NOISE_VARIANTS)) if kind == "noise" else 0
    return _textured(kind, width, height, index, variant).copy(), LIGHT_BACKGROUNDS[index]


def _on_screen(box: BoxPx, width: int, height: int) -> bool:
    return 0 <= box[0] < box[2] <= width and 0 <= box[1] < box[3] <= height


def _keep(specs: list[ElementSpec], width: int, height: int) -> list[ElementSpec]:
    """Drop elements that leave the screen or overlap an earlier one (layouts avoid both)."""
    kept: list[ElementSpec] = []
    feet: list[BoxPx] = []
    for spec in specs:
        foot = spec.footprint
        if _on_screen(foot, width, height) and not any(boxes_overlap(foot, f) for f in feet):
            kept.append(spec)
            feet.append(foot)
    return kept


def _norm(box: BoxPx, width: int, height: int) -> tuple[float, float, float, float]:
    return (box[0] / width, box[1] / height, box[2] / width, box[3] / height)


def _element(spec: ElementSpec, width: int, height: int) -> Element:
    x0, y0, x1, y1 = spec.box
    box_norm = (x0 / width, y0 / height, x1 / width, y1 / height)
    return Element(spec.kind, box_norm, spec.label, spec.colour, spec.shape, spec.state, spec.role)


def _draw(
    plan: Plan, specs: list[ElementSpec], level: ScreenLevel, rng: np.random.Generator
) -> np.ndarray:
    kind = level.backgrounds[int(rng.integers(len(level.backgrounds)))]
    image, base = _background(kind, rng, plan.width, plan.height)
    draw = ImageDraw.Draw(image)
    for item in plan.decor:
        draw_decor(draw, item)
    for spec in specs:
        draw_element(draw, spec, base)
    pixels = np.asarray(image)
    pixels.setflags(write=False)
    return pixels


def generate_screen(level: ScreenLevel | str, seed: int) -> Screen:
    """Render one synthetic screen with an instruction that names exactly one element.

    Only ``np.random.default_rng(seed)`` is drawn from, and text uses Pillow's bundled font,
    so the same ``(level, seed)`` gives the same pixels and text on every machine.

    Args:
        level: a :class:`ScreenLevel` or the name of a preset in :data:`LEVELS`.
        seed: non-negative integer.

    Returns:
        The screen; ``image`` is ``uint8 (H, W, 3)`` with ``(W, H)`` one of ``level.sizes``;
        boxes are normalized xyxy.

    Raises:
        ScreenLevelError: unknown level name.
        ScreenGenerationError: a bad seed, or no plan in :data:`MAX_ATTEMPTS` could name a
            target uniquely (loosen the level: more references, labels or colours).

    >>> screen = generate_screen("basic", 0)
    >>> screen.image.shape, screen.instruction.startswith("Click the ")
    ((224, 224, 3), True)
    """
    level = get_level(level)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ScreenGenerationError(
            f"generate_screen: seed must be a non-negative int, got {seed!r}"
        )
    rng = np.random.default_rng(int(seed))
    sizes = level.sizes
    width, height = sizes[0] if len(sizes) == 1 else sizes[int(rng.integers(len(sizes)))]
    planner = _PLANNERS[level.layout]
    for _ in range(MAX_ATTEMPTS):
        plan = planner(level, rng, width, height)
        specs = _keep(plan.specs, width, height)
        if not specs:
            continue
        elements = tuple(_element(s, width, height) for s in specs)
        picked = pick_instruction(elements, level, rng)
        if picked is not None:
            break
    else:
        raise ScreenGenerationError(
            f"level {level.name!r}, seed {seed}: no element could be named uniquely in "
            f"{MAX_ATTEMPTS} layouts; add references, labels or colours to the level"
        )
    target_index, reference, instruction = picked
    return Screen(
        image=_draw(plan, specs, level, rng),
        instruction=instruction,
        target_index=target_index,
        elements=elements,
        target_box_norm=elements[target_index].box_norm,
        reference=reference,
        level_name=level.name,
        seed=int(seed),
        panel_box_norm=_norm(plan.panel, width, height) if plan.panel else None,
    )


def retarget_screen(screen: Screen, level: ScreenLevel | str, variant: int) -> Screen:
    """The same pixels and elements with another target: the ``variant``-th namable element.

    Variant 0 is ``screen`` itself. Variant ``v`` lists the elements some reference of the level
    names uniquely, in the order (original target, then the others in a permutation drawn from
    ``default_rng([screen.seed, 1])``), and takes entry ``v mod m`` of that list of ``m``; its
    instruction uses the references in a random order from ``default_rng([screen.seed, 2, v])``.
    So variants ``0 … m−1`` point at ``m`` different elements, and the image alone cannot
    predict the target.

    Args:
        screen: a screen from :func:`generate_screen` of ``level``.
        level: the level it was generated with (its references and verbs name the new target).
        variant: a non-negative int.

    Returns:
        A :class:`Screen` that shares ``image`` and ``elements`` with ``screen``; only
        ``instruction``, ``target_index``, ``target_box_norm`` and ``reference`` differ.

    Raises:
        ScreenGenerationError: a negative variant, or a level with a panel around its target
            (the panel would point at the old target).

    >>> s = generate_screen("shapes", 5)
    >>> retarget_screen(s, "shapes", 0) is s, retarget_screen(s, "shapes", 1).image is s.image
    (True, True)
    """
    level = get_level(level)
    if isinstance(variant, bool) or not isinstance(variant, (int, np.integer)) or variant < 0:
        raise ScreenGenerationError(
            f"retarget_screen: variant must be an int >= 0, got {variant!r}"
        )
    if variant == 0:
        return screen
    if level.panel_frac != (0.0, 0.0):
        raise ScreenGenerationError(
            f"retarget_screen: level {level.name!r} draws a panel around its target; "
            "another target would not have one"
        )
    n = len(screen.elements)
    others = [i for i in range(n) if i != screen.target_index]
    perm = np.random.default_rng([screen.seed, 1]).permutation(len(others))
    order = [screen.target_index, *(others[int(k)] for k in perm)]
    probe = np.random.default_rng(0)  # whether an element can be named does not use the rng
    namable = [i for i in order if name_element(screen.elements, i, level, probe) is not None]
    if namable:
        index = namable[int(variant) % len(namable)]
        rng = np.random.default_rng([screen.seed, 2, int(variant)])
        text, reference = name_element(screen.elements, index, level, rng)  # type: ignore[misc]
        return dataclasses.replace(
            screen,
            instruction=text,
            target_index=index,
            target_box_norm=screen.elements[index].box_norm,
            reference=reference,
        )
    return screen  # unreachable for a generated screen: its own target is namable
