"""Where a GRPO step of ours spends its time: ``torch.profiler`` over a few bench-config steps.

    python -m bench.profile_grpo --label after                                  # shared prefix
    python -m bench.profile_grpo --label before --ours-set grpo.shared_prefix=false  # plain path
    python -m bench.profile_grpo --preset quickstart --label job3     # another bench job

Same model, SFT start, screens and job as ``bench/grpo_vs_trl.py`` with the same ``--preset``
(its cached ``bench/out`` checkpoints are reused). Writes ``bench/results/profile_<label>.json``: the recipe's phase
split (generate / logprob / update / other, seconds per step) and the operators with the most
self CPU time, plus the same table as text (``profile_<label>.txt``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from bench.common import REPO, JobConfig, machine_info

log = logging.getLogger("bench.profile_grpo")


def profile(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``args.steps`` (+1 warm-up) GRPO steps of ours under the profiler; return the report."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from bench import ours
    from bench.grpo_vs_trl import preset_ours_job
    from vlagent.models.loading import quiet_transformers

    quiet_transformers()
    job_dict, sft = preset_ours_job(
        args.preset, args.work_dir, steps=args.steps, threads=args.threads, seed=args.seed
    )
    run_dir = args.work_dir.resolve() / "profile" / args.label
    ours_set = job_dict["ours_set"] + list(args.ours_set)
    job_dict.update(run_dir=str(run_dir), ours_set=ours_set)
    job = JobConfig(**{**job_dict["job"], "reward": tuple(map(tuple, job_dict["job"]["reward"]))})
    torch.set_num_threads(job.resolved_threads())
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        result = ours.run(job_dict)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) or 1.0
    top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[: args.top]
    ops = [
        {
            "op": e.key,
            "self_cpu_s": e.self_cpu_time_total / 1e6,
            "share": e.self_cpu_time_total / total,
            "calls": e.count,
        }
        for e in top
    ]
    table = events.table(sort_by="self_cpu_time_total", row_limit=args.top)
    return {
        "label": args.label,
        "command": " ".join(["python -m bench.profile_grpo", *sys.argv[1:]]),
        "machine": machine_info("cpu"),
        "preset": args.preset,
        "sft_start": sft,
        "ours_set": ours_set,
        "steps_measured": result["steps_measured"],
        "samples_per_s": result["samples_per_s"],
        "step_seconds": result["step_seconds"],
        "buckets_s_per_step": result["buckets"],
        "phases_s_per_step": result["phases"],
        "top_ops_by_self_cpu": ops,
        "note": "profiled run (profiler overhead included); samples/s here is not the benchmark's",
        "_table": table,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.profile_grpo", description=__doc__.splitlines()[0])
    p.add_argument("--label", default="after")
    p.add_argument("--preset", default="bench", help="a bench.grpo_vs_trl preset (the job)")
    p.add_argument("--steps", type=int, default=5, help="measured steps (after 1 warm-up)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top", type=int, default=15, help="operators listed")
    p.add_argument("--ours-set", nargs="*", default=[], metavar="KEY=VALUE")
    p.add_argument("--work-dir", type=Path, default=REPO / "bench/out")
    p.add_argument("--out-dir", type=Path, default=REPO / "bench/results")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from vlagent.io import atomic_write_json, atomic_write_text

    report = profile(args)
    table = report.pop("_table")
    atomic_write_json(args.out_dir / f"profile_{args.label}.json", report)
    atomic_write_text(args.out_dir / f"profile_{args.label}.txt", table + "\n")
    b = report["buckets_s_per_step"]
    sys.stdout.write(
        f"{args.label}: {report['step_seconds']:.2f} s/step "
        + " ".join(f"{k}={v:.2f}" for k, v in b.items())
        + "\n"
        + table
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
