"""Environment speed alone (no model): steps per second of the synthetic screen and phone envs.

    python -m bench.env_speed                       # writes bench/results/env_speed.json

Grounding envs (``vlagent/GroundingSynthetic-v0``): every step is ``reset(seed=new)`` — a new
screen is generated and rendered — followed by ``step`` with a uniformly random click, so
steps/s includes rendering. Levels: ``desktop_hires`` (1920×1080), ``basic`` (224²) and
``basic448`` (448², the GRPO-vs-TRL training resolution).
Phone env (``vlagent/Phone-v0``): random clicks within episodes; ``reset(seed=new)`` when an
episode ends (reset time included in the wall time, resets counted).
All in this one process: numpy / PIL work on one core; nothing here uses torch.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, BenchError, machine_info, summarize

log = logging.getLogger("bench.env_speed")
SCHEMA_VERSION = 1
GROUNDING_LEVELS = ("desktop_hires", "basic", "basic448")


def _click(rng: Any) -> tuple[float, float]:
    return float(rng.random()), float(rng.random())


def grounding_run(level: str, seconds: float, warmup: int, seed: int) -> dict[str, float]:
    """One timed run of reset(new seed) + random click on a synthetic grounding env."""
    import gymnasium
    import numpy as np

    import gui  # noqa: F401  (registers the env ids)

    env = gymnasium.make("vlagent/GroundingSynthetic-v0", level=level, disable_env_checker=True)
    rng = np.random.default_rng(seed)
    s = seed * 1_000_003
    for _ in range(warmup):
        env.reset(seed=s)
        env.step({"point": _click(rng)})
        s += 1
    n, t_reset, t_step = 0, 0.0, 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or n < 3:
        t0 = time.perf_counter()
        obs, _ = env.reset(seed=s)
        t1 = time.perf_counter()
        env.step({"point": _click(rng)})
        t_step += time.perf_counter() - t1
        t_reset += t1 - t0
        s += 1
        n += 1
    wall = time.perf_counter() - start
    h, w = obs["image"].shape[:2]
    env.close()
    return {
        "steps": n,
        "wall_seconds": wall,
        "steps_per_s": n / wall,
        "reset_ms": 1000 * t_reset / n,
        "step_ms": 1000 * t_step / n,
        "width": w,
        "height": h,
    }


def phone_run(seconds: float, warmup: int, seed: int) -> dict[str, float]:
    """One timed run of random clicks on the phone env (reset when an episode ends)."""
    import gymnasium
    import numpy as np

    import gui  # noqa: F401

    env = gymnasium.make("vlagent/Phone-v0", disable_env_checker=True)
    rng = np.random.default_rng(seed)
    s = seed * 1_000_003
    obs, _ = env.reset(seed=s)
    for _ in range(warmup):
        env.step({"type": "click", "point": _click(rng)})
    s += 1
    obs, _ = env.reset(seed=s)
    n, resets, t_reset = 0, 0, 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or n < 3:
        _, _, terminated, truncated, _ = env.step({"type": "click", "point": _click(rng)})
        n += 1
        if terminated or truncated:
            t0 = time.perf_counter()
            s += 1
            obs, _ = env.reset(seed=s)
            t_reset += time.perf_counter() - t0
            resets += 1
    wall = time.perf_counter() - start
    h, w = obs["image"].shape[:2]
    env.close()
    return {
        "steps": n,
        "wall_seconds": wall,
        "steps_per_s": n / wall,
        "resets": resets,
        "reset_ms": 1000 * t_reset / resets if resets else None,
        "width": w,
        "height": h,
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench.env_speed", description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0, help="timed seconds per repeat [5]")
    p.add_argument("--repeats", type=int, default=3, help="repeats per env [3]")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first [3]")
    p.add_argument("--levels", default=",".join(GROUNDING_LEVELS), help="grounding levels")
    p.add_argument("--no-phone", action="store_true", help="skip the phone env")
    p.add_argument("--label", default="measurement")
    p.add_argument("--out", type=Path, default=REPO / "bench/results/env_speed.json")
    return p


def run_env_speed(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure every env; return (and write) the report."""
    from vlagent.io import atomic_write_json

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.repeats < 1 or args.seconds <= 0:
        raise BenchError(
            f"--repeats must be >= 1 and --seconds > 0, got {args.repeats}, {args.seconds}"
        )
    levels = [x.strip() for x in args.levels.split(",") if x.strip()]
    envs: dict[str, Any] = {}
    for level in levels:
        runs = [grounding_run(level, args.seconds, args.warmup, r) for r in range(args.repeats)]
        envs[f"grounding/{level}"] = _entry("vlagent/GroundingSynthetic-v0", level, runs)
        log.info("%s: %.1f steps/s", level, statistics.median(r["steps_per_s"] for r in runs))
    if not args.no_phone:
        runs = [phone_run(args.seconds, args.warmup, r) for r in range(args.repeats)]
        envs["phone"] = _entry("vlagent/Phone-v0", None, runs)
        log.info("phone: %.1f steps/s", statistics.median(r["steps_per_s"] for r in runs))
    report = {
        "schema_version": SCHEMA_VERSION,
        "kind": "env_speed",
        "label": args.label,
        "command": " ".join(["python -m bench.env_speed", *argv]),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "config": {"seconds": args.seconds, "repeats": args.repeats, "warmup": args.warmup},
        "envs": envs,
    }
    atomic_write_json(args.out, report)
    return report


def _entry(env_id: str, level: str | None, runs: list[dict[str, Any]]) -> dict[str, Any]:
    first = runs[0]
    return {
        "env_id": env_id,
        "level": level,
        "size": [first["width"], first["height"]],
        "steps_per_s": summarize([r["steps_per_s"] for r in runs]),
        "reset_ms": summarize([r["reset_ms"] for r in runs]),
        "repeats": runs,
    }


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        report = run_env_speed(argv)
    except BenchError as err:
        sys.stderr.write(f"bench.env_speed: error: {err}\n")
        return 2
    for name, e in report["envs"].items():
        s = e["steps_per_s"]
        sys.stdout.write(
            f"{name:26s} {e['size'][0]}x{e['size'][1]}  {s['median']:8.1f} steps/s "
            f"(min {s['min']:.1f}, max {s['max']:.1f})\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
