"""Robot env wrapper overhead: ``RobotEnv.step`` (physics + camera render) vs raw MuJoCo.

    python -m bench.robot_env                       # writes bench/results/robot_env.json

Two steppers on the same scene, for each image size (128 and 224 px):

- ``env``: ``embodied.RobotEnv(task).step(action)``: action parsing, ``RobotScene.apply``
  (``substeps`` × ``mj_step`` with the mocap target interpolated), the task's success and
  distance checks, reward terms, and the observation (one offscreen render + proprio).
- ``raw``: the same MjModel (taken from that env's scene) with its own MjData, reset to the
  same state: the same mocap interpolation and ``substeps`` × ``mujoco.mj_step``, then
  ``mujoco.Renderer.update_scene`` + ``render`` at the same size, camera and render flags
  (shadows, reflections and skybox off).

Both get seeded random actions (dx, dy, dz uniform in [-1, 1], gripper open, so no grasp
welds differ). Only steps are timed (an env episode that ends is reset off the clock).

Timing is paired and fine-grained, so that other processes on the machine hit both alike:
blocks of ``--block`` env steps and ``--block`` raw steps alternate until each side has run
``--seconds``; that is one repeat. A block pair's ratio is env ms/step over raw ms/step, and
the overhead is the median over all pairs of all repeats, minus 1, in % (``overhead_pct``).
Steps/s per repeat are also reported, and raw physics alone (no render) for scale. One
process, one thread: ``LP_NUM_THREADS`` (Mesa llvmpipe's render threads, EGL's software path)
is set to ``--render-threads`` before MuJoCo loads.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import REPO, BenchError, machine_info, summarize

log = logging.getLogger("bench.robot_env")
SCHEMA_VERSION = 1
TARGET_OVERHEAD_PCT = 10.0


def _actions(seed: int, n: int) -> Any:
    """Seeded (n, 4) float32 actions: dx, dy, dz uniform in [-1, 1], gripper -1 (open)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a = rng.uniform(-1.0, 1.0, size=(n, 4)).astype(np.float32)
    a[:, 3] = -1.0
    return a


class EnvStepper:
    """``RobotEnv.step`` on seeded actions; an ended episode resets off the clock."""

    def __init__(self, env: Any, seed: int) -> None:
        self.env, self.seed, self.n = env, seed, 0
        self.actions = _actions(seed, 100_000)
        env.reset(seed=seed, options={"task_id": 0})

    def block(self, k: int) -> float:
        """Run ``k`` steps; return the seconds spent inside ``step``."""
        busy = 0.0
        for _ in range(k):
            t0 = time.perf_counter()
            _, _, terminated, truncated, _ = self.env.step(self.actions[self.n % 100_000])
            busy += time.perf_counter() - t0
            self.n += 1
            if terminated or truncated:
                self.env.reset(seed=self.seed + self.n, options={"task_id": 0})
        return busy


