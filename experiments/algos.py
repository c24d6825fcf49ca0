"""GRPO vs Dr.GRPO vs DAPO (or any presets) on the quickstart task, same budget, several seeds.

For each seed: build the tiny model, SFT it on the quickstart's 64 demos until it plateaus (as
the quickstart does), then train each preset from that same checkpoint with the same budget of
*generated completions* (``grpo.max_samples``; DAPO's resampled, dropped groups count against
it) and evaluate on the same held-out screens.

    python -m experiments.algos --seeds 0,1,2 --algos grpo,dr_grpo,dapo \\
        --json docs/results/algos_compare.json

``--sft-from runs/quickstart3/seed_{seed}/sft/final`` starts from the quickstart's own SFT
checkpoints instead (then the ``grpo`` column re-runs the quickstart's GRPO phase).

Run from the repository root (``experiments`` is not an installed package).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path
from typing import Any

from vlagent.config import RECIPES_DIR, load_config
from vlagent.eval.evaluate import evaluate
from vlagent.io import atomic_write_json
from vlagent.models.loading import load_policy, quiet_transformers
from vlagent.train.common import ensure_model
from vlagent.train.grpo import run_grpo
from vlagent.train.sft import run_sft
from vlagent.worlds import make_world

log = logging.getLogger(__name__)


def held_out(path: str, cfg: Any) -> float:
    """Greedy accuracy of the checkpoint at ``path`` on the first ``eval.num_screens`` test
    screens of ``cfg``'s world."""
    policy = load_policy(path)
    world = make_world(cfg, policy)
    try:
        return evaluate(
            world,
            policy,
            "test",
            cfg.eval.num_screens,
            batch_size=cfg.eval.batch_size,
            max_new_tokens=cfg.eval.max_new_tokens,
        ).accuracy
    finally:
        world.close()


def run_seed(
    seed: int,
    algos: list[str],
    out: Path,
    samples: int,
    overrides: list[str],
    sft_from: str | None = None,
) -> dict[str, Any]:
    """SFT once (or take ``sft_from``, a folder template with ``{seed}``), then every preset
    from that same checkpoint; returns accuracies and steps."""
    base = load_config(
        RECIPES_DIR / "quickstart.yaml", [f"run.seed={seed}", "run.progress=false", *overrides]
    )
    if sft_from:
        sft_dir = sft_from.format(seed=seed)
        if not (Path(sft_dir) / "config.json").is_file():
            raise SystemExit(f"--sft-from: {sft_dir} is not a checkpoint (no config.json)")
        return _train_algos(seed, algos, out, samples, overrides, sft_dir, base)
    return _train_algos(seed, algos, out, samples, overrides, sft_start(seed, out, base), base)


def sft_start(seed: int, out: Path, base: Any) -> str:
    """The quickstart's SFT phase for ``seed`` (tiny model ``tiny_seed = seed``, the seed's own
    demonstrations, until plateau) under ``out/seed_{seed}``; returns the checkpoint folder."""
    model = dataclasses.replace(
        base.model, path=str(out / f"seed_{seed}" / "model"), tiny_seed=seed
    )
    sft_cfg = dataclasses.replace(
        base,
        recipe="sft",
        model=model,
        task=dataclasses.replace(
            base.task, demo_seed_offset=base.task.demo_seed_offset + seed * 100_000
        ),
        run=dataclasses.replace(base.run, out_dir=str(out / f"seed_{seed}" / "sft")),
    )
    ensure_model(sft_cfg.model)
    return run_sft(sft_cfg).final_dir


def _train_algos(
    seed: int,
    algos: list[str],
    out: Path,
    samples: int,
    overrides: list[str],
    sft_dir: str,
    base: Any,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "seed": seed,
        "sft_checkpoint": sft_dir,
        "sft": held_out(sft_dir, base),
        "algos": {},
    }
    for algo in algos:
        cfg = load_config(
            RECIPES_DIR / "quickstart.yaml",
            [
                f"run.seed={seed}",
                "run.progress=false",
                f"algo={algo}",
                "recipe=grpo",
                f"model.path={sft_dir}",
                "model.build_tiny=false",
                f"run.out_dir={out / f'seed_{seed}' / algo}",
                "grpo.steps=100000",
                "grpo.max_seconds=0",
                f"grpo.max_samples={samples}",
                *overrides,
            ],
        )
        result = run_grpo(cfg)
        row["algos"][algo] = {
            "accuracy": held_out(result.final_dir, cfg),
            "steps": result.steps,
            "train_seconds": result.train_seconds,
        }
        log.info("seed %d %s: %.3f", seed, algo, row["algos"][algo]["accuracy"])
    return row


def table(rows: list[dict[str, Any]], algos: list[str]) -> str:
    head = "| seed | SFT | " + " | ".join(algos) + " |\n|---:|---:|" + "---:|" * len(algos) + "\n"
    lines = []
    for r in rows:
        cells = [
            f"{100 * r['algos'][a]['accuracy']:.1f} ({r['algos'][a]['steps']} steps)" for a in algos
        ]
        lines.append(f"| {r['seed']} | {100 * r['sft']:.1f} | " + " | ".join(cells) + " |")
    means = [100 * sum(r["algos"][a]["accuracy"] for r in rows) / len(rows) for a in algos]
    lines.append(
        f"| mean | {100 * sum(r['sft'] for r in rows) / len(rows):.1f} | "
        + " | ".join(f"{m:.1f}" for m in means)
        + " |"
    )
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--algos", default="grpo,dr_grpo,dapo")
    p.add_argument(
        "--samples",
        type=int,
        default=16_000,
        help="generated completions per run (16,000 = the quickstart's 500 steps x 4 x 8)",
    )
    p.add_argument(
        "--sft-from",
        default=None,
        help="start every preset from this SFT checkpoint instead of running SFT; {seed} is "
        "replaced, e.g. runs/quickstart3/seed_{seed}/sft/final",
    )
    p.add_argument("--out", default="runs/algos_compare")
    p.add_argument("--json", default=None)
    p.add_argument("overrides", nargs="*")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_transformers()
    algos = args.algos.split(",")
    rows = [
        run_seed(int(s), algos, Path(args.out), args.samples, args.overrides, args.sft_from)
        for s in args.seeds.split(",")
    ]
    text = table(rows, algos)
    if args.json:
        atomic_write_json(
            args.json,
            {
                "command": " ".join(["python -m experiments.algos", *sys.argv[1:]]),
                "samples_per_run": args.samples,
                "rows": rows,
            },
        )
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
