"""Column mappings of user grounding data and the checks every row goes through.

A :class:`ColumnMapping` says which column of a row holds the image, the instruction and the
target (a ``bbox`` or a ``point``) and in which coordinate convention (``coords``):

============== ===================================================================
``xyxy_px``    ``[x0, y0, x1, y1]`` pixels of the original image
``xywh_px``    ``[x, y, w, h]`` pixels (ScreenSpot v1)
``xyxy_norm``  ``[x0, y0, x1, y1]`` in [0, 1] of the image width / height
``xyxy_k1000`` ``[x0, y0, x1, y1]`` in [0, 1000] (Qwen2-VL / GUI-Odyssey style)
``point_px``   ``[x, y]`` pixels
``point_norm`` ``[x, y]`` in [0, 1]
``point_k1000`` ``[x, y]`` in [0, 1000]
============== ===================================================================

A ``bbox`` column whose value holds only two numbers is read as a point in the same space
(GUI-R1 stores ``gt_bbox`` as a box or a point). Values may be a list, a nested list
(``[[x, y]]``), a ``{"x": .., "y": ..}`` dict or a JSON string of a list. A point target
becomes the box ``point ± point_radius`` (a fraction of the image width / height; default
0.02, i.e. 4 % of each side) clipped to the image.

Column paths may be nested (``action.point``, ``meta.action_type``; a list index is a number:
``steps.0.x``); a key that contains the dots literally wins over the nested reading. A column
given as a list of paths (``point: [action.x, action.y]``) concatenates their values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    Strict,
    ValidationError,
    model_validator,
)

from gui.grounding.screenspot_schema import box_problem

Coords = Literal[
    "xyxy_px", "xywh_px", "xyxy_norm", "xyxy_k1000", "point_px", "point_norm", "point_k1000"
]
COORDS: tuple[str, ...] = Coords.__args__  # type: ignore[attr-defined]
ColumnRef = str | list[str]
"""One column path, or several whose values are concatenated (``[action.x, action.y]``)."""
MISSING = object()
"""What :func:`get_path` returns for a column the row does not have."""
Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
"""An int or float, never a bool, a string, NaN or infinity."""


class ColumnMapping(BaseModel):
    """Which column holds what, and the target's coordinate convention.

    Only ``image``, ``instruction`` and the target (``bbox`` or ``point``) are required in
    every row; a row without an optional column simply lacks that value.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str = "image"
    """Image: a path (relative to ``image_root`` or the data file's folder, or absolute), raw
    bytes, a ``{"bytes": ..., "path": ...}`` dict (HF / parquet) or a PIL image."""
    instruction: str = "instruction"
    """What to click (a non-empty string)."""
    bbox: ColumnRef | None = None
    """Target box column(s); the default when neither bbox nor point is given is ``bbox``."""
    point: ColumnRef | None = None
    """Target point column(s) (with a ``point_*`` convention)."""
    coords: Coords = "xyxy_px"
    """Convention of the target numbers (module docstring)."""
    action_type: str | None = None
    """Ground-truth action type (click, type, scroll, ...): lowercased into meta["action_type"]."""
    text: str | None = None
    """Ground-truth typed text: meta["text"]."""
    id: str | None = None
    """The row's own id: meta["id"]."""
    img_size: ColumnRef | None = None
    """``[width, height]`` in pixels; without it the image header is read at load."""
    meta: dict[str, ColumnRef] = Field(default_factory=dict)
    """meta key -> column path (a list of paths: the first one the row has)."""
    meta_dict: str | None = None
    """A column holding a dict merged into meta (the keys of ``meta`` win)."""
    demo_text: str | None = None
    """A column of recorded model answers: meta["demo_text"] (SFT on recorded text)."""
    success: str | None = None
    """A bool column that ``success_only`` filters on."""
    reward: str | None = None
    """A number column that ``min_reward`` filters on."""

    @model_validator(mode="before")
    @classmethod
    def _default_target(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("bbox") is None and data.get("point") is None:
            return {**data, "bbox": "bbox"}
        return data

    @model_validator(mode="after")
    def _check_target(self) -> ColumnMapping:
        if self.bbox is not None and self.point is not None:
            raise ValueError("give a bbox column or a point column, not both")
        if self.point is not None and not self.coords.startswith("point_"):
            raise ValueError(
                f"a point column needs coords point_px|point_norm|point_k1000, got {self.coords!r}"
            )
        if self.bbox is not None and self.coords.startswith("point_"):
            raise ValueError(f"coords {self.coords!r} goes with a point column, not bbox")
        return self

    @property
    def target(self) -> ColumnRef:
        """The target column(s): ``bbox`` or ``point``."""
        return self.bbox if self.bbox is not None else self.point  # type: ignore[return-value]


def mapping_from(value: ColumnMapping | Mapping[str, Any] | None) -> ColumnMapping:
    """A :class:`ColumnMapping` from itself, a dict of its fields or ``None`` (defaults).

    Raises:
        ValueError: ``columns.<field>: why`` (or ``columns: why`` for the mapping as a whole).
    """
    if isinstance(value, ColumnMapping):
        return value
    try:
        return ColumnMapping.model_validate(dict(value or {}))
    except ValidationError as err:
        lines = []
        for e in err.errors():
            msg = e["msg"].removeprefix("Value error, ")
            where = ".".join(str(p) for p in e["loc"][:1])
            lines.append(f"columns.{where}: {msg} (got {e['input']!r})" if where else msg)
        text = "; ".join(lines)
        raise ValueError(text if text.startswith("columns.") else f"columns: {text}") from None


@dataclass(frozen=True)
class RowProblem:
    """Why one row was skipped: ``file``, 0-based ``row`` (record index; blank JSONL lines do
    not count), the data's ``field`` (column path) and a message.

    ``reason`` groups problems in :meth:`DatasetSource.report`: missing_image, bad_image,
    missing_field, no_target, bad_value, bad_box, empty_instruction, bad_row.
    """

    file: str
    row: int
    field: str
    message: str
    reason: str = "bad_value"

    def __str__(self) -> str:
        return f"{self.file}: row {self.row}: field {self.field!r}: {self.message}"


def get_path(record: Any, path: str) -> Any:
    """The value at a column path (``a.b.0``) of a row, or :data:`MISSING`."""
    if isinstance(record, Mapping) and path in record:
        return record[path]
    node = record
    for part in path.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, (list, tuple)) and part.isdecimal() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node