class RawStepper:
    """The env's scene through the plain MuJoCo API (see the module doc)."""

    def __init__(self, env: Any, seed: int, render: bool = True) -> None:
        import mujoco
        import numpy as np

        from sim.robot.scene import WORKSPACE_HI, WORKSPACE_LO

        scene = env.unwrapped.scene
        env.reset(seed=seed, options={"task_id": 0})
        self.mujoco, self.np = mujoco, np
        self.model, self.data = scene.model, mujoco.MjData(scene.model)
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        state = np.empty(mujoco.mj_stateSize(self.model, spec))
        mujoco.mj_getState(self.model, scene.data, state, spec)
        mujoco.mj_setState(self.model, self.data, state, spec)
        mujoco.mj_forward(self.model, self.data)
        size = env.unwrapped.image_size
        self.renderer = mujoco.Renderer(self.model, height=size, width=size) if render else None
        if self.renderer is not None:
            for flag in ("mjRND_SHADOW", "mjRND_REFLECTION", "mjRND_SKYBOX"):
                self.renderer.scene.flags[getattr(mujoco.mjtRndFlag, flag)] = False
        self.camera, self.substeps, self.max_step = (
            env.unwrapped.camera,
            scene.substeps,
            scene.max_step,
        )
        self.lo, self.hi = WORKSPACE_LO, WORKSPACE_HI
        self.g = int(self.model.body_mocapid[self.model.body("gripper").id])
        self.actions = _actions(seed, 100_000).astype(np.float64)
        self.n = 0

    def block(self, k: int) -> float:
        """Run ``k`` steps; return the seconds they took."""
        mujoco, np, data, g, n_sub = self.mujoco, self.np, self.data, self.g, self.substeps
        t0 = time.perf_counter()
        for _ in range(k):
            a = self.actions[self.n % 100_000]
            start = data.mocap_pos[g].copy()
            target = np.clip(start + a[:3] * self.max_step, self.lo, self.hi)
            for j in range(n_sub):
                data.mocap_pos[g] = start + (target - start) * ((j + 1) / n_sub)
                mujoco.mj_step(self.model, data)
            if self.renderer is not None:
                self.renderer.update_scene(data, camera=self.camera)
                self.renderer.render()
            self.n += 1
        return time.perf_counter() - t0

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()


