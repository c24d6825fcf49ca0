"""Reward shape at equal GRPO budget: binary point-in-box vs GUI-G²'s Gaussian point vs both.

Issue 11's reward-shape study. For each seed: build the tiny model and SFT it on the
quickstart's 64 demos until it plateaus (as the quickstart does), then train GRPO from that one
checkpoint once per reward arm — same steps, prompts, group size, lr and seed; only
``task.reward`` differs — and score every checkpoint greedily on the same held-out screens with
point-in-box accuracy (a Wilson 95 % interval per run).

    python -m experiments.reward_shape --seeds 0,1,2 --json docs/results/reward_shape_basic.json
    python -m experiments.reward_shape --seeds 0,1,2 --json docs/results/reward_shape_basic2.json \\
        task.level=basic2

Arms (``--arms``, names from ``ARMS``): ``binary`` = point_in_box 1.0; ``gaussian`` =
gaussian_point 1.0; ``both`` = point_in_box 1.0 + gaussian_point 0.5 (the quickstart's reward).
Every arm adds format 0.1. Trailing ``key=value`` overrides apply to SFT and to every arm.
Run from the repository root (``experiments`` is not an installed package).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
from pathlib import Path
from typing import Any

from experiments.algos import sft_start
from vlagent.config import RECIPES_DIR, load_config
from vlagent.eval.evaluate import evaluate
from vlagent.io import atomic_write_json
from vlagent.models.loading import load_policy, quiet_transformers
from vlagent.train.grpo import run_grpo
from vlagent.worlds import make_world

log = logging.getLogger(__name__)

ARMS: dict[str, dict[str, float]] = {
    "binary": {"point_in_box": 1.0, "format": 0.1},
    "gaussian": {"gaussian_point": 1.0, "format": 0.1},
    "both": {"point_in_box": 1.0, "gaussian_point": 0.5, "format": 0.1},
}
"""Reward terms per arm (``task.reward``); only this differs between a seed's GRPO runs."""


def reward_override(terms: dict[str, float]) -> str:
    """``task.reward={...}`` as one override string (YAML flow mapping)."""
    body = ", ".join(f"{k}: {v}" for k, v in terms.items())
    return "task.reward={" + body + "}"


def held_out(path: str, cfg: Any) -> dict[str, float]:
    """Greedy point-in-box accuracy of the checkpoint at ``path`` on the first
    ``eval.num_screens`` test screens of ``cfg``'s world, with its Wilson 95 % interval."""
    policy = load_policy(path)
    world = make_world(cfg, policy)
    try:
        rep = evaluate(
            world,
            policy,
            "test",
            cfg.eval.num_screens,
            batch_size=cfg.eval.batch_size,
            max_new_tokens=cfg.eval.max_new_tokens,
        )
    finally:
        world.close()
    return {
        "n": rep.n,
        "accuracy": rep.success_rate,
        "ci_low": rep.success_ci[0],
        "ci_high": rep.success_ci[1],
        "format_rate": 1.0 - rep.metrics.get("invalid_action_rate", 0.0),
    }


def run_seed(seed: int, arms: list[str], out: Path, overrides: list[str]) -> dict[str, Any]:
    """SFT once, then GRPO once per arm from that checkpoint; returns held-out results."""
    base = load_config(
        RECIPES_DIR / "quickstart.yaml", [f"run.seed={seed}", "run.progress=false", *overrides]
    )
    sft_dir = sft_start(seed, out, base)
    row: dict[str, Any] = {"seed": seed, "sft": held_out(sft_dir, base), "arms": {}}
    for arm in arms:
        cfg = load_config(
            RECIPES_DIR / "quickstart.yaml",
            [
                f"run.seed={seed}",
                "run.progress=false",
                "recipe=grpo",
                f"model.path={sft_dir}",
                "model.build_tiny=false",
                f"run.out_dir={out / f'seed_{seed}' / arm}",
                *overrides,
                reward_override(ARMS[arm]),
            ],
        )
        result = run_grpo(cfg)
        res = held_out(result.final_dir, base)
        res.update(steps=result.steps, train_seconds=round(result.train_seconds, 1))
        row["arms"][arm] = res
        log.info("seed %d %s: %.3f (SFT %.3f)", seed, arm, res["accuracy"], row["sft"]["accuracy"])
    return row


def summary(rows: list[dict[str, Any]], arms: list[str]) -> dict[str, Any]:
    """Per arm: mean accuracy and mean gain over the SFT start across seeds, and per-seed gains."""
    out: dict[str, Any] = {}
    for arm in arms:
        gains = [r["arms"][arm]["accuracy"] - r["sft"]["accuracy"] for r in rows]
        out[arm] = {
            "mean_accuracy": statistics.fmean(r["arms"][arm]["accuracy"] for r in rows),
            "mean_gain": statistics.fmean(gains),
            "gains": gains,
        }
    return out


def table(rows: list[dict[str, Any]], arms: list[str]) -> str:
    """Markdown: one row per seed, accuracy [95 % interval] per arm, then the means."""
    head = "| seed | SFT | " + " | ".join(arms) + " |\n|---:|---:|" + "---:|" * len(arms) + "\n"

    def cell(r: dict[str, float]) -> str:
        return f"{100 * r['accuracy']:.1f} [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]"

    lines = [
        f"| {r['seed']} | {cell(r['sft'])} | " + " | ".join(cell(r["arms"][a]) for a in arms) + " |"
        for r in rows
    ]
    s = summary(rows, arms)
    sft_mean = statistics.fmean(r["sft"]["accuracy"] for r in rows)
    lines.append(
        f"| mean | {100 * sft_mean:.1f} | "
        + " | ".join(
            f"{100 * s[a]['mean_accuracy']:.1f} ({100 * s[a]['mean_gain']:+.1f})" for a in arms
        )
        + " |"
    )
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--arms", default="binary,gaussian,both")
    p.add_argument("--out", default="runs/reward_shape")
    p.add_argument("--json", default=None, help="JSON file to write (atomically)")
    p.add_argument("overrides", nargs="*", help="key=value, applied to SFT and every arm")
    args = p.parse_args(argv)
    arms = args.arms.split(",")
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise SystemExit(f"--arms: unknown {unknown}; known: {sorted(ARMS)}")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_transformers()
    rows: list[dict[str, Any]] = []
    for s in args.seeds.split(","):
        rows.append(run_seed(int(s), arms, Path(args.out), args.overrides))
        if args.json:  # after every seed, so a stopped run keeps what it measured
            atomic_write_json(
                args.json,
                {
                    "command": " ".join(["python -m experiments.reward_shape", *sys.argv[1:]]),
                    "arms": {a: ARMS[a] for a in arms},
                    "rows": rows,
                    "summary": summary(rows, arms),
                },
            )
    sys.stdout.write(table(rows, arms))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
