"""Run an OSWorld task file's ``config`` / ``postconfig`` steps on a local desktop session.

Offline and in a sandbox, some steps cannot run here. :func:`unavailable_reason` finds them
*before* a task starts (a ``download``, a step type that needs a service we do not have), so
such a task is reported as "setup unavailable" and never scored as a failure of the agent.

Step semantics (OSWorld's ``SetupController``, read at xlang-ai/OSWorld ``desktop_env/
controllers/setup.py``):

- ``execute`` / ``command``: a command list or string (``shell: true``) run in the sandbox,
  with ``~`` and ``/home/user`` as the task's home. A ``python -c "import pyautogui; ..."``
  line (OSWorld's way to click and type during setup) is parsed by
  :func:`gui.osworld.actions.from_pyautogui` — never executed as Python — and its actions are
  replayed through xdotool, scaled from OSWorld's 1920×1080 screen to ours.
- ``launch``: a known app (``gnome-terminal``, ``gedit``, ``xterm``…) opens our equivalent;
  another installed program is spawned in the sandbox.
- ``open``: a text file opens in the text editor.
- ``sleep``, ``activate_window``, ``close_window``.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import time
from collections.abc import Sequence
from typing import Any

from gui.actions import BaseAction, InvalidAction
from gui.osworld.errors import OSWorldError
from gui.osworld.execute import app_key, execute, launch_app

log = logging.getLogger(__name__)

OSWORLD_SCREEN = (1920, 1080)
"""Screen size of OSWorld's VM: pyautogui pixel coordinates in task files refer to it."""

MAX_SETUP_SLEEP_S = 10.0
"""A ``sleep`` step waits at most this long."""

OFFLINE_STEPS: dict[str, str] = {
    "download": "downloads files from the internet (this runner is offline)",
    "googledrive": "needs Google Drive (network)",
    "login": "needs an online account",
    "chrome_open_tabs": "needs Chrome with a remote-debugging port (not part of this desktop)",
    "chrome_close_tabs": "needs Chrome with a remote-debugging port (not part of this desktop)",
    "update_browse_history": "needs Chrome's profile database (not part of this desktop)",
}
"""Step types that cannot run here, with the reason reported for their tasks."""

TEXT_SUFFIXES = (".txt", ".md", ".py", ".sh", ".csv", ".json", ".log", ".cfg", ".ini")


class SetupUnavailable(OSWorldError):
    """A task's setup needs something this machine does not offer (network, an app)."""


def unavailable_reason(steps: Sequence[Any]) -> str | None:
    """Why ``steps`` cannot run here (the first offending step), or None when they can."""
    for i, step in enumerate(steps):
        if step.type in OFFLINE_STEPS:
            return f"config[{i}] {step.type}: {OFFLINE_STEPS[step.type]}"
    return None


def task_unavailable(task: Any) -> str | None:
    """Why an OSWorld task cannot run here: its setup or postconfig (an offline step), an empty
    evaluator, or an evaluator this runner lacks; None when it can run."""
    reason = unavailable_reason(task.config) or unavailable_reason(task.evaluator.postconfig)
    if reason is None and task.evaluator.empty:
        reason = "the task file has no evaluator (func is empty)"
    return reason or task.evaluator.unavailable


def pyautogui_code(command: Any) -> str | None:
    """The code of a ``python -c "import pyautogui..."`` command (list or string), else None."""
    argv = command
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError:
            return None
    if (
        isinstance(argv, list)
        and len(argv) == 3
        and str(argv[0]).split("/")[-1] in ("python", "python3")
        and argv[1] == "-c"
        and "pyautogui" in str(argv[2])
    ):
        return str(argv[2])
    return None


def replay_pyautogui(session: Any, code: str, terminal_log: str | None) -> None:
    """Parse a pyautogui snippet into our actions and run them (OSWorld screen → ours)."""
    from gui.osworld.actions import from_pyautogui

    actions = from_pyautogui(code, OSWORLD_SCREEN)
    if isinstance(actions, InvalidAction):
        raise SetupUnavailable(f"setup pyautogui code not supported: {actions.reason}")
    for action in actions:
        if not isinstance(action, BaseAction) or action.type in ("done", "fail", "answer"):
            continue
        problem = execute(session, action, terminal_log)
        if problem:
            raise OSWorldError(f"setup pyautogui action {action.type}: {problem}")


def run_step(session: Any, step: Any, terminal_log: str | None, timeout: float) -> str:
    """Run one setup step; returns a one-line log entry.

    Raises:
        SetupUnavailable: the step needs something missing here.
        sim.desktop.CommandTimeout: a command ran past ``timeout`` (its processes are killed).
    """
    p = dict(step.parameters)
    kind = step.type
    if kind in OFFLINE_STEPS:
        raise SetupUnavailable(f"{kind}: {OFFLINE_STEPS[kind]}")
    if kind in ("execute", "command", "execute_with_verification"):
        command = p["command"]
        code = pyautogui_code(command)
        if code is not None:
            replay_pyautogui(session, code, terminal_log)
            return f"{kind}: pyautogui replayed"
        shell = bool(p.get("shell", False))
        if isinstance(command, list) and shell:
            command = " ".join(shlex.quote(str(c)) for c in command)
        res = session.sandbox.run(command, shell=shell, timeout=timeout)
        return f"{kind}: exit {res.returncode}"
    if kind == "launch":
        command = p["command"]
        argv = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
        key = app_key(argv[0].split("/")[-1]) if argv else None
        if key is not None:
            launch_app(session, key, terminal_log)
            return f"launch: {key}"
        if not argv or shutil.which(argv[0]) is None:
            raise SetupUnavailable(f"launch: {argv[:1]} is not installed here")
        session.sandbox.spawn(argv)
        return f"launch: {argv[0]}"
    if kind == "open":
        path = str(p["path"])
        if not path.lower().endswith(TEXT_SUFFIXES):
            raise SetupUnavailable(f"open: no app here opens {path!r} (text files only)")
        session.launch("text_editor", [path])
        return f"open: {path}"
    if kind == "sleep":
        time.sleep(min(float(p["seconds"]), MAX_SETUP_SLEEP_S))
        return "sleep"
    if kind == "activate_window":
        from sim.desktop import activate_window

        found = activate_window(
            session.display, str(p["window_name"]), strict=bool(p.get("strict", False))
        )
        return f"activate_window: {'ok' if found else 'no such window'}"
    if kind == "close_window":
        from sim.desktop import windows

        name = str(p["window_name"])
        import subprocess

        for w in windows(session.display):
            if (w.title == name) if p.get("strict") else (name in w.title):
                subprocess.run(  # argv list, the window id only: no shell
                    ["wmctrl", "-i", "-c", hex(w.id)],
                    env=session.display.env,
                    timeout=timeout,
                    capture_output=True,
                    check=False,
                )
        return "close_window"
    raise SetupUnavailable(f"{kind}: this step type is not supported by the local runner")


def run_steps(
    session: Any, steps: Sequence[Any], terminal_log: str | None, timeout: float
) -> list[str]:
    """Run ``steps`` in order; returns their log lines (see :func:`run_step` for errors)."""
    return [run_step(session, s, terminal_log, timeout) for s in steps]
