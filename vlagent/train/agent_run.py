"""Start of an agent recipe run (``agent_sft``, ``agent_grpo``): the shared setup, once.

Threads and seed, run folder (with the resume-config check), policy and optimizer (or the
latest checkpoint), the agent runtime and task, the trainer state to continue from, the
metrics log and the progress bar.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import torch
from tqdm.auto import tqdm

from vlagent.agent.config import AgentTrainConfig
from vlagent.agent.data import AgentTask
from vlagent.agent.evaluate import monitor_agent
from vlagent.agent.loop import AgentRuntime
from vlagent.train.checkpoint import save_checkpoint
from vlagent.train.common import export_final, load_or_resume, quiet_transformers, setup_threads
from vlagent.train.outputs import MetricsLogger, prepare_run_dir

log = logging.getLogger(__name__)


@dataclasses.dataclass
class AgentRun:
    """Everything a recipe loop needs; ``step`` and ``extra`` continue a resumed run."""

    run_dir: Any
    policy: Any
    opt: torch.optim.Optimizer
    rt: AgentRuntime
    task: AgentTask
    tool_cfg: Any
    extra: dict[str, Any]
    step: int
    metrics: MetricsLogger
    bar: Any

    def validate(self, cfg: AgentTrainConfig, phase: str, step: int) -> dict[str, float]:
        """Greedy validation episodes (``eval.monitor_screens``), as ``val/<name>`` scalars;
        rollout pictures are saved when ``run.samples_every`` is on."""
        e = cfg.eval
        pics = e.rollout_pictures if cfg.run.samples_every else 0
        val = monitor_agent(
            self.rt,
            self.task,
            self.tool_cfg,
            e.monitor_screens,
            pics,
            self.run_dir / "samples",
            f"{phase}_{step:06d}",
        )
        return {f"val/{k}": v for k, v in val.items()}

    def finish(self, phase: str, step: int, stop_reason: str) -> str:
        """Last checkpoint, the exported ``final/`` model, closed logs; returns ``final/``."""
        self.bar.close()
        save_checkpoint(self.run_dir, phase, step, self.policy, self.opt, self.extra)
        final = export_final(self.policy, self.run_dir)
        self.metrics.close()
        log.info(
            "%s stopped after %d steps (%s), %.1f s",
            phase,
            step,
            stop_reason,
            self.extra["train_seconds"],
        )
        return str(final)


def start_agent_run(
    cfg: AgentTrainConfig, phase: str, lr: float, total_steps: int, extra: dict[str, Any]
) -> AgentRun:
    """Set up a run of ``phase``; ``extra`` is the trainer state a fresh run starts with."""
    quiet_transformers()
    setup_threads(cfg.run.threads)
    torch.manual_seed(cfg.run.seed)
    run_dir = prepare_run_dir(cfg)
    resumed, opt = load_or_resume(
        cfg,  # type: ignore[arg-type]  # reads only .model and .run
        phase,
        run_dir,
        lambda p: torch.optim.AdamW(p.model.parameters(), lr=lr, weight_decay=0.0),
    )
    policy = resumed.policy
    step = resumed.state["step"] if resumed.state else 0
    return AgentRun(
        run_dir=run_dir,
        policy=policy,
        opt=opt,
        rt=AgentRuntime(policy, cfg.tools, cfg.loop, cfg.task.answer_format, cfg.task.pixel_budget),
        task=AgentTask(cfg.task),
        tool_cfg=cfg.tool_reward.to_reward_config(),
        extra=resumed.state["extra"] if resumed.state else extra,
        step=step,
        metrics=MetricsLogger(run_dir, phase, resume_step=step if resumed.state else None),
        bar=tqdm(
            total=total_steps,
            initial=step,
            desc=phase,
            disable=not cfg.run.progress,
            dynamic_ncols=True,
        ),
    )
