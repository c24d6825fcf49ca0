"""Evaluate a checkpoint in one config's world and write the eval folder (``vlagent eval``).

The folder holds ``eval_summary.json`` (the summary scalars, avg@k / pass@k, the baselines and
``category_tables``), for ScreenSpot-style data ``eval_table.json`` + ``eval_table.md``, and on
request ``trajectories.jsonl`` + ``images/`` (grounding worlds) and per-episode pictures.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from vlagent.errors import VlagentError

ConfigLoader = Callable[[Sequence[str]], Any]
"""``extra overrides -> TrainConfig`` (the config of one evaluation, plus stand-in paths)."""


@dataclasses.dataclass
class EvalRequest:
    """What to run and what to write besides the summary.

    Attributes:
        model: checkpoint folder or hub id.
        episodes: episodes per task (reset seeds 0 .. k-1): avg@k and pass@k with k of them.
        temperature: None for greedy decoding, else the sampling temperature.
        trajectories: grounding worlds: also write ``trajectories.jsonl`` + ``images/``.
        strict_trajectories: True: ``trajectories`` in another world is an error; False: it
            is skipped with a note (a suite list mixes worlds).
        pictures: annotated episodes to save (the first ones) into ``pictures_dir``.
        pictures_dir: where pictures go.
        standin_images: draw stand-in screenshots for ``task.annotation_file`` here.
        standin_max_side: downscale stand-ins whose longer side exceeds this (0: keep).
        json_path: also write the summary to this file.
    """

    model: str
    episodes: int = 1
    temperature: float | None = None
    trajectories: bool = False
    strict_trajectories: bool = True
    pictures: int = 0
    pictures_dir: Path = Path("runs/eval_pictures")
    standin_images: str | None = None
    standin_max_side: int = 0
    json_path: str | None = None


class Policies:
    """Loads the checkpoint once per (dtype, device) for several evaluations, and gives each
    one the processor's image settings as loaded (a world may set ``task.pixel_budget`` on
    it in place)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._loaded: dict[tuple[str, str], tuple[Any, Any]] = {}

    def get(self, dtype: str, device: str) -> Any:
        from vlagent.models.loading import load_policy

        key = (str(dtype), str(device))
        if key not in self._loaded:
            policy = load_policy(self.model, dtype=dtype, device=device)  # type: ignore[arg-type]
            size = getattr(getattr(policy.processor, "image_processor", None), "size", None)
            self._loaded[key] = (policy, copy.deepcopy(size))
        policy, size = self._loaded[key]
        ip = getattr(policy.processor, "image_processor", None)
        if size is not None and ip is not None:
            ip.size = copy.deepcopy(size)
        return policy


def make_standins(cfg: Any, folder: str, max_side: int) -> Any:
    """Stand-in screenshots for the records the evaluation will run (``sim.screens.standins``).

    Raises:
        VlagentError: the config does not read a ScreenSpot annotation file.
    """
    from sim.screens.standins import make_standins as draw

    task, n = cfg.task, cfg.eval.num_screens
    if task.source != "screenspot":
        raise VlagentError(
            f"--standin-images needs task.source=screenspot (an annotation file), got {task.source!r}"
        )
    made = draw(
        task.annotation_file,
        folder,
        version=task.screenspot_version,
        limit=n if n > 0 else None,
        max_side=max_side,
    )
    sys.stderr.write(
        f"stand-in images: {made.images} images for {made.records} records in {made.image_dir} "
        f"({made.scaled} downscaled); annotations {made.annotation_file}\n"
    )
    return made


def write_trajectories(world: Any, trajectories: list[Any], folder: Path, strict: bool) -> None:
    """``folder/trajectories.jsonl`` + ``folder/images/`` (screenshots re-read from the world
    for episodes whose inputs the evaluation released).

    Raises:
        VlagentError: ``strict`` and the world is not a grounding world.
    """
    from vlagent.eval.trajectory_log import write_trajectories_jsonl

    if not hasattr(world, "sample"):
        why = (
            f"--trajectories: world {type(world).__name__} is not a grounding world; "
            "trajectory JSONL holds grounding episodes"
        )
        if strict:
            raise VlagentError(why)
        sys.stderr.write(f"{why}: not written for {folder}\n")
        return
    path = folder / "trajectories.jsonl"
    n = write_trajectories_jsonl(
        trajectories, path, folder / "images", image_of=lambda t: world.sample(t.task_id).image
    )
    sys.stderr.write(f"{n} episodes written to {path}\n")


def evaluate_into(
    load: ConfigLoader,
    req: EvalRequest,
    folder: Path,
    policies: Policies | None = None,
    *,
    out: TextIO | None = None,
) -> dict[str, Any]:
    """Evaluate ``req.model`` on the test split of ``load([])``'s world; write ``folder``.

    Args:
        load: builds the config from extra overrides (the stand-in paths, when drawn).
        req: the model and the extras to write.
        folder: the eval folder (created).
        policies: a shared loader (several evaluations of one model); None loads here.
        out: where the summary and tables are printed (default stdout).

    Returns:
        The content of ``eval_summary.json``.
    """
    from vlagent.eval.evaluate import evaluate
    from vlagent.eval.tables import benchmark_tables, render_markdown, write_tables
    from vlagent.io import atomic_write_json
    from vlagent.worlds import make_world

    out = out or sys.stdout
    cfg = load([])
    if req.standin_images:
        made = make_standins(cfg, req.standin_images, req.standin_max_side)
        cfg = load(
            [f"task.annotation_file={made.annotation_file}", f"task.image_dir={made.image_dir}"]
        )
    policies = policies or Policies(req.model)
    policy = policies.get(cfg.model.dtype, cfg.model.device)
    world = make_world(cfg, policy)
    try:
        report = evaluate(
            world,
            policy,
            "test",
            cfg.eval.num_screens,
            batch_size=cfg.eval.batch_size,
            max_new_tokens=cfg.eval.max_new_tokens,
            episodes_per_task=req.episodes,
            keep_inputs=max(16, req.pictures),
            temperature=req.temperature,
            seed=cfg.run.seed,
        )
        ids = [t.task_id for t in report.trajectories]
        summary = {
            "model": req.model,
            "world": cfg.world,
            **report.summary(),
            **report.details(),
            "baselines": world.baselines(ids),
        }
        if req.pictures:
            world.save_pictures(report.trajectories[: req.pictures], Path(req.pictures_dir), "eval")
        if req.trajectories:
            write_trajectories(world, report.trajectories, folder, req.strict_trajectories)
    finally:
        world.close()
    atomic_write_json(folder / "eval_summary.json", summary)
    if req.json_path:
        atomic_write_json(req.json_path, summary)
    out.write(json.dumps(summary, indent=2, default=str) + "\n")
    tables = benchmark_tables(
        [dict(t.extras.get("meta") or {}) for t in report.trajectories],
        [bool(t.success) for t in report.trajectories],
    )
    if tables is not None:
        json_path, md_path = write_tables(tables, folder)
        out.write("\n" + render_markdown(tables))
        out.write(f"\ntables written to {json_path} and {md_path}\n")
    return summary
