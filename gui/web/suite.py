"""MiniWoB++ task suite, step budgets and task ids (``"{task_name}/{seed}"``).

A task id names a MiniWoB++ page and the seed its generator runs with (``Math.seedrandom``), so
one id always shows one problem. Train ids use seeds ``[0, TEST_SEED_BASE)`` and held-out test
ids seeds ``>= TEST_SEED_BASE``: the splits never share a problem instance.

>>> task_ids("train", 0, 3, ["click-button", "click-link"])
['click-button/0', 'click-link/0', 'click-button/1']
>>> task_ids("test", 1, 2, ["click-button", "click-link"])
['click-link/1000000', 'click-button/1000001']
>>> parse_task_id("click-tab/17")
('click-tab', 17)
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from gui.web.errors import WebTaskError, WebUnavailable

MINIWOB_SUITE: dict[str, int] = {
    "choose-list": 6,
    "click-button": 3,
    "click-button-sequence": 4,
    "click-checkboxes": 9,
    "click-collapsible": 4,
    "click-color": 3,
    "click-dialog": 3,
    "click-dialog-2": 3,
    "click-link": 3,
    "click-option": 4,
    "click-tab": 3,
    "click-test": 3,
    "click-test-2": 3,
    "click-widget": 3,
    "enter-password": 6,
    "enter-text": 4,
    "focus-text": 3,
    "focus-text-2": 3,
    "identify-shape": 3,
    "login-user": 6,
    "navigate-tree": 10,
}
"""MiniWoB++ tasks a screenshot-only click / type policy can solve -> step budget.

Every task shows its instruction in the screenshot and needs only clicks, typing and reading
(no drags, timing or hidden widgets); budgets are the scripted oracle's step count plus slack.
"""
SUITES: dict[str, dict[str, int]] = {"miniwob": MINIWOB_SUITE}
"""Suite name -> {task name: step budget}."""
DEFAULT_BUDGET = 10
"""Step budget of a MiniWoB++ task outside every suite."""
TEST_SEED_BASE = 1_000_000
"""Held-out seeds start here; train seeds lie below."""
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_TASK_ID = re.compile(r"^([a-z0-9][a-z0-9-]*)/(\d{1,12})$")


def miniwob_html_dir() -> Path:
    """Folder of the installed miniwob package's task pages (``<task>.html``)."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or spec.origin is None:
        raise WebUnavailable("python package miniwob not installed; pip install 'vlagent[web]'")
    return Path(spec.origin).parent / "html" / "miniwob"


def resolve_tasks(tasks: str | Sequence[str]) -> dict[str, int]:
    """``{task name: step budget}`` of a suite name, one task name or a list of task names.

    Raises:
        WebTaskError: empty list, duplicate or unknown task (the message lists the suite).
    """
    if isinstance(tasks, str):
        if tasks in SUITES:
            return dict(SUITES[tasks])
        tasks = [tasks]
    if not isinstance(tasks, Sequence) or not tasks:
        raise WebTaskError(f"tasks must be a suite name ({', '.join(SUITES)}) or task names")
    known = None
    out: dict[str, int] = {}
    for name in tasks:
        if not isinstance(name, str) or not _NAME.match(name):
            raise WebTaskError(f"task name {name!r} is not a MiniWoB++ task name like 'click-tab'")
        if name in out:
            raise WebTaskError(f"task {name!r} is listed twice")
        if name not in MINIWOB_SUITE:
            known = known or miniwob_html_dir()
            if not (known / f"{name}.html").is_file():
                raise WebTaskError(
                    f"unknown MiniWoB++ task {name!r}; suite 'miniwob': {', '.join(MINIWOB_SUITE)}"
                )
        out[name] = MINIWOB_SUITE.get(name, DEFAULT_BUDGET)
    return out


def parse_task_id(task_id: str) -> tuple[str, int]:
    """``(task name, seed)`` of ``"{task_name}/{seed}"`` (seed a non-negative integer)."""
    match = _TASK_ID.match(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise WebTaskError(f"task id {task_id!r} is not '<task-name>/<seed>', e.g. 'click-tab/17'")
    return match.group(1), int(match.group(2))


def task_ids(
    split: Literal["train", "test"],
    start: int = 0,
    count: int = 1,
    tasks: Sequence[str] | None = None,
) -> list[str]:
    """Task ids ``start .. start + count - 1`` of a split, cycling through ``tasks``.

    Index ``i`` is task ``tasks[i % n]`` with seed ``base + i // n``, ``base`` 0 for train and
    :data:`TEST_SEED_BASE` for test.

    Args:
        split: ``"train"`` or ``"test"`` (held-out seeds).
        start: first index (>= 0).
        count: number of ids (>= 0).
        tasks: task names (default: :data:`MINIWOB_SUITE`).
    """
    names = list(MINIWOB_SUITE if tasks is None else tasks)
    if split not in ("train", "test"):
        raise WebTaskError(f"split must be 'train' or 'test', got {split!r}")
    for label, value in (("start", start), ("count", count)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise WebTaskError(f"{label} must be an int >= 0, got {value!r}")
    if not names:
        raise WebTaskError("tasks must not be empty")
    n = len(names)
    if split == "train" and (start + count - 1) // n >= TEST_SEED_BASE:
        raise WebTaskError(f"train index {start + count - 1} would reach the held-out seeds")
    base = 0 if split == "train" else TEST_SEED_BASE
    return [f"{names[i % n]}/{base + i // n}" for i in range(start, start + count)]
