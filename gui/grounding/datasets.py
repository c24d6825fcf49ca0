"""Grounding samples from the user's own files: :class:`DatasetSource`.

JSONL, JSON (a list of records), Parquet, a ``datasets`` ``save_to_disk`` folder or a hub
dataset id, read through a :class:`~gui.grounding.dataset_schema.ColumnMapping` (or a preset
of :mod:`gui.grounding.dataset_presets`). Every row is checked when the source is built; a bad
row (missing image, target outside the image, inverted box, wrong types, empty instruction,
NaN) is recorded as a :class:`RowProblem` and skipped, never fatal unless no row survives.

>>> src = DatasetSource("train.jsonl", {"bbox": "box", "coords": "xyxy_norm"})  # doctest: +SKIP
>>> src.report()["kept"]  # doctest: +SKIP
20
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from gui.errors import GroundingDataError, GroundingEnvError
from gui.grounding.dataset_images import (
    ImageProblem,
    ImageRef,
    check_exists,
    decode,
    header_size,
    image_ref,
)
from gui.grounding.dataset_presets import resolve_mapping
from gui.grounding.dataset_readers import open_table
from gui.grounding.dataset_schema import (
    MISSING,
    ColumnMapping,
    RowProblem,
    SizeValues,
    TargetValues,
    column_label,
    first_error,
    flatten_numbers,
    get_path,
    read_ref,
    target_box_norm,
)
from gui.grounding.sources import _LRU, BASE_CHARSET, BoxNorm, GroundingSample

log = logging.getLogger(__name__)
DEFAULT_POINT_RADIUS = 0.02
"""Half-side of the box around a point target, as a fraction of the image width / height."""
_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class _Row:
    """A row that passed every check. ``image``: its file, or ``None`` when the image is
    stored in the row (bytes are read again from the table when the sample is decoded)."""

    row: int
    instruction: str
    box: BoxNorm
    size: tuple[int, int]
    image: Path | None
    meta: dict[str, Any]


def _meta_value(value: Any) -> Any:
    """A JSON-friendly copy of a meta value, or MISSING for values that are not."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, _SCALARS) for v in value):
        return list(value)
    return MISSING


