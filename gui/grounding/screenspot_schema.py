"""ScreenSpot annotation records: pydantic validation and the bbox convention of each release.

ScreenSpot v1 stores ``bbox = [x, y, w, h]`` pixels; v2 and Pro store ``[x0, y0, x1, y1]``
pixels. Both carry ``img_filename`` and ``instruction``; ``img_size = [w, h]`` is optional.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, PositiveInt, ValidationError

from gui.errors import GroundingDataError
from perception_tools.geometry import xywh_to_xyxy

Version = Literal["v1", "v2", "pro"]
BoxFormat = Literal["xywh", "xyxy"]
BOX_FORMATS: dict[str, BoxFormat] = {"v1": "xywh", "v2": "xyxy", "pro": "xyxy"}


class ScreenSpotRecord(BaseModel):
    """One annotation: an instruction and the pixel bbox of its target in one screenshot."""

    model_config = ConfigDict(extra="allow", frozen=True)

    img_filename: str = Field(min_length=1)
    """Image path relative to the image directory."""
    bbox: list[FiniteFloat] = Field(min_length=4, max_length=4)
    """Pixels; ``[x, y, w, h]`` (v1) or ``[x0, y0, x1, y1]`` (v2, Pro)."""
    instruction: str = Field(min_length=1)
    """What to click."""
    img_size: tuple[PositiveInt, PositiveInt] | None = None
    """``[width, height]`` of the image in pixels, when the release records it."""


def parse_record(raw: object, path: Path, index: int) -> ScreenSpotRecord:
    """Validate one raw JSON record.

    Raises:
        GroundingDataError: naming ``path``, ``index``, the failing field and its value.
    """
    try:
        return ScreenSpotRecord.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(record)"
        raise GroundingDataError(
            f"{path}: record {index}: field {field!r}: {first['msg']} (got {first['input']!r})"
        ) from err


def to_xyxy(bbox: Sequence[float], box_format: BoxFormat) -> tuple[float, float, float, float]:
    """Pixel bbox in ``box_format`` -> ``(x0, y0, x1, y1)`` pixels."""
    if box_format == "xywh":
        return xywh_to_xyxy(bbox)
    x0, y0, x1, y1 = bbox
    return x0, y0, x1, y1


def box_problem(xyxy: Sequence[float], img_size: tuple[int, int] | None) -> str | None:
    """Why a pixel xyxy box is unusable (empty, or outside the ``(w, h)`` image), or ``None``."""
    x0, y0, x1, y1 = xyxy
    if not (x1 > x0 and y1 > y0):
        return "is empty or inverted (needs x1 > x0 and y1 > y0)"
    if x0 < 0 or y0 < 0:
        return "starts left of or above the image"
    if img_size is not None and (x1 > img_size[0] or y1 > img_size[1]):
        return f"reaches past the image of size {list(img_size)} (w, h)"
    return None


def bbox_error(
    path: Path, index: int, record: ScreenSpotRecord, box_format: BoxFormat, why: str
) -> GroundingDataError:
    """The error for a record whose bbox is unusable under ``box_format``."""
    layout = "[x, y, w, h]" if box_format == "xywh" else "[x0, y0, x1, y1]"
    return GroundingDataError(
        f"{path}: record {index}: field 'bbox': {list(record.bbox)} read as {layout} pixels {why}"
    )


def detect_box_format(records: Sequence[ScreenSpotRecord], path: Path) -> BoxFormat:
    """The bbox convention of a file, when exactly one convention fits every record.

    Records without ``img_size`` only count against ``xyxy`` when their box is inverted.

    Raises:
        GroundingDataError: when both conventions fit (pass ``version=``) or neither does
            (names the first bad record under the closer fit).
    """
    bad: dict[BoxFormat, list[tuple[int, str]]] = {"xyxy": [], "xywh": []}
    for i, rec in enumerate(records):
        for fmt in ("xyxy", "xywh"):
            why = box_problem(to_xyxy(rec.bbox, fmt), rec.img_size)
            if why is not None:
                bad[fmt].append((i, why))
    fits = [fmt for fmt in ("xyxy", "xywh") if not bad[fmt]]
    if len(fits) == 1:
        return fits[0]
    if len(fits) == 2:
        raise GroundingDataError(
            f"{path}: cannot tell ScreenSpot v1 (bbox [x, y, w, h]) from v2/pro "
            f"(bbox [x0, y0, x1, y1]): every bbox fits both; pass version='v1', 'v2' or 'pro'"
        )
    closer: BoxFormat = "xyxy" if len(bad["xyxy"]) <= len(bad["xywh"]) else "xywh"
    index, why = bad[closer][0]
    raise bbox_error(path, index, records[index], closer, why)
