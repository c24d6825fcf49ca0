"""Difficulty knobs of the synthetic screen generator and the named presets in :data:`LEVELS`.

A :class:`ScreenLevel` is a frozen value: every default lives here, ``__post_init__`` rejects
out-of-range knobs with a message naming the field and the allowed values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from sim.errors import ScreenLevelError
from sim.screens.hires_vocab import HIRES_LABELS
from sim.screens.palette import PALETTE, SATURATED
from sim.screens.vocab import (
    FIELD_LABELS,
    ICON_NAMES,
    SHAPES,
    TEXT_LABELS,
    TOGGLE_LABELS,
)

LayoutName = Literal["free", "phone", "desktop", "hires"]
Kind = Literal["shape", "button", "icon", "toggle", "text_field", "list_row", "tab"]
Reference = Literal["colour", "shape", "text", "icon", "position", "relation"]
Background = Literal["plain", "gradient", "noise"]

LAYOUTS: tuple[str, ...] = get_args(LayoutName)
KINDS: tuple[str, ...] = get_args(Kind)
REFERENCES: tuple[str, ...] = get_args(Reference)
BACKGROUNDS: tuple[str, ...] = get_args(Background)

TEXT_KINDS: frozenset[str] = frozenset({"button", "text_field", "list_row", "tab"})
"""Kinds whose visible text names them (targets of a ``text`` reference)."""

REFERENCE_NEEDS: dict[str, frozenset[str]] = {
    "colour": frozenset({"shape", "button", "icon"}),
    "shape": frozenset({"shape"}),
    "text": TEXT_KINDS,
    "icon": frozenset({"icon"}),
    "position": frozenset(KINDS),
    "relation": frozenset({"toggle"}),
}
"""Reference -> element kinds it can describe; a level needs one of them in ``kinds``."""


# Structured layouts spend elements on chrome (bars, tabs, window controls) before content.
_LAYOUT_MIN_ELEMENTS: dict[str, int] = {"free": 1, "phone": 4, "desktop": 12, "hires": 2}


def _fail(field: str, message: str) -> ScreenLevelError:
    return ScreenLevelError(f"ScreenLevel.{field}: {message}")


def _check_subset(field: str, values: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    if not isinstance(values, tuple) or not values:
        raise _fail(field, f"must be a non-empty tuple of {allowed}, got {values!r}")
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise _fail(field, f"unknown value(s) {unknown}; allowed: {', '.join(allowed)}")
    if len(set(values)) != len(values):
        raise _fail(field, f"has duplicates: {values!r}")


def _check_words(field: str, values: tuple[str, ...]) -> None:
    if not isinstance(values, tuple) or not values:
        raise _fail(field, f"must be a non-empty tuple of strings, got {values!r}")
    if not all(isinstance(v, str) and v.strip() and "'" not in v for v in values):
        raise _fail(field, f"entries must be non-empty strings without quotes, got {values!r}")


@dataclass(frozen=True)
class ScreenLevel:
    """Every knob of one difficulty level of synthetic screens.

    Sizes are pixels; ``size_frac`` is relative to the screen's short side.
    """

    name: str = "custom"
    """Name used in sample ids (``"<name>:<seed>"``)."""
    width: int = 224
    """Screen width in pixels."""
    height: int = 224
    """Screen height in pixels."""
    resolutions: tuple[tuple[int, int], ...] = ()
    """Extra ``(width, height)`` sizes drawn uniformly together with ``(width, height)``."""
    layout: LayoutName = "free"
    """``free``: elements anywhere; ``phone``: status/app/tab bars around stacked rows;
    ``desktop``: title, menu and tool bars, sidebar and a dense form; ``hires``: a window with
    a ribbon and an inspector full of tiny identical buttons or texture glyphs
    (:mod:`sim.screens.hires`)."""
    n_elements: tuple[int, int] = (1, 1)
    """Inclusive range of the number of elements; placement may yield fewer."""
    kinds: tuple[Kind, ...] = ("shape",)
    """Element kinds that may appear."""
    size_frac: tuple[float, float] = (0.2, 0.35)
    """Range of an element's characteristic side (shape / icon side, widget row height)."""
    colours: tuple[str, ...] = SATURATED
    """Names (keys of :data:`sim.screens.palette.PALETTE`) that coloured elements use."""
    distinct_colours: bool = True
    """Give every coloured element its own colour (needs ``len(colours) >= n_elements[1]``)."""
    shapes: tuple[str, ...] = SHAPES
    """Outlines of ``shape`` elements."""
    icons: tuple[str, ...] = ICON_NAMES
    """Pictograms of ``icon`` elements."""
    references: tuple[Reference, ...] = ("colour",)
    """How instructions may identify the target; the first that is unique on a screen wins,
    tried in a random order."""
    backgrounds: tuple[Background, ...] = ("plain",)
    """``plain``: one random light colour; ``gradient``: two blended; ``noise``: light grain."""
    text_labels: tuple[str, ...] = TEXT_LABELS
    """Labels of buttons, list rows, tabs and menu items."""
    toggle_labels: tuple[str, ...] = TOGGLE_LABELS
    """Text shown next to toggle switches."""
    field_labels: tuple[str, ...] = FIELD_LABELS
    """Placeholders of text fields."""
    verbs: tuple[str, ...] = ("Click",)
    """Imperative verbs that open instructions."""
    min_gap_frac: float = 0.02
    """Smallest gap between free-layout elements, as a fraction of the short side."""
    placement_tries: int = 40
    """Rejection-sampling tries per free-layout element before settling for fewer elements."""
    panel_frac: tuple[float, float] = (0.0, 0.0)
    """Free layout: side range (fraction of the short side) of a tinted panel drawn around the
    first element at a random offset; ``(0, 0)`` = no panel. A panel large enough to see at a
    low pixel budget around a target too small to hit there is the coarse-to-fine case a zoom
    is for (the panel's box is ``Screen.panel_box_norm``)."""

    def __post_init__(self) -> None:
        for field in ("width", "height"):
            value = getattr(self, field)
            if not isinstance(value, int) or not 32 <= value <= 8192:
                raise _fail(field, f"must be an int in [32, 8192], got {value!r}")
        for size in self.resolutions:
            if (
                not isinstance(size, tuple)
                or len(size) != 2
                or not all(isinstance(v, int) and 32 <= v <= 8192 for v in size)
            ):
                raise _fail("resolutions", f"entries must be (width, height) ints, got {size!r}")
        if self.layout not in LAYOUTS:
            raise _fail("layout", f"must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")
        if self.panel_frac[1] and self.layout != "free":
            raise _fail("panel_frac", f"needs the free layout, got {self.layout!r}")
        lo, hi = self.n_elements
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi <= 256):
            raise _fail("n_elements", f"must be ints with 1 <= lo <= hi <= 256, got {lo, hi}")
        least = _LAYOUT_MIN_ELEMENTS[self.layout]
        if lo < least:
            raise _fail(
                "n_elements", f"layout {self.layout!r} needs n_elements[0] >= {least}, got {lo}"
            )
        f_lo, f_hi = self.size_frac
        if not 0.0 < f_lo <= f_hi <= 0.9:
            raise _fail("size_frac", f"must satisfy 0 < lo <= hi <= 0.9, got {f_lo, f_hi}")
        _check_subset("kinds", self.kinds, KINDS)
        _check_subset("colours", self.colours, tuple(PALETTE))
        _check_subset("shapes", self.shapes, SHAPES)
        _check_subset("icons", self.icons, ICON_NAMES)
        _check_subset("references", self.references, REFERENCES)
        _check_subset("backgrounds", self.backgrounds, BACKGROUNDS)
        for field in ("text_labels", "toggle_labels", "field_labels", "verbs"):
            _check_words(field, getattr(self, field))
        for ref in self.references:
            if not REFERENCE_NEEDS[ref] & set(self.kinds):
                needs = ", ".join(sorted(REFERENCE_NEEDS[ref]))
                raise _fail("references", f"{ref!r} needs one of the kinds {needs} in kinds")
        if self.distinct_colours and len(self.colours) < hi:
            raise _fail(
                "distinct_colours",
                f"needs at least n_elements[1] = {hi} colours, got {len(self.colours)}",
            )
        p_lo, p_hi = self.panel_frac
        if (p_lo, p_hi) != (0.0, 0.0) and not (f_hi < p_lo <= p_hi <= 0.9):
            raise _fail(
                "panel_frac",
                f"must be (0, 0) or satisfy size_frac[1] < lo <= hi <= 0.9, got {self.panel_frac}",
            )
        if not 0.0 <= self.min_gap_frac <= 0.2:
            raise _fail("min_gap_frac", f"must be in [0, 0.2], got {self.min_gap_frac}")
        if not isinstance(self.placement_tries, int) or not 1 <= self.placement_tries <= 1000:
            raise _fail(
                "placement_tries", f"must be an int in [1, 1000], got {self.placement_tries}"
            )

    @property
    def sizes(self) -> tuple[tuple[int, int], ...]:
        """Every ``(width, height)`` a screen of this level may have, default first."""
        out = [(self.width, self.height)]
        out += [s for s in self.resolutions if s not in out]
        return tuple(out)