class DatasetSource:
    """Grounding samples from a data file through a column mapping; the key is the kept-row
    index ``0 .. num_samples - 1``.

    Args:
        path: a ``.jsonl`` / ``.json`` / ``.parquet`` file, a ``save_to_disk`` folder or a hub id.
        columns: a :class:`ColumnMapping` or a dict of its fields (over the preset's).
        preset: a name in :data:`~gui.grounding.dataset_presets.PRESETS`.
        format: ``auto`` | jsonl | json | parquet | hf_disk | hf_hub.
        image_root: folder that relative image paths start from (default: the file's folder).
        split: split of a ``DatasetDict`` folder or hub dataset.
        max_rows: read only the first rows (0: all).
        success_only: keep rows whose ``success`` column is true (needs that column).
        min_reward: keep rows whose ``reward`` column is >= this (needs that column).
        point_radius: half-side of the box around a point target (fraction of each side).
        name: source name used in sample ids (default: the file stem).
        cache_size: decoded samples kept in memory.

    Raises:
        GroundingDataError: unreadable data, bad mapping or options, or no usable row (the
            message lists the first problems).
    """

    def __init__(
        self,
        path: str | Path,
        columns: ColumnMapping | Mapping[str, Any] | None = None,
        *,
        preset: str | None = None,
        format: str = "auto",
        image_root: str | Path | None = None,
        split: str = "train",
        max_rows: int = 0,
        success_only: bool = False,
        min_reward: float | None = None,
        point_radius: float = DEFAULT_POINT_RADIUS,
        name: str | None = None,
        cache_size: int = 64,
    ) -> None:
        self.mapping = resolve_mapping(preset, columns)
        if not 0.0 < point_radius <= 0.5:
            raise GroundingDataError(f"point_radius must be in (0, 0.5], got {point_radius}")
        if max_rows < 0:
            raise GroundingDataError(f"max_rows must be >= 0, got {max_rows}")
        if success_only and self.mapping.success is None:
            raise GroundingDataError("success_only needs a 'success' column in the mapping")
        if min_reward is not None and self.mapping.reward is None:
            raise GroundingDataError("min_reward needs a 'reward' column in the mapping")
        self.success_only, self.min_reward, self.point_radius = (
            success_only,
            min_reward,
            point_radius,
        )
        self.image_root = Path(image_root) if image_root else None
        self.table = open_table(str(path), format, split)
        self.file = self.table.label
        self.problems: list[RowProblem] = []
        self.rows_read = self.filtered = 0
        kept: list[_Row] = []
        for i, rec in self.table.rows(max_rows):
            self.rows_read += 1
            out = rec if isinstance(rec, RowProblem) else self._check_row(i, rec)
            if isinstance(out, RowProblem):
                self.problems.append(out)
            elif out is None:
                self.filtered += 1
            else:
                kept.append(out)
        if not kept:
            first = "; ".join(str(p) for p in self.problems[:5]) or "every row was filtered out"
            raise GroundingDataError(
                f"{self.file}: no usable row among {self.rows_read} "
                f"({len(self.problems)} skipped, {self.filtered} filtered): {first}"
            )
        self._rows = tuple(kept)
        self.name = name or Path(self.file.rstrip("/")).stem or "data"
        self.num_samples: int | None = len(kept)
        sizes = {r.size for r in kept}
        self.image_size = sizes.pop() if len(sizes) == 1 else None
        self.charset = BASE_CHARSET | {c for r in kept for c in r.instruction}
        self._samples = _LRU(cache_size)
        self._images = _LRU(max(4, cache_size // 4))
        self.report()

    def __len__(self) -> int:
        return len(self._rows)

    # ---- load-time checks -------------------------------------------------------------------

    def _problem(self, row: int, field: str, msg: str, reason: str = "bad_value") -> RowProblem:
        return RowProblem(self.file, row, field, msg, reason)

    def _optional_str(self, rec: Any, row: int, path: str | None) -> str | None | RowProblem:
        if path is None:
            return None
        value = get_path(rec, path)
        if value is MISSING or value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)  # an id or typed text written as a number
        if not isinstance(value, str):
            return self._problem(row, path, f"must be a string, got {type(value).__name__}")
        return value

    def _keep(self, rec: Any, row: int) -> bool | RowProblem:
        """The success_only / min_reward filters (True: keep)."""
        m = self.mapping
        if self.success_only:
            ok = get_path(rec, m.success)  # type: ignore[arg-type]
            if ok not in (True, False, None, MISSING):
                return self._problem(row, str(m.success), f"must be true or false, got {ok!r}")
            if ok is not True:
                return False
        if self.min_reward is not None:
            r = get_path(rec, m.reward)  # type: ignore[arg-type]
            if r is MISSING or r is None:
                return False
            if isinstance(r, bool) or not isinstance(r, (int, float)):
                return self._problem(row, str(m.reward), f"must be a number, got {r!r}")
            if not r >= self.min_reward:  # NaN is dropped too
                return False
        return True

    def _check_row(self, row: int, rec: dict[str, Any]) -> _Row | RowProblem | None:
        """A kept row, the row's first problem, or ``None`` when a filter drops it."""
        m = self.mapping
        keep = self._keep(rec, row)
        if keep is not True:
            return keep or None
        instruction = get_path(rec, m.instruction)
        if instruction is MISSING or instruction is None:
            return self._problem(row, m.instruction, "is missing", "missing_field")
        if not isinstance(instruction, str):
            what = f"must be a string, got {type(instruction).__name__} {instruction!r:.60}"
            return self._problem(row, m.instruction, what)
        if not instruction.strip():
            return self._problem(row, m.instruction, "is empty", "empty_instruction")
        texts = {}
        for key in ("action_type", "text", "id", "demo_text"):
            value = self._optional_str(rec, row, getattr(m, key))
            if isinstance(value, RowProblem):
                return value
            texts[key] = value
        action = texts["action_type"].strip().lower() if texts["action_type"] else None
        values = self._target(rec, row, action)
        if isinstance(values, RowProblem):
            return values
        size = self._size(rec, row)
        if isinstance(size, RowProblem):
            return size
        image = self._image(rec, row)
        if isinstance(image, RowProblem):
            return image
        try:
            size = header_size(image) if size is None else size
            check_exists(image)
        except ImageProblem as err:
            return self._problem(row, m.image, str(err), err.reason)
        box, why = target_box_norm(values, m.coords, size, self.point_radius)
        if why is not None:
            label = column_label(m.target)
            return self._problem(row, label, f"{values} read as {m.coords} {why}", "bad_box")
        meta = self._meta(rec)
        texts["action_type"] = action
        meta.update({k: v for k, v in texts.items() if v is not None})
        meta.update(row=row, file=self.file)
        return _Row(row, instruction, box, size, image if isinstance(image, Path) else None, meta)

    def _target(self, rec: Any, row: int, action: str | None) -> list[float] | RowProblem:
        m = self.mapping
        label = column_label(m.target)
        raw, missing = read_ref(rec, m.target)
        if missing is not None:
            if action is not None:
                why = f"is missing: action_type {action!r} has no on-screen target"
                return self._problem(row, missing, why, "no_target")
            return self._problem(row, missing, "is missing", "missing_field")
        values = flatten_numbers(raw)
        try:
            values = TargetValues(values=values).values
        except ValidationError as err:
            return self._problem(row, label, first_error(err))
        if all(v < 0 for v in values):  # GUI-R1 writes [-100, -100] for non-click actions
            why = f"{values} is no on-screen target (action_type {action!r})"
            return self._problem(row, label, why, "no_target")
        return values

    def _size(self, rec: Any, row: int) -> tuple[int, int] | None | RowProblem:
        m = self.mapping
        if m.img_size is None:
            return None
        raw, missing = read_ref(rec, m.img_size)
        if missing is not None:
            return None
        try:
            return SizeValues(values=flatten_numbers(raw)).values
        except ValidationError as err:
            return self._problem(row, column_label(m.img_size), first_error(err))

    def _image(self, rec: Any, row: int) -> ImageRef | RowProblem:
        """The row's image reference (a path relative to ``image_root`` / the file's folder)."""
        field = self.mapping.image
        value = get_path(rec, field)
        if value is MISSING or value is None:
            return self._problem(row, field, "is missing", "missing_field")
        try:
            return image_ref(value, self.image_root or self.table.folder or Path.cwd())
        except ImageProblem as err:
            return self._problem(row, field, str(err), err.reason)

    def _meta(self, rec: Any) -> dict[str, Any]:
        m = self.mapping
        meta: dict[str, Any] = {}
        extra = get_path(rec, m.meta_dict) if m.meta_dict else None
        if isinstance(extra, Mapping):
            for k, v in extra.items():
                v = _meta_value(v)
                if v is not MISSING:
                    meta[str(k)] = v
        for key, ref in m.meta.items():
            for path in [ref] if isinstance(ref, str) else ref:
                value = _meta_value(get_path(rec, path))
                if value is not MISSING and value is not None:
                    meta[key] = value
                    break
        return meta

    # ---- samples ----------------------------------------------------------------------------

    def _decode(self, r: _Row) -> np.ndarray:
        key = r.image if r.image is not None else ("row", r.row)
        cached = self._images.get(key)
        if cached is not None:
            return cached
        field = self.mapping.image
        ref = r.image if r.image is not None else self._image(self.table.row(r.row), r.row)
        if isinstance(ref, RowProblem):
            raise GroundingDataError(str(ref))
        try:
            pixels = decode(ref)
        except ImageProblem as err:
            raise GroundingDataError(f"{self.file}: row {r.row}: field {field!r}: {err}") from err
        size = (int(pixels.shape[1]), int(pixels.shape[0]))
        if size != r.size:
            label = column_label(self.mapping.img_size or field)
            raise GroundingDataError(
                f"{self.file}: row {r.row}: field {label!r}: size {list(r.size)} but the "
                f"decoded image is {list(size)} (w, h)"
            )
        pixels.setflags(write=False)
        self._images.put(key, pixels)
        return pixels

    def sample(self, key: int) -> GroundingSample:
        """Kept row ``key`` (0-based) with its decoded image.

        Raises:
            GroundingEnvError: key out of range.
            GroundingDataError: the image vanished, cannot be decoded or has another size.
        """
        if (
            isinstance(key, bool)
            or not isinstance(key, (int, np.integer))
            or not (0 <= key < len(self._rows))
        ):
            raise GroundingEnvError(f"{self.file}: index {key!r} not in [0, {len(self._rows)})")
        index = int(key)
        hit = self._samples.get(index)
        if hit is not None:
            return hit
        r = self._rows[index]
        sample = GroundingSample(
            image=self._decode(r),
            instruction=r.instruction,
            target_box_norm=r.box,
            sample_id=f"{self.name}:{index}",
            meta=dict(r.meta),
        )
        self._samples.put(index, sample)
        return sample

    def report(self, log_summary: bool = True) -> dict[str, Any]:
        """Counts of the load: rows read, kept, skipped (by reason), missing images, filtered.

        Logs one warning summary (with the first problem) when rows were skipped.
        """
        by_reason = Counter(p.reason for p in self.problems)
        out = {
            "file": self.file,
            "rows_read": self.rows_read,
            "kept": len(self._rows),
            "skipped": len(self.problems),
            "skipped_by_reason": dict(sorted(by_reason.items())),
            "missing_images": by_reason.get("missing_image", 0),
            "filtered": self.filtered,
        }
        if self.problems and log_summary:
            reasons = ", ".join(f"{k} {v}" for k, v in out["skipped_by_reason"].items())
            log.warning(
                "%s: kept %d of %d rows; skipped %d (%s); first: %s",
                self.file,
                out["kept"],
                self.rows_read,
                len(self.problems),
                reasons,
                self.problems[0],
            )
        return out
