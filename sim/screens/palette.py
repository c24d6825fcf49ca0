"""Named colours of the synthetic screens and the pastel backgrounds they are drawn on.

Element colours are saturated and every background is light (luminance > 200), so a named
colour is always visible against its background. All values are RGB ``uint8`` triples.
"""

from __future__ import annotations

RGB = tuple[int, int, int]

PALETTE: dict[str, RGB] = {
    "red": (220, 38, 38),
    "green": (34, 160, 60),
    "blue": (37, 99, 235),
    "yellow": (234, 190, 8),
    "purple": (139, 62, 200),
    "orange": (245, 128, 20),
    "cyan": (14, 180, 200),
    "pink": (236, 92, 170),
    "brown": (140, 84, 40),
    "grey": (120, 120, 130),
    "black": (25, 25, 30),
    "white": (255, 255, 255),
}
"""Every colour an element may have, by the name instructions use."""

SATURATED: tuple[str, ...] = (
    "red",
    "green",
    "blue",
    "yellow",
    "purple",
    "orange",
    "cyan",
    "pink",
)
"""Colours that stand out from every light background (the default element colours)."""

LIGHT_BACKGROUNDS: tuple[RGB, ...] = (
    (250, 250, 250),
    (244, 244, 240),
    (236, 240, 245),
    (245, 240, 232),
    (236, 244, 236),
    (246, 238, 242),
    (232, 236, 240),
    (250, 246, 228),
    (238, 236, 248),
    (228, 240, 242),
)
"""Backgrounds of the ``plain`` / ``gradient`` / ``noise`` background kinds."""

INK: RGB = (30, 30, 36)
"""Dark text and outline colour."""
MUTED_INK: RGB = (120, 120, 128)
"""Placeholder and secondary text colour."""
SURFACE: RGB = (255, 255, 255)
"""Card, field and panel fill."""
BORDER: RGB = (200, 200, 208)
"""Thin outlines of fields, rows and panels."""


def luminance(rgb: RGB) -> float:
    """Rec. 601 luma of an RGB triple, in [0, 255]."""
    r, g, b = rgb
    return 0.299 * r + 0.587 * g + 0.114 * b


def ink_on(rgb: RGB) -> RGB:
    """Text colour readable on a fill of colour ``rgb`` (dark on light, white on dark)."""
    return INK if luminance(rgb) > 150 else (255, 255, 255)
