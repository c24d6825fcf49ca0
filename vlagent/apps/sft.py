"""SFT cold start from oracle trajectories: the oracle plays each task, its actions become text.

The scripted oracle (:class:`gui.apps.oracle.Oracle`) runs through the same rollout and history
code as the policy, so each demonstration is exactly a turn prompt the policy will see, paired
with the oracle's action rendered by the codec (points in the model's coordinate space of the
current screenshot) and eos. Only successful episodes are kept. Step-bound, seeded batches.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gui.apps.evaluate import POLICIES
from vlagent.apps.config import AppsSFTConfig, HistoryConfig
from vlagent.apps.history import SYSTEM_PROMPT, TurnContext, encode_turns
from vlagent.apps.rollout import EnvFactory, EpisodeSpec, ScriptedActor, run_episodes
from vlagent.batching import completion_logprobs, image_frame
from vlagent.codec.gui_actions import GuiActionCodec
from vlagent.train.outputs import MetricsLogger

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Demo:
    """One demonstration turn: the prompt context and the target completion text."""

    context: TurnContext
    target: str


def oracle_demos(
    processor: Any,
    codec: GuiActionCodec,
    make_env: EnvFactory,
    task_ids: Sequence[str],
    history: HistoryConfig,
    seeds: Sequence[int] = (0,),
) -> list[Demo]:
    """Demonstration turns of the oracle's successful episodes on ``task_ids`` x ``seeds``."""
    specs = [EpisodeSpec(t, s) for t in task_ids for s in seeds]
    episodes = run_episodes(ScriptedActor(POLICIES["oracle"]), make_env, specs, history)
    demos = []
    for ep in episodes:
        if not ep.success:
            log.warning("oracle failed %s (%s); skipped", ep.spec.task_id, ep.status)
            continue
        for turn in ep.turns:
            screen = turn.context.images[-1]
            frame = image_frame(processor, screen.shape[1], screen.shape[0])
            demos.append(Demo(turn.context, codec.render(turn.decision.action, frame)))
    return demos


def demo_batch(policy: Any, demos: Sequence[Demo]) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """Prompts and right-padded target ids (+ eos) of ``demos``.

    Returns:
        (PromptBatch of B rows, target ids [B, T], mask [B, T]).
    """
    tok = policy.tokenizer
    prompts = encode_turns(policy.processor, [d.context for d in demos], SYSTEM_PROMPT)
    targets = [
        tok(d.target, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for d in demos
    ]
    width = max(len(t) for t in targets)
    ids = torch.full((len(targets), width), tok.pad_token_id, dtype=torch.long)  # [B, T]
    mask = torch.zeros(len(targets), width)  # [B, T]
    for i, t in enumerate(targets):
        ids[i, : len(t)] = torch.tensor(t)
        mask[i, : len(t)] = 1.0
    return prompts, ids, mask


def run_apps_sft(
    policy: Any, demos: Sequence[Demo], cfg: AppsSFTConfig, out_dir: str | Path
) -> dict[str, float]:
    """Teacher-forced training on ``demos`` for ``cfg.steps`` steps; logs to metrics.jsonl.

    Returns:
        ``{"steps", "final_loss"}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    metrics = MetricsLogger(out, "apps_sft")
    opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=0.0)
    device = policy.model.device
    loss_value = float("nan")
    try:
        for step in range(cfg.steps):
            rng = np.random.default_rng([cfg.seed, step])
            batch = [demos[int(i)] for i in rng.integers(0, len(demos), cfg.batch_size)]
            prompts, ids, mask = demo_batch(policy, batch)
            policy.model.train()
            logp = completion_logprobs(
                policy.model, prompts.to(device), ids.to(device), mask.to(device)
            )
            loss = -(logp.sum() / mask.sum())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
            opt.step()
            loss_value = loss.item()
            metrics.log(step + 1, {"loss": loss_value, "grad_norm": float(norm)})
    finally:
        metrics.close()
    return {"steps": float(cfg.steps), "final_loss": loss_value}
