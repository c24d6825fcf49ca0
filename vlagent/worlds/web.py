"""World ``web``: MiniWoB++ tasks in headless Chromium (``gui.web.MiniWoBEnv``).

Env: ``MiniWoBEnv`` over ``web.tasks`` (empty: the bundled suite), MiniWoB's own verdict as
``success``, invalid actions as no-ops; envs are leased from a pool so a browser starts once
per concurrent episode, not once per episode. Task ids are ``"task/seed"``: training seeds
are below 1,000,000, held-out (val, test) seeds from 1,000,000 up (``gui.web.suite``), so no
held-out page was ever a training page. Adapter: the ``apps`` world's — each turn re-prompts
with the last screenshots (160×210 by default) and the earlier actions; the reply is one JSON
GUI action in the model family's coordinate space.

SFT demonstrations come from ``gui.web.oracle.MiniWoBOracle``, which reads the page's DOM:
demonstration envs add the DOM to ``info["page"]`` (the policy's envs never do).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium

from vlagent.codec.gui_actions import GuiActionCodec
from vlagent.rollout.trajectory import Trajectory
from vlagent.screen_config import WebConfig
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
    "You operate a web page. Each turn, answer with one JSON action, e.g. "
    '{"type":"click","point":[500,170]}, {"type":"type","text":"Bob","point":[500,300]} '
    'or {"type":"key","key":"enter"}. Coordinates are in [0, 1000).'
)


class PageInInfo(gymnasium.Wrapper):
    """Adds MiniWoB's raw observation (utterance, fields, DOM elements) to ``info["page"]``
    for the scripted demonstrator; used only by demonstration envs."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        info["page"] = self.env.unwrapped.raw_observation
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, term, trunc, info = self.env.step(action)
        info["page"] = self.env.unwrapped.raw_observation
        return obs, reward, term, trunc, info


def _page(obs: dict[str, Any], info: dict[str, Any]) -> Any:
    """The page's DOM from a demonstration env's info (see :class:`PageInInfo`)."""
    if info.get("page") is None:
        raise ValueError("no page in info: the web demonstrator needs a demonstration env")
    return info["page"]


class WebWorld(World):
    """MiniWoB++ tasks; train seeds and held-out seeds never meet."""

    default_max_turns = 10

    def __init__(self, cfg: Any, policy: Any) -> None:
        super().__init__(cfg, policy)
        from gui.web.suite import MINIWOB_SUITE, resolve_tasks

        w: WebConfig = cfg.web
        self.tasks = list(resolve_tasks(list(w.tasks) or list(MINIWOB_SUITE)))
        self.codec = GuiActionCodec.for_family(policy.family, style="json")
        self._pools: dict[str, EnvPool] = {}

    def make_env(self, split: Split) -> Any:
        """A leased ``MiniWoBEnv`` (demo envs also report the page's DOM)."""
        from gui.web.miniwob_env import MiniWoBEnv

        if split not in self._pools:
            tasks, reward = self.tasks, dict(self.cfg.web.reward)

            def make() -> gymnasium.Env:
                env = MiniWoBEnv(tasks, reward=reward)
                return PageInInfo(env) if split == "demo" else env

            self._pools[split] = EnvPool(make)
        return self._pools[split].lease()

    def adapter(self) -> AppsAdapter:
        return AppsAdapter(self.policy.processor, self.codec, self.cfg.web, SYSTEM_PROMPT)

    def episodes(self, policy: Any, split: Split, specs: Sequence[Any], max_turn_tokens: int,
                 adapter: Any = None, limits: Any = None, **kwargs: Any) -> list[Trajectory]:  # fmt: skip
        """As ``World.episodes``, with at most ``web.max_browsers`` episodes at once."""
        cap = self.cfg.web.max_browsers
        kwargs["chunk_size"] = max(1, min(int(kwargs.get("chunk_size", cap)), cap))
        return super().episodes(policy, split, specs, max_turn_tokens, adapter, limits, **kwargs)

    def demonstrator(self) -> ActDemonstrator:
        """``gui.web.oracle.MiniWoBOracle`` plays each episode from the page's DOM."""
        from gui.web.oracle import MiniWoBOracle
        from gui.web.suite import parse_task_id

        return ActDemonstrator(
            self.codec,
            lambda t: MiniWoBOracle(parse_task_id(str(t.task_id))[0]),
            read=_page,
        )

    def task_ids(self, split: Split, start: int, count: int) -> list[Any]:
        from gui.web.suite import task_ids

        return task_ids("train" if split in ("train", "demo") else "test", start, count, self.tasks)

    def summarize(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        """Format rate and success per MiniWoB task."""
        from gui.web.suite import parse_task_id

        return {
            "format_rate": format_rate(trajectories),
            **success_by(trajectories, lambda t: parse_task_id(str(t.task_id))[0]),
        }

    def categories(self, traj: Trajectory) -> dict[str, str]:
        """The MiniWoB task name (``click-button`` of ``click-button/1000003``)."""
        from gui.web.suite import parse_task_id

        return {"task": parse_task_id(str(traj.task_id))[0]}

    def baselines(self, task_ids: Sequence[Any]) -> dict[str, float]:
        """Success of a random clicker (``gui.web.oracle.random_click_policy``) on these tasks."""
        from gui.web.miniwob_env import MiniWoBEnv
        from gui.web.oracle import random_click_policy, run_episode

        env = MiniWoBEnv(self.tasks, reward=dict(self.cfg.web.reward))
        try:
            wins = [
                run_episode(env, str(t), random_click_policy(i)).get("success", False)
                for i, t in enumerate(task_ids)
            ]
        finally:
            env.close()
        return {"random_click": sum(map(bool, wins)) / max(len(wins), 1)}

    def save_pictures(self, trajectories: Sequence[Trajectory], folder: Path, name: str) -> None:
        """Per episode: each turn's page with its action drawn, and a JSON record."""
        save_turn_pictures(trajectories, folder, name)

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
        super().close()
