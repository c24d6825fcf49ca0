"""Read what a run or evaluation folder holds, tolerating missing and damaged files.

Every reader here returns what it could read and appends a :class:`Problem` for what it could
not (a missing summary, a truncated ``metrics.jsonl`` line, an unreadable image), so a report of
a half-written or crashed run still opens and says what is missing.

Folder layouts read (see ``vlagent/train/outputs.py``, ``vlagent/quickstart.py`` and
``vlagent eval``):

- eval ``--out``: ``eval_summary.json``, ``eval_table.json`` (ScreenSpot tables),
  ``trajectories.jsonl`` + ``images/`` (``--trajectories``, see ``eval/trajectory_log.py``);
- a training run: ``metrics.jsonl``, ``samples/`` (``World.save_pictures``);
- a quickstart root: ``summary.json``, ``<phase>/metrics.jsonl``, ``samples/``;
- a ``vlagent eval --suite`` folder: ``suites.json`` (one row per suite; each suite's own
  eval folder is ``<name>/``).

``samples/`` holds ``<name>.png`` / ``<name>.gif`` pictures, and for the apps and robot worlds a
``<name>.json`` record per episode (``task_id``, ``instruction``, ``success``, ``status``,
``reward``, ``turns``: ``[{text, action | invalid, reward_terms}]``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

SUMMARY_FILES = ("eval_summary.json", "summary.json")


@dataclasses.dataclass
class Problem:
    """Something the report could not read: which file (relative to the run folder) and why."""

    file: str
    message: str


@dataclasses.dataclass
class MetricsFile:
    """The readable rows of one ``metrics.jsonl`` (``rel``: its path inside the run folder)."""

    rel: str
    rows: list[dict[str, Any]]


@dataclasses.dataclass
class RunData:
    """Everything a report shows, as read from one folder.

    Attributes:
        root: the run folder.
        summary_file: name of the summary read (``eval_summary.json`` / ``summary.json``) or None.
        summary: its content (a dict; empty when missing or unreadable).
        table: ``eval_table.json`` content (ScreenSpot tables) or None.
        metrics: every readable ``metrics.jsonl`` (root first, then ``<phase>/metrics.jsonl``).
        trajectories: ``(path, record)`` of each readable ``trajectories.jsonl`` line.
        sample_dirs: the ``samples`` folders found (and any extra picture folders given).
        suites: the rows of ``suites.json`` (``vlagent eval --suite``), empty without one.
        problems: what could not be read.
    """

    root: Path
    summary_file: str | None = None
    summary: dict[str, Any] = dataclasses.field(default_factory=dict)
    table: dict[str, Any] | None = None
    metrics: list[MetricsFile] = dataclasses.field(default_factory=list)
    trajectories: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    trajectories_file: Path | None = None
    sample_dirs: list[Path] = dataclasses.field(default_factory=list)
    suites: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    problems: list[Problem] = dataclasses.field(default_factory=list)

    def rel(self, path: Path) -> str:
        """``path`` relative to the run folder when inside it, else as given."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def finite(value: Any) -> float | None:
    """A finite float, or None (for NaN, infinity, non-numbers and booleans)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def read_json_object(path: Path, data: RunData) -> dict[str, Any] | None:
    """A JSON object file, or None with a problem recorded (missing files are not recorded)."""
    if not path.is_file():
        return None
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        data.problems.append(Problem(data.rel(path), f"not readable as JSON ({exc}); skipped"))
        return None
    if not isinstance(obj, dict):
        data.problems.append(
            Problem(data.rel(path), f"holds a JSON {type(obj).__name__}, not an object; skipped")
        )
        return None
    return obj


def read_jsonl(path: Path, data: RunData, what: str) -> list[dict[str, Any]]:
    """The JSON-object lines of ``path``; each bad line becomes a problem (a truncated last line
    is named as such)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        data.problems.append(Problem(data.rel(path), f"cannot be read ({exc}); no {what}"))
        return []
    rows = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            last = " (the last line: the file was probably cut while being written)"
            where = last if i == len(lines) else ""
            data.problems.append(
                Problem(data.rel(path), f"line {i} is not valid JSON{where}: {exc.msg}; skipped")
            )
            continue
        if not isinstance(rec, dict):
            data.problems.append(
                Problem(data.rel(path), f"line {i} is a JSON {type(rec).__name__}; skipped")
            )
            continue
        rows.append(rec)
    return rows


def _metrics_files(root: Path) -> list[Path]:
    top = [root / "metrics.jsonl"] if (root / "metrics.jsonl").is_file() else []
    return top + sorted(p for p in root.glob("*/metrics.jsonl") if p.is_file())


def _sample_dirs(root: Path) -> list[Path]:
    top = [root / "samples"] if (root / "samples").is_dir() else []
    return top + sorted(p for p in root.glob("*/samples") if p.is_dir())


def load_run(root: str | Path, extra_sample_dirs: tuple[Path, ...] = ()) -> RunData:
    """Read a run / evaluation folder (see the module doc) without failing on damaged files.

    Raises:
        FileNotFoundError: ``root`` is not a folder (nothing to report on).
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"run folder {root} does not exist or is not a folder")
    data = RunData(root=root)
    for name in SUMMARY_FILES:
        obj = read_json_object(root / name, data)
        if obj is not None:
            data.summary_file, data.summary = name, obj
            break
    data.table = read_json_object(root / "eval_table.json", data)
    suites = read_json_object(root / "suites.json", data)
    if suites is not None:
        rows = suites.get("suites")
        if isinstance(rows, list):
            data.suites = [r for r in rows if isinstance(r, dict)]
        if not isinstance(rows, list) or len(data.suites) != len(rows):
            data.problems.append(
                Problem("suites.json", '"suites" is not a list of objects; rows skipped')
            )
    for path in _metrics_files(root):
        data.metrics.append(MetricsFile(data.rel(path), read_jsonl(path, data, "metrics")))
    traj = root / "trajectories.jsonl"
    if traj.is_file():
        data.trajectories_file = traj
        data.trajectories = read_jsonl(traj, data, "trajectories")
    found = _sample_dirs(root) + [Path(p) for p in extra_sample_dirs if Path(p).is_dir()]
    seen: set[Path] = set()  # a picture folder given again (e.g. --pictures-dir OUT/samples)
    data.sample_dirs = [d for d in found if not (d.resolve() in seen or seen.add(d.resolve()))]
    for p in extra_sample_dirs:
        if not Path(p).is_dir():
            data.problems.append(Problem(str(p), "picture folder does not exist; no pictures"))
    _note_missing(data)
    return data


def _note_missing(data: RunData) -> None:
    """Problems for what an evaluation or run folder should hold but does not."""
    looks_eval = data.table is not None or data.trajectories_file is not None
    looks_eval = looks_eval or (data.root / "eval_table.md").is_file()
    if data.summary_file is None and looks_eval:
        data.problems.append(
            Problem(
                "eval_summary.json",
                "missing or unreadable: the evaluation's overall numbers are not in this report",
            )
        )
    elif data.summary_file is None and not data.metrics and not data.suites:
        data.problems.append(
            Problem(
                ".",
                "no eval_summary.json, summary.json or metrics.jsonl: nothing to summarize",
            )
        )
    for m in data.metrics:
        if not m.rows:
            data.problems.append(Problem(m.rel, "holds no readable rows: no learning curves"))
