"""Evaluation on phone task suites: success overall and per app, steps, invalid actions.

``evaluate_suite`` runs every task of a suite (``episodes`` times each, greedy by default)
through the same rollout code as training and returns a :class:`SuiteReport`; with ``out_dir``
it writes ``report.json`` and the first ``save_trajectories`` episodes as folders of annotated
screenshots + ``trajectory.json`` (:mod:`vlagent.apps.viz`). ``vlagent eval-suite`` is its CLI.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlagent.apps.config import HistoryConfig, TrajectoryRewardConfig
from vlagent.apps.credit import score_episodes
from vlagent.apps.rollout import Actor, Episode, EpisodeSpec, run_episodes
from vlagent.apps.viz import episode_record, save_episode
from vlagent.io import atomic_write_text

APP_OF_TEMPLATE: dict[str, str] = {
    "set_toggles": "Settings",
    "set_brightness": "Settings",
    "add_contact": "Contacts",
    "delete_contact": "Contacts",
    "lookup_phone": "Contacts",
    "call_contact": "Contacts",
    "delete_missing_contact": "Contacts",
    "create_note": "Notes",
    "delete_note": "Notes",
    "add_alarm": "Clock",
    "set_alarm_enabled": "Clock",
    "disable_missing_alarm": "Clock",
    "open_missing_app": "Launcher",
}
"""The app a task template is about (for per-app success rates)."""


@dataclasses.dataclass
class SuiteReport:
    """Outcome of evaluating a policy on a suite.

    Attributes:
        success_rate: fraction of episodes whose task checker said success.
        per_app: success rate per app (``APP_OF_TEMPLATE``).
        per_template: success rate per task template.
        mean_steps: mean number of steps per episode.
        invalid_action_rate: fraction of steps that were unparseable or not executable.
        format_rate: fraction of steps whose text parsed into an action.
        errored: episodes ended by a backend error.
        episodes: per-episode records (task, success, steps, status, error).
    """

    success_rate: float
    per_app: dict[str, float]
    per_template: dict[str, float]
    mean_steps: float
    invalid_action_rate: float
    format_rate: float
    errored: int
    episodes: list[dict[str, Any]]

    def summary(self) -> dict[str, Any]:
        """Everything but the per-episode records."""
        out = dataclasses.asdict(self)
        out.pop("episodes")
        out["n_episodes"] = len(self.episodes)
        return out


def _rates(episodes: Sequence[Episode], key: Any) -> dict[str, float]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for ep in episodes:
        groups[key(ep)].append(ep.success)
    return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


def report_of(episodes: Sequence[Episode]) -> SuiteReport:
    """Aggregate finished episodes into a :class:`SuiteReport`."""
    turns = [t for e in episodes for t in e.turns]
    return SuiteReport(
        success_rate=float(np.mean([e.success for e in episodes])) if episodes else 0.0,
        per_app=_rates(episodes, lambda e: APP_OF_TEMPLATE.get(e.template, "other")),
        per_template=_rates(episodes, lambda e: e.template or "unknown"),
        mean_steps=float(np.mean([len(e.turns) for e in episodes])) if episodes else 0.0,
        invalid_action_rate=float(np.mean([t.invalid for t in turns])) if turns else 0.0,
        format_rate=float(np.mean([t.format_ok for t in turns])) if turns else 0.0,
        errored=sum(e.error is not None for e in episodes),
        episodes=[
            {
                "task_id": e.spec.task_id,
                "seed": e.spec.seed,
                "success": e.success,
                "steps": len(e.turns),
                "status": e.status,
                "error": e.error,
            }
            for e in episodes
        ],
    )


def evaluate_suite(
    actor: Actor,
    make_env: Any,
    task_ids: Sequence[str],
    *,
    episodes: int = 1,
    history: HistoryConfig | None = None,
    out_dir: str | Path | None = None,
    save_trajectories: int = 8,
    batch_episodes: int = 40,
) -> SuiteReport:
    """Run ``episodes`` episodes of every task and report (see module docstring).

    Args:
        actor: the policy (``VLMActor`` for a model, ``ScriptedActor`` for baselines).
        make_env: builds one env holding ``task_ids``.
        task_ids: tasks to run.
        episodes: episodes per task (reset seeds 0..n-1; a task's start state is its own).
        history: prompt settings (must match training).
        out_dir: where ``report.json`` and ``trajectories/`` go (nothing written if None).
        save_trajectories: how many episodes to save as annotated trajectories.
        batch_episodes: episodes stepped together (one batched policy call per turn).
    """
    history = history or HistoryConfig()
    specs = [EpisodeSpec(t, seed) for seed in range(episodes) for t in task_ids]
    keep = out_dir is not None and save_trajectories > 0
    done: list[Episode] = []
    for i in range(0, len(specs), batch_episodes):
        chunk = specs[i : i + batch_episodes]
        done.extend(run_episodes(actor, make_env, chunk, history, keep_screens=keep, first_uid=i))
    score_episodes(done, TrajectoryRewardConfig())
    report = report_of(done)
    if out_dir is not None:
        out = Path(out_dir)
        for ep in done[:save_trajectories]:
            save_episode(ep, out / "trajectories" / f"{ep.uid:03d}_{ep.spec.task_id}")
        body = {**report.summary(), "episodes": [episode_record(e) for e in done]}
        atomic_write_text(out / "report.json", json.dumps(body, indent=1) + "\n")
    return report


def phone_env_factory(suite: Any) -> tuple[Any, Any]:
    """``(factory, loaded suite)``: the factory builds budget-limited ``PhoneEnv`` s over it.

    Args:
        suite: a builtin suite name, a suite file path, or a :class:`TaskSuite`.
    """
    from gui.apps.env import PhoneEnv, TaskBudgetLimit
    from gui.apps.suite import load_suites

    loaded = load_suites(suite)
    return lambda: TaskBudgetLimit(PhoneEnv(loaded)), loaded


def cmd_eval_suite(args: argparse.Namespace) -> int:
    """``vlagent eval-suite``: evaluate a checkpoint (or a baseline) on a task suite."""
    import torch

    from gui.apps.evaluate import POLICIES
    from vlagent.apps.rollout import ScriptedActor

    torch.set_num_threads(max(1, args.threads))
    make_env, suite = phone_env_factory(args.suite)
    if args.baseline:
        actor: Actor = ScriptedActor(POLICIES[args.baseline])
    else:
        from vlagent.apps.actor import VLMActor
        from vlagent.codec.gui_actions import GuiActionCodec
        from vlagent.models.loading import load_policy
        from vlagent.train.common import quiet_transformers

        quiet_transformers()
        policy = load_policy(args.model)
        codec = GuiActionCodec.for_family(policy.family, style=args.style)
        actor = VLMActor(
            policy,
            codec,
            greedy=args.temperature <= 0,
            temperature=max(args.temperature, 1e-6),
            max_new_tokens=args.max_new_tokens,
        )
    history = HistoryConfig(keep_images=args.keep_images)
    report = evaluate_suite(
        actor, make_env, suite.ids, episodes=args.episodes, history=history, out_dir=args.out
    )
    sys.stdout.write(json.dumps(report.summary(), indent=1) + "\n")
    return 0
