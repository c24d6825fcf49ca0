"""OSWorld ``result`` / ``expected`` getters on a local desktop session.

Each getter turns an evaluator's ``{"type": ..., ...}`` mapping into the value a metric
compares (OSWorld ``desktop_env/evaluators/getters``, read at xlang-ai/OSWorld):

- ``rule``: the ``rules`` mapping itself;
- ``vm_command_line``: the command's standard output, run in the task's sandbox (``shell``
  as the task file says; ``~`` is the task's home);
- ``vm_terminal_output``: the text the terminal showed (our xterm logs its output; escape
  sequences and carriage returns are removed);
- ``vm_file``: the host path of a file in the task's home (None when it does not exist), which
  file metrics read;
- ``list_directory``: the names in a folder of the task's home, sorted;
- ``accessibility_tree``: our window list as text (``title | x y width height`` per line),
  not OSWorld's AT-SPI XML: a metric that looks for a window's name finds it in both.

A getter type this runner does not implement raises :class:`GetterUnavailable`, which the env
reports as "evaluator unavailable" (never as a failure of the agent).
"""

from __future__ import annotations

import re
from typing import Any

from gui.osworld.errors import OSWorldError

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]")


class GetterUnavailable(OSWorldError):
    """The evaluator needs a getter this local runner does not implement."""


def clean_terminal_log(raw: str) -> str:
    """xterm's log as plain text: ANSI / OSC escape sequences dropped, ``\\r\\n`` → ``\\n``,
    stray carriage returns removed."""
    text = _ANSI.sub("", raw)
    return text.replace("\r\n", "\n").replace("\r", "")


def windows_text(session: Any) -> str:
    """The session's windows, one per line: ``title | x y width height`` (pixels)."""
    from sim.desktop import windows

    return "\n".join(
        f"{w.title} | {w.x} {w.y} {w.width} {w.height}" for w in windows(session.display)
    )


def get(session: Any, getter: Any, terminal_log: str | None, timeout: float) -> Any:
    """The value of one getter (``getter.type`` and ``getter.params``); None for a missing
    getter (an evaluator whose ``expected`` is absent)."""
    if getter is None:
        return None
    kind, p = getter.type, dict(getter.params)
    if kind == "rule":
        return p.get("rules")
    if kind == "vm_command_line":
        res = session.sandbox.run(p["command"], shell=bool(p.get("shell", False)), timeout=timeout)
        return res.stdout
    if kind == "vm_terminal_output":
        if not terminal_log:
            return None
        path = session.sandbox.host_path(terminal_log)
        if not path.is_file():
            return None
        return clean_terminal_log(path.read_text(encoding="utf-8", errors="replace"))
    if kind == "vm_file":
        paths = p.get("path")
        if isinstance(paths, list):
            out = [session.sandbox.host_path(str(x)) for x in paths]
            return [str(x) if x.is_file() else None for x in out]
        path = session.sandbox.host_path(str(paths))
        return str(path) if path.is_file() else None
    if kind == "list_directory":
        path = session.sandbox.host_path(str(p["path"]))
        return sorted(x.name for x in path.iterdir()) if path.is_dir() else None
    if kind == "accessibility_tree":
        return windows_text(session)
    raise GetterUnavailable(f"getter {kind!r} is not implemented by the local runner")
