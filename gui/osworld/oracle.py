"""A scripted oracle for the bundled ``local`` suite: it solves each task through the GUI.

The oracle reads only what an agent sees — the observation's window list (``obs["a11y"]``:
``title | x y width height`` in pixels) and the screenshot's size — and emits GUI action
mappings with normalized points: clicks into the real apps (the terminal, xedit's text area
and its Save button, xcalc's keys) and keystrokes. It never runs a shell command itself:
commands reach bash only by being typed into the terminal window.

Used for SFT demonstrations (``vlagent/worlds/desktop.py``) and by the suite's tests, which
check that every local task is solved and scored 1 by its own evaluator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Step = tuple[Any, ...]

# xedit and xcalc layouts, in pixels from the top-left of the window's client area (fixed by
# the apps' default resources; checked against screenshots at 1024x768 under openbox).
XEDIT_SAVE = (54, 8)
XEDIT_TEXT_END = (300, 400)  # below the last line: the caret goes to the end of the file
XCALC_KEYS: dict[str, tuple[int, int]] = {
    **{
        d: (24 + 44 * c, 286 + 30 * r)
        for r, row in enumerate(("789", "456", "123"))
        for c, d in enumerate(row)
    },
    "0": (24, 376),
    "*": (156, 286),
    "-": (156, 316),
    "+": (156, 346),
    "=": (156, 376),
    "/": (156, 256),
}

SCRIPTS: dict[str, list[Step]] = {
    "local-mkdir-projects": [("term", "mkdir -p ~/Desktop/projects")],
    "local-rename-dir": [("term", "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2")],
    "local-move-file": [("term", "mv ~/Desktop/todo.txt ~/Desktop/done/")],
    "local-delete-file": [("term", "rm ~/Desktop/test")],
    "local-write-greeting": [("term", "echo 'Hello, world!' > ~/Documents/hello.txt")],
    "local-chmod-644": [("term", "chmod 644 ~/Documents/script.sh")],
    "local-count-lines": [("term", "wc -l ~/Documents/log.txt")],
    "local-symlink-docs": [("term", "ln -s ~/Documents ~/Desktop/docs")],
    "local-copy-backup": [("term", "cp ~/Documents/report.txt ~/Documents/report.bak")],
    "local-archive-photos": [("term", "tar czf ~/Desktop/photos.tar.gz -C ~/Documents photos")],
    "local-sort-names": [("term", "sort ~/Documents/names.txt > ~/Documents/sorted.txt")],
    "local-editor-append": [("edit", "call mom\n"), ("click", "xedit", XEDIT_SAVE)],
    "local-editor-new-file": [("edit", "milk\neggs\n"), ("click", "xedit", XEDIT_SAVE)],
    "local-editor-fix-typo": [("edit", "Best, Ana\n"), ("click", "xedit", XEDIT_SAVE)],
    "local-calc-product": [
        *[("click", "Calculator", XCALC_KEYS[k]) for k in "1234*5678="],
        ("term", "echo 7006652 > ~/Desktop/answer.txt"),
    ],
    "local-open-terminal": [("hotkey", ("ctrl", "alt", "t"))],
    "local-infeasible-bluetooth": [("fail",)],
    "local-infeasible-printer": [("fail",)],
}
"""Per local task: the oracle's steps (each becomes one action; ``done`` is added at the end
unless the script ends with ``fail``)."""


@dataclass(frozen=True)
class WindowBox:
    """A window from the observation's list: title and client-area box in pixels."""

    title: str
    x: int
    y: int
    width: int
    height: int


def parse_windows(a11y: str) -> list[WindowBox]:
    """The window list of an observation (lines ``title | x y width height``)."""
    out = []
    for line in a11y.splitlines():
        title, sep, geo = line.rpartition(" | ")
        parts = geo.split()
        if not sep or len(parts) != 4 or not all(p.lstrip("-").isdigit() for p in parts):
            continue
        out.append(WindowBox(title, *(int(p) for p in parts)))
    return out


def find_window(a11y: str, title: str) -> WindowBox:
    """The last-listed window whose title contains ``title``.

    Raises:
        LookupError: no such window (the message lists the titles present).
    """
    wins = [w for w in parse_windows(a11y) if title in w.title]
    if not wins:
        titles = [w.title for w in parse_windows(a11y)]
        raise LookupError(f"no window titled like {title!r}; windows: {titles}")
    return wins[-1]


def _norm(x: float, y: float, size: tuple[int, int]) -> list[float]:
    w, h = size
    return [min(max(x / (w - 1), 0.0), 1.0), min(max(y / (h - 1), 0.0), 1.0)]


def step_action(step: Step, a11y: str, size: tuple[int, int]) -> dict[str, Any]:
    """One script step → a GUI action mapping (points normalized to the screenshot)."""
    kind = step[0]
    if kind == "term":
        w = find_window(a11y, "Terminal")
        point = _norm(w.x + w.width / 2, w.y + w.height / 2, size)
        return {"type": "type", "text": step[1] + "\n", "point": point}
    if kind == "edit":
        w = find_window(a11y, "xedit")
        dx, dy = XEDIT_TEXT_END
        return {"type": "type", "text": step[1], "point": _norm(w.x + dx, w.y + dy, size)}
    if kind == "click":
        w = find_window(a11y, step[1])
        dx, dy = step[2]
        return {"type": "click", "point": _norm(w.x + dx, w.y + dy, size)}
    if kind == "hotkey":
        return {"type": "hotkey", "keys": list(step[1])}
    if kind == "fail":
        return {"type": "fail", "reason": "this desktop cannot do that"}
    raise ValueError(f"unknown oracle step {kind!r}")


class LocalOracle:
    """Plays one local task: ``act(obs)`` returns the next action mapping.

    Args:
        task_id: a task of the ``local`` suite.
    """

    def __init__(self, task_id: str) -> None:
        if task_id not in SCRIPTS:
            raise KeyError(f"no oracle script for task {task_id!r}; scripted: {sorted(SCRIPTS)}")
        steps: Sequence[Step] = SCRIPTS[task_id]
        self.steps = list(steps) if steps[-1][0] == "fail" else [*steps, ("done",)]
        self.i = 0

    def act(self, obs: dict[str, Any]) -> dict[str, Any]:
        """The next action for observation ``obs`` (``done`` once the script is spent)."""
        if self.i >= len(self.steps):
            return {"type": "done"}
        step = self.steps[self.i]
        self.i += 1
        if step[0] == "done":
            return {"type": "done"}
        h, w = obs["image"].shape[:2]
        return step_action(step, str(obs.get("a11y", "")), (w, h))
