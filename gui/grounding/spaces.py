"""Gymnasium spaces of the grounding env, including screenshots of any size."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from gymnasium import spaces


class Screenshot(spaces.Space[np.ndarray]):
    """``uint8 (H, W, 3)`` RGB images of any height and width up to ``max_height x max_width``.

    For observation spaces whose screenshots vary in size (ScreenSpot); a fixed size uses
    ``Box(0, 255, (H, W, 3), uint8)`` instead. ``sample()`` draws sizes up to
    ``sample_max_side`` so that sampling stays cheap.
    """

    def __init__(
        self,
        max_width: int = 16384,
        max_height: int = 16384,
        sample_max_side: int = 256,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        self.max_width, self.max_height = int(max_width), int(max_height)
        self.sample_max_side = int(sample_max_side)
        super().__init__(shape=None, dtype=np.uint8, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Sizes vary, so screenshots cannot be flattened to one fixed vector."""
        return False

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> np.ndarray:
        """A random-noise screenshot of random size (sides in ``[1, sample_max_side]``)."""
        if mask is not None or probability is not None:
            raise ValueError("Screenshot.sample takes no mask or probability")
        h = int(self.np_random.integers(1, min(self.max_height, self.sample_max_side) + 1))
        w = int(self.np_random.integers(1, min(self.max_width, self.sample_max_side) + 1))
        return self.np_random.integers(0, 256, (h, w, 3), dtype=np.uint8)

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a ``uint8`` array of shape ``(H, W, 3)`` within the size limits."""
        return (
            isinstance(x, np.ndarray)
            and x.dtype == np.uint8
            and x.ndim == 3
            and x.shape[2] == 3
            and 1 <= x.shape[0] <= self.max_height
            and 1 <= x.shape[1] <= self.max_width
        )

    def to_jsonable(self, sample_n: Iterable[np.ndarray]) -> list[Any]:
        """Screenshots as nested lists."""
        return [np.asarray(s).tolist() for s in sample_n]

    def from_jsonable(self, sample_n: list[Any]) -> list[np.ndarray]:
        """Nested lists back to ``uint8`` arrays."""
        return [np.asarray(s, dtype=np.uint8) for s in sample_n]

    def __repr__(self) -> str:
        return f"Screenshot(max_width={self.max_width}, max_height={self.max_height})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Screenshot)
            and other.max_width == self.max_width
            and other.max_height == self.max_height
        )


def observation_space(
    image_size: tuple[int, int] | None, charset: frozenset[str], max_instruction_length: int
) -> spaces.Dict:
    """``Dict(image=..., instruction=Text)``; the image is a fixed ``Box`` when ``image_size``
    (``(width, height)``) is known, else a :class:`Screenshot`."""
    if image_size is None:
        image: spaces.Space[Any] = Screenshot()
    else:
        width, height = image_size
        image = spaces.Box(0, 255, (height, width, 3), np.uint8)
    text = spaces.Text(max_length=max_instruction_length, min_length=1, charset=charset)
    return spaces.Dict({"image": image, "instruction": text})


def action_space() -> spaces.Dict:
    """``Dict(point=Box(0, 1, (2,), float32))``: a normalized click; ``step`` also accepts
    ``"box"`` and ``"parse_error"`` keys."""
    return spaces.Dict({"point": spaces.Box(0.0, 1.0, (2,), np.float32)})