def paired_repeat(
    env: Callable[[int], float], raw: Callable[[int], float], seconds: float, block: int
) -> dict[str, Any]:
    """Alternate ``block``-step blocks of env and raw until each ran ``seconds``."""
    t_env = t_raw = 0.0
    ratios: list[float] = []
    blocks = 0
    while t_env < seconds or t_raw < seconds or blocks < 2:
        e, r = env(block), raw(block)
        t_env, t_raw, blocks = t_env + e, t_raw + r, blocks + 1
        ratios.append(e / r)
    steps = blocks * block
    return {
        "blocks": blocks,
        "steps": steps,
        "env": {"seconds": t_env, "steps_per_s": steps / t_env, "ms_per_step": 1e3 * t_env / steps},
        "raw": {"seconds": t_raw, "steps_per_s": steps / t_raw, "ms_per_step": 1e3 * t_raw / steps},
        "ratios": ratios,
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench.robot_env", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="128,224", help="image sides in px [128,224]")
    p.add_argument("--task", default="pick_place", help="RobotEnv task [pick_place]")
    p.add_argument("--camera", default="front", help="scene camera [front]")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per side [3]")
    p.add_argument("--repeats", type=int, default=5, help="repeats per size [5]")
    p.add_argument("--block", type=int, default=20, help="steps per timed block [20]")
    p.add_argument("--render-threads", type=int, default=1, help="LP_NUM_THREADS [1]")
    p.add_argument("--label", default="measurement")
    p.add_argument("--out", type=Path, default=REPO / "bench/results/robot_env.json")
    return p


def _check(args: argparse.Namespace) -> list[int]:
    """Validated sizes; raises BenchError naming a bad argument."""
    if min(args.repeats, args.block, args.render_threads) < 1 or args.seconds <= 0:
        raise BenchError(
            "--repeats, --block and --render-threads must be >= 1 and --seconds > 0, got "
            f"{args.repeats}, {args.block}, {args.render_threads}, {args.seconds}"
        )
    try:
        sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    except ValueError as exc:
        raise BenchError(f"--sizes must be comma-separated ints, got {args.sizes!r}") from exc
    if not sizes or any(not 1 <= s <= 640 for s in sizes):
        raise BenchError(f"--sizes must hold ints in [1, 640], got {args.sizes!r}")
    return sizes


def measure_size(args: argparse.Namespace, size: int) -> dict[str, Any]:
    """Every repeat of one image size, summarized."""
    from embodied.robot_env import RobotEnv

    env = RobotEnv(task=args.task, image_size=size, camera=args.camera, max_steps=10**6)
    warm_env, warm_raw = EnvStepper(env, seed=99), RawStepper(env, seed=99)
    paired_repeat(warm_env.block, warm_raw.block, 0.3, args.block)  # GL contexts, caches
    warm_raw.close()
    repeats, physics = [], []
    for r in range(args.repeats):
        stepper, raw = EnvStepper(env, seed=r), RawStepper(env, seed=r)
        repeats.append(paired_repeat(stepper.block, raw.block, args.seconds, args.block))
        raw.close()
        bare = RawStepper(env, seed=r, render=False)
        t = bare.block(200)
        physics.append(200 / t)
    entry: dict[str, Any] = {
        "substeps": int(env.scene.substeps),
        "max_step_m": float(env.scene.max_step),
    }
    env.close()
    ratios = [x for rep in repeats for x in rep["ratios"]]
    for side in ("env", "raw"):
        entry[side] = {
            "steps_per_s": summarize([rep[side]["steps_per_s"] for rep in repeats]),
            "ms_per_step": summarize([rep[side]["ms_per_step"] for rep in repeats]),
        }
    entry["raw_physics"] = {"steps_per_s": summarize(physics)}
    entry["overhead_pct"] = 100.0 * (statistics.median(ratios) - 1.0)
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    entry["overhead_pct_quartiles"] = [100.0 * (q[0] - 1.0), 100.0 * (q[2] - 1.0)]
    entry["overhead_pct_per_repeat"] = [
        100.0 * (statistics.median(rep["ratios"]) - 1.0) for rep in repeats
    ]
    entry["block_pairs"] = len(ratios)
    entry["repeats"] = [{k: v for k, v in rep.items() if k != "ratios"} for rep in repeats]
    return entry


def run_robot_env(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure every size; return (and write) the report."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    sizes = _check(args)
    os.environ["LP_NUM_THREADS"] = str(args.render_threads)  # before MuJoCo's GL loads
    os.environ.setdefault("MUJOCO_GL", "egl")
    from vlagent.io import atomic_write_json

    load_at_start = [round(x, 2) for x in os.getloadavg()]
    sizes_out: dict[str, Any] = {}
    for size in sizes:
        entry = measure_size(args, size)
        sizes_out[str(size)] = entry
        log.info(
            "%d px: env %.1f steps/s, raw %.1f steps/s, overhead %.1f %%",
            size,
            entry["env"]["steps_per_s"]["median"],
            entry["raw"]["steps_per_s"]["median"],
            entry["overhead_pct"],
        )
    import mujoco

    report = {
        "schema_version": SCHEMA_VERSION,
        "kind": "robot_env",
        "label": args.label,
        "command": " ".join(["python -m bench.robot_env", *argv]),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {**machine_info(), "load_average_at_start": load_at_start},
        "config": {
            "task": args.task,
            "camera": args.camera,
            "seconds": args.seconds,
            "repeats": args.repeats,
            "block": args.block,
            "mujoco": mujoco.__version__,
            "MUJOCO_GL": os.environ.get("MUJOCO_GL"),
            "LP_NUM_THREADS": os.environ.get("LP_NUM_THREADS"),
        },
        "target_overhead_pct": TARGET_OVERHEAD_PCT,
        "sizes": sizes_out,
    }
    atomic_write_json(args.out, report)
    return report


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        report = run_robot_env(argv)
    except BenchError as err:
        sys.stderr.write(f"bench.robot_env: error: {err}\n")
        return 2
    for size, e in report["sizes"].items():
        env, raw = e["env"]["steps_per_s"], e["raw"]["steps_per_s"]
        lo, hi = e["overhead_pct_quartiles"]
        sys.stdout.write(
            f"{size:>4} px  env {env['median']:8.1f} steps/s  raw {raw['median']:8.1f} steps/s  "
            f"overhead {e['overhead_pct']:5.1f} % (quartiles {lo:.1f} to {hi:.1f} %)  "
            f"raw physics only {e['raw_physics']['steps_per_s']['median']:8.1f} steps/s\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
