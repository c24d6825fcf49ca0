"""Desktop and web env speed: reset time and env steps/s of ``DesktopEnv`` and ``MiniWoBEnv``.

    python -m bench.desktop_env                  # writes bench/results/desktop_env.json

- ``desktop.session_start_s``: a new ``DesktopSession`` (Xvfb + openbox + sandbox) until the
  display answers, then closed; ``--repeats`` times.
- ``desktop.reset_s``: ``DesktopEnv.reset`` of each local task (fresh home, the task's setup
  steps, apps started and their windows up, the screen settled), one session reused.
- ``desktop.step_s``: one ``click`` on the terminal, one ``type`` of a short command and one
  ``key`` press, each timed from ``step`` call to return (the action, the settle wait
  ``--settle`` seconds and the stable-screenshot check included).
- ``web.reset_s`` / ``web.step_s``: ``MiniWoBEnv`` reset (page reload, seeding) and a click
  step on click-test / focus-text pages (the browser started once, off the clock).

Medians with min and max. The screen settle wait dominates a desktop step: it is a parameter
of the env (``settle``) and reported here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, machine_info, summarize


def bench_desktop(repeats: int, settle: float) -> dict[str, Any]:
    """Session start, per-task reset and per-action step times of the local desktop."""
    from gui.osworld.env import DesktopEnv
    from gui.osworld.oracle import find_window
    from sim.desktop import DesktopSession

    starts = []
    for _ in range(repeats):
        t = time.perf_counter()
        s = DesktopSession()
        _ = s.display.name
        starts.append(time.perf_counter() - t)
        s.close()
    env = DesktopEnv("local", settle=settle)
    resets, steps = [], []
    try:
        env.reset(seed=0, options={"task_id": "local-chmod-644"})  # session start, off clock
        for task in env.tasks:
            t = time.perf_counter()
            env.reset(seed=0, options={"task_id": task.id})
            resets.append(time.perf_counter() - t)
        for _ in range(repeats):
            obs, _ = env.reset(seed=0, options={"task_id": "local-chmod-644"})
            w = find_window(obs["a11y"], "Terminal")
            centre = [(w.x + w.width / 2) / 1023, (w.y + w.height / 2) / 767]
            for action in (
                {"type": "click", "point": centre},
                {"type": "type", "text": "ls\n"},
                {"type": "key", "key": "Return"},
            ):
                t = time.perf_counter()
                env.step(action)
                steps.append(time.perf_counter() - t)
    finally:
        env.close()
    return {
        "session_start_s": summarize(starts),
        "reset_s": summarize(resets),
        "step_s": summarize(steps),
        "steps_per_s": 1.0 / summarize(steps)["median"],
        "settle_s": settle,
        "tasks": len(resets),
    }


def bench_web(repeats: int) -> dict[str, Any]:
    """MiniWoB reset and click-step times (one browser, started off the clock)."""
    from gui.web.miniwob_env import MiniWoBEnv

    env = MiniWoBEnv(["click-test", "focus-text"])
    resets, steps = [], []
    try:
        env.reset(options={"task_id": "click-test/0"})
        for i in range(repeats):
            task = "click-test" if i % 2 == 0 else "focus-text"
            t = time.perf_counter()
            env.reset(options={"task_id": f"{task}/{i}"})
            resets.append(time.perf_counter() - t)
            t = time.perf_counter()
            env.step({"type": "click", "point": [0.05, 0.95]})  # a miss: the page stays up
            steps.append(time.perf_counter() - t)
    finally:
        env.close()
    return {
        "reset_s": summarize(resets),
        "step_s": summarize(steps),
        "steps_per_s": 1.0 / summarize(steps)["median"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--settle", type=float, default=0.4, help="DesktopEnv settle seconds")
    p.add_argument("--out", type=Path, default=REPO / "bench/results/desktop_env.json")
    args = p.parse_args(argv)
    from vlagent.io import atomic_write_json

    report = {
        "command": "python -m bench.desktop_env " + " ".join(sys.argv[1:]),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "desktop": bench_desktop(args.repeats, args.settle),
        "web": bench_web(args.repeats),
    }
    atomic_write_json(args.out, report)
    for part in ("desktop", "web"):
        r = report[part]
        sys.stdout.write(
            f"{part}: reset {r['reset_s']['median']:.2f} s, step {r['step_s']['median']:.3f} s "
            f"({r['steps_per_s']:.1f} steps/s)\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
