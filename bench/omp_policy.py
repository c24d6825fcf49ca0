"""What the OpenMP wait policy and the thread count cost a GRPO step, alone and side by side.

    python -m bench.omp_policy --preset quickstart --repeats 2   # -> bench/results/omp_policy_quickstart.json

Torch's CPU kernels run on libgomp threads. Between parallel regions those threads either spin
(``OMP_WAIT_POLICY=ACTIVE``; libgomp's default spins a while, then sleeps) or sleep at once
(``PASSIVE``, what the ``vlagent`` CLI, ``scripts/test.sh`` and the bench workers set). Spinning
wastes cores that another process needs; sleeping pays a wake-up for every parallel op, and a
tiny model's step is thousands of small ops. This runs our GRPO step (the throughput worker of
``bench/grpo_vs_trl.py`` on the preset's job and SFT start) under each setting, alone and as
two identical processes at once (two training runs sharing the machine), settings alternating
within each repeat. Each process is a fresh worker; samples/s as in ``bench/grpo_vs_trl.py``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import logging
import os
import sys
from pathlib import Path
from typing import Any

from bench.common import REPO, machine_info, run_worker, summarize
from bench.grpo_vs_trl import preset_ours_job

log = logging.getLogger("bench.omp_policy")

SETTINGS: dict[str, tuple[int, dict[str, str | None]]] = {
    # name: (torch threads, environment for the worker; None removes the variable)
    "2 threads, PASSIVE (vlagent default)": (2, {"OMP_WAIT_POLICY": "PASSIVE"}),
    "2 threads, ACTIVE": (2, {"OMP_WAIT_POLICY": "ACTIVE"}),
    "2 threads, libgomp default": (2, {"OMP_WAIT_POLICY": None}),
    "2 threads, PASSIVE + GOMP_SPINCOUNT=10000": (
        2,
        {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "10000"},
    ),
    "1 thread": (1, {"OMP_WAIT_POLICY": "PASSIVE"}),
}


def _measure(
    base: dict[str, Any], setting: str, copies: int, runs_dir: Path, tag: str, timeout: float
) -> list[dict[str, Any]]:
    """Run ``copies`` identical workers at once under ``setting``; their throughput results."""
    threads, env = SETTINGS[setting]
    jobs = []
    for c in range(copies):
        name = f"{tag}-c{c}"
        job = {**base, "job": {**base["job"], "threads": threads}, "run_dir": str(runs_dir / name)}
        jobs.append((job, name))
    with cf.ThreadPoolExecutor(max_workers=copies) as pool:
        futures = [pool.submit(run_worker, job, runs_dir, name, timeout, env) for job, name in jobs]
        results = [f.result() for f in futures]
    return [
        {
            "samples_per_s": r["samples_per_s"],
            "step_seconds": r["step_seconds"],
            "buckets": r["buckets"],
            "torch_threads": r["torch_threads"],
            "peak_rss_mb": r["peak_rss_mb"],
        }
        for r in results
    ]


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure every setting alone and in pairs; write and return the report."""
    from vlagent.io import atomic_write_json

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    settings = [s for s in SETTINGS if not args.only or any(o in s for o in args.only)]
    base, sft = preset_ours_job(args.preset, args.work_dir, steps=args.steps, seed=args.seed)
    runs_dir = args.work_dir.resolve() / "omp" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or REPO / f"bench/results/omp_policy_{args.preset}.json"
    report: dict[str, Any] = {
        "kind": "omp_policy",
        "command": " ".join(["python -m bench.omp_policy", *argv]),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info("cpu"),
        "preset": args.preset,
        "job": base["job"],
        "sft_start": sft,
        "settings": {s: {"threads": SETTINGS[s][0], "env": SETTINGS[s][1]} for s in settings},
        "alone": {s: [] for s in settings},
        "pair": {s: [] for s in settings},
        "complete": False,
    }
    for r in range(args.repeats):
        for mode, copies in (("alone", 1), ("pair", 2)):
            for i, setting in enumerate(settings):
                log.info("repeat %d, %s, %s", r + 1, mode, setting)
                res = _measure(base, setting, copies, runs_dir, f"r{r}-{mode}-s{i}", args.timeout)
                report[mode][setting].append(res)
                atomic_write_json(out, report)
    report["summary"] = {
        s: {
            "alone_samples_per_s": summarize(
                [rep[0]["samples_per_s"] for rep in report["alone"][s]]
            ),
            "pair_total_samples_per_s": summarize(
                [sum(p["samples_per_s"] for p in rep) for rep in report["pair"][s]]
            ),
        }
        for s in settings
    }
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["complete"] = True
    atomic_write_json(out, report)
    return report


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench.omp_policy", description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="quickstart", help="a bench.grpo_vs_trl preset (the job)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--steps", type=int, default=20, help="measured steps per process")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="*", default=[], help="settings whose name contains any")
    p.add_argument("--work-dir", type=Path, default=REPO / "bench/out")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--timeout", type=float, default=3600.0)
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    report = run(argv)
    for s, v in report["summary"].items():
        a, p = v["alone_samples_per_s"], v["pair_total_samples_per_s"]
        sys.stdout.write(
            f"{s:45s} alone {a['median']:7.1f}  two at once (sum) {p['median']:7.1f}\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
