"""Quickstart-format summaries for a ladder rung whose stages were run one by one.

``vlagent quickstart`` runs SFT → GRPO → the continued-SFT control in one process and writes
``summaries`` (one per seed) that ``experiments.ladder`` aggregates. A rung run stage by stage
(``vlagent train`` / ``vlagent eval`` per stage, e.g. a shorter SFT start and a longer GRPO run,
or a control matched on training seconds instead of updates) gets the same record here, read
from each stage's run directory (``metrics.jsonl``: steps and training seconds) and its
``vlagent eval`` directory (``eval_summary.json``: accuracy, its 95 % interval, baselines).

    python -m experiments.stage_summary --out docs/results/X.json --control same_seconds \\
        --seed 0 --before runs/T_eval --sft runs/p_s0/sft:runs/p_s0/sft_eval \\
        --grpo runs/p_s0/grpo:runs/p_s0/grpo_eval --sft-continued runs/p_s0/more:runs/p_s0/more_eval

Several ``--seed`` groups may follow each other; each needs all four stages. All stages of one
seed must have been evaluated on the same number of screens.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vlagent.io import atomic_write_json
from vlagent.train.outputs import read_metrics

STAGE_FLAGS = ("sft", "grpo", "sft_continued")
CONTROLS = ("same_updates_and_sequences", "same_seconds")


def read_eval(eval_dir: Path) -> dict[str, Any]:
    """``eval_summary.json`` of a ``vlagent eval --out`` directory."""
    path = eval_dir / "eval_summary.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no eval summary (run `vlagent eval --out {eval_dir}`)")
    return json.loads(path.read_text())


def read_run(run_dir: Path) -> dict[str, Any]:
    """Steps and training seconds of a training run, from the last line of its metrics."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not a training run directory")
    steps = [r for r in read_metrics(path) if "train_seconds" in r]
    if not steps:
        raise ValueError(f"{path}: no step with train_seconds")
    last = max(steps, key=lambda r: r["step"])
    return {"steps": int(last["step"]), "train_seconds": float(last["train_seconds"])}


def seed_summary(
    seed: int,
    evals: dict[str, dict[str, Any]],
    runs: dict[str, dict[str, Any]],
    control: str,
    num_demos: int = 0,
) -> dict[str, Any]:
    """One seed's record in the shape ``vlagent quickstart --json`` writes.

    ``evals``: eval summaries for ``before`` and each of ``STAGE_FLAGS``; ``runs``: ``read_run``
    of each of ``STAGE_FLAGS``. Accuracies are fractions, as in the quickstart.
    """
    if control not in CONTROLS:
        raise ValueError(f"control {control!r}: one of {CONTROLS}")
    stages = ("before", *STAGE_FLAGS)
    missing = [s for s in stages if s not in evals] + [s for s in STAGE_FLAGS if s not in runs]
    if missing:
        raise ValueError(f"seed {seed}: missing stages {missing}")
    sizes = {s: int(evals[s]["n"]) for s in stages}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"seed {seed}: stages evaluated on different screen counts {sizes}")
    return {
        "seed": seed,
        "accuracy": {s: evals[s]["accuracy"] for s in stages},
        "accuracy_ci95": {
            s: [evals[s]["success_ci_low"], evals[s]["success_ci_high"]] for s in stages
        },
        "baselines": evals["before"]["baselines"],
        "eval_screens": sizes["before"],
        "sft": {**runs["sft"], "num_demos": num_demos},
        "grpo": runs["grpo"],
        "sft_continued": runs["sft_continued"],
        "control": control,
        "seconds": sum(runs[s]["train_seconds"] for s in STAGE_FLAGS),
    }


def _pair(spec: str) -> tuple[Path, Path]:
    run, sep, ev = spec.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"{spec!r}: use RUN_DIR:EVAL_DIR")
    return Path(run), Path(ev)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--control", choices=CONTROLS, required=True, help="how the control matches")
    ap.add_argument("--num-demos", type=int, default=0, help="SFT demonstrations (0 = fresh)")
    ap.add_argument("--seed", type=int, action="append", required=True)
    ap.add_argument("--before", type=Path, action="append", required=True, help="EVAL_DIR")
    for flag in STAGE_FLAGS:
        ap.add_argument(f"--{flag.replace('_', '-')}", type=_pair, action="append", required=True)
    args = ap.parse_args(argv)
    groups = [args.seed, args.before, *(getattr(args, f) for f in STAGE_FLAGS)]
    if len({len(g) for g in groups}) != 1:
        ap.error("each --seed needs one --before, --sft, --grpo and --sft-continued")
    summaries = []
    for i, seed in enumerate(args.seed):
        evals = {"before": read_eval(args.before[i])}
        runs = {}
        for flag in STAGE_FLAGS:
            run_dir, eval_dir = getattr(args, flag)[i]
            runs[flag], evals[flag] = read_run(run_dir), read_eval(eval_dir)
        summaries.append(seed_summary(seed, evals, runs, args.control, args.num_demos))
    atomic_write_json(
        args.out,
        {
            "command": "python -m experiments.stage_summary " + " ".join(argv),
            "summaries": summaries,
        },
    )
    for s in summaries:
        a = s["accuracy"]
        sys.stdout.write(
            f"seed {s['seed']}: SFT {100 * a['sft']:.1f}  GRPO {100 * a['grpo']:.1f} "
            f"({100 * (a['grpo'] - a['sft']):+.1f})  more SFT {100 * a['sft_continued']:.1f}\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
