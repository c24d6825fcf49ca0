"""Stand-in screenshots for a ScreenSpot annotation file whose real images are not at hand.

The ScreenSpot v1 / v2 / Pro screenshots are distributed separately and may not be shipped with
this repository; the annotations (``img_filename``, ``bbox``, ``instruction``, ``img_size``,
category fields) are. :func:`make_standins` draws, for every image file the records name, a
light synthetic desktop of the record's ``img_size`` (w, h pixels) in which each record's target
is a labelled widget exactly at its ``bbox`` (a text button carrying the instruction's words
for ``text`` targets, a pictogram for ``icon`` targets) and distractor widgets fill the rest. An
evaluation over the stand-ins runs the real pipeline end to end (loading, prompting, parsing,
scoring, per-category tables); its accuracy says nothing about the real benchmark.

Several records often share one screenshot (334 desktop v2 records name 231 files), so an image
is drawn once with every target of its records; it is deterministic: the same file name always
gives the same pixels (the seed is the CRC-32 of ``img_filename``).

Sizes: an image is drawn at the record's ``img_size``. A file without ``img_size`` gets a
1920x1080 canvas widened to contain every bbox. ``max_side`` > 0 draws a larger image scaled
down so its longer side is ``max_side``, and scales its records' bboxes by the same per-axis
factors; the written annotation file then records the stand-in's own ``img_size`` (and
``standin_scale``), so the evaluation reads consistent sizes. Box conventions: ``v1`` bboxes are
``[x, y, w, h]`` pixels, ``v2`` / ``pro`` ``[x0, y0, x1, y1]`` pixels; the written file keeps the
input's convention.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from sim.errors import SimError
from sim.screens.fonts import font, font_size_for, text_width
from sim.screens.icons import WINDOW_ICONS, draw_icon
from sim.screens.palette import BORDER, INK, LIGHT_BACKGROUNDS, PALETTE, SATURATED, SURFACE, ink_on
from sim.screens.vocab import ICON_NAMES, TEXT_LABELS

DEFAULT_SIZE = (1920, 1080)
"""Canvas ``(w, h)`` of an image whose records carry no ``img_size`` (widened to fit bboxes)."""
BOX_FORMATS = {"v1": "xywh", "v2": "xyxy", "pro": "xyxy"}
_ICON_WORDS = {
    "close": "close", "exit": "close", "minimi": "minimize", "maximi": "maximize",
    "search": "search", "find": "search", "setting": "gear", "gear": "gear", "home": "home",
    "delete": "trash", "trash": "trash", "remove": "trash", "notif": "bell", "bell": "bell",
    "add": "plus", "new": "plus", "create": "plus", "menu": "menu", "back": "back",
    "account": "user", "profile": "user", "user": "user", "mail": "mail", "email": "mail",
    "folder": "folder", "file": "folder", "play": "play", "star": "star", "favorite": "heart",
    "like": "heart", "check": "check", "confirm": "check",
}  # fmt: skip


class StandinError(SimError, ValueError):
    """The annotation file cannot be turned into stand-in images (names file, record, field)."""


@dataclass(frozen=True)
class Target:
    """One record's target on a stand-in: pixel box ``(x0, y0, x1, y1)`` of the drawn image,
    ``kind`` ``text`` or ``icon`` and the instruction it answers."""

    box: tuple[int, int, int, int]
    kind: str
    label: str


@dataclass(frozen=True)
class StandinSet:
    """What :func:`make_standins` wrote: the annotation file to evaluate with, the image folder
    (``image_dir`` for the loader), and counts of records, images and downscaled images."""

    annotation_file: Path
    image_dir: Path
    records: int
    images: int
    scaled: int


def _where(path: Path, index: int, field: str) -> str:
    return f"{path}: record {index}: field {field!r}"


def _check_record(raw: Any, path: Path, index: int) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise StandinError(f"{path}: record {index}: expected an object, got {type(raw).__name__}")
    name = raw.get("img_filename")
    if (
        not isinstance(name, str)
        or not name
        or Path(name).is_absolute()
        or ".." in Path(name).parts
    ):
        raise StandinError(
            f"{_where(path, index, 'img_filename')}: needs a relative path, got {name!r}"
        )
    bbox = raw.get("bbox")
    if (
        not isinstance(bbox, list)
        or len(bbox) != 4
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bbox)
        or not all(math.isfinite(v) for v in bbox)
    ):
        raise StandinError(f"{_where(path, index, 'bbox')}: needs 4 finite numbers, got {bbox!r}")
    size = raw.get("img_size")
    if size is not None and not (
        isinstance(size, list)
        and len(size) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)
    ):
        raise StandinError(
            f"{_where(path, index, 'img_size')}: needs [w, h] > 0 ints, got {size!r}"
        )
    return raw


def _xyxy(bbox: Sequence[float], fmt: str) -> tuple[float, float, float, float]:
    x0, y0, a, b = (float(v) for v in bbox)
    return (x0, y0, x0 + a, y0 + b) if fmt == "xywh" else (x0, y0, a, b)


def _from_xyxy(box: Sequence[float], fmt: str) -> list[float]:
    x0, y0, x1, y1 = box
    return [x0, y0, x1 - x0, y1 - y0] if fmt == "xywh" else [x0, y0, x1, y1]


def read_records(annotation_file: str | Path) -> list[dict[str, Any]]:
    """The JSON list of records of ``annotation_file``, each checked for the fields stand-ins need.

    Raises:
        StandinError: unreadable file, not a list, or a bad ``img_filename`` / ``bbox`` /
            ``img_size`` (naming the file, the record index and the field).
    """
    path = Path(annotation_file)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise StandinError(f"{path}: annotation file does not exist") from err
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise StandinError(f"{path}: cannot read annotations as JSON: {err}") from err
    if not isinstance(raw, list) or not raw:
        raise StandinError(f"{path}: expected a non-empty JSON list of records")
    return [_check_record(r, path, i) for i, r in enumerate(raw)]


def _kind(record: dict[str, Any]) -> str:
    value = record.get("data_type", record.get("ui_type", "text"))
    return "text" if str(value).lower() == "text" else "icon"


def _icon_name(label: str, rng: np.random.Generator) -> str:
    low = label.lower()
    for word, name in _ICON_WORDS.items():
        if word in low:
            return name
    names = ICON_NAMES + WINDOW_ICONS
    return names[int(rng.integers(len(names)))]


def _fit_text(text: str, width: int, size: int) -> str:
    """``text`` cut (with an ellipsis) to fit ``width`` pixels at font ``size``."""
    if text_width(text, size) <= width:
        return text
    while len(text) > 1 and text_width(text + "…", size) > width:
        text = text[:-1]
    return text + "…" if len(text) > 1 else ""


def _text_layout(label: str, w: int, h: int) -> tuple[list[str], int]:
    """Lines and font size that show ``label`` largest inside a ``w`` x ``h`` box (1-4 lines)."""
    words = label.split() or [label]
    best: tuple[list[str], int] = ([_fit_text(label, w - 4, 6)], 6)
    for n in range(1, min(4, len(words)) + 1):
        per = math.ceil(len(words) / n)
        lines = [" ".join(words[k : k + per]) for k in range(0, len(words), per)]
        size = min(font_size_for(h // len(lines)), max(6, int(h * 0.8 / len(lines))))
        while size > 6 and max(text_width(t, size) for t in lines) > w - 4:
            size -= 1
        if max(text_width(t, size) for t in lines) <= w - 4 and size > best[1]:
            best = (lines, size)
    return best


def _widget(
    draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], kind: str, label: str, rgb: tuple
) -> None:
    """A pictogram (``kind`` icon, ``label`` its name) or a button showing ``label``."""
    x0, y0, x1, y1 = box
    w, h = max(1, x1 - x0), max(1, y1 - y0)
    if kind == "icon":
        side = min(w, h)
        cx, cy = (x0 + x1) // 2, (y0 + y1) // 2
        sq = (cx - side // 2, cy - side // 2, cx - side // 2 + side, cy - side // 2 + side)
        draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=SURFACE)
        if side >= 4:
            draw_icon(draw, sq, label, rgb, SURFACE)
        return
    draw.rounded_rectangle((x0, y0, x1 - 1, y1 - 1), radius=max(1, min(h, 40) // 5), fill=rgb)
    if h < 6:
        return
    lines, size = _text_layout(label, w, h)
    draw.multiline_text(
        (x0 + w // 2, y0 + h // 2),
        "\n".join(lines),
        font=font(size),
        fill=ink_on(rgb),
        anchor="mm",
        align="center",
        spacing=max(1, size // 5),
    )


def _area(box: Sequence[int]) -> int:
    return (box[2] - box[0]) * (box[3] - box[1])


def _overlaps(box: Sequence[int], others: Sequence[Sequence[int]], pad: int) -> bool:
    x0, y0, x1, y1 = box
    return any(
        x0 < b[2] + pad and b[0] - pad < x1 and y0 < b[3] + pad and b[1] - pad < y1 for b in others
    )


def render_standin(size: tuple[int, int], targets: Sequence[Target], seed: int) -> Image.Image:
    """A light synthetic desktop ``size = (w, h)`` with each target drawn at its pixel box.

    Chrome (title bar, side panel) and distractor widgets come from ``seed``; distractors never
    overlap a target. Larger targets are drawn first, so nested ones stay visible.
    """
    w, h = size
    rng = np.random.default_rng(seed)
    bg = LIGHT_BACKGROUNDS[int(rng.integers(len(LIGHT_BACKGROUNDS)))]
    image = Image.new("RGB", (w, h), bg)
    draw = ImageDraw.Draw(image)
    unit = max(8, round(min(w, h) / 40))  # one "row" of UI at this resolution
    draw.rectangle((0, 0, w - 1, unit - 1), fill=(225, 228, 234), outline=BORDER)
    if w > 8 * unit:
        draw.rectangle((0, unit, 4 * unit, h - 1), fill=(240, 241, 245), outline=BORDER)
    boxes = [t.box for t in targets]
    names = [_icon_name(t.label, rng) if t.kind == "icon" else t.label for t in targets]
    free_icons = [k for k in ICON_NAMES if k not in names] or list(ICON_NAMES)
    n = int(np.clip(w * h / (unit * unit * 30), 6, 60))
    for _ in range(n):
        bw, bh = int(rng.integers(2 * unit, 8 * unit)), int(rng.integers(unit, 2 * unit))
        if rng.random() < 0.4:
            bw = bh = int(rng.integers(unit // 2 + 1, unit + 2))
        for _try in range(20):
            x0, y0 = int(rng.integers(0, max(1, w - bw))), int(rng.integers(0, max(1, h - bh)))
            box = (x0, y0, min(w, x0 + bw), min(h, y0 + bh))
            if not _overlaps(box, boxes, 2):
                break
        else:
            continue
        boxes.append(box)
        rgb = PALETTE[SATURATED[int(rng.integers(len(SATURATED)))]]
        if bw == bh:
            _widget(draw, box, "icon", free_icons[int(rng.integers(len(free_icons)))], INK)
        else:
            _widget(draw, box, "text", TEXT_LABELS[int(rng.integers(len(TEXT_LABELS)))], rgb)
    order = sorted(range(len(targets)), key=lambda k: -_area(targets[k].box))
    for k in order:
        rgb = PALETTE[SATURATED[int(rng.integers(len(SATURATED)))]]
        kind = targets[k].kind
        _widget(draw, targets[k].box, kind, names[k], INK if kind == "icon" else rgb)
    return image


def _write_atomic(path: Path, write: Any, suffix: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def make_standins(
    annotation_file: str | Path,
    out_dir: str | Path,
    *,
    version: str = "v2",
    limit: int | None = None,
    max_side: int = 0,
) -> StandinSet:
    """Draw stand-in images for the first ``limit`` records (all when ``None``) into ``out_dir``.

    Writes ``out_dir/<img_filename>`` for every image those records name and
    ``out_dir/<annotation stem>.standin.json``: the same records (same fields and bbox
    convention) with ``img_size`` set to the drawn size, bboxes scaled when the image was
    downscaled (``max_side``), and ``standin_scale`` on scaled records.

    Raises:
        StandinError: a bad record (see :func:`read_records`), an unknown ``version``, records
            of one file that disagree on ``img_size``, or a bbox that is empty or leaves its image.
    """
    path = Path(annotation_file)
    if version not in BOX_FORMATS:
        raise StandinError(f"version {version!r} is unknown; use v1, v2 or pro")
    if max_side < 0 or (limit is not None and limit < 1):
        raise StandinError(f"max_side must be >= 0 and limit >= 1, got {max_side}, {limit}")
    fmt = BOX_FORMATS[version]
    records = read_records(path)[:limit]
    by_image: dict[str, list[int]] = {}
    for i, rec in enumerate(records):
        by_image.setdefault(rec["img_filename"], []).append(i)
    out_dir = Path(out_dir)
    written: list[dict[str, Any]] = [dict(r) for r in records]
    scaled = 0
    for name, idx in by_image.items():
        boxes = {i: _xyxy(records[i]["bbox"], fmt) for i in idx}
        sizes = {tuple(records[i]["img_size"]) for i in idx if records[i].get("img_size")}
        if len(sizes) > 1:
            raise StandinError(
                f"{path}: records {idx} name {name!r} with different img_size {sizes}"
            )
        if sizes:
            w, h = sizes.pop()
        else:
            w = max([DEFAULT_SIZE[0]] + [math.ceil(b[2]) for b in boxes.values()])
            h = max([DEFAULT_SIZE[1]] + [math.ceil(b[3]) for b in boxes.values()])
        for i, (x0, y0, x1, y1) in boxes.items():
            if not (x1 > x0 and y1 > y0) or x0 < 0 or y0 < 0 or x1 > w or y1 > h:
                layout = "[x, y, w, h]" if fmt == "xywh" else "[x0, y0, x1, y1]"
                raise StandinError(
                    f"{_where(path, i, 'bbox')}: {records[i]['bbox']} read as {layout} pixels "
                    f"is empty or leaves the image of size {[w, h]} (w, h); is version={version!r} right?"
                )
        s = min(1.0, max_side / max(w, h)) if max_side else 1.0
        nw, nh = max(1, round(w * s)), max(1, round(h * s))
        sx, sy = nw / w, nh / h
        targets = []
        for i, (x0, y0, x1, y1) in boxes.items():
            box = (min(nw, x0 * sx), min(nh, y0 * sy), min(nw, x1 * sx), min(nh, y1 * sy))
            written[i]["img_size"] = [nw, nh]
            if (nw, nh) != (w, h):
                written[i]["bbox"] = [round(v, 3) for v in _from_xyxy(box, fmt)]
                written[i]["standin_scale"] = round(s, 6)
            pix = (math.floor(box[0]), math.floor(box[1]), math.ceil(box[2]), math.ceil(box[3]))
            targets.append(Target(pix, _kind(records[i]), str(records[i].get("instruction", ""))))
        scaled += (nw, nh) != (w, h)
        image = render_standin((nw, nh), targets, zlib.crc32(name.encode("utf-8")))
        suffix = Path(name).suffix.lower() or ".png"
        opts = (
            {"format": "JPEG", "quality": 95}
            if suffix in (".jpg", ".jpeg")
            else {"format": "PNG", "compress_level": 1}
        )
        _write_atomic(out_dir / name, lambda p, im=image, o=opts: im.save(p, **o), suffix)
    ann = out_dir / f"{path.stem}.standin.json"
    text = json.dumps(written, indent=1) + "\n"
    _write_atomic(ann, lambda p: Path(p).write_text(text, encoding="utf-8"), ".json")
    return StandinSet(ann, out_dir, len(records), len(by_image), scaled)
