"""Where grounding samples come from: the synthetic screen generator or ScreenSpot files.

A source maps an integer key to a :class:`GroundingSample`: for :class:`SyntheticSource` the
key is the screen's seed (unbounded), for :class:`ScreenSpotSource` it is the record index.
"""

from __future__ import annotations

import json
import string
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from gui.errors import GroundingDataError, GroundingEnvError
from gui.grounding.screenspot_schema import (
    BOX_FORMATS,
    BoxFormat,
    ScreenSpotRecord,
    Version,
    bbox_error,
    box_problem,
    detect_box_format,
    parse_record,
    to_xyxy,
)
from sim.screens import Element, ScreenLevel, generate_screen, get_level
from sim.screens.generator import retarget_screen
from sim.screens.instruction import refer

BoxNorm = tuple[float, float, float, float]
BASE_CHARSET: frozenset[str] = frozenset(string.printable)
"""Characters any instruction may use; sources add the ones their data needs."""


@dataclass(frozen=True, eq=False)
class GroundingSample:
    """One screenshot, one instruction and the box of the element it names.

    Attributes:
        image: ``uint8 (H, W, 3)`` RGB, read-only (copy before editing).
        instruction: what to click.
        target_box_norm: ``(x0, y0, x1, y1)`` in [0, 1] of the image width / height.
        elements: accessibility-style element list (empty when the source has none).
        sample_id: stable id, ``"<source>:<key>"``.
        meta: source-specific extras (seed, level, platform, ui_type, file name, ...).
    """

    image: np.ndarray
    instruction: str
    target_box_norm: BoxNorm
    elements: tuple[Element, ...] = ()
    sample_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def image_size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels."""
        return int(self.image.shape[1]), int(self.image.shape[0])


class GroundingSource(Protocol):
    """What :class:`gui.grounding.env.GroundingEnv` needs from a source of samples."""

    name: str
    num_samples: int | None
    """Number of keys ``0 .. num_samples - 1``, or ``None`` for any non-negative int."""
    image_size: tuple[int, int] | None
    """``(width, height)`` shared by every sample, or ``None`` when sizes vary."""
    charset: frozenset[str]
    """Every character an instruction may contain."""

    def sample(self, key: int) -> GroundingSample: ...


class _LRU:
    """Tiny least-recently-used cache of the last ``size`` values."""

    def __init__(self, size: int) -> None:
        self.size, self.data = size, OrderedDict()

    def get(self, key: Any) -> Any:
        if key in self.data:
            self.data.move_to_end(key)
            return self.data[key]
        return None

    def put(self, key: Any, value: Any) -> None:
        self.data[key] = value
        self.data.move_to_end(key)
        while len(self.data) > self.size:
            self.data.popitem(last=False)


class SyntheticSource:
    """Procedural screens of one :class:`~sim.screens.ScreenLevel`; the key is the seed.

    The last ``cache_size`` samples are kept, so resetting a GRPO group of envs to one seed
    renders the screen once.

    ``targets_per_screen`` = K > 1 is the instruction-focused augmentation: keys ``K·s … K·s +
    K − 1`` share the pixels of screen ``K·s`` and name different targets on it
    (:func:`sim.screens.generator.retarget_screen`), so a batch of consecutive keys holds one
    screen several times and the image alone cannot predict the answer.

    ``describe_mix`` = p > 0 turns a seeded fraction p of the keys into describe tasks (the
    referring direction of grounding): the same screen, the question "What is at (x, y)?" about
    the target's centre, and the answer ``meta["describe_answer"]`` (``"the red circle"``,
    :func:`sim.screens.instruction.refer`); ``meta["describe_point"]`` holds the normalized
    point. An auxiliary task for training splits: it makes the model say what it sees at a
    place, in the words instructions use.

    >>> SyntheticSource("basic").sample(7).sample_id
    'basic:7'
    """

    num_samples: int | None = None

    def __init__(
        self,
        level: ScreenLevel | str,
        cache_size: int = 8,
        targets_per_screen: int = 1,
        describe_mix: float = 0.0,
    ) -> None:
        if isinstance(targets_per_screen, bool) or not isinstance(targets_per_screen, int):
            raise ValueError(f"targets_per_screen must be an int, got {targets_per_screen!r}")
        if targets_per_screen < 1:
            raise ValueError(f"targets_per_screen must be >= 1, got {targets_per_screen}")
        if not 0.0 <= describe_mix < 1.0:
            raise ValueError(f"describe_mix must be in [0, 1), got {describe_mix!r}")
        self.describe_mix = float(describe_mix)
        self.level = get_level(level)
        self.name = self.level.name
        self.targets_per_screen = targets_per_screen
        sizes = self.level.sizes
        self.image_size = sizes[0] if len(sizes) == 1 else None
        self.charset = BASE_CHARSET
        self._cache = _LRU(cache_size)
        self._screens = _LRU(max(1, cache_size // targets_per_screen + 1))  # K > 1 only

    def sample(self, key: int) -> GroundingSample:
        """The screen of seed ``key`` (a non-negative int) as a sample."""
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        k = self.targets_per_screen
        base = int(key) - int(key) % k
        if k == 1:
            screen = generate_screen(self.level, base)
        else:
            screen = self._screens.get(base)
            if screen is None:
                screen = generate_screen(self.level, base)
                self._screens.put(base, screen)
            screen = retarget_screen(screen, self.level, int(key) % k)
        meta = {
            "level": self.level.name,
            "seed": int(key),
            "reference": screen.reference,
            "target_index": screen.target_index,
        }
        if k > 1:
            meta["screen_seed"] = base
        if screen.panel_box_norm is not None:
            meta["panel_box_norm"] = screen.panel_box_norm
        instruction = screen.instruction
        if self.describes(int(key)):
            x0, y0, x1, y1 = screen.target_box_norm
            point = ((x0 + x1) / 2, (y0 + y1) / 2)
            instruction = f"What is at ({point[0]:.3f}, {point[1]:.3f})?"
            meta["describe_point"] = point
            meta["describe_answer"] = refer(screen.target)
        sample = GroundingSample(
            image=screen.image,
            instruction=instruction,
            target_box_norm=screen.target_box_norm,
            elements=screen.elements,
            sample_id=f"{self.level.name}:{key}",
            meta=meta,
        )
        self._cache.put(key, sample)
        return sample

    def describes(self, key: int) -> bool:
        """Whether key ``key`` is a describe task (a seeded draw with probability
        ``describe_mix``, the same on every machine)."""
        if self.describe_mix <= 0.0:
            return False
        return bool(np.random.default_rng([int(key), 0xD35C]).random() < self.describe_mix)


class ScreenSpotSource:
    """ScreenSpot v1 / v2 / Pro annotations with images loaded lazily from ``image_dir``.

    Records are validated when the file is loaded; an image is read when its sample is first
    asked for (the last ``cache_images`` images are kept).

    Args:
        annotation_file: JSON list of records (``img_filename``, ``bbox``, ``instruction``,
            optional ``img_size`` and extras such as ``platform``, ``ui_type``).
        image_dir: directory that ``img_filename`` is relative to.
        version: ``"v1"`` (bbox ``[x, y, w, h]``), ``"v2"`` or ``"pro"`` (``[x0, y0, x1, y1]``);
            ``None`` detects the convention when only one fits every record.
        cache_images: decoded images kept in memory.

    Raises:
        GroundingDataError: unreadable file, bad record, bad bbox or undecidable convention.
    """

    def __init__(
        self,
        annotation_file: str | Path,
        image_dir: str | Path,
        version: Version | None = None,
        cache_images: int = 4,
    ) -> None:
        self.annotation_file = Path(annotation_file)
        self.image_dir = Path(image_dir)
        if version is not None and version not in BOX_FORMATS:
            raise GroundingEnvError(
                f"ScreenSpotSource: version {version!r} is unknown; known: v1, v2, pro, None"
            )
        raw = self._read_json()
        self.records = tuple(parse_record(r, self.annotation_file, i) for i, r in enumerate(raw))
        if not self.records:
            raise GroundingDataError(f"{self.annotation_file}: holds no records")
        self.version = version
        self.box_format: BoxFormat = (
            BOX_FORMATS[version]
            if version
            else detect_box_format(self.records, self.annotation_file)
        )
        for i, rec in enumerate(self.records):
            why = box_problem(to_xyxy(rec.bbox, self.box_format), rec.img_size)
            if why is not None:
                raise bbox_error(self.annotation_file, i, rec, self.box_format, why)
        self.name = self.annotation_file.stem
        self.num_samples = len(self.records)
        sizes = {rec.img_size for rec in self.records}
        self.image_size = sizes.pop() if len(sizes) == 1 and None not in sizes else None
        self.charset = BASE_CHARSET | {c for rec in self.records for c in rec.instruction}
        self._ids = {self.sample_id(i): i for i in range(len(self.records))}
        self._images = _LRU(cache_images)

    def __len__(self) -> int:
        return len(self.records)

    def _read_json(self) -> list[Any]:
        path = self.annotation_file
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as err:
            raise GroundingDataError(f"{path}: annotation file does not exist") from err
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise GroundingDataError(f"{path}: cannot read annotations as JSON: {err}") from err
        if not isinstance(raw, list):
            raise GroundingDataError(
                f"{path}: expected a JSON list of records, got {type(raw).__name__}"
            )
        return raw

    def sample_id(self, index: int) -> str:
        """Stable id of record ``index``: ``"<file stem>:<index>"``."""
        return f"{self.name}:{index}"

    def index_of(self, sample_id: str) -> int:
        """Record index of a :meth:`sample_id`.

        Raises:
            GroundingEnvError: if the id is not one of this source's.
        """
        if sample_id not in self._ids:
            raise GroundingEnvError(
                f"{self.annotation_file}: no sample id {sample_id!r}; ids look like {self.sample_id(0)!r}"
            )
        return self._ids[sample_id]

    def _image(self, index: int, rec: ScreenSpotRecord) -> np.ndarray:
        path = self.image_dir / rec.img_filename
        cached = self._images.get(path)
        if cached is not None:
            return cached
        where = f"{self.annotation_file}: record {index}"
        if not path.is_file():
            raise GroundingDataError(
                f"{where}: image {path} does not exist (img_filename {rec.img_filename!r}); "
                f"put the ScreenSpot images under {self.image_dir}"
            )
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(path) as img:
                pixels = np.asarray(img.convert("RGB"))
        except (OSError, UnidentifiedImageError) as err:
            raise GroundingDataError(f"{where}: cannot decode image {path}: {err}") from err
        size = (pixels.shape[1], pixels.shape[0])
        if rec.img_size is not None and tuple(rec.img_size) != size:
            raise GroundingDataError(
                f"{where}: field 'img_size': {list(rec.img_size)} but image {path} is {list(size)} (w, h)"
            )
        pixels.setflags(write=False)
        self._images.put(path, pixels)
        return pixels

    def sample(self, key: int) -> GroundingSample:
        """Record ``key`` (0-based index) with its image.

        Raises:
            GroundingEnvError: index out of range.
            GroundingDataError: missing / undecodable image, size mismatch, bbox off the image.
        """
        if (
            isinstance(key, bool)
            or not isinstance(key, (int, np.integer))
            or not 0 <= key < len(self)
        ):
            raise GroundingEnvError(
                f"{self.annotation_file}: index {key!r} not in [0, {len(self)})"
            )
        index = int(key)
        rec = self.records[index]
        image = self._image(index, rec)
        width, height = image.shape[1], image.shape[0]
        xyxy = to_xyxy(rec.bbox, self.box_format)
        why = box_problem(xyxy, (width, height))
        if why is not None:
            raise bbox_error(self.annotation_file, index, rec, self.box_format, why)
        x0, y0, x1, y1 = xyxy
        meta = {
            k: v for k, v in (rec.model_extra or {}).items() if isinstance(v, (str, int, float))
        }
        meta.update(img_filename=rec.img_filename, index=index, bbox_px=tuple(xyxy))
        return GroundingSample(
            image=image,
            instruction=rec.instruction,
            target_box_norm=(x0 / width, y0 / height, x1 / width, y1 / height),
            elements=(),
            sample_id=self.sample_id(index),
            meta=meta,
        )