def column_label(ref: ColumnRef) -> str:
    """A column reference as messages name it."""
    return ref if isinstance(ref, str) else "+".join(ref)


def flatten_numbers(value: Any) -> Any:
    """Target / size values as one flat list: ``[[x, y]]`` -> ``[x, y]``, ``{"x", "y"}`` ->
    ``[x, y]``, ``"[1, 2]"`` -> ``[1, 2]``; other values are returned as they are."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, Mapping) and set(value) >= {"x", "y"}:
        return [value["x"], value["y"]]
    if isinstance(value, (list, tuple)):
        out: list[Any] = []
        for v in value:
            inner = flatten_numbers(v)
            out.extend(inner if isinstance(inner, list) else [inner])
        return out
    return value


def read_ref(record: Any, ref: ColumnRef) -> tuple[Any, str | None]:
    """The value of a column reference and the first missing path (or ``None``)."""
    if isinstance(ref, str):
        value = get_path(record, ref)
        return value, (ref if value is MISSING or value is None else None)
    parts: list[Any] = []
    for path in ref:
        value = get_path(record, path)
        if value is MISSING or value is None:
            return MISSING, path
        value = flatten_numbers(value)
        parts.extend(value if isinstance(value, list) else [value])
    return parts, None


class TargetValues(BaseModel):
    """A target (2 or 4 numbers) as pydantic checks it."""

    values: list[Number] = Field(min_length=2, max_length=4)


class SizeValues(BaseModel):
    """An image size ``[width, height]`` in pixels."""

    values: tuple[PositiveInt, PositiveInt]


def first_error(err: ValidationError) -> str:
    """Pydantic's first error as ``message (got value)``."""
    e = err.errors()[0]
    where = "".join(f"[{p}]" for p in e["loc"][1:])
    return f"{where + ': ' if where else ''}{e['msg']} (got {e['input']!r})"


def _norm_problem(box: Sequence[float], tol: float = 1e-6) -> str | None:
    x0, y0, x1, y1 = box
    if not (x1 > x0 and y1 > y0):
        return "is empty or inverted (needs x1 > x0 and y1 > y0)"
    if min(box) < -tol or max(box) > 1 + tol:
        return "lies partly outside the image"
    return None


def target_box_norm(
    values: Sequence[float], coords: str, size: tuple[int, int], radius: float
) -> tuple[tuple[float, float, float, float] | None, str | None]:
    """Target numbers in ``coords`` on an image of ``size = (w, h)`` -> normalized xyxy box.

    A point becomes ``point ± radius`` (fraction of each side) clipped to [0, 1].

    Returns:
        ``(box, None)`` or ``(None, why)`` when the target is unusable.
    """
    w, h = size
    space = coords.rsplit("_", 1)[1]
    n = len(values)
    if coords.startswith("point_") and n != 2:
        return None, f"needs 2 numbers [x, y] for {coords}, got {n}"
    if n not in (2, 4):
        return None, f"needs 4 numbers (a box) or 2 (a point), got {n}"
    scale = {"px": (float(w), float(h)), "norm": (1.0, 1.0), "k1000": (1000.0, 1000.0)}[space]
    if n == 2:
        x, y = values[0] / scale[0], values[1] / scale[1]
        if not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):
            return None, f"point {list(values)} ({space}) lies outside the image {[w, h]}"
        box = (
            max(0.0, x - radius),
            max(0.0, y - radius),
            min(1.0, x + radius),
            min(1.0, y + radius),
        )
        return box, None
    if coords == "xywh_px":
        x, y, bw, bh = values
        values = (x, y, x + bw, y + bh)
    if space == "px":
        why = box_problem(values, (w, h))
        if why is not None:
            return None, why
    box = tuple(v / s for v, s in zip(values, scale * 2, strict=True))
    if space != "px":
        why = _norm_problem(box)
        if why is not None:
            return None, why
    clipped = tuple(min(1.0, max(0.0, v)) for v in box)  # float noise of norm boxes
    return clipped, None  # type: ignore[return-value]
