"""Instruction-blind baselines of every grounding level, on the held-out test screens.

For each level of the ladder: random click, centre click, and the element baselines of
:mod:`gui.grounding.baselines` (random element, largest element, right colour only, right
shape only, right kind only) on the first ``--screens`` test screens (the seeds the quickstart
evaluates on), computed through the grounding world's own ``baselines``.

    python -m experiments.level_baselines --out docs/results/level_baselines.json

Run from the repository root (``experiments`` is not an installed package).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from typing import Any

LEVELS = ("basic", "basic2", "shapes", "widgets")


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--levels", default=",".join(LEVELS))
    p.add_argument("--screens", type=int, default=500)
    p.add_argument("--out", default="docs/results/level_baselines.json")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from vlagent.config import load_config
    from vlagent.io import atomic_write_json
    from vlagent.models.loading import load_policy
    from vlagent.train.common import ensure_model
    from vlagent.worlds import make_world

    argv = list(sys.argv[1:] if argv is None else argv)
    args = _args(argv)
    out: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "experiments.level_baselines", *argv]),
        "screens": args.screens,
        "levels": {},
    }
    for level in args.levels.split(","):
        t0 = time.perf_counter()
        cfg = load_config("quickstart", [f"task.level={level}"])
        world = make_world(cfg, load_policy(ensure_model(cfg.model)))
        ids = world.task_ids("test", 0, args.screens)
        out["levels"][level] = {
            **world.baselines(ids),
            "test_ids": [str(ids[0]), str(ids[-1])],
            "seconds": round(time.perf_counter() - t0, 1),
        }
        world.close()
        sys.stdout.write(f"{level}: {out['levels'][level]}\n")
    atomic_write_json(args.out, out)
    return out


if __name__ == "__main__":
    main()
