"""World ``desktop``: OSWorld-format tasks on a local X desktop (``gui.osworld.DesktopEnv``).

Env: one ``DesktopEnv`` per episode (its own Xvfb display and sandboxed home), scored by the
task file's own evaluator; reward terms ``success`` and ``invalid_action`` come from the env.
Adapter: the ``apps`` world's — each turn re-prompts with the last screenshots (resized to
``desktop.screen_width`` × ``screen_height``) and the earlier actions as text; the reply is one
JSON GUI action (``{"type": "type", "text": "ls\\n", "point": [500, 500]}``, ``hotkey``,
``fail`` …) in the model family's coordinate space.

Task ids are the suite's task ids minus those that cannot run here (a ``download`` step, no
evaluator): those are listed by :meth:`DesktopWorld.unavailable` and counted in the summary
as ``tasks_unavailable``, never scored. Train and held-out suites are ``desktop.train_suite``
and ``desktop.eval_suite`` (both ``local`` by default: the local suite is an evaluation
suite; a held-out split needs a second task folder).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vlagent.codec.gui_actions import GuiActionCodec
from vlagent.rollout.trajectory import Trajectory
from vlagent.screen_config import DesktopConfig
from vlagent.worlds.apps import (
    ActDemonstrator,
    AppsAdapter,
    format_rate,
    save_turn_pictures,
    success_by,
)
from vlagent.worlds.base import Split, World
from vlagent.worlds.pool import EnvPool

SYSTEM_PROMPT = (
    "You operate a Linux desktop. Each turn, answer with one JSON action, e.g. "
    '{"type":"click","point":[500,170]}, {"type":"type","text":"ls\\n","point":[500,500]}, '
    '{"type":"hotkey","keys":["ctrl","s"]}, {"type":"done"} or {"type":"fail"} when the task '
    "cannot be done. Coordinates are in [0, 1000)."
)


class DesktopWorld(World):
    """Tasks of ``desktop.train_suite`` (train, demo) and ``desktop.eval_suite`` (val, test)."""

    default_max_turns = 15

    def __init__(self, cfg: Any, policy: Any) -> None:
        super().__init__(cfg, policy)
        from gui.osworld.setup import task_unavailable
        from gui.osworld.suites import load_suite

        d: DesktopConfig = cfg.desktop
        self.default_max_turns = d.max_steps  # the env truncates there; turns follow it
        self._tasks: dict[str, list[Any]] = {}
        self._unavailable: dict[str, str] = {}
        for name, suite in (("train", d.train_suite), ("eval", d.eval_suite)):
            runnable = []
            for task in load_suite(suite):
                reason = task_unavailable(task)
                if reason is None:
                    runnable.append(task)
                else:
                    self._unavailable[task.id] = reason
            if not runnable:
                raise ValueError(f"desktop.{name}_suite {suite!r}: no task can run here")
            self._tasks[name] = runnable
        self.codec = GuiActionCodec.for_family(policy.family, style="json")
        self._pools: dict[str, EnvPool] = {}

    def _split(self, split: Split) -> list[Any]:
        return self._tasks["train" if split in ("train", "demo") else "eval"]

    def unavailable(self) -> dict[str, str]:
        """Task id → why it cannot run here, for every task left out of both suites."""
        return dict(self._unavailable)

    def make_env(self, split: Split) -> Any:
        """A leased ``DesktopEnv`` (its X display and apps are reused by later episodes)."""
        from gui.osworld.env import DesktopEnv

        d: DesktopConfig = self.cfg.desktop
        key = "train" if split in ("train", "demo") else "eval"
        if key not in self._pools:
            tasks = self._tasks[key]
            self._pools[key] = EnvPool(
                lambda: DesktopEnv(
                    tasks,
                    width=d.width,
                    height=d.height,
                    max_steps=d.max_steps,
                    reward=dict(d.reward),
                    step_timeout=d.step_timeout,
                )
            )
        return self._pools[key].lease()

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
        super().close()

    def adapter(self) -> AppsAdapter:
        return AppsAdapter(self.policy.processor, self.codec, self.cfg.desktop, SYSTEM_PROMPT)

    def demonstrator(self) -> ActDemonstrator:
        """The local suite's scripted oracle (``gui.osworld.oracle``) plays each episode."""
        from gui.osworld.oracle import LocalOracle

        return ActDemonstrator(self.codec, lambda t: LocalOracle(str(t.task_id)))

    def num_tasks(self, split: Split) -> int | None:
        return len(self._split(split))

    def task_ids(self, split: Split, start: int, count: int) -> list[Any]:
        ids = [t.id for t in self._split(split)]
        return [ids[i % len(ids)] for i in range(start, start + count)]

    def summarize(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        """Format rate, success per app (the task's ``related_apps``) and the number of tasks
        left out because they cannot run here."""
        apps = {t.id: ",".join(t.related_apps) or "?" for v in self._tasks.values() for t in v}
        return {
            "format_rate": format_rate(trajectories),
            "tasks_unavailable": float(len(self._unavailable)),
            **success_by(trajectories, lambda t: apps.get(str(t.task_id), "?")),
        }

    def categories(self, traj: Trajectory) -> dict[str, str]:
        """The task's ``related_apps`` (joined with commas) and the task id."""
        apps = {t.id: ",".join(t.related_apps) or "?" for v in self._tasks.values() for t in v}
        return {"app": apps.get(str(traj.task_id), "?"), "task": str(traj.task_id)}

    def save_pictures(self, trajectories: Sequence[Trajectory], folder: Path, name: str) -> None:
        """Per episode: each turn's screen with its action drawn (4 per row), a JSON record."""
        save_turn_pictures(trajectories, folder, name, cols=4)
