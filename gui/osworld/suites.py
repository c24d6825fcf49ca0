"""Bundled OSWorld-format suites and loading a suite by name, folder or file.

- ``local``: vlagent's own tasks (``gui/osworld/tasks/local``), fully offline on the local
  desktop; the scripted oracle (:mod:`gui.osworld.oracle`) solves every one through the GUI.
- ``os``: the 24 task files of OSWorld's ``os`` domain, unchanged (Apache-2.0; see the
  folder's ``LICENSE``). Some need the network or services this machine lacks: the env and
  ``vlagent osworld-check`` report those with the reason.

Any other folder of OSWorld task JSON (or one file) loads the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TASKS_DIR = Path(__file__).resolve().parent / "tasks"
BUNDLED: dict[str, Path] = {"local": TASKS_DIR / "local", "os": TASKS_DIR / "os"}
"""Suite names → their folders."""


def suite_path(name: str | Path) -> Path:
    """The folder or file a suite name or path refers to.

    Raises:
        gui.osworld.errors.OSWorldError: neither a bundled name nor an existing path.
    """
    from gui.osworld.errors import OSWorldError

    if isinstance(name, str) and name in BUNDLED:
        return BUNDLED[name]
    path = Path(name).expanduser()
    if not path.exists():
        known = ", ".join(sorted(BUNDLED))
        raise OSWorldError(f"OSWorld suite {str(name)!r}: no such folder or file; bundled: {known}")
    return path


def load_suite(name: str | Path) -> list[Any]:
    """The tasks of a suite (sorted by id); see :func:`gui.osworld.task_file.load_tasks`."""
    from gui.osworld.task_file import load_tasks

    return load_tasks(suite_path(name))
