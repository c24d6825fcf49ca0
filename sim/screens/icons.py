"""Simple pictograms drawn with PIL primitives inside a pixel box.

Every icon is drawn from fractions of its box, so it scales from 12 px toolbar icons to large
free-layout icons. Names are listed in :data:`sim.screens.vocab.ICON_NAMES` plus the window
controls in :data:`WINDOW_ICONS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from PIL import ImageDraw

from sim.screens.palette import RGB

BoxPx = tuple[int, int, int, int]
WINDOW_ICONS: tuple[str, ...] = ("minimize", "maximize", "close")


class _Pen:
    """Maps fractions of a box to pixels and carries the colours and stroke width."""

    def __init__(self, draw: ImageDraw.ImageDraw, box: BoxPx, fg: RGB, bg: RGB) -> None:
        self.draw, self.fg, self.bg = draw, fg, bg
        self.x0, self.y0 = box[0], box[1]
        self.w, self.h = box[2] - box[0], box[3] - box[1]
        self.stroke = max(1, round(min(self.w, self.h) / 9))

    def p(self, fx: float, fy: float) -> tuple[float, float]:
        return self.x0 + fx * self.w, self.y0 + fy * self.h

    def box(self, fx0: float, fy0: float, fx1: float, fy1: float) -> tuple[float, ...]:
        return (*self.p(fx0, fy0), *self.p(fx1, fy1))

    def line(self, *points: tuple[float, float], width: int | None = None) -> None:
        xy = [self.p(fx, fy) for fx, fy in points]
        self.draw.line(xy, fill=self.fg, width=width or self.stroke, joint="curve")

    def poly(self, *points: tuple[float, float], fill: RGB | None = None) -> None:
        self.draw.polygon([self.p(fx, fy) for fx, fy in points], fill=fill or self.fg)


def _search(pen: _Pen) -> None:
    pen.draw.ellipse(pen.box(0.1, 0.1, 0.66, 0.66), outline=pen.fg, width=pen.stroke)
    pen.line((0.58, 0.58), (0.9, 0.9), width=pen.stroke + 1)


def _gear(pen: _Pen) -> None:
    for k in range(8):
        a = k * math.pi / 4
        pen.line(
            (0.5, 0.5), (0.5 + 0.42 * math.cos(a), 0.5 + 0.42 * math.sin(a)), width=pen.stroke + 2
        )
    pen.draw.ellipse(pen.box(0.2, 0.2, 0.8, 0.8), fill=pen.fg)
    pen.draw.ellipse(pen.box(0.38, 0.38, 0.62, 0.62), fill=pen.bg)


def _heart(pen: _Pen) -> None:
    pen.draw.ellipse(pen.box(0.08, 0.15, 0.52, 0.58), fill=pen.fg)
    pen.draw.ellipse(pen.box(0.48, 0.15, 0.92, 0.58), fill=pen.fg)
    pen.poly((0.1, 0.45), (0.9, 0.45), (0.5, 0.9))


def _star(pen: _Pen) -> None:
    pts = []
    for k in range(10):
        r = 0.45 if k % 2 == 0 else 0.19
        a = -math.pi / 2 + k * math.pi / 5
        pts.append((0.5 + r * math.cos(a), 0.53 + r * math.sin(a)))
    pen.poly(*pts)


def _home(pen: _Pen) -> None:
    pen.poly((0.5, 0.08), (0.05, 0.5), (0.95, 0.5))
    pen.draw.rectangle(pen.box(0.2, 0.48, 0.8, 0.92), fill=pen.fg)
    pen.draw.rectangle(pen.box(0.42, 0.62, 0.58, 0.92), fill=pen.bg)


def _trash(pen: _Pen) -> None:
    pen.line((0.12, 0.2), (0.88, 0.2))
    pen.draw.rectangle(pen.box(0.38, 0.08, 0.62, 0.2), outline=pen.fg, width=pen.stroke)
    pen.poly((0.2, 0.28), (0.8, 0.28), (0.72, 0.92), (0.28, 0.92))
    for fx in (0.4, 0.6):
        pen.line((fx, 0.38), (fx, 0.82), width=max(1, pen.stroke // 2))


def _bell(pen: _Pen) -> None:
    pen.draw.chord(pen.box(0.2, 0.1, 0.8, 0.7), 180, 360, fill=pen.fg)
    pen.draw.rectangle(pen.box(0.2, 0.4, 0.8, 0.72), fill=pen.fg)
    pen.draw.rectangle(pen.box(0.1, 0.68, 0.9, 0.76), fill=pen.fg)
    pen.draw.ellipse(pen.box(0.4, 0.76, 0.6, 0.94), fill=pen.fg)


def _plus(pen: _Pen) -> None:
    pen.line((0.5, 0.12), (0.5, 0.88), width=pen.stroke + 2)
    pen.line((0.12, 0.5), (0.88, 0.5), width=pen.stroke + 2)


def _close(pen: _Pen) -> None:
    pen.line((0.18, 0.18), (0.82, 0.82), width=pen.stroke + 1)
    pen.line((0.82, 0.18), (0.18, 0.82), width=pen.stroke + 1)


def _menu(pen: _Pen) -> None:
    for fy in (0.25, 0.5, 0.75):
        pen.line((0.12, fy), (0.88, fy), width=pen.stroke + 1)


def _back(pen: _Pen) -> None:
    pen.line((0.5, 0.18), (0.18, 0.5), (0.5, 0.82), width=pen.stroke + 1)
    pen.line((0.2, 0.5), (0.88, 0.5), width=pen.stroke + 1)


def _user(pen: _Pen) -> None:
    pen.draw.ellipse(pen.box(0.3, 0.08, 0.7, 0.48), fill=pen.fg)
    pen.draw.chord(pen.box(0.1, 0.55, 0.9, 1.3), 180, 360, fill=pen.fg)


def _mail(pen: _Pen) -> None:
    pen.draw.rectangle(pen.box(0.08, 0.2, 0.92, 0.8), outline=pen.fg, width=pen.stroke)
    pen.line((0.08, 0.22), (0.5, 0.55), (0.92, 0.22))


def _folder(pen: _Pen) -> None:
    pen.poly((0.06, 0.2), (0.4, 0.2), (0.48, 0.3), (0.94, 0.3), (0.94, 0.84), (0.06, 0.84))
    pen.line((0.06, 0.4), (0.94, 0.4), width=max(1, pen.stroke // 2))


def _check(pen: _Pen) -> None:
    pen.line((0.12, 0.52), (0.4, 0.8), (0.9, 0.2), width=pen.stroke + 2)


def _play(pen: _Pen) -> None:
    pen.poly((0.22, 0.1), (0.88, 0.5), (0.22, 0.9))


def _minimize(pen: _Pen) -> None:
    pen.line((0.2, 0.7), (0.8, 0.7))


def _maximize(pen: _Pen) -> None:
    pen.draw.rectangle(pen.box(0.2, 0.2, 0.8, 0.8), outline=pen.fg, width=pen.stroke)


_DRAWERS: dict[str, Callable[[_Pen], None]] = {
    "search": _search,
    "gear": _gear,
    "heart": _heart,
    "star": _star,
    "home": _home,
    "trash": _trash,
    "bell": _bell,
    "plus": _plus,
    "close": _close,
    "menu": _menu,
    "back": _back,
    "user": _user,
    "mail": _mail,
    "folder": _folder,
    "check": _check,
    "play": _play,
    "minimize": _minimize,
    "maximize": _maximize,
}


def draw_icon(draw: ImageDraw.ImageDraw, box: BoxPx, name: str, fg: RGB, bg: RGB) -> None:
    """Draw the pictogram ``name`` inside the pixel box ``box`` (x0, y0, x1, y1).

    Args:
        draw: drawing context of the screen image.
        box: integer pixel box; the icon fills it.
        name: a key of the drawers (``ICON_NAMES`` or ``WINDOW_ICONS``).
        fg: stroke / fill colour.
        bg: colour behind the icon, used to punch holes (gear centre, door).

    Raises:
        KeyError: if ``name`` is not a known icon.
    """
    _DRAWERS[name](_Pen(draw, box, fg, bg))
