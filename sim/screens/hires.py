"""The ``hires`` layout: high-resolution desktop windows whose targets are too small to tell apart
at a training pixel budget, but plain once zoomed in (the "thinking with images" task).

Two element kinds, one per level (see the ``hires_tiny*`` presets in :mod:`sim.screens.level`):

* ``button``: a ribbon and an inspector panel full of identical white buttons, ``u`` px tall,
  all as wide as the widest label, with small text labels (font ``0.45 u``). Instructions name
  the label (``Click 'Export'.``). Downscaled to the budget the text is a 2-3 px smudge.
* ``icon``: texture glyph tiles (``u`` px squares) in same-colour clusters of 2-4; every tile in
  a cluster has a different texture from :data:`~sim.screens.hires_vocab.GLYPH_PATTERNS`, each
  inking half of the tile with a 2-4 px period. Instructions name colour and texture (``Click
  the red checkered icon.``): at the budget the colour shows where the cluster is, but the
  textures average to one flat colour, so only a zoom tells the tiles apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PIL import ImageDraw

from sim.errors import ScreenGenerationError
from sim.screens.fonts import font_size_for, text_width
from sim.screens.hires_vocab import GLYPH_PATTERNS
from sim.screens.layout import Attributes, BoxPx, DecorRect, DecorText, ElementSpec, Plan
from sim.screens.palette import BORDER, MUTED_INK, PALETTE, SURFACE
from sim.screens.vocab import WINDOW_TITLES

if TYPE_CHECKING:
    from sim.screens.level import ScreenLevel

_TITLE_BAR = (52, 56, 64)
_BAR = (243, 243, 245)
_PANEL = (232, 234, 238)
_TEXT_BAR = (206, 208, 214)
_MENU_WORDS = ("File", "Edit", "View", "Insert", "Format", "Tools", "Window", "Help")
GLYPH_STYLE = "glyph"
"""``ElementSpec.style`` of texture glyph tiles (drawn by :func:`draw_glyph`)."""


def _chrome(plan: Plan, rng: np.random.Generator, u: int) -> BoxPx:
    """Title, menu and status bars (decor only); returns the content area in pixels."""
    width, height = plan.width, plan.height
    title_h, menu_h, status_h = round(1.6 * u), round(1.3 * u), round(1.1 * u)
    title = WINDOW_TITLES[int(rng.integers(len(WINDOW_TITLES)))]
    plan.decor.append(DecorRect((0, 0, width, title_h), _TITLE_BAR))
    plan.decor.append(
        DecorText((width // 2, title_h // 2), title, font_size_for(title_h), (230, 230, 235), "mm")
    )
    plan.decor.append(DecorRect((0, title_h, width, title_h + menu_h), _BAR, outline=BORDER))
    x, fs = u // 2, font_size_for(menu_h)
    for word in _MENU_WORDS:
        plan.decor.append(DecorText((x, title_h + menu_h // 2), word, fs, MUTED_INK))
        x += text_width(word, fs) + u
    bottom = height - status_h
    plan.decor.append(DecorRect((0, bottom, width, height), _BAR, outline=BORDER))
    plan.decor.append(DecorText((u // 2, bottom + status_h // 2), "Ready", fs, MUTED_INK))
    return u // 2, title_h + menu_h + u // 2, width - u // 2, bottom - u // 2


def _cells(area: BoxPx, cell_w: int, cell_h: int, gap: int) -> list[BoxPx]:
    """Row-major grid of ``cell_w x cell_h`` boxes inside ``area`` with ``gap`` between them."""
    x0, y0, x1, y1 = area
    cols = max(0, (x1 - x0 + gap) // (cell_w + gap))
    rows = max(0, (y1 - y0 + gap) // (cell_h + gap))
    return [
        (x0 + c * (cell_w + gap), y0 + r * (cell_h + gap))
        + (x0 + c * (cell_w + gap) + cell_w, y0 + r * (cell_h + gap) + cell_h)
        for r in range(rows)
        for c in range(cols)
    ]


def _panels(plan: Plan, rng: np.random.Generator, area: BoxPx, u: int) -> tuple[BoxPx, BoxPx]:
    """A ribbon across the top and an inspector on the right (decor), a document between.

    Returns:
        The ribbon's and the inspector's inner areas, where elements go.
    """
    x0, y0, x1, y1 = area
    ribbon = (x0, y0, x1, y0 + round(u * rng.uniform(4.5, 6.5)))
    inspector = (x1 - round((x1 - x0) * rng.uniform(0.18, 0.26)), ribbon[3] + u, x1, y1)
    document = (x0, ribbon[3] + u, inspector[0] - u, y1)
    for box in (ribbon, inspector):
        plan.decor.append(DecorRect(box, _PANEL, outline=BORDER, radius=u // 4))
    plan.decor.append(DecorRect(document, SURFACE, outline=BORDER))
    y = document[1] + u
    while y + u // 2 < document[3] - u:  # paragraphs of grey text bars
        right = document[2] - u - int(rng.integers(0, max(1, (document[2] - document[0]) // 3)))
        plan.decor.append(DecorRect((document[0] + u, y, right, y + u // 2), _TEXT_BAR))
        y += u if rng.random() < 0.8 else 2 * u

    def inner(b: BoxPx) -> BoxPx:
        return b[0] + u // 2, b[1] + u // 2, b[2] - u // 2, b[3] - u // 2

    return inner(ribbon), inner(inspector)


def _buttons(plan: Plan, attrs: Attributes, u: int, areas: tuple[BoxPx, ...], n: int) -> None:
    """``n`` identical ribbon buttons (as many as fit) with distinct labels, in random cells."""
    fs = font_size_for(u)
    width = max(text_width(label, fs) for label in attrs.level.text_labels) + u
    gap = max(2, u // 4)
    cells = [cell for area in areas for cell in _cells(area, width, u, gap)]
    chosen = sorted(attrs.rng.permutation(len(cells))[: min(n, len(cells))])
    for k in chosen:
        label, colour = attrs.label(attrs.level.text_labels), attrs.colour()
        plan.specs.append(ElementSpec("button", cells[k], label=label, colour=colour))


def _glyphs(plan: Plan, attrs: Attributes, u: int, areas: tuple[BoxPx, ...], n: int) -> None:
    """Clusters of 2-4 texture tiles, one colour per cluster, distinct textures within one."""
    rng, colours = attrs.rng, list(attrs.level.colours)
    side = max(8, 2 * round(u / 2))  # even, so every texture inks exactly half the tile
    gap = max(2, side // 3)
    slots = [cell for area in areas for cell in _cells(area, 4 * side + 3 * gap, side, 2 * side)]
    order = rng.permutation(len(slots))
    palette = [colours[k] for k in rng.permutation(len(colours))]
    placed = 0
    for slot_index, colour in zip(order, palette, strict=False):
        size = min(int(rng.integers(2, len(GLYPH_PATTERNS) + 1)), n - placed)
        if size < 2:
            break
        x, y = slots[slot_index][0], slots[slot_index][1]
        patterns = rng.permutation(len(GLYPH_PATTERNS))[:size]
        for i, p in enumerate(patterns):
            box = (x + i * (side + gap), y, x + i * (side + gap) + side, y + side)
            label = f"{colour} {GLYPH_PATTERNS[int(p)]}"
            plan.specs.append(
                ElementSpec("icon", box, label=label, colour=colour, style=GLYPH_STYLE)
            )
        placed += size


def plan_hires(level: ScreenLevel, rng: np.random.Generator, width: int, height: int) -> Plan:
    """Lay out a ``hires`` window: chrome, ribbon, document and inspector, with
    ``level.n_elements`` tiny buttons (``kinds == ("button",)``) or glyph tiles
    (``kinds == ("icon",)``) in the ribbon and inspector.

    The unit ``u = size_frac x short side`` is the button height / glyph side in pixels.

    Args:
        level: the knobs (kinds, unit range, labels, colours).
        rng: the screen's generator; the only source of randomness.
        width: screen width in pixels.
        height: screen height in pixels.

    Returns:
        The plan in pixels.

    Raises:
        ScreenGenerationError: if ``level.kinds`` is not ``("button",)`` or ``("icon",)``.
    """
    if tuple(level.kinds) not in (("button",), ("icon",)):
        raise ScreenGenerationError(
            f"level {level.name!r}: layout 'hires' draws kinds ('button',) or ('icon',), "
            f"got {level.kinds}"
        )
    attrs = Attributes(level, rng)
    plan = Plan(width, height)
    lo, hi = level.size_frac
    u = max(8, round(min(width, height) * (lo + (hi - lo) * rng.random())))
    areas = _panels(plan, rng, _chrome(plan, rng, u), u)
    n = int(rng.integers(level.n_elements[0], level.n_elements[1] + 1))
    if level.kinds == ("button",):
        _buttons(plan, attrs, u, areas, n)
    else:
        _glyphs(plan, attrs, u, areas, n)
    return plan


def glyph_mask(pattern: str, side: int) -> np.ndarray:
    """Boolean ``[side, side]`` ink mask of a texture (True = ink), exactly half inked for even
    ``side``.

    >>> int(glyph_mask("checkered", 4).sum()), glyph_mask("lined", 4)[:, 0].tolist()
    (8, [True, False, True, False])
    """
    y, x = np.mgrid[0:side, 0:side]
    masks = {
        "lined": y % 2 == 0,
        "barred": x % 2 == 0,
        "checkered": (x + y) % 2 == 0,
        "hatched": (x + y) % 4 < 2,
    }
    return masks[pattern]


def draw_glyph(draw: ImageDraw.ImageDraw, spec: ElementSpec) -> None:
    """Draw a texture glyph tile: white square, half its pixels inked in ``spec.colour``.

    ``spec.label`` is ``"<colour> <pattern>"``; ``spec.box`` is the tile in pixels.
    """
    x0, y0, x1, y1 = spec.box
    draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=SURFACE)
    pattern = spec.label.rsplit(" ", 1)[-1]
    ys, xs = np.nonzero(glyph_mask(pattern, min(x1 - x0, y1 - y0)))
    draw.point(
        list(zip((xs + x0).tolist(), (ys + y0).tolist(), strict=True)), fill=PALETTE[spec.colour]
    )
