"""Row readers of user grounding data: JSONL, JSON, Parquet, ``datasets`` folders and hub ids.

Every reader is a :class:`Table`: ``rows(limit)`` yields ``(row, record)`` for the first rows
(a record is a dict, or a :class:`RowProblem` for a line that is no JSON object), and ``row(i)``
reads one record again (images stored as bytes are fetched again when a sample is decoded, so
a big Parquet file or ``datasets`` folder is never held in memory as decoded rows).

``pyarrow`` and ``datasets`` are optional: a missing package is a
:class:`~gui.errors.GroundingDataError` naming it and ``pip install 'vlagent[data]'``.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from gui.errors import GroundingDataError
from gui.grounding.dataset_schema import RowProblem

FORMATS = ("auto", "jsonl", "json", "parquet", "hf_disk", "hf_hub")
_HF_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class Table(Protocol):
    """Rows of one data file (or dataset)."""

    label: str
    """The file path or hub id, as messages name it."""
    folder: Path | None
    """Folder that relative image paths start from (the file's folder)."""

    def rows(self, limit: int = 0) -> Iterator[tuple[int, dict[str, Any] | RowProblem]]: ...

    def row(self, index: int) -> dict[str, Any]: ...


def require(module: str, fmt: str) -> Any:
    """Import an optional module or say which package to install."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        package = module.split(".")[0]
        raise GroundingDataError(
            f"data format {fmt} needs the package {package!r}, which is not installed: "
            f"pip install 'vlagent[data]'"
        ) from err


def detect_format(path: str) -> str:
    """The format of ``path`` from its suffix or folder contents (``hf_hub`` for an
    ``owner/name`` id that is no local path).

    Raises:
        GroundingDataError: no such path, or a path whose format cannot be told.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if p.is_dir():
        if any((p / m).is_file() for m in _HF_MARKERS):
            return "hf_disk"
        raise GroundingDataError(
            f"{path}: a folder without {', '.join(_HF_MARKERS)}; not a datasets save_to_disk "
            f"folder (set task.data.format, or point at a .jsonl / .json / .parquet file)"
        )
    if p.is_file():
        if suffix in (".jsonl", ".ndjson"):
            return "jsonl"
        if suffix in (".json", ".parquet"):
            return suffix[1:]
        raise GroundingDataError(
            f"{path}: cannot tell the format from the suffix {suffix!r}; "
            f"set task.data.format to jsonl, json or parquet"
        )
    data_suffix = suffix in (".jsonl", ".ndjson", ".json", ".parquet")
    if _HUB_ID.match(path) and not path.startswith((".", "/")) and not data_suffix:
        return "hf_hub"
    raise GroundingDataError(f"{path}: data file does not exist")


class RecordsTable:
    """Records parsed from a JSONL or JSON file, kept in memory."""

    def __init__(self, path: Path, fmt: str) -> None:
        self.label, self.folder = str(path), path.parent
        self._records: list[dict[str, Any] | RowProblem] = []
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as err:
            raise GroundingDataError(f"{path}: data file does not exist") from err
        except (OSError, UnicodeDecodeError) as err:
            raise GroundingDataError(f"{path}: cannot read the data file: {err}") from err
        if fmt == "jsonl":
            lines = [ln for ln in text.splitlines() if ln.strip()]
            for i, line in enumerate(lines):
                try:
                    self._records.append(self._record(json.loads(line), i))
                except json.JSONDecodeError as err:
                    self._records.append(
                        RowProblem(self.label, i, "(line)", f"is not valid JSON: {err}", "bad_row")
                    )
            return
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as err:
            raise GroundingDataError(f"{path}: not valid JSON: {err}") from err
        if not isinstance(raw, list):
            raise GroundingDataError(
                f"{path}: expected a JSON list of records, got {type(raw).__name__} "
                f"(one record per line? name the file .jsonl)"
            )
        self._records = [self._record(r, i) for i, r in enumerate(raw)]

    def _record(self, raw: Any, index: int) -> dict[str, Any] | RowProblem:
        if isinstance(raw, dict):
            return raw
        what = f"is a {type(raw).__name__}, expected an object of columns"
        return RowProblem(self.label, index, "(row)", what, "bad_row")

    def __len__(self) -> int:
        return len(self._records)

    def rows(self, limit: int = 0) -> Iterator[tuple[int, dict[str, Any] | RowProblem]]:
        n = len(self._records) if limit <= 0 else min(limit, len(self._records))
        for i in range(n):
            yield i, self._records[i]

    def row(self, index: int) -> dict[str, Any]:
        rec = self._records[index]
        assert isinstance(rec, dict)
        return rec


class ParquetTable:
    """A Parquet file read with pyarrow (memory-mapped; rows converted in batches)."""

    def __init__(self, path: Path) -> None:
        pq = require("pyarrow.parquet", "parquet")
        self.label, self.folder = str(path), path.parent
        if not path.is_file():
            raise GroundingDataError(f"{path}: data file does not exist")
        try:
            self._table = pq.read_table(path, memory_map=True)
        except Exception as err:  # pyarrow raises ArrowInvalid, OSError, ...
            raise GroundingDataError(f"{path}: cannot read as Parquet: {err}") from err

    def __len__(self) -> int:
        return int(self._table.num_rows)

    def rows(self, limit: int = 0) -> Iterator[tuple[int, dict[str, Any] | RowProblem]]:
        table = self._table if limit <= 0 else self._table.slice(0, limit)
        i = 0
        for batch in table.to_batches(max_chunksize=256):
            for rec in batch.to_pylist():
                yield i, rec
                i += 1

    def row(self, index: int) -> dict[str, Any]:
        return self._table.slice(index, 1).to_pylist()[0]


class HFTable:
    """A ``datasets.Dataset``; image columns are read undecoded (``{"bytes", "path"}``)."""

    def __init__(self, dataset: Any, label: str, folder: Path | None) -> None:
        datasets = require("datasets", "hf_disk / hf_hub")
        for name, feature in dataset.features.items():
            if isinstance(feature, datasets.Image) and feature.decode:
                dataset = dataset.cast_column(name, datasets.Image(decode=False))
        self._ds, self.label, self.folder = dataset, label, folder

    def __len__(self) -> int:
        return len(self._ds)

    def rows(self, limit: int = 0) -> Iterator[tuple[int, dict[str, Any] | RowProblem]]:
        ds = self._ds if limit <= 0 else self._ds.select(range(min(limit, len(self._ds))))
        yield from enumerate(ds)

    def row(self, index: int) -> dict[str, Any]:
        return self._ds[index]


def _pick_split(dataset: Any, split: str, label: str) -> Any:
    """The ``split`` of a DatasetDict (a plain Dataset is returned as it is)."""
    if hasattr(dataset, "features"):
        return dataset
    names = list(dataset.keys())
    if split not in names:
        raise GroundingDataError(
            f"{label}: split {split!r} not found; the dataset has {names} (set task.data.split)"
        )
    return dataset[split]


def open_table(path: str, fmt: str = "auto", split: str = "train") -> Table:
    """The :class:`Table` of ``path`` in format ``fmt`` (``auto`` detects it).

    Raises:
        GroundingDataError: unknown format, missing file or package, unreadable data.
    """
    if fmt not in FORMATS:
        raise GroundingDataError(f"{path}: format {fmt!r} is unknown; known: {', '.join(FORMATS)}")
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt in ("jsonl", "json"):
        return RecordsTable(Path(path), fmt)
    if fmt == "parquet":
        return ParquetTable(Path(path))
    datasets = require("datasets", fmt)
    if fmt == "hf_disk":
        if not Path(path).is_dir():
            raise GroundingDataError(f"{path}: datasets folder does not exist")
        try:
            loaded = datasets.load_from_disk(path)
        except Exception as err:  # FileNotFoundError, ValueError, ...
            raise GroundingDataError(f"{path}: cannot load as a datasets folder: {err}") from err
        return HFTable(_pick_split(loaded, split, path), path, Path(path))
    try:
        loaded = datasets.load_dataset(path, split=split)
    except Exception as err:  # offline, unknown id, missing split, ...
        raise GroundingDataError(
            f"{path}: cannot load hub dataset (split {split!r}): {type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}. Offline? Download it once with "
            f"datasets.load_dataset(...).save_to_disk(folder) and set task.data.path to the folder"
        ) from err
    return HFTable(_pick_split(loaded, split, path), path, None)
