"""Success of the scripted controller and of a uniform random policy on every task kind.

``python -m embodied.measure --episodes 200 --out FILE.json`` runs, per kind, ``episodes``
episodes with seeds ``0..episodes-1`` and task ids equal to the seed (so ids cycle through the
kind's cubes and zones), prints a table and writes JSON atomically (temp file + rename):
``{"config": {...}, "results": {kind: {policy: {"episodes", "successes", "success_rate",
"ci95": [lo, hi], "mean_steps", "mean_steps_success", "max_steps_success", "budget"}}}}``.
The 95 % interval is Wilson's score interval; ``mean_steps`` counts every episode's steps
(failures run to the budget), ``mean_steps_success`` only successful ones.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embodied.robot_actions import ACTION_FRAMES
from embodied.robot_env import RobotEnv
from embodied.scripted import ScriptedController
from embodied.tasks import DEFAULT_MAX_STEP, KINDS, make_task

Z95 = 1.959963984540054
POLICIES = ("scripted", "random")


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; ``(0, 1)`` when ``n == 0``.

    >>> [round(v, 4) for v in wilson_interval(81, 263)]
    [0.2553, 0.3662]
    """
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


def bin_centres(action: np.ndarray, bins: int) -> np.ndarray:
    """``action`` (values in [-1, 1]) rounded to the centre of its bin among ``bins`` uniform
    bins over [-1, 1]; unchanged when ``bins`` is 0.

    >>> bin_centres(np.array([-1.0, 0.0, 0.3, 1.0]), 4).tolist()
    [-0.75, 0.25, 0.25, 0.75]
    """
    if bins <= 0:
        return action
    idx = np.clip(np.floor((np.asarray(action, np.float64) + 1.0) / 2.0 * bins), 0, bins - 1)
    return (-1.0 + (idx + 0.5) * 2.0 / bins).astype(np.float32)


def play_policy(
    env: RobotEnv, act: Callable[[dict[str, Any]], np.ndarray], seeds: Sequence[int]
) -> dict[str, Any]:
    """Play one episode per seed (task id = seed) with ``act``; success and step statistics."""
    successes, steps, success_steps = 0, [], []
    for seed in seeds:
        obs, info = env.reset(seed=seed, options={"task_id": seed})
        terminated = truncated = False
        while not (terminated or truncated):
            obs, _, terminated, truncated, info = env.step(act(obs))
        steps.append(info["steps"])
        if info["success"]:
            successes += 1
            success_steps.append(info["steps"])
    n = len(steps)
    lo, hi = wilson_interval(successes, n)
    return {
        "episodes": n,
        "successes": successes,
        "success_rate": successes / n if n else 0.0,
        "ci95": [lo, hi],
        "mean_steps": float(np.mean(steps)) if steps else 0.0,
        "mean_steps_success": float(np.mean(success_steps)) if success_steps else None,
        "max_steps_success": int(max(success_steps)) if success_steps else None,
    }


def measure(
    episodes: int,
    kinds: Sequence[str] = KINDS,
    max_step: float = DEFAULT_MAX_STEP,
    image_size: int = 32,
    random_seed: int = 0,
    action_frame: str = "delta",
    bins: int = 0,
    paced: bool = False,
    cubes: int = 3,
    zones: int = 2,
) -> dict[str, Any]:
    """Per kind and policy (scripted, random) the statistics of :func:`play_policy`.

    ``bins`` > 0 rounds the scripted controller's actions to the centres of that many uniform
    bins per dimension (what a policy's codec can say) before the env sees them. ``paced``,
    ``cubes`` and ``zones`` are :class:`RobotEnv`'s options.
    """
    results: dict[str, Any] = {}
    for kind in kinds:
        env = RobotEnv(
            kind,
            image_size=image_size,
            max_step=max_step,
            action_frame=action_frame,
            paced=paced,
            cubes=cubes,
            zones=zones,
        )
        try:
            rng = np.random.default_rng(random_seed)
            controller = ScriptedController(env)
            acts: dict[str, Callable[[dict[str, Any]], np.ndarray]] = {
                "scripted": lambda obs, c=controller: bin_centres(c.act(obs), bins),
                "random": lambda _obs, rng=rng: rng.uniform(-1.0, 1.0, 4).astype(np.float32),
            }
            results[kind] = {}
            for policy in POLICIES:
                stats = play_policy(env, acts[policy], range(episodes))
                stats["budget"] = make_task(kind, 0, max_step).max_steps
                results[kind][policy] = stats
        finally:
            env.close()
    return results


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write ``payload`` as JSON to ``path`` via a temp file in the same folder + rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def format_table(results: dict[str, Any]) -> str:
    """A plain-text table: kind, policy, success with interval, mean steps, budget."""
    lines = [f"{'kind':<11} {'policy':<9} {'success':>8} {'95% CI':>17} {'steps':>6} budget"]
    for kind, by_policy in results.items():
        for policy, s in by_policy.items():
            lo, hi = s["ci95"]
            lines.append(
                f"{kind:<11} {policy:<9} {s['success_rate']:>8.3f} "
                f"{f'[{lo:.3f}, {hi:.3f}]':>17} {s['mean_steps']:>6.1f} {s['budget']}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m embodied.measure", description=__doc__)
    parser.add_argument("--episodes", type=int, default=200, help="episodes per kind and policy")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--max-step", type=float, default=DEFAULT_MAX_STEP, help="m per action")
    parser.add_argument("--image-size", type=int, default=32, help="render side, pixels")
    parser.add_argument(
        "--action-frame", default="delta", choices=ACTION_FRAMES, help="moves or goal points"
    )
    parser.add_argument(
        "--bins", type=int, default=0, help="round scripted actions to N bin centres (0: off)"
    )
    parser.add_argument(
        "--paced", action="store_true", help="long moves at the gripper's top speed (RobotEnv)"
    )
    parser.add_argument("--cubes", type=int, default=3, help="cubes on the table, 1..3")
    parser.add_argument("--zones", type=int, default=2, help="zones on the table, 1..2")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    start = time.perf_counter()
    results = measure(
        args.episodes,
        args.kinds,
        args.max_step,
        args.image_size,
        action_frame=args.action_frame,
        bins=args.bins,
        paced=args.paced,
        cubes=args.cubes,
        zones=args.zones,
    )
    shown = list(sys.argv[1:] if argv is None else argv)
    payload = {
        "command": "python -m embodied.measure " + " ".join(shown),
        "config": {
            "episodes": args.episodes,
            "kinds": args.kinds,
            "max_step": args.max_step,
            "image_size": args.image_size,
            "action_frame": args.action_frame,
            "bins": args.bins,
            "paced": args.paced,
            "cubes": args.cubes,
            "zones": args.zones,
            "seeds": f"0..{args.episodes - 1} (task id = seed)",
            "random_policy": "uniform in [-1, 1]^4, numpy default_rng(0) per kind",
            "seconds": round(time.perf_counter() - start, 1),
        },
        "results": results,
    }
    write_json_atomic(args.out, payload)
    print(format_table(results))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
