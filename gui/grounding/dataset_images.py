"""Images of data rows: a path, raw bytes, a ``{"bytes", "path"}`` dict or a PIL image.

:func:`image_ref` turns a cell into a file path (relative paths start at ``base``), bytes or
a PIL image; :func:`header_size` reads ``(w, h)`` from the header only; :func:`decode` gives
``uint8 (H, W, 3)`` RGB. Each raises :class:`ImageProblem` with a reason for the load report.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

ImageRef = Path | bytes | Any
"""A file path, encoded image bytes, or a decoded PIL image."""


class ImageProblem(Exception):
    """Why a row's image is unusable; ``reason`` is missing_image, bad_image or bad_value."""

    def __init__(self, message: str, reason: str = "bad_image") -> None:
        super().__init__(message)
        self.reason = reason


def image_ref(value: Any, base: Path) -> ImageRef:
    """The image a cell names.

    Raises:
        ImageProblem: an empty or wrongly typed cell, or a bad ``data:`` URI.
    """
    if isinstance(value, Mapping):
        if value.get("bytes"):
            value = value["bytes"]
        elif value.get("path"):
            value = value["path"]
        else:
            raise ImageProblem("holds neither 'bytes' nor 'path'")
    if isinstance(value, (bytes, bytearray, memoryview)):
        if not len(value):
            raise ImageProblem("holds no bytes")
        return bytes(value)
    if isinstance(value, str):
        if not value.strip():
            raise ImageProblem("is an empty path")
        if value.startswith("data:image") and "," in value:
            try:
                return base64.b64decode(value.split(",", 1)[1], validate=True)
            except ValueError as err:
                raise ImageProblem(f"bad base64 data URI: {err}") from err
        path = Path(value).expanduser()
        return path if path.is_absolute() else base / path
    if hasattr(value, "size") and hasattr(value, "convert"):
        return value  # a decoded PIL image (datasets with decode=True)
    raise ImageProblem(
        f"must be a path, bytes or {{'bytes', 'path'}}, got {type(value).__name__}", "bad_value"
    )


def _describe(ref: ImageRef) -> str:
    return str(ref) if isinstance(ref, Path) else f"of {len(ref)} bytes"


def check_exists(ref: ImageRef) -> None:
    """Raise :class:`ImageProblem` (missing_image) for a path that is no file."""
    if isinstance(ref, Path) and not ref.is_file():
        raise ImageProblem(f"image {ref} does not exist", "missing_image")


def header_size(ref: ImageRef) -> tuple[int, int]:
    """``(w, h)`` read from the image header, without decoding the pixels."""
    from PIL import Image, UnidentifiedImageError

    check_exists(ref)
    if not isinstance(ref, (Path, bytes)):
        return int(ref.size[0]), int(ref.size[1])
    try:
        with Image.open(ref if isinstance(ref, Path) else io.BytesIO(ref)) as img:
            return int(img.size[0]), int(img.size[1])
    except (OSError, UnidentifiedImageError, ValueError) as err:
        raise ImageProblem(f"cannot read image {_describe(ref)}: {err}") from err


def decode(ref: ImageRef) -> np.ndarray:
    """``uint8 (H, W, 3)`` RGB pixels of an image."""
    from PIL import Image, UnidentifiedImageError

    check_exists(ref)
    try:
        if isinstance(ref, (Path, bytes)):
            with Image.open(ref if isinstance(ref, Path) else io.BytesIO(ref)) as img:
                return np.asarray(img.convert("RGB"))
        return np.asarray(ref.convert("RGB"))
    except (OSError, UnidentifiedImageError, ValueError) as err:
        raise ImageProblem(f"cannot decode image {_describe(ref)}: {err}") from err
