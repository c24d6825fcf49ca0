"""Recipe: trajectory-level GRPO on multi-step app tasks.

Each round, top to bottom: draw ``tasks_per_step`` tasks → run G episodes per task from the
same reset (``rollout``) → score trajectories and give every turn its episode's group-relative
advantage, plus GiGPO step advantages if asked (``credit``) → one PPO-clip update on the turn
rows (``update``) → append one line to ``metrics.jsonl`` (flushed, so a crash loses nothing
already written). A backend that crashes ends only its episode (recorded in the metrics as
``episodes_errored`` / ``last_error``); the loop carries on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vlagent.apps.actor import VLMActor
from vlagent.apps.config import AppsGRPOConfig, HistoryConfig, TrajectoryRewardConfig
from vlagent.apps.credit import score_episodes, turn_credit
from vlagent.apps.rollout import EnvFactory, Episode, group_specs, run_episodes
from vlagent.apps.update import ppo_update, turn_batch
from vlagent.codec.gui_actions import GuiActionCodec
from vlagent.train.outputs import MetricsLogger

log = logging.getLogger(__name__)


def episode_stats(episodes: Sequence[Episode]) -> dict[str, float]:
    """Success, reward, format / invalid rates and turns of a batch of episodes."""
    turns = [t for e in episodes for t in e.turns]
    finite = [e.reward for e in episodes if np.isfinite(e.reward)]
    return {
        "episodes": float(len(episodes)),
        "success_rate": float(np.mean([e.success for e in episodes])) if episodes else 0.0,
        "reward_mean": float(np.mean(finite)) if finite else float("nan"),
        "format_rate": float(np.mean([t.format_ok for t in turns])) if turns else 0.0,
        "invalid_rate": float(np.mean([t.invalid for t in turns])) if turns else 0.0,
        "mean_turns": float(np.mean([len(e.turns) for e in episodes])) if episodes else 0.0,
        "episodes_errored": float(sum(e.error is not None for e in episodes)),
    }


def run_apps_grpo(
    policy: Any,
    make_env: EnvFactory,
    task_ids: Sequence[str],
    cfg: AppsGRPOConfig,
    out_dir: str | Path,
    *,
    history: HistoryConfig | None = None,
    reward: TrajectoryRewardConfig | None = None,
    codec: GuiActionCodec | None = None,
) -> dict[str, Any]:
    """Train ``policy`` in place for ``cfg.steps`` rounds on ``task_ids``.

    Args:
        policy: a loaded ``Policy`` (updated in place).
        make_env: builds one env holding ``task_ids`` (one per episode).
        task_ids: the training tasks.
        cfg: the recipe's knobs.
        out_dir: where ``metrics.jsonl`` is appended.
        history, reward, codec: defaults when ``None``.

    Returns:
        ``{"steps", "seconds", "errored_episodes", "last"}`` (the last round's metrics).
    """
    history = history or HistoryConfig()
    reward = reward or TrajectoryRewardConfig()
    codec = codec or GuiActionCodec.for_family(policy.family, style="json")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    metrics = MetricsLogger(out, "apps_grpo")
    opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=0.0)
    ids = list(task_ids)
    start, errored, row = time.perf_counter(), 0, {}
    try:
        for step in range(cfg.steps):
            t0 = time.perf_counter()
            rng = np.random.default_rng([cfg.seed, step])
            picked = [
                ids[i]
                for i in rng.choice(len(ids), min(cfg.tasks_per_step, len(ids)), replace=False)
            ]
            actor = VLMActor(
                policy,
                codec,
                temperature=cfg.temperature,
                max_new_tokens=cfg.max_new_tokens,
                seed=cfg.seed * 1_000_003 + step,
            )
            episodes = run_episodes(
                actor, make_env, group_specs(picked, cfg.group_size, step), history
            )
            t1 = time.perf_counter()
            score_episodes(episodes, reward)
            credit = turn_credit(episodes, cfg, reward)
            batch = turn_batch(episodes, credit, policy.tokenizer.pad_token_id)
            stats = ppo_update(policy, batch, opt, cfg, seed=cfg.seed * 7919 + step)
            errors = [e.error for e in episodes if e.error is not None]
            errored += len(errors)
            row = {
                **episode_stats(episodes),
                **stats,
                "adv_abs_mean": float(credit.advantages.abs().mean()) if len(batch) else 0.0,
                "time/rollout": t1 - t0,
                "time/update": time.perf_counter() - t1,
            }
            metrics.log(step + 1, row)
            if errors:
                log.warning(
                    "round %d: %d episode(s) ended by a backend error: %s",
                    step + 1,
                    len(errors),
                    errors[-1],
                )
    finally:
        metrics.close()
    return {
        "steps": cfg.steps,
        "seconds": time.perf_counter() - start,
        "errored_episodes": errored,
        "last": row,
    }
