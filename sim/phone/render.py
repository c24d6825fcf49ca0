"""Draw a laid-out :class:`~sim.phone.views.View` with PIL (pixel space, RGB ``uint8``).

Reuses the synthetic-screen helpers: Pillow's bundled font (:mod:`sim.screens.fonts`), the
pictograms (:mod:`sim.screens.icons`), the palette and the toggle / button widgets.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from sim.phone.views import Node, View
from sim.screens.fonts import font, text_width
from sim.screens.icons import draw_icon
from sim.screens.layout import ElementSpec
from sim.screens.palette import BORDER, INK, MUTED_INK, PALETTE, RGB, ink_on
from sim.screens.widgets import draw_element

LIGHT: dict[str, RGB] = {
    "bg": (246, 246, 248),
    "bar": (234, 235, 240),
    "side": (228, 231, 238),
    "surface": (255, 255, 255),
    "ink": INK,
    "muted": MUTED_INK,
    "border": BORDER,
    "error": (200, 30, 30),
}
DARK: dict[str, RGB] = {
    "bg": (28, 28, 32),
    "bar": (42, 42, 48),
    "side": (36, 37, 44),
    "surface": (50, 50, 58),
    "ink": (236, 236, 240),
    "muted": (150, 150, 160),
    "border": (78, 78, 90),
    "error": (255, 110, 110),
}
_SCRIM = 0.45  # brightness kept behind a modal menu


def _fit(text: str, size: int, width: int) -> str:
    """``text`` cut with ``...`` so that it fits ``width`` pixels."""
    if text_width(text, size) <= width:
        return text
    while text and text_width(text + "...", size) > width:
        text = text[:-1]
    return text + "..."


class _Painter:
    def __init__(self, draw: ImageDraw.ImageDraw, theme: dict[str, RGB], accent: str) -> None:
        self.d, self.t, self.accent_name, self.accent = draw, theme, accent, PALETTE[accent]

    def text(self, node: Node, colour: RGB, scale: float = 0.45, pad: int = 0) -> None:
        x0, y0, x1, y1 = node.box
        size = max(8, int((y1 - y0) * scale))
        self.d.text(
            (x0 + pad, (y0 + y1) // 2),
            _fit(node.text, size, x1 - x0 - pad),
            font=font(size),
            fill=colour,
            anchor="lm",
        )

    def icon(self, box: tuple[int, int, int, int], name: str, fg: RGB, bg: RGB) -> None:
        draw_icon(self.d, box, name, fg, bg)

    def paint(self, node: Node) -> None:
        style, _, arg = node.style.partition(":")
        t, d = self.t, self.d
        x0, y0, x1, y1 = node.box
        h = y1 - y0
        if style == "fill":
            if arg == "surface":
                d.rounded_rectangle(
                    (x0, y0, x1 - 1, y1 - 1),
                    radius=max(2, h // 10),
                    fill=t["surface"],
                    outline=t["border"],
                )
            elif arg != "scrim":
                d.rectangle((x0, y0, x1 - 1, y1 - 1), fill=t[arg])
        elif style in ("label", "muted", "error"):
            colour = t["ink"] if style == "label" else t[style]
            self.text(node, colour, 0.5 if style == "label" else 0.6)
        elif style == "title":
            self.text(node, t["ink"], 0.42)
        elif style == "icon":
            self.icon(node.box, arg, t["ink"], t["bar"])
        elif style == "app":
            side = min(x1 - x0, y1 - y0) * 0.6
            cx = (x0 + x1) // 2
            tile = (round(cx - side / 2), y0, round(cx + side / 2), round(y0 + side))
            d.rounded_rectangle(tile, radius=max(3, round(side / 5)), fill=self.accent)
            pad = round(side * 0.2)
            inner = (tile[0] + pad, tile[1] + pad, tile[2] - pad, tile[3] - pad)
            self.icon(inner, arg, ink_on(self.accent), self.accent)
            size = max(8, round(side * 0.28))
            d.text(
                (cx, tile[3] + size),
                _fit(node.text, size, x1 - x0),
                font=font(size),
                fill=t["ink"],
                anchor="mm",
            )
        elif style == "side":
            if node.state == "selected":
                d.rectangle((x0, y0, x1 - 1, y1 - 1), fill=t["surface"])
                d.rectangle((x0, y0, x0 + 3, y1 - 1), fill=self.accent)
            side = round(h * 0.5)
            top = y0 + (h - side) // 2
            self.icon(
                (x0 + side // 2, top, x0 + side // 2 + side, top + side), arg, t["ink"], t["side"]
            )
            size = max(8, int(h * 0.4))
            d.text(
                (x0 + 2 * side, (y0 + y1) // 2),
                _fit(node.text, size, x1 - x0 - 2 * side),
                font=font(size),
                fill=t["ink"],
                anchor="lm",
            )
        elif style in ("switch", "switch_only"):
            if style == "switch":
                pad = max(4, h // 4)
                self.text(Node("", node.text, (x0, y0, x1 - 3 * h // 2, y1)), t["ink"], 0.42, pad)
                sh = h // 2
                box = (x1 - pad - round(sh * 1.8), y0 + (h - sh) // 2, x1 - pad, y0 + (h + sh) // 2)
                d.line((x0, y1 - 1, x1, y1 - 1), fill=t["border"])
            else:
                box = node.box
            spec = ElementSpec("toggle", box, colour=self.accent_name, state=node.state)
            draw_element(d, spec, t["bg"])
        elif style == "slider":
            cy = (y0 + y1) // 2
            value = int(node.state or 0) / 100
            xv = x0 + round(value * (x1 - x0 - 1))
            th = max(2, h // 6)
            d.rounded_rectangle((x0, cy - th, x1 - 1, cy + th), radius=th, fill=t["border"])
            d.rounded_rectangle((x0, cy - th, xv, cy + th), radius=th, fill=self.accent)
            r = h // 2 - 1
            d.ellipse((xv - r, cy - r, xv + r, cy + r), fill=self.accent, outline=t["surface"])
        elif style == "textbox":
            outline = self.accent if node.focused else t["border"]
            d.rounded_rectangle(
                (x0, y0, x1 - 1, y1 - 1),
                radius=max(2, min(h, 30) // 5),
                fill=t["surface"],
                outline=outline,
                width=2 if node.focused else 1,
            )
            size = max(8, int(min(h, 32) * 0.45))
            pad = max(4, size // 2)
            label = node.text or node.hint
            colour = t["ink"] if node.text else t["muted"]
            line = _fit(
                label + ("|" if node.focused and node.text else ""), size, x1 - x0 - 3 * pad
            )
            d.text(
                (x0 + pad, y0 + min(h, 32) // 2), line, font=font(size), fill=colour, anchor="lm"
            )
        elif style == "row":
            d.line((x0, y1 - 1, x1, y1 - 1), fill=t["border"])
            self.text(node, t["ink"], 0.42, max(4, h // 4))
        elif style == "button":
            spec = ElementSpec("button", node.box, label=node.text, colour=self.accent_name)
            draw_element(d, spec, t["bg"])
        elif style == "menuitem":
            d.text(
                ((x0 + x1) // 2, (y0 + y1) // 2),
                node.text,
                font=font(int(h * 0.42)),
                fill=t["ink"],
                anchor="mm",
            )


def render(view: View, size: tuple[int, int], dark: bool, accent: str) -> np.ndarray:
    """Screenshot of ``view``.

    Args:
        view: the laid-out screen.
        size: ``(width, height)`` in pixels.
        dark: draw with the dark theme.
        accent: palette name of the accent colour.

    Returns:
        ``uint8`` array of shape ``(height, width, 3)``.
    """
    image = Image.new("RGB", size, (0, 0, 0))
    theme = DARK if dark else LIGHT
    painter = _Painter(ImageDraw.Draw(image), theme, accent)
    for node in view.nodes:
        if node.layer == 0:
            painter.paint(node)
    if view.top_layer:
        image = Image.fromarray((np.asarray(image) * _SCRIM).astype(np.uint8))
        painter = _Painter(ImageDraw.Draw(image), theme, accent)
        for node in view.nodes:
            if node.layer:
                painter.paint(node)
    return np.asarray(image)
