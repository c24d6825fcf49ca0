"""Summarize SFT runs as JSON: validation success / format curves and the final training loss.

Used for the robot-world pilots (issue 13: can the tiny VLM learn reach from demonstrations)
and the zoom experiment's pilots (issue 11: which task and trace a tiny model can learn)::

    python -m experiments.sft_curves --out docs/results/robot_reach_sft_pilots.json \\
        front_32demos=runs/robot_sft top_128demos=runs/robot_sft_top

Each ``name=run_dir`` must hold a ``metrics.jsonl`` (phase ``sft``) and a ``config.yaml``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml

from vlagent.io import atomic_write_json
from vlagent.train.outputs import read_metrics

ZOOM_KEYS = ("zoom_has_target", "acc_given_target_zoom", "invalid_action_rate")
"""Zoom-world monitor metrics kept when present (the zoom experiment's pilots)."""


def summarize(run_dir: Path) -> dict[str, Any]:
    """Validation curve and loss of one SFT run folder (plus its robot / sft config)."""
    rows = read_metrics(run_dir / "metrics.jsonl", "sft")
    if not rows:
        raise SystemExit(f"{run_dir}: no sft rows in metrics.jsonl")
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    losses = [r["loss"] for r in rows if r.get("loss") is not None]
    val = [r for r in rows if r.get("val/success_rate") is not None]
    return {
        "run_dir": str(run_dir),
        "world": cfg.get("world"),
        "robot": cfg.get("robot"),
        "task_level": (cfg.get("task") or {}).get("level"),
        "tools": {k: (cfg.get("tools") or {}).get(k) for k in ("enabled", "trace")},
        "start": (cfg.get("model") or {}).get("path"),
        "sft": {k: cfg["sft"][k] for k in ("steps", "batch_size", "lr", "num_demos")},
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
        "loss_last50": statistics.fmean(losses[-50:]) if losses else float("nan"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("runs", nargs="+", help="name=run_dir")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {
        "command": "python -m experiments.sft_curves " + " ".join(sys.argv[1:]),
        "runs": {},
    }
    for item in args.runs:
        name, _, path = item.partition("=")
        if not path:
            raise SystemExit(f"{item!r}: write runs as name=run_dir")
        out["runs"][name] = summarize(Path(path))
    atomic_write_json(args.out, out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
