"""Held-out evaluation of an agent policy: greedy episodes, accuracy in ORIGINAL coordinates,
tool use, and where the zooms went.

Zoom metrics (first zoom of an episode; boxes normalized in the original):
    ``zoom_rate``          share of episodes with >= 1 successful zoom
    ``zoom_has_target``    the first zoom contains the whole target box
    ``zoom_on_cluster``    the first zoom covers >= half of the target's colour cluster
                           (``data.cluster_box``; ``hires_tiny_small`` glyph clusters)
    ``acc_given_target_zoom``  accuracy over episodes whose last zoom contains the target
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perception_tools.geometry import box_area, intersection_area
from rewards.tool_use import ToolRewardConfig
from vlagent.agent.data import AgentTask, cluster_box
from vlagent.agent.loop import AgentRuntime
from vlagent.agent.reward import score_trajectories, summarize
from vlagent.agent.trajectory import Trajectory


@dataclasses.dataclass
class AgentEvalReport:
    """Summary numbers and the scored trajectories of one evaluation."""

    summary: dict[str, float]
    trajectories: list[Trajectory]


def _contains(outer: Sequence[float], inner: Sequence[float]) -> bool:
    return intersection_area(outer, inner) >= box_area(inner) * (1.0 - 1e-6)


def zoom_metrics(task: AgentTask, trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """The zoom metrics of the module docstring."""
    n = max(1, len(trajectories))
    zoomed = [t for t in trajectories if t.zoom_boxes_norm]
    has_target = on_cluster = 0
    for t in zoomed:
        first = t.zoom_boxes_norm[0]
        has_target += _contains(first, t.target_box_norm)  # type: ignore[arg-type]
        cluster = cluster_box(task.sample(t.key))
        if cluster is not None:
            on_cluster += intersection_area(first, cluster) >= 0.5 * box_area(cluster)
    good = [t for t in zoomed if _contains(t.zoom_boxes_norm[-1], t.target_box_norm)]  # type: ignore[arg-type]
    return {
        "zoom_rate": len(zoomed) / n,
        "zoom_has_target": has_target / n,
        "zoom_on_cluster": on_cluster / n,
        "acc_given_target_zoom": (sum(t.correct for t in good) / len(good)) if good else 0.0,
        "n_target_zooms": float(len(good)),
    }


def evaluate_agent(
    rt: AgentRuntime,
    task: AgentTask,
    keys: Sequence[int],
    tool_cfg: ToolRewardConfig,
    *,
    forced: Sequence[Sequence[str]] | None = None,
) -> AgentEvalReport:
    """Greedy episodes on ``keys``, scored like training (answer + tool terms).

    Args:
        rt: the runtime (policy, tools, limits).
        task: where the screens come from.
        keys: held-out seeds.
        tool_cfg: tool-use reward weights.
        forced: optional forced first turns per episode (probes, e.g. an oracle zoom).
    """
    specs = [task.spec(k, group_id=i) for i, k in enumerate(keys)]
    trajectories = rt.run(specs, greedy=True, forced=forced)
    score_trajectories(
        trajectories,
        task.answer_spec,
        tool_cfg,
        over_limit=rt.loop.over_limit,
        over_limit_penalty=rt.loop.over_limit_penalty,
    )
    summary: dict[str, Any] = summarize(trajectories)
    summary.update(zoom_metrics(task, trajectories))
    summary["n"] = float(len(trajectories))
    return AgentEvalReport(summary=summary, trajectories=trajectories)


def monitor_agent(
    rt: AgentRuntime,
    task: AgentTask,
    tool_cfg: ToolRewardConfig,
    n_screens: int,
    pictures: int = 0,
    picture_dir: Path | None = None,
    name: str = "val",
    split: str = "val",
) -> dict[str, float]:
    """Greedy evaluation on the first ``n_screens`` of ``split``; optionally saves the first
    ``pictures`` episodes as rollout PNGs ``<picture_dir>/<name>_<k>.png``."""
    report = evaluate_agent(rt, task, task.keys(split, 0, n_screens), tool_cfg)  # type: ignore[arg-type]
    if pictures and picture_dir is not None:
        from vlagent.agent.viz import save_episodes

        save_episodes(report.trajectories, picture_dir, name, pictures)
    return report.summary
