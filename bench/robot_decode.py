"""Robot GRPO rollouts: jump-forward over grammar-forced ids vs one model call per token.

    python -m bench.robot_decode            # writes bench/results/robot_decode.json

One GRPO rollout batch of the push recipe in ``docs/RESULTS.md`` (``--tasks`` tasks × ``--group``
episodes, 4-action chunks of padded 256-bin numbers under the action grammar, 12 env steps, so
3 policy turns an episode, temperature 1.0) through ``vlagent.train.grpo.rollout_group``, with
the transformers sampler's ``jump_forced`` on and off (``vlagent.rollout.prefix``). Each
setting is timed ``--repeats`` times, the two interleaved (off, on, off, on, …) so machine load
hits both alike; every repeat uses the same sampling seed. Reported per setting: seconds per
batch (median, min, max), model calls (prefills + decode steps, counted by a forward pre-hook)
and whether both settings produced the same token ids in every turn (they must: the forced ids
are the ones the constrained sampler would have drawn with probability 1, and the generator's
draws are spent alike). The tiny default model; one process, pin threads with
``OMP_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, machine_info, summarize

log = logging.getLogger("bench.robot_decode")
SCHEMA_VERSION = 1
OVERRIDES = [
    "world=robot",
    "robot.task=push",
    "robot.image_size=224",
    "robot.camera=top",
    "robot.action_frame=target",
    "robot.proprio=true",
    "robot.max_step=0.2",
    "robot.paced=true",
    "robot.max_steps=12",
    "robot.cubes=1",
    "robot.zones=1",
    "robot.action_style=padded",
    "robot.constrained=true",
    "robot.chunk=4",
    "grpo.max_new_tokens=80",
    "grpo.temperature=1.0",
]


def _turn_ids(trajs: list[Any]) -> list[list[int]]:
    """Every policy turn's sampled ids, episode by episode."""
    out = []
    for t in trajs:
        for turn in t.turns:
            seg = t.segments[turn.segment]
            out.append(list(seg.ids[turn.start : turn.end]))
    return out


def run(model_dir: str, tasks: int, group: int, repeats: int, seed: int) -> dict[str, Any]:
    """Time ``repeats`` rollout batches with jump-forward off and on, interleaved."""
    import vlagent.rollout.engine as engine_mod
    from vlagent.config import load_config
    from vlagent.models.loading import load_policy
    from vlagent.rollout.prefix import sample_with_prefix
    from vlagent.train.grpo import rollout_group
    from vlagent.worlds import make_world

    cfg = load_config(
        None,
        [
            *OVERRIDES,
            f"model.path={model_dir}",
            "model.build_tiny=false",
            f"grpo.prompts_per_step={tasks}",
            f"grpo.group_size={group}",
        ],
    )
    policy = load_policy(model_dir)
    world = make_world(cfg, policy)
    calls: list[int] = []
    hook = policy.model.register_forward_pre_hook(lambda *_a, **_k: calls.append(1))
    task_ids = world.task_ids("train", 0, tasks)
    seconds: dict[str, list[float]] = {"off": [], "on": []}
    model_calls: dict[str, int] = {}
    ids: dict[str, list[list[int]]] = {}
    try:
        for rep in range(repeats + 1):  # repeat 0 warms up (GL contexts, allocator)
            for name, jump in (("off", False), ("on", True)):
                engine_mod.sample_with_prefix = functools.partial(  # type: ignore[assignment]
                    sample_with_prefix, jump_forced=jump
                )
                calls.clear()
                start = time.perf_counter()
                trajs = rollout_group(policy, world, cfg, task_ids, seed, 0)
                took = time.perf_counter() - start
                if rep:
                    seconds[name].append(took)
                model_calls[name] = len(calls)
                ids[name] = _turn_ids(trajs)
                log.info("repeat %d, jump %s: %.2f s, %d model calls", rep, name, took, len(calls))
    finally:
        engine_mod.sample_with_prefix = sample_with_prefix  # type: ignore[assignment]
        hook.remove()
        world.close()
    turns = len(ids["on"])
    return {
        "overrides": OVERRIDES,
        "tasks": tasks,
        "group": group,
        "repeats": repeats,
        "seed": seed,
        "policy_turns": turns,
        "sampled_tokens": sum(len(x) for x in ids["on"]),
        "same_ids": ids["on"] == ids["off"],
        "settings": {
            name: {"seconds_per_batch": summarize(seconds[name]), "model_calls": model_calls[name]}
            for name in ("off", "on")
        },
    }


def main(argv: list[str] | None = None) -> int:
    """CLI: time both settings, print a line each, write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default="/tmp/vlagent_bench_robot_decode", help="tiny model folder")
    p.add_argument("--out", default=str(REPO / "bench/results/robot_decode.json"))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("MUJOCO_GL", "egl")
    from vlagent.config import ModelConfig
    from vlagent.io import atomic_write_json
    from vlagent.models.loading import quiet_transformers
    from vlagent.train.common import ensure_model

    quiet_transformers()
    model_dir = ensure_model(ModelConfig(path=str(Path(args.work) / "model"), build_tiny=True))
    result = run(model_dir, args.tasks, args.group, args.repeats, args.seed)
    for name, r in result["settings"].items():
        print(
            f"jump-forward {name}: {r['seconds_per_batch']['median']:.2f} s/batch (median), "
            f"{r['model_calls']} model calls"
        )
    print(f"same ids in every turn: {result['same_ids']}")
    atomic_write_json(
        args.out,
        {
            "schema_version": SCHEMA_VERSION,
            "command": "python -m bench.robot_decode "
            + " ".join(sys.argv[1:] if argv is None else argv),
            "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": machine_info(),
            "result": result,
        },
    )
    return 0 if result["same_ids"] else 1


if __name__ == "__main__":
    sys.exit(main())
