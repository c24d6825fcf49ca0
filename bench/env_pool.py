"""Env steps per second through a Ray env pool (1, 2, 4 workers) against one local env.

    python -m bench.env_pool                        # writes bench/results/env_pool.json

Env: ``vlagent/GroundingSynthetic-v0`` at levels ``basic`` (224², a cheap screen) and
``desktop_hires`` (1920×1080, a costly one). A step is ``reset(seed=new)`` then a uniformly
random click, as in ``bench/env_speed.py``: each step renders a new screen and ships it back.
- ``local``: one env in this process, one step after another.
- ``ray_1``: one ``RemoteEnv`` on one worker with blocking calls, as ``run_episodes`` drives envs
  today; against ``local`` it is the proxy's cost (pickling, object store, two IPC hops).
- ``ray_W`` (W = 2, 4): W envs, one per worker, driven together: every env's ``reset`` is sent
  before any is awaited, then every ``step`` (``reset_async`` / ``step_async``), so W workers
  render at once. Steps/s counts every env's steps.
Ray is started here once (``--num-cpus``, 2 by default; each worker reserves num_cpus / 4 CPUs
so four fit) and shut down at the end. Workers are processes: on a machine with fewer cores than
workers (or one busy with other work: see ``load_average_*`` in the result) they share cores.
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

from bench.common import REPO, BenchError, machine_info

log = logging.getLogger("bench.env_pool")
SCHEMA_VERSION = 1
ENV_ID = "gui:vlagent/GroundingSynthetic-v0"


def _clicks(rng: Any, n: int) -> list[dict[str, tuple[float, float]]]:
    return [{"point": (float(rng.random()), float(rng.random()))} for _ in range(n)]


def _timed(run_round: Any, n_envs: int, seconds: float, warmup: int) -> dict[str, float]:
    """Call ``run_round(seed)`` (one step of each of ``n_envs`` envs) for ``seconds``."""
    seed = 1_000_003
    for _ in range(warmup):
        run_round(seed)
        seed += n_envs
    rounds, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or rounds < 3:
        run_round(seed)
        seed += n_envs
        rounds += 1
    wall = time.perf_counter() - start
    steps = rounds * n_envs
    return {"envs": n_envs, "steps": steps, "wall_seconds": wall, "steps_per_s": steps / wall}


def local_run(level: str, seconds: float, warmup: int) -> dict[str, float]:
    """One env in this process."""
    import gymnasium
    import numpy as np

    env = gymnasium.make(ENV_ID, level=level, disable_env_checker=True)
    rng = np.random.default_rng(0)

    def run_round(seed: int) -> None:
        env.reset(seed=seed)
        env.step(_clicks(rng, 1)[0])

    out = _timed(run_round, 1, seconds, warmup)
    env.close()
    return out


def pool_run(level: str, workers: int, cpus: float, seconds: float, warmup: int) -> dict[str, Any]:
    """``workers`` env workers, one env on each, stepped together."""
    import numpy as np

    from vlagent.rollout.ray_envs import RayEnvPool, gym_factory

    factory = gym_factory(ENV_ID, level=level, disable_env_checker=True)
    t0 = time.perf_counter()
    pool = RayEnvPool(factory, workers, cpus_per_worker=cpus, call_timeout_s=60)
    try:
        envs = [pool.make_env() for _ in range(workers)]
        start_s = time.perf_counter() - t0
        rng = np.random.default_rng(0)

        def run_round(seed: int) -> None:
            resets = [e.reset_async(seed=seed + i) for i, e in enumerate(envs)]
            for r in resets:
                r.result()
            steps = [e.step_async(a) for e, a in zip(envs, _clicks(rng, len(envs)), strict=True)]
            for s in steps:
                s.result()

        calls0 = pool.stats()["calls"]
        out: dict[str, Any] = _timed(run_round, len(envs), seconds, warmup)
        stats = pool.stats()
        for e in envs:
            e.close()
    finally:
        pool.close()
    if stats["restarts"] or stats["lost_calls"]:
        raise BenchError(f"env workers were lost during the run: {stats}")
    out.update(
        workers=workers,
        pool_start_s=start_s,
        mean_call_ms=stats["mean_call_ms"],
        calls=stats["calls"] - calls0,
    )
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench.env_pool", description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per setting [3]")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds first [3]")
    p.add_argument("--workers", default="1,2,4", help="pool sizes [1,2,4]")
    p.add_argument("--levels", default="basic,desktop_hires", help="synthetic screen levels")
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs of the Ray started here [2]")
    p.add_argument("--label", default="measurement")
    p.add_argument("--out", type=Path, default=REPO / "bench/results/env_pool.json")
    return p


def run_env_pool(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure local and pooled steps/s; return (and write) the report."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        sizes = [int(w) for w in args.workers.split(",") if w.strip()]
    except ValueError as err:
        raise BenchError(
            f"--workers must be comma-separated integers, got {args.workers!r}"
        ) from err
    if not sizes or min(sizes) < 1 or args.seconds <= 0 or args.num_cpus < 1:
        raise BenchError(
            f"need --workers >= 1, --seconds > 0, --num-cpus >= 1; got {args.workers!r}, "
            f"{args.seconds}, {args.num_cpus}"
        )
    try:
        import ray
    except ImportError as err:
        raise BenchError("bench.env_pool needs ray: pip install 'vlagent[dist]'") from err
    from vlagent.io import atomic_write_json

    levels = [x.strip() for x in args.levels.split(",") if x.strip()]
    machine = machine_info()
    cpus = args.num_cpus / max(sizes)
    t0 = time.perf_counter()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    ray_start_s = time.perf_counter() - t0
    results: dict[str, dict[str, Any]] = {}
    try:
        for level in levels:
            res = results[level] = {"local": local_run(level, args.seconds, args.warmup)}
            for w in sizes:
                res[f"ray_{w}"] = pool_run(level, w, cpus, args.seconds, args.warmup)
            for name, r in res.items():
                r["vs_local"] = r["steps_per_s"] / res["local"]["steps_per_s"]
                log.info("%s %s: %.1f steps/s", level, name, r["steps_per_s"])
    finally:
        ray.shutdown()
    machine["ray"] = ray.__version__
    machine["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report = {
        "schema_version": SCHEMA_VERSION,
        "kind": "env_pool",
        "label": args.label,
        "command": " ".join(["python -m bench.env_pool", *argv]),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine,
        "config": {
            "env_id": ENV_ID,
            "levels": levels,
            "seconds": args.seconds,
            "warmup": args.warmup,
            "num_cpus": args.num_cpus,
            "cpus_per_worker": cpus,
            "ray_start_s": ray_start_s,
        },
        "results": results,
    }
    atomic_write_json(args.out, report)
    return report


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        report = run_env_pool(argv)
    except BenchError as err:
        sys.stderr.write(f"bench.env_pool: error: {err}\n")
        return 2
    for level, res in report["results"].items():
        for name, r in res.items():
            extra = f"  call {r['mean_call_ms']:.1f} ms" if "mean_call_ms" in r else ""
            sys.stdout.write(
                f"{level:14s} {name:6s} {r['envs']} env(s) {r['steps_per_s']:8.1f} steps/s  "
                f"x{r['vs_local']:.2f} vs local{extra}\n"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
