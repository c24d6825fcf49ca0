"""Merge ``experiments.sft_vs_grpo`` JSON files (one per seed or several) with each seed's
continued-SFT control into one JSON, and print the markdown table of ``docs/RESULTS.md``.

    python -m experiments.sft_vs_grpo_table --out docs/results/robot_reach_constrained.json \\
        --control 'runs/robot_reach_c/seed_{seed}/sft_more_eval' \\
        runs/robot_reach_c_seed0.json runs/robot_reach_c_seed1.json runs/robot_reach_c_seed2.json

``--control`` is a folder template (``{seed}`` filled in) holding the ``eval_summary.json`` that
``vlagent eval --out`` wrote for the control's model on the same held-out tasks; a seed without
one gets the control its row already carries (``sft_vs_grpo --control-set`` runs it), or none
(said in the table). A source may also be a file this command wrote
before (to add seeds to a table whose run folders are gone): its rows keep the control and gain
they carry unless the template finds a summary for that seed, and its own sources (files and
commands) are carried over. Rates are fractions in the JSON and percentages in the table; gains
are GRPO minus SFT and control minus SFT, per seed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from experiments.sft_vs_grpo import pct_ci
from vlagent.io import atomic_write_json


def _score(summary: dict[str, Any]) -> dict[str, Any]:
    """The held-out score of an ``eval_summary.json``, in ``sft_vs_grpo``'s row keys."""
    return {
        "n": summary["n"],
        "success": summary["success_rate"],
        "ci_low": summary["success_ci_low"],
        "ci_high": summary["success_ci_high"],
        "format_rate": summary.get("format_rate"),
        "mean_steps": summary.get("mean_steps"),
    }


def merge(sources: list[str], control: str | None) -> dict[str, Any]:
    """Rows of every source, sorted by seed, each with ``gain`` and (when the control's
    summary exists) ``control`` and ``control_gain``. A seed listed twice is an error."""
    rows: dict[int, dict[str, Any]] = {}
    files, commands = [], []
    for src in sources:
        data = json.loads(Path(src).read_text())
        files.extend(data.get("sources") or [src])
        commands.extend(data.get("source_commands") or [data.get("command")])
        for row in data["rows"]:
            seed = int(row["seed"])
            if seed in rows:
                raise ValueError(f"seed {seed} appears in more than one source ({src})")
            row = dict(row, gain=row["grpo"]["success"] - row["sft"]["success"])
            summary = Path(control.format(seed=seed)) / "eval_summary.json" if control else None
            if summary is not None and summary.exists():
                row["control"] = _score(json.loads(summary.read_text()))
            if "control" in row:  # the template's, or the driver's own (``--control-set``)
                row["control_gain"] = row["control"]["success"] - row["sft"]["success"]
            rows[seed] = row
    ordered = [rows[s] for s in sorted(rows)]
    controls = [r["control_gain"] for r in ordered if "control_gain" in r]
    return {
        "sources": files,
        "source_commands": commands,
        "control": control,
        "rows": ordered,
        "mean_gain": statistics.fmean(r["gain"] for r in ordered) if ordered else None,
        "mean_control_gain": statistics.fmean(controls) if controls else None,
    }


def table(merged: dict[str, Any]) -> str:
    """The markdown table: seed, SFT steps, SFT, GRPO, gain, control, control gain (%). Rows
    with an anneal stage (``--anneal-set``) add its steps and SFT's score before it."""
    annealed = any("sft_before_anneal" in r for r in merged["rows"])
    before = "| before the decay " if annealed else ""
    lines = [
        f"| seed | SFT steps {before}| after SFT | after SFT + GRPO | GRPO gain | control "
        "| control gain |",
        "|---:|---:|" + ("---|" if annealed else "") + "---|---|---:|---|---:|",
    ]
    for r in merged["rows"]:
        ctl = r.get("control")
        ctl_gain = f"{100 * r['control_gain']:+.1f}" if ctl else "–"
        steps = f"{r['sft_steps']:,}"
        if "anneal_steps" in r:
            steps += f" + {r['anneal_steps']:,} decaying"
        if annealed:
            steps += f" | {pct_ci(r['sft_before_anneal']) if 'sft_before_anneal' in r else '–'}"
        lines.append(
            f"| {r['seed']} | {steps} | {pct_ci(r['sft'])} | {pct_ci(r['grpo'])} "
            f"| {100 * r['gain']:+.1f} | {pct_ci(ctl) if ctl else 'not run'} "
            f"| {ctl_gain} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The merger's arguments (no source is required to parse)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sources", nargs="*", help="JSON files written by experiments.sft_vs_grpo")
    p.add_argument("--control", default=None, help="folder template with {seed}: eval_summary.json")
    p.add_argument("--out", default=None, help="merged JSON to write (atomically)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Merge, write the JSON, print the table."""
    args = parse_args(argv)
    if not args.sources:
        raise SystemExit("sft_vs_grpo_table: name at least one sft_vs_grpo JSON file")
    merged = merge(args.sources, args.control)
    words = sys.argv[1:] if argv is None else argv
    merged["command"] = " ".join(["python -m experiments.sft_vs_grpo_table", *words])
    if args.out:
        atomic_write_json(args.out, merged)
    sys.stdout.write(table(merged))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
