"""Pillow's bundled font at any pixel size, cached, so text pixels match on every machine."""

from __future__ import annotations

from functools import lru_cache

from PIL import ImageFont


@lru_cache(maxsize=64)
def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's bundled font (``ImageFont.load_default``) at ``size`` pixels (clamped to >= 6)."""
    return ImageFont.load_default(size=max(6, int(size)))


@lru_cache(maxsize=4096)
def text_width(text: str, size: int) -> int:
    """Advance width in pixels of ``text`` drawn with :func:`font` at ``size``."""
    return int(round(font(size).getlength(text)))


def font_size_for(height_px: int) -> int:
    """Font size whose text fits a widget ``height_px`` tall with a comfortable margin."""
    return max(7, int(height_px * 0.45))
