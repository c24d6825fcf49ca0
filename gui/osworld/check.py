"""Which tasks of an OSWorld-format suite run here, and why the others do not.

For each task file: ``setup_unavailable`` (a step that needs the network or a service this
desktop lacks, e.g. ``download``), ``no_evaluator`` (``func`` is empty), ``missing_programs``
(a setup or evaluator command starts a program that is not installed here), or ``ran``: the
task was set up on the local desktop and scored for a do-nothing agent (``done`` at once; for
an infeasible task also ``fail`` at once). A feasible task that the do-nothing agent already
passes is flagged ``precondition_absent``: the state its setup assumes (an installed package,
a desktop setting) does not exist here, so its verdict means nothing.

``vlagent osworld-check SUITE --json FILE`` writes the table (docs/OSWORLD.md).
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Iterable
from typing import Any

from gui.osworld.setup import SetupUnavailable

_BUILTINS = "echo cd export [ [[ test if then else elif fi true false printf read exit source"
SHELL_WORDS = frozenset((_BUILTINS + " . set for do done while case esac in { } ! time").split())
"""Shell builtins and keywords: never reported as missing programs."""

_SPLIT = re.compile(r"&&|\|\||[;|\n()]|\$\(|`")


def _commands(steps: Iterable[Any]) -> Iterable[Any]:
    for s in steps:
        if s.type in ("execute", "command", "launch") and "command" in s.parameters:
            yield s.parameters["command"]


def programs(command: Any) -> list[str]:
    """Program names a setup or getter command starts (first word of each simple command;
    ``sudo`` and ``VAR=value`` prefixes skipped). A ``python -c pyautogui`` line starts none:
    the runner replays it through xdotool."""
    from gui.osworld.setup import pyautogui_code

    if pyautogui_code(command) is not None:
        return []
    if isinstance(command, list):
        command = " ".join(shlex.quote(str(c)) for c in command)
    out: list[str] = []
    for part in _SPLIT.split(str(command)):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            words = part.split()
        while words and ("=" in words[0] and not words[0].startswith("=") or words[0] == "sudo"):
            words = words[1:]
            while words and words[0].startswith("-"):  # sudo's own flags (-S, -E)
                words = words[1:]
        if words and words[0] not in SHELL_WORDS and not words[0].startswith(("-", ">", "<")):
            name = words[0]
            if name not in out:
                out.append(name)
    return out


def missing_programs(task: Any) -> list[str]:
    """Programs the task's setup and evaluator start that are not installed here (apps the
    runner maps to its own, like ``gnome-terminal``, are not missing)."""
    from gui.osworld.execute import app_key

    ev = task.evaluator
    commands = list(_commands(task.config)) + list(_commands(ev.postconfig))
    for g in ev.results:
        if g is not None and g.type == "vm_command_line" and "command" in g.params:
            commands.append(g.params["command"])
    missing: list[str] = []
    for c in commands:
        for name in programs(c):
            known = app_key(name.split("/")[-1]) is not None or shutil.which(name) is not None
            if not known and name not in missing:
                missing.append(name)
    return missing


def check_task(env: Any, task: Any) -> dict[str, Any]:
    """One row of the table for ``task`` (run on ``env``, a ``DesktopEnv`` holding it)."""
    row: dict[str, Any] = {"id": task.id, "instruction": task.instruction[:120]}
    reason = env.unavailable(task.id)
    if reason is not None:
        row["status"] = "no_evaluator" if task.evaluator.empty else "setup_unavailable"
        row["reason"] = reason
        return row
    missing = missing_programs(task)
    if missing:
        row.update(status="missing_programs", reason="not installed here: " + ", ".join(missing))
        return row
    row["status"] = "ran"
    agents = [("done", {"type": "done"})]
    if task.evaluator.infeasible:
        agents.append(("fail", {"type": "fail"}))
    for name, action in agents:
        try:
            env.reset(seed=0, options={"task_id": task.id})
            _, _, _, _, info = env.step(action)
        except SetupUnavailable as exc:
            row.update(status="setup_unavailable", reason=str(exc).split("setup unavailable: ")[-1])
            return row
        except Exception as exc:  # noqa: BLE001 - one task's failure is a row, not a crash
            row.update(status="error", reason=f"{type(exc).__name__}: {exc}"[:300])
            return row
        row[f"{name}_agent_success"] = bool(info["success"])
        if info.get("evaluator_unavailable"):
            row.update(status="evaluator_unavailable", reason=info["evaluator_unavailable"])
            return row
        if info.get("eval_error"):
            row.update(status="evaluator_error", reason=info["eval_error"][:300])
            return row
    if not task.evaluator.infeasible and row.get("done_agent_success"):
        row["status"] = "precondition_absent"
        row["reason"] = "a do-nothing agent already passes: the setup's assumed state is absent"
    return row


def check_suite(suite: Any) -> list[dict[str, Any]]:
    """Rows for every task of ``suite`` (a name, a folder, or loaded tasks)."""
    from gui.osworld.env import DesktopEnv

    env = DesktopEnv(suite, max_steps=1)
    try:
        return [check_task(env, t) for t in env.tasks]
    finally:
        env.close()