def _dot(name: str, size_frac: tuple[float, float], **kw: tuple[float, float]) -> ScreenLevel:
    """One coloured shape on a 1280x736 free-layout screen (the ``hires_dot`` family)."""
    return ScreenLevel(name=name, width=1280, height=736, size_frac=size_frac, **kw)  # type: ignore[arg-type]


_WIDGETS: tuple[Kind, ...] = ("button", "icon", "toggle", "text_field", "list_row", "tab")

LEVELS: dict[str, ScreenLevel] = {
    "basic": ScreenLevel(name="basic"),
    # ``basic`` at the training resolution of the GRPO-vs-TRL benchmark (docs/BENCHMARKS.md).
    "basic448": ScreenLevel(name="basic448", width=448, height=448),
    "basic2": ScreenLevel(name="basic2", n_elements=(2, 3)),
    "shapes": ScreenLevel(
        name="shapes",
        n_elements=(3, 6),
        size_frac=(0.14, 0.24),
        colours=("red", "green", "blue", "yellow", "purple"),
        distinct_colours=False,
        references=("colour", "shape"),
        backgrounds=("plain", "gradient"),
        verbs=("Click", "Tap", "Select"),
    ),
    "widgets": ScreenLevel(
        name="widgets",
        width=448,
        height=896,
        layout="phone",
        n_elements=(10, 20),
        kinds=_WIDGETS,
        size_frac=(0.09, 0.13),
        distinct_colours=False,
        references=("text", "icon", "relation", "colour", "position"),
        backgrounds=("plain", "gradient", "noise"),
        verbs=("Tap", "Click", "Select"),
    ),
    "desktop_hires": ScreenLevel(
        name="desktop_hires",
        width=1920,
        height=1080,
        layout="desktop",
        n_elements=(50, 110),
        kinds=(*_WIDGETS, "shape"),
        size_frac=(0.016, 0.026),
        distinct_colours=False,
        references=("text", "icon", "relation", "colour", "position"),
        backgrounds=("plain",),
        verbs=("Click", "Select"),
    ),
    # "Thinking with images": targets that a 448x252 (~113k px) view cannot resolve, a zoom can.
    "hires_tiny": ScreenLevel(
        name="hires_tiny",
        width=2560,
        height=1440,
        layout="hires",
        n_elements=(96, 160),
        kinds=("button",),
        size_frac=(0.018, 0.024),
        colours=("white",),
        distinct_colours=False,
        references=("text",),
        text_labels=HIRES_LABELS,
        verbs=("Click", "Select"),
    ),
    "hires_tiny_small": ScreenLevel(
        name="hires_tiny_small",
        width=1280,
        height=736,
        layout="hires",
        n_elements=(12, 32),
        kinds=("icon",),
        size_frac=(0.018, 0.024),
        distinct_colours=False,
        references=("icon",),
        verbs=("Click",),
    ),
    # One tiny coloured shape on a large plain screen: at a 448x256 budget it is a 5-7 px dot,
    # too small for the tiny model to find (docs/RESULTS.md, the zoom pilots).
    "hires_dot": _dot("hires_dot", (0.02, 0.03)),
    # Curriculum steps towards it (same screens, larger shapes): at the 448x256 budget the shape
    # is 48-84 px (the quickstart's size) and 19-28 px.
    "hires_dot_big": _dot("hires_dot_big", (0.2, 0.35)),
    "hires_dot_mid": _dot("hires_dot_mid", (0.08, 0.12)),
    # ``hires_dot`` inside a panel 0.18-0.24 of the screen height (132-177 px): the panel is
    # plain at the 448x256 budget (43-58 px), the shape in it is not (5-7 px); zoomed onto the
    # panel, the shape is 25-40 px. The coarse-to-fine task of the zoom experiment.
    "hires_panel": _dot("hires_panel", (0.02, 0.03), panel_frac=(0.18, 0.24)),
    # What the zoom shows of ``hires_panel``: a panel filling most of a square view, the shape
    # in it 30-44 px. Direct answers on it teach reading the zoomed view before any zoom.
    "panel_zoomed": ScreenLevel(
        name="panel_zoomed",
        width=352,
        height=352,
        size_frac=(0.085, 0.125),
        panel_frac=(0.8, 0.88),
    ),
}
"""Named presets, from the quickstart's ``basic`` (one coloured shape on 224x224) up."""


def get_level(level: ScreenLevel | str) -> ScreenLevel:
    """Return ``level`` itself or the preset it names.

    Raises:
        ScreenLevelError: if ``level`` is a string that names no preset.
    """
    if isinstance(level, ScreenLevel):
        return level
    if isinstance(level, str) and level in LEVELS:
        return LEVELS[level]
    raise ScreenLevelError(f"screen level {level!r} is unknown; known: {', '.join(LEVELS)}")
