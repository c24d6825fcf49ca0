"""Robot SFT data: scripted demonstration batches per second, and frames rendered per turn.

    python -m bench.robot_demos                     # writes bench/results/robot_demos.json

Each SFT step of the robot world plays ``--batch-size`` fresh episodes with the scripted
demonstrator (``vlagent.train.sft.demonstrations``): the episode's env, a twin env the
controller steps, the codec round trip and one prompt (image processor) per turn. The model
is never called, so the tiny default model only supplies the processor. Two settings: one-cube
reach (one action per call) and push with 4-action chunks (paced moves, 12 steps, proprio),
both at 224 px from the top camera, the recipes of ``docs/RESULTS.md``.

Reported per setting: seconds per batch (median, min, max over ``--batches`` batches after one
warm-up batch), episodes/s, policy turns, and offscreen renders per turn (counted by wrapping
``sim.robot.render.OffscreenRenderer.render``). Every frame a prompt shows is one render;
anything above 1 per turn (plus 2 per episode: the episode's and the twin's reset) is a frame
nobody reads. One process; pin threads with ``OMP_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, machine_info, summarize

log = logging.getLogger("bench.robot_demos")
SCHEMA_VERSION = 1
COMMON = [
    "world=robot",
    "robot.image_size=224",
    "robot.camera=top",
    "robot.action_frame=target",
    "robot.max_step=0.2",
    "robot.cubes=1",
    "robot.action_style=padded",
    "robot.constrained=true",
    "sft.num_demos=0",
]
SETTINGS = {
    "reach_chunk1": ["robot.task=reach", "robot.proprio=false"],
    "push_chunk4": [
        "robot.task=push",
        "robot.proprio=true",
        "robot.paced=true",
        "robot.max_steps=12",
        "robot.zones=1",
        "robot.chunk=4",
    ],
}


def run_setting(name: str, model_dir: str, batches: int, batch_size: int) -> dict[str, Any]:
    """Time ``batches`` demonstration batches of setting ``name`` (after one warm-up)."""
    from sim.robot.render import OffscreenRenderer
    from vlagent.config import load_config
    from vlagent.models.loading import load_policy
    from vlagent.train.sft import batch_task_ids, demonstrations
    from vlagent.worlds import make_world

    cfg = load_config(
        None,
        [
            *COMMON,
            *SETTINGS[name],
            f"model.path={model_dir}",
            "model.build_tiny=false",
            f"sft.batch_size={batch_size}",
        ],
    )
    policy = load_policy(model_dir)
    world = make_world(cfg, policy)
    counter = {"n": 0}
    real = OffscreenRenderer.render

    def counted(self: Any, *a: Any, **kw: Any) -> Any:
        counter["n"] += 1
        return real(self, *a, **kw)

    OffscreenRenderer.render = counted  # type: ignore[method-assign]
    try:
        demonstrations(policy, world, batch_task_ids(cfg, world, 0))  # warm-up: GL contexts, pool
        counter["n"] = 0
        seconds, turns, episodes = [], 0, 0
        for step in range(1, batches + 1):
            start = time.perf_counter()
            trajs = demonstrations(policy, world, batch_task_ids(cfg, world, step))
            seconds.append(time.perf_counter() - start)
            turns += sum(len(t.turns) for t in trajs)
            episodes += batch_size
    finally:
        OffscreenRenderer.render = real  # type: ignore[method-assign]
        world.close()
    return {
        "overrides": [*COMMON, *SETTINGS[name]],
        "batch_size": batch_size,
        "batches": batches,
        "seconds_per_batch": summarize(seconds),
        "episodes_per_s": episodes / sum(seconds),
        "turns_per_episode": turns / episodes,
        "renders_per_turn": counter["n"] / turns,
        "renders_per_turn_needed": (turns + 2 * episodes) / turns,
    }


def main(argv: list[str] | None = None) -> int:
    """CLI: run both settings, print a table, write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--settings", default=",".join(SETTINGS), help="comma list of settings")
    p.add_argument("--work", default="/tmp/vlagent_bench_robot_demos", help="tiny model folder")
    p.add_argument("--out", default=str(REPO / "bench/results/robot_demos.json"))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("MUJOCO_GL", "egl")
    from vlagent.config import ModelConfig
    from vlagent.io import atomic_write_json
    from vlagent.models.loading import quiet_transformers
    from vlagent.train.common import ensure_model

    quiet_transformers()
    model_dir = ensure_model(ModelConfig(path=str(Path(args.work) / "model"), build_tiny=True))
    names = [s for s in args.settings.split(",") if s]
    unknown = set(names) - set(SETTINGS)
    if unknown:
        p.error(f"unknown settings {sorted(unknown)}; known: {', '.join(SETTINGS)}")
    results = {n: run_setting(n, model_dir, args.batches, args.batch_size) for n in names}
    for n, r in results.items():
        print(
            f"{n}: {r['seconds_per_batch']['median']:.3f} s/batch (median), "
            f"{r['episodes_per_s']:.1f} episodes/s, {r['renders_per_turn']:.2f} renders/turn "
            f"(needed {r['renders_per_turn_needed']:.2f})"
        )
    atomic_write_json(
        args.out,
        {
            "schema_version": SCHEMA_VERSION,
            "command": "python -m bench.robot_demos "
            + " ".join(sys.argv[1:] if argv is None else argv),
            "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": machine_info(),
            "results": results,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
