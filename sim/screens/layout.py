"""Screen plans: where each element goes (pixels), its attributes, and the chrome behind it.

A plan is computed before anything is drawn, so the generator can pick an instruction and
re-plan cheaply when no element can be identified uniquely. This module holds the plan types,
the attribute sampler shared by every layout and the ``free`` layout (rejection sampling);
:mod:`sim.screens.phone` and :mod:`sim.screens.desktop` hold the structured ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sim.screens.fonts import font_size_for, text_width
from sim.screens.level import ScreenLevel
from sim.screens.palette import RGB

BoxPx = tuple[int, int, int, int]
"""Integer pixel box ``(x0, y0, x1, y1)``, x1 / y1 exclusive."""

ROLES: dict[str, str] = {
    "shape": "img",
    "button": "button",
    "icon": "button",
    "toggle": "switch",
    "text_field": "textbox",
    "list_row": "listitem",
    "tab": "tab",
}


@dataclass
class ElementSpec:
    """A planned element: clickable pixel box, attributes and drawing style."""

    kind: str
    box: BoxPx
    label: str = ""
    colour: str = "white"
    shape: str | None = None
    state: str | None = None
    role: str = ""
    style: str = ""
    """Drawing variant, e.g. ``"flat"`` for menu items drawn as bare text."""
    label_box: BoxPx | None = None
    """Where a toggle's label text goes (outside the clickable box)."""
    bg: RGB | None = None
    """Colour behind the element when it is not the screen background (icons punch holes)."""

    def __post_init__(self) -> None:
        if not self.role:
            self.role = ROLES[self.kind]

    @property
    def footprint(self) -> BoxPx:
        """Pixel box covering the element and its label."""
        if self.label_box is None:
            return self.box
        a, b = self.box, self.label_box
        return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


@dataclass(frozen=True)
class DecorRect:
    """Chrome rectangle (bars, panels, separators); not an element."""

    box: BoxPx
    fill: RGB | None
    outline: RGB | None = None
    radius: int = 0


@dataclass(frozen=True)
class DecorText:
    """Chrome text (titles, clock); not an element."""

    xy: tuple[int, int]
    text: str
    size: int
    fill: RGB
    anchor: str = "lm"


@dataclass
class Plan:
    """Everything needed to draw a screen, in pixels."""

    width: int
    height: int
    specs: list[ElementSpec] = field(default_factory=list)
    decor: list[DecorRect | DecorText] = field(default_factory=list)
    panel: BoxPx | None = None
    """The panel around the first element (``ScreenLevel.panel_frac``), if any."""


class Attributes:
    """Draws element attributes from a level's vocabularies, avoiding repeats where it can.

    Labels are drawn without replacement across every vocabulary (case-insensitively), so a
    quoted label names one element whenever the vocabularies are large enough.
    """

    def __init__(self, level: ScreenLevel, rng: np.random.Generator) -> None:
        self.level, self.rng = level, rng
        self.used_labels: set[str] = set()
        self.used_colours: set[str] = set()
        self.used_icons: set[str] = set()

    def _pick(
        self, options: tuple[str, ...], used: set[str], key: Callable[[str], str] = str
    ) -> str:
        fresh = [o for o in options if key(o) not in used]
        pool = fresh or list(options)
        choice = pool[int(self.rng.integers(len(pool)))]
        used.add(key(choice))
        return choice

    def label(self, vocabulary: tuple[str, ...]) -> str:
        """A label from ``vocabulary`` not used yet on this screen, if any is left."""
        return self._pick(vocabulary, self.used_labels, key=str.casefold)

    def reserve_label(self, text: str) -> None:
        """Mark chrome text as used so no element gets the same label."""
        self.used_labels.add(text.casefold())

    def colour(self) -> str:
        """An element colour; distinct from earlier ones when the level asks for it."""
        if self.level.distinct_colours:
            return self._pick(self.level.colours, self.used_colours)
        return self.level.colours[int(self.rng.integers(len(self.level.colours)))]

    def icon(self) -> str:
        """An icon name, preferring names not used yet on this screen."""
        return self._pick(self.level.icons, self.used_icons)

    def shape(self) -> str:
        """A shape outline."""
        return self.level.shapes[int(self.rng.integers(len(self.level.shapes)))]


def _inflate(box: BoxPx, gap: int) -> BoxPx:
    return box[0] - gap, box[1] - gap, box[2] + gap, box[3] + gap


