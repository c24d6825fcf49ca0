"""The level ladder table (issue 18): SFT on scarce demonstrations vs SFT + GRPO vs more SFT,
per level, several seeds, beside the baselines a policy must beat to show it reads the
instruction.

Input: the ``--json`` files ``vlagent quickstart`` writes (one or more per level, each with
``summaries``: one per seed). Output: one JSON with every seed's numbers and, per level, the
mean of each stage, the GRPO gain per seed with its mean and 95 % t-interval, whether the gain
holds on every seed, and the ratio to the best instruction-blind baseline.

    python -m experiments.ladder --out docs/results/ladder.json \\
        basic=docs/results/quickstart_3seeds.json shapes=runs/l20/shapes_s0.json,...

Baselines, all exact expected accuracies on the same held-out screens
(``gui.grounding.baselines``): *blind* ones ignore the instruction (``random_element``,
``largest_element``; on one-element screens the click baselines ``random_click`` and
``center_click``); *partial* ones read part of it (``same_colour``, ``same_shape``,
``same_kind``).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from vlagent.io import atomic_write_json

STAGES = ("before", "sft", "grpo", "sft_continued")
BLIND = ("random_element", "largest_element", "random_click", "center_click")
PARTIAL = ("same_colour", "same_shape", "same_kind")
CONTROL_DEFAULT = "same_updates_and_sequences"
"""The quickstart's control: as many SFT updates and sequences as GRPO. ``same_seconds``
(``experiments.stage_summary``): SFT for as many training seconds as GRPO took."""
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def mean_ci95(xs: list[float]) -> tuple[float, float, float]:
    """Mean and the Student-t 95 % interval of the mean; one value gives a zero-width interval.

    >>> mean_ci95([1.0, 2.0, 3.0])
    (2.0, -0.484, 4.484)
    """
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, m, m
    half = _T95.get(len(xs) - 1, 1.96) * statistics.stdev(xs) / math.sqrt(len(xs))
    return round(m, 3), round(m - half, 3), round(m + half, 3)


def level_row(level: str, summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate one level's per-seed quickstart summaries (accuracies in %)."""
    if not summaries:
        raise ValueError(f"{level}: no summaries")
    seeds = [s["seed"] for s in summaries]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{level}: seed listed twice {seeds}")
    pct = {k: [100 * s["accuracy"][k] for s in summaries] for k in STAGES}
    gains = [g - s for g, s in zip(pct["grpo"], pct["sft"], strict=True)]
    base = summaries[0]["baselines"]
    blind = {k: 100 * base[k] for k in BLIND if k in base}
    best_blind = max(blind, key=lambda k: blind[k])
    grpo_mean = statistics.fmean(pct["grpo"])
    controls = {s.get("control", CONTROL_DEFAULT) for s in summaries}
    if len(controls) != 1:
        raise ValueError(f"{level}: seeds use different controls {sorted(controls)}")
    return {
        "level": level,
        "seeds": seeds,
        "per_seed": [
            {
                "seed": s["seed"],
                **{k: round(100 * s["accuracy"][k], 1) for k in STAGES},
                "ci95": {k: [round(100 * v, 1) for v in s["accuracy_ci95"][k]] for k in STAGES},
                "grpo_gain": round(g, 1),
                "sft_steps": s["sft"]["steps"],
                "num_demos": s["sft"].get("num_demos"),
                "grpo_steps": s["grpo"]["steps"],
                "sft_continued_steps": s["sft_continued"]["steps"],
                "control": s.get("control", CONTROL_DEFAULT),
                "seconds": round(s["seconds"]),
            }
            for s, g in zip(summaries, gains, strict=True)
        ],
        "mean": {k: round(statistics.fmean(v), 1) for k, v in pct.items()},
        "grpo_gain_mean_ci95": mean_ci95(gains),
        "grpo_gain_every_seed": all(g > 0 for g in gains),
        "control": controls.pop(),
        "grpo_beats_more_sft_every_seed": all(
            g > c for g, c in zip(pct["grpo"], pct["sft_continued"], strict=True)
        ),
        "baselines_blind": {k: round(v, 1) for k, v in blind.items()},
        "baselines_partial": {k: round(100 * base[k], 1) for k in PARTIAL if k in base},
        "best_blind": best_blind,
        "grpo_over_best_blind": round(grpo_mean / blind[best_blind], 2)
        if blind[best_blind] > 0
        else None,
        "eval_screens": summaries[0]["eval_screens"],
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    """One line per level: means over seeds, the gain interval, the baselines."""
    out = [
        "| level | seeds | demos (0 = fresh labels) | SFT | SFT + GRPO | SFT + more SFT "
        "| GRPO gain, mean [95 % CI] | gain > 0 every seed | best blind baseline | partial baselines |",
        "|---|---:|---:|---:|---:|---:|---|:-:|---|---|",
    ]
    for r in rows:
        m, (g, lo, hi) = r["mean"], r["grpo_gain_mean_ci95"]
        partial = ", ".join(f"{k} {v:.1f}" for k, v in r["baselines_partial"].items()) or "-"
        best = r["best_blind"]
        out.append(
            f"| {r['level']} | {len(r['seeds'])} | {r['per_seed'][0]['num_demos']} | {m['sft']:.1f} | {m['grpo']:.1f} | "
            f"{m['sft_continued']:.1f}{' (same seconds)' if r['control'] == 'same_seconds' else ''} | {g:+.1f} [{lo:+.1f}, {hi:+.1f}] | "
            f"{'yes' if r['grpo_gain_every_seed'] else 'no'} | "
            f"{r['baselines_blind'][best]:.1f} ({best}) | {partial} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("levels", nargs="+", help="LEVEL=quickstart.json[,more.json]")
    args = ap.parse_args(argv)
    rows = []
    for spec in args.levels:
        level, _, files = spec.partition("=")
        if not files:
            ap.error(f"{spec!r}: use LEVEL=file.json[,file2.json]")
        summaries = []
        for f in files.split(","):
            data = json.loads(Path(f).read_text())
            summaries += data["summaries"]
        rows.append(
            {**level_row(level, sorted(summaries, key=lambda s: s["seed"])), "sources": files}
        )
    atomic_write_json(Path(args.out), {"command": " ".join(sys.argv), "levels": rows})
    sys.stdout.write(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
