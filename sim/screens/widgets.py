"""Drawing of planned elements and chrome onto a PIL image (pixel space)."""

from __future__ import annotations

from PIL import ImageDraw

from sim.screens.fonts import font, font_size_for, text_width
from sim.screens.hires import GLYPH_STYLE, draw_glyph
from sim.screens.icons import draw_icon
from sim.screens.layout import DecorRect, DecorText, ElementSpec
from sim.screens.palette import BORDER, INK, MUTED_INK, PALETTE, RGB, SURFACE, ink_on

_TRACK_OFF: RGB = (196, 198, 204)


def _shape(draw: ImageDraw.ImageDraw, spec: ElementSpec, rgb: RGB) -> None:
    x0, y0, x1, y1 = spec.box
    x1, y1 = x1 - 1, y1 - 1  # PIL includes the end pixel; boxes exclude it
    if spec.shape == "circle":
        draw.ellipse((x0, y0, x1, y1), fill=rgb)
    elif spec.shape == "triangle":
        draw.polygon([(x0, y1), ((x0 + x1) / 2, y0), (x1, y1)], fill=rgb)
    elif spec.shape == "diamond":
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        draw.polygon([(cx, y0), (x1, cy), (cx, y1), (x0, cy)], fill=rgb)
    else:
        draw.rectangle((x0, y0, x1, y1), fill=rgb)


def _button(draw: ImageDraw.ImageDraw, spec: ElementSpec, rgb: RGB) -> None:
    x0, y0, x1, y1 = spec.box
    h = y1 - y0
    centre = ((x0 + x1) // 2, (y0 + y1) // 2)
    f = font(font_size_for(h))
    if spec.style == "flat":
        draw.text(centre, spec.label, font=f, fill=INK, anchor="mm")
        return
    draw.rounded_rectangle((x0, y0, x1 - 1, y1 - 1), radius=max(2, h // 4), fill=rgb)
    draw.text(centre, spec.label, font=f, fill=ink_on(rgb), anchor="mm")


def _toggle(draw: ImageDraw.ImageDraw, spec: ElementSpec, rgb: RGB) -> None:
    x0, y0, x1, y1 = spec.box
    h = y1 - y0
    on = spec.state == "on"
    draw.rounded_rectangle((x0, y0, x1 - 1, y1 - 1), radius=h // 2, fill=rgb if on else _TRACK_OFF)
    pad = max(1, h // 8)
    kx = x1 - h if on else x0
    draw.ellipse((kx + pad, y0 + pad, kx + h - 1 - pad, y1 - 1 - pad), fill=SURFACE)
    if spec.label_box is not None:
        lx0, ly0, _, ly1 = spec.label_box
        size = font_size_for(ly1 - ly0)
        draw.text((lx0, (ly0 + ly1) // 2), spec.label, font=font(size), fill=INK, anchor="lm")


def _text_field(draw: ImageDraw.ImageDraw, spec: ElementSpec, rgb: RGB) -> None:
    x0, y0, x1, y1 = spec.box
    h = y1 - y0
    draw.rounded_rectangle(
        (x0, y0, x1 - 1, y1 - 1), radius=max(2, h // 6), fill=SURFACE, outline=BORDER
    )
    f = font(font_size_for(h))
    draw.text((x0 + h // 3, (y0 + y1) // 2), spec.label, font=f, fill=MUTED_INK, anchor="lm")


def _list_row(draw: ImageDraw.ImageDraw, spec: ElementSpec, rgb: RGB) -> None:
    x0, y0, x1, y1 = spec.box
    h = y1 - y0
    fill = (214, 222, 240) if spec.state == "selected" else (spec.bg or SURFACE)
    draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=fill)
    draw.line((x0, y1 - 1, x1 - 1, y1 - 1), fill=BORDER)
    f = font(font_size_for(h))
    draw.text((x0 + h // 3, (y0 + y1) // 2), spec.label, font=f, fill=INK, anchor="lm")
    c = max(2, h // 6)
    cx, cy = x1 - h // 2, (y0 + y1) // 2
    draw.line(
        [(cx - c // 2, cy - c), (cx + c // 2, cy), (cx - c // 2, cy + c)],
        fill=MUTED_INK,
        width=max(1, h // 16),
    )


def _tab(draw: ImageDraw.ImageDraw, spec: ElementSpec, rgb: RGB) -> None:
    x0, y0, x1, y1 = spec.box
    h = y1 - y0
    selected = spec.state == "selected"
    size = font_size_for(h)
    while size > 7 and text_width(spec.label, size) > x1 - x0 - 4:
        size -= 1  # tab cells have a fixed width; shrink long labels to fit
    f = font(size)
    draw.text(
        ((x0 + x1) // 2, (y0 + y1) // 2),
        spec.label,
        font=f,
        fill=rgb if selected else MUTED_INK,
        anchor="mm",
    )
    if selected:
        draw.rectangle((x0, y1 - max(2, h // 12), x1 - 1, y1 - 1), fill=rgb)


def _icon(draw: ImageDraw.ImageDraw, spec: ElementSpec, rgb: RGB, bg: RGB) -> None:
    draw_icon(draw, spec.box, spec.label, rgb, spec.bg or bg)


_DRAW = {
    "shape": _shape,
    "button": _button,
    "toggle": _toggle,
    "text_field": _text_field,
    "list_row": _list_row,
    "tab": _tab,
}


def draw_element(draw: ImageDraw.ImageDraw, spec: ElementSpec, background: RGB) -> None:
    """Draw one planned element.

    Args:
        draw: drawing context of the screen image.
        spec: the element; ``spec.box`` is in pixels, x1 / y1 exclusive.
        background: the screen's base colour (behind icons that sit on the screen itself).
    """
    rgb = PALETTE[spec.colour]
    if spec.style == GLYPH_STYLE:
        draw_glyph(draw, spec)
    elif spec.kind == "icon":
        _icon(draw, spec, rgb, background)
    else:
        _DRAW[spec.kind](draw, spec, rgb)


def draw_decor(draw: ImageDraw.ImageDraw, item: DecorRect | DecorText) -> None:
    """Draw one piece of chrome (pixel space)."""
    if isinstance(item, DecorText):
        draw.text(item.xy, item.text, font=font(item.size), fill=item.fill, anchor=item.anchor)
        return
    x0, y0, x1, y1 = item.box
    if item.radius:
        draw.rounded_rectangle(
            (x0, y0, x1 - 1, y1 - 1), item.radius, fill=item.fill, outline=item.outline
        )
    else:
        draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=item.fill, outline=item.outline)
