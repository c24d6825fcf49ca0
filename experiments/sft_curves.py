"""Summarize SFT or GRPO runs as JSON: validation success / format curves, the final training
loss (SFT) or the rollouts' success and invalid-turn rates (GRPO), and the held-out score.

Used for the robot-world pilots (issue 13: can the tiny VLM learn reach from demonstrations, and
which GRPO recipe lifts it), the zoom experiment's pilots (issue 11) and the binding pilots
(issue 18)::

    python -m experiments.sft_curves --out docs/results/robot_reach_sft_pilots.json \\
        front_32demos=runs/robot_sft top_128demos=runs/robot_sft_top
    python -m experiments.sft_curves --out docs/results/robot_reach1_grpo_recipes.json \\
        seed0_prox=runs/robot_reach1/seed_0/grpo_prox,runs/robot_reach1/seed_0/grpo_prox_eval

Each ``name=run_dir`` must hold a ``metrics.jsonl`` and a ``config.yaml`` whose ``recipe`` (sft
or grpo) names the phase read. ``name=run_dir,eval_dir`` adds the ``eval_summary.json`` that
``vlagent eval --out eval_dir`` wrote for that run's model (its held-out score).
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

ZOOM_KEYS = ("zoom_has_target", "acc_given_target_zoom", "invalid_action_rate")
"""Zoom-world monitor metrics kept when present (the zoom experiment's pilots)."""


SFT_KEYS = ("steps", "batch_size", "lr", "lr_schedule", "num_demos")
GRPO_KEYS = ("steps", "prompts_per_step", "group_size", "lr", "temperature", "mask_truncated")
HELDOUT_KEYS = ("n", "success_rate", "success_ci_low", "success_ci_high", "format_rate")


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [float(r[key]) for r in rows if r.get(key) is not None]
    return statistics.fmean(vals) if vals else None


def summarize(run_dir: Path, eval_dir: Path | None = None) -> dict[str, Any]:
    """Validation curve and training signals of one SFT or GRPO run folder (plus its config and,
    with ``eval_dir``, the held-out summary ``vlagent eval`` wrote there)."""
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    phase = cfg.get("recipe")
    if phase not in ("sft", "grpo"):
        raise SystemExit(f"{run_dir}: config.yaml recipe must be sft or grpo, got {phase!r}")
    rows = read_metrics(run_dir / "metrics.jsonl", phase)
    if not rows:
        raise SystemExit(f"{run_dir}: no {phase} rows in metrics.jsonl")
    val = [r for r in rows if r.get("val/success_rate") is not None]
    out: dict[str, Any] = {
        "run_dir": str(run_dir),
        "world": cfg.get("world"),
        "robot": cfg.get("robot"),
        "task_level": (cfg.get("task") or {}).get("level"),
        "targets_per_screen": (cfg.get("task") or {}).get("targets_per_screen", 1),
        "describe_mix": (cfg.get("task") or {}).get("describe_mix", 0.0),
        "prompt_order": (cfg.get("task") or {}).get("prompt_order", "image_first"),
        "model_tiny": (cfg.get("model") or {}).get("tiny") or {},
        "tools": {k: (cfg.get("tools") or {}).get(k) for k in ("enabled", "trace")},
        "start": (cfg.get("model") or {}).get("path"),
        "phase": phase,
        phase: {  # a key absent from an older run's config is left out
            k: cfg[phase][k] for k in (SFT_KEYS if phase == "sft" else GRPO_KEYS) if k in cfg[phase]
        },
        "steps_run": max(int(r["step"]) for r in rows),
        "val": [
            {
                "step": r["step"],
                "n": r.get("val/n"),
                "success_rate": r["val/success_rate"],
                "ci95": [r.get("val/success_ci_low"), r.get("val/success_ci_high")],
                "format_rate": r.get("val/format_rate"),
                "mean_steps": r.get("val/mean_steps"),
                **{k: r[f"val/{k}"] for k in ZOOM_KEYS if f"val/{k}" in r},
            }
            for r in val
        ],
    }
    if phase == "sft":
        losses = [r["loss"] for r in rows if r.get("loss") is not None]
        out["loss_last50"] = statistics.fmean(losses[-50:]) if losses else float("nan")
    else:
        out["rollouts"] = {
            "success_rate_first25": _mean(rows[:25], "success_rate"),
            "success_rate_last25": _mean(rows[-25:], "success_rate"),
            "invalid_rate_mean": _mean(rows, "invalid_rate"),
            "invalid_rate_last25": _mean(rows[-25:], "invalid_rate"),
        }
    if eval_dir is not None:
        summary = json.loads((eval_dir / "eval_summary.json").read_text())
        out["heldout"] = {"eval_dir": str(eval_dir), "model": summary.get("model")}
        out["heldout"].update({k: summary.get(k) for k in HELDOUT_KEYS})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("runs", nargs="+", help="name=run_dir or name=run_dir,eval_dir")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {
        "command": "python -m experiments.sft_curves " + " ".join(sys.argv[1:]),
        "runs": {},
    }
    for item in args.runs:
        name, _, paths = item.partition("=")
        path, _, eval_path = paths.partition(",")
        if not path:
            raise SystemExit(f"{item!r}: write runs as name=run_dir or name=run_dir,eval_dir")
        out["runs"][name] = summarize(Path(path), Path(eval_path) if eval_path else None)
    atomic_write_json(args.out, out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