def boxes_overlap(a: BoxPx, b: BoxPx) -> bool:
    """Whether two pixel boxes share a positive area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _size_free(kind: str, s: int, attrs: Attributes) -> tuple[int, int, ElementSpec]:
    """Footprint size ``(w, h)`` of a free-layout element and its spec (box set at 0, 0)."""
    level, rng = attrs.level, attrs.rng
    if kind in ("shape", "icon"):
        spec = ElementSpec(kind, (0, 0, s, s), colour=attrs.colour())
        if kind == "shape":
            spec.shape = attrs.shape()
            h = s if spec.shape in ("circle", "triangle") else int(s * rng.uniform(0.7, 1.0))
            spec.box = (0, 0, s, h)
        else:
            spec.label = attrs.icon()
        return spec.box[2], spec.box[3], spec
    h = max(14, round(0.45 * s))
    fs = font_size_for(h)
    if kind == "toggle":
        label = attrs.label(level.toggle_labels)
        sh = max(10, round(0.6 * h))
        sw, lw = round(1.8 * sh), text_width(label, fs)
        spec = ElementSpec(kind, (lw + h // 2, (h - sh) // 2, lw + h // 2 + sw, (h - sh) // 2 + sh))
        spec.label, spec.label_box = label, (0, 0, lw, h)
        spec.colour, spec.state = attrs.colour(), ("on" if rng.random() < 0.5 else "off")
        return spec.box[2], h, spec
    if kind == "text_field":
        label = attrs.label(level.field_labels)
        w = max(text_width(label, fs) + h, 4 * h)
        return w, h, ElementSpec(kind, (0, 0, w, h), label=label)
    label = attrs.label(level.text_labels)
    pad = {"button": h, "list_row": 2 * h, "tab": h}[kind]
    w = text_width(label, fs) + pad
    spec = ElementSpec(kind, (0, 0, w, h), label=label)
    if kind == "button":
        spec.colour = attrs.colour()
    elif kind == "tab":
        spec.colour, spec.state = attrs.colour(), ("selected" if rng.random() < 0.3 else None)
    return w, h, spec


def _shift(spec: ElementSpec, dx: int, dy: int) -> None:
    b = spec.box
    spec.box = (b[0] + dx, b[1] + dy, b[2] + dx, b[3] + dy)
    if spec.label_box is not None:
        lb = spec.label_box
        spec.label_box = (lb[0] + dx, lb[1] + dy, lb[2] + dx, lb[3] + dy)


PANEL_FILL: RGB = (196, 202, 214)
PANEL_OUTLINE: RGB = (112, 118, 132)


def _place_in_panel(
    plan: Plan, spec: ElementSpec, w: int, h: int, level: ScreenLevel, rng: np.random.Generator
) -> None:
    """Draw a panel (side ``panel_frac`` x short side) at a random spot and put ``spec`` (``w``
    x ``h``) inside it at a random offset, a margin of 8 % of the side from its edges."""
    lo, hi = level.panel_frac
    side = round(min(plan.width, plan.height) * (lo + (hi - lo) * rng.random()))
    side = max(side, max(w, h) + 4)
    px, py = int(rng.integers(plan.width - side + 1)), int(rng.integers(plan.height - side + 1))
    margin = min(round(0.08 * side), (side - max(w, h)) // 2)
    x = px + int(rng.integers(margin, side - margin - w + 1))
    y = py + int(rng.integers(margin, side - margin - h + 1))
    _shift(spec, x, y)
    plan.panel = (px, py, px + side, py + side)
    plan.decor.append(DecorRect(plan.panel, PANEL_FILL, outline=PANEL_OUTLINE, radius=side // 16))


def plan_free(level: ScreenLevel, rng: np.random.Generator, width: int, height: int) -> Plan:
    """Scatter ``level.n_elements`` elements without overlap by rejection sampling.

    An element that finds no free spot in ``level.placement_tries`` tries is dropped, so a
    crowded screen has fewer elements; the first one always fits.

    Args:
        level: the knobs (kinds, size range, colours, vocabularies).
        rng: the screen's generator; the only source of randomness.
        width: screen width in pixels.
        height: screen height in pixels.

    Returns:
        A plan with elements only (no chrome).
    """
    attrs = Attributes(level, rng)
    plan = Plan(width, height)
    short = min(width, height)
    gap = round(level.min_gap_frac * short)
    n = int(rng.integers(level.n_elements[0], level.n_elements[1] + 1))
    lo, hi = level.size_frac
    taken: list[BoxPx] = []
    for i in range(n):
        kind = level.kinds[int(rng.integers(len(level.kinds)))]
        s = max(8, round(short * (lo + (hi - lo) * rng.random())))
        w, h, spec = _size_free(kind, s, attrs)
        if w > width or h > height:
            continue
        if i == 0 and level.panel_frac[1] > 0:
            _place_in_panel(plan, spec, w, h, level, rng)
            taken.append(plan.panel)  # type: ignore[arg-type]
            plan.specs.append(spec)
            continue
        for _ in range(level.placement_tries):
            x, y = int(rng.integers(width - w + 1)), int(rng.integers(height - h + 1))
            foot = (x, y, x + w, y + h)
            if not any(boxes_overlap(_inflate(foot, gap), t) for t in taken):
                _shift(spec, x, y)
                taken.append(foot)
                plan.specs.append(spec)
                break
    return plan
