"""Summarize GRPO runs as JSON: validation curve, entropy and advantage signal per run.

Used to compare recipe variants started from one SFT checkpoint (issue 11: why GRPO stalls on
some quickstart seeds)::

    python -m experiments.grpo_curves --out docs/results/quickstart_seed9_variants.json \\
        base=runs/seed_9/grpo lr4e-4=runs/var/lr4 ...

Each ``name=run_dir`` must hold a ``metrics.jsonl`` (phase ``grpo``) and a ``config.yaml``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml

from vlagent.io import atomic_write_json
from vlagent.train.outputs import read_metrics


def summarize(run_dir: Path) -> dict[str, Any]:
    """Curves and signal statistics of one GRPO run folder."""
    rows = read_metrics(run_dir / "metrics.jsonl", "grpo")
    if not rows:
        raise SystemExit(f"{run_dir}: no grpo rows in metrics.jsonl")
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    g = cfg["grpo"]

    def mean(key: str, part: list[dict[str, Any]]) -> float:
        values = [r[key] for r in part if r.get(key) is not None]
        return statistics.fmean(values) if values else float("nan")

    first, last = rows[:50], rows[-50:]
    return {
        "run_dir": str(run_dir),
        "steps": len(rows),
        "grpo": {k: g[k] for k in ("lr", "prompts_per_step", "group_size", "clip_eps_high")},
        "reward": cfg["task"]["reward"],
        "val_accuracy": [[r["step"], r["val/accuracy"]] for r in rows if "val/accuracy" in r],
        "entropy_first50": mean("entropy", first),
        "entropy_last50": mean("entropy", last),
        "adv_abs_mean_first50": mean("adv_abs_mean", first),
        "adv_abs_mean_last50": mean("adv_abs_mean", last),
        "success_rate_last50": mean("success_rate", last),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("runs", nargs="+", help="name=run_dir")
    p.add_argument(
        "--test",
        action="append",
        default=[],
        help="name=eval_summary.json of `vlagent eval` on that run's final/ (held-out test)",
    )
    args = p.parse_args(argv)
    out = {"command": "python -m experiments.grpo_curves " + " ".join(sys.argv[1:]), "runs": {}}
    for item in args.runs:
        name, _, path = item.partition("=")
        out["runs"][name] = summarize(Path(path))
    for item in args.test:
        name, _, path = item.partition("=")
        if name not in out["runs"]:
            raise SystemExit(f"--test {item}: no run named {name!r}")
        test = json.loads(Path(path).read_text())
        keys = ("n", "success_rate", "success_ci_low", "success_ci_high")
        out["runs"][name]["test"] = {k: test[k] for k in keys}
    atomic_write_json(args.out, out)
    for name, s in out["runs"].items():
        print(name, s["val_accuracy"][-1], round(s["entropy_last50"], 3))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
