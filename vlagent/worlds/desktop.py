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

from gui.actions import parse_action
from vlagent.codec.gui_actions import GuiActionCodec
from vlagent.rollout.trajectory import Trajectory
from vlagent.screen_config import DesktopConfig
from vlagent.worlds.apps import AppsAdapter, annotate_turn
from vlagent.worlds.base import Split, World, save_episode_record
from vlagent.worlds.pool import EnvPool

SYSTEM_PROMPT = (
    "You operate a Linux desktop. Each turn, answer with one JSON action, e.g. "
    '{"type":"click","point":[500,170]}, {"type":"type","text":"ls\\n","point":[500,500]}, '
    '{"type":"hotkey","keys":["ctrl","s"]}, {"type":"done"} or {"type":"fail"} when the task '
    "cannot be done. Coordinates are in [0, 1000)."
)


class OracleDemonstrator:
    """The local suite's scripted oracle plays each episode; its actions are rendered as text
    by the codec and go through the same adapter as the policy's turns."""

    def __init__(self, codec: GuiActionCodec) -> None:
        self.codec = codec
        self._oracles: dict[int, Any] = {}

    def text(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> str | None:
        from gui.osworld.oracle import LocalOracle

        key = id(traj)
        if key not in self._oracles:
            self._oracles[key] = LocalOracle(str(traj.task_id))
        mapping = self._oracles[key].act(obs)
        return self.codec.render(parse_action(mapping), traj.segment.prompt.frame)


class DesktopWorld(World):
    """Tasks of ``desktop.train_suite`` (train, demo) and ``desktop.eval_suite`` (val, test)."""

    default_max_turns = 10

    def __init__(self, cfg: Any, policy: Any) -> None:
        super().__init__(cfg, policy)
        from gui.osworld.setup import unavailable_reason
        from gui.osworld.suites import load_suite

        d: DesktopConfig = cfg.desktop
        self._tasks: dict[str, list[Any]] = {}
        self._unavailable: dict[str, str] = {}
        for name, suite in (("train", d.train_suite), ("eval", d.eval_suite)):
            runnable = []
            for task in load_suite(suite):
                reason = unavailable_reason(task.config) or unavailable_reason(
                    task.evaluator.postconfig
                )
                if reason is None and task.evaluator.empty:
                    reason = "the task file has no evaluator (func is empty)"
                reason = reason or task.evaluator.unavailable
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

    def adapter(self) -> AppsAdapter:
        return AppsAdapter(self.policy.processor, self.codec, self.cfg.desktop, SYSTEM_PROMPT)

    def demonstrator(self) -> OracleDemonstrator:
        return OracleDemonstrator(self.codec)

    def num_tasks(self, split: Split) -> int | None:
        return len(self._split(split))

    def task_ids(self, split: Split, start: int, count: int) -> list[Any]:
        ids = [t.id for t in self._split(split)]
        return [ids[i % len(ids)] for i in range(start, start + count)]

    def summarize(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        """Format rate, success per app (the task's ``related_apps``) and the number of tasks
        left out because they cannot run here."""
        turns = [x for t in trajectories for x in t.turns]
        out = {
            "format_rate": sum(
                not (isinstance(x.action, dict) and x.action.get("type") == "invalid")
                for x in turns
            )
            / max(len(turns), 1),
            "tasks_unavailable": float(len(self._unavailable)),
        }
        apps = {t.id: ",".join(t.related_apps) or "?" for v in self._tasks.values() for t in v}
        by: dict[str, list[bool]] = {}
        for t in trajectories:
            by.setdefault(apps.get(str(t.task_id), "?"), []).append(t.success)
        for name, v in sorted(by.items()):
            out[f"success/{name}"] = sum(v) / len(v)
        return out

    def save_pictures(self, trajectories: Sequence[Trajectory], folder: Path, name: str) -> None:
        """Per episode: each turn's screen with its action drawn, and a JSON record."""
        from perception_tools.annotate import tile_images
        from vlagent.viz import save_png

        for k, t in enumerate(trajectories):
            screens = t.extras.get("screens", [])
            tiles = [
                annotate_turn(sc, x, i)
                for i, (sc, x) in enumerate(zip(screens, t.turns, strict=False))
            ]
            if not tiles:
                continue
            save_png(
                tile_images(tiles, cols=min(len(tiles), 4)), Path(folder) / f"{name}_{k:02d}.png"
            )
            save_episode_record(
                t, Path(folder) / f"{name}_{k:02d}.json", ("text", "action", "reward_terms")
            )
