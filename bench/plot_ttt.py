"""Plot the time-to-threshold curves of a ``bench.grpo_vs_trl`` report.

    python -m bench.plot_ttt bench/results/grpo_vs_trl_ttt.json docs/img/ttt_curves.png

One line per run (held-out accuracy against training seconds, evals excluded), a colour per
system, the threshold dashed; the x axis is logarithmic so that both systems' runs are legible.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

COLOURS = {"ours": "#4C72B0", "trl": "#DD8452"}
LABELS = {"ours": "vlagent", "trl": "TRL GRPOTrainer"}


def curves(report: dict[str, Any]) -> dict[str, list[list[tuple[float, float]]]]:
    """Per system, per run: (training seconds, accuracy %) points in order."""
    ttt = report.get("time_to_threshold", {})
    out: dict[str, list[list[tuple[float, float]]]] = {}
    for system in ("ours", "trl"):
        runs = ttt.get(system, {}).get("runs", [])
        out[system] = [
            [(float(c["train_seconds"]), 100.0 * float(c["accuracy"])) for c in r.get("curve", [])]
            for r in runs
        ]
    return out


def plot(report: dict[str, Any], path: str | Path) -> Path:
    """Write the PNG; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8), dpi=120)
    for system, runs in curves(report).items():
        for i, pts in enumerate(runs):
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            ax.plot(
                xs,
                ys,
                marker="o",
                markersize=3,
                color=COLOURS[system],
                alpha=0.85,
                label=LABELS[system] if i == 0 else None,
            )
    threshold = report.get("time_to_threshold", {}).get("threshold")
    if threshold is not None:
        ax.axhline(100 * threshold, linestyle="--", color="black", linewidth=1, label="threshold")
    ax.set_xscale("log")
    ax.set_xlabel("training seconds (evaluation excluded, log scale)")
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title(f"Time to threshold, {report.get('label', '')}: one line per seed", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.plot_ttt", description=__doc__.splitlines()[0])
    p.add_argument("report", type=Path)
    p.add_argument("out", type=Path)
    args = p.parse_args(argv)
    plot(json.loads(args.report.read_text()), args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
