"""Any world: a tiny VLM after SFT vs after SFT + GRPO, on the same held-out tasks, per seed.

For each seed: build the tiny model (``model.tiny_seed`` = seed); optionally run a warm-up SFT
stage (a curriculum rung, e.g. ``robot.cubes=1``, its own overrides); SFT with the
``--sft-recipe``; optionally anneal it (``--anneal-set``: more SFT steps with a decaying rate,
scored before and after); score greedily on the first ``--episodes`` held-out test tasks; GRPO
with the ``--grpo-recipe`` from the (annealed) SFT checkpoint; score again on the same tasks. Every budget is a
step count (or the recipe's accuracy stop), so results do not depend on machine load. Success
rates carry Wilson 95 % intervals; the JSON is rewritten (atomically) after every seed.

    python -m experiments.sft_vs_grpo --sft-recipe robot_sft --grpo-recipe robot_grpo \\
        --seeds 0,1,2 --episodes 200 --json docs/results/robot_reach_sft_vs_grpo.json \\
        run.threads=1 robot.action_frame=target ...

Trailing ``key=value`` overrides apply to every stage; ``--warmup-set``, ``--sft-set`` and
``--grpo-set`` to one stage each (after the common ones); the anneal stage takes the SFT
stage's and then ``--anneal-set``. ``--control-set`` adds the control after GRPO: SFT continued
from GRPO's start (the SFT stage's overrides, then its own) on training tasks after every SFT
stage's, scored on the same held-out tasks (the row's ``control``). Run from the repository root
(``experiments`` is not an installed package).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import statistics
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


def held_out(path: str, cfg: Any, n: int) -> dict[str, Any]:
    """Greedy success of the checkpoint at ``path`` on the first ``n`` held-out test tasks."""
    policy = load_policy(path)
    world = make_world(cfg, policy)
    try:
        rep = evaluate(world, policy, "test", n, batch_size=cfg.eval.batch_size,
                       max_new_tokens=cfg.eval.max_new_tokens)  # fmt: skip
    finally:
        world.close()
    per_task = {k: v for k, v in rep.metrics.items() if k.startswith("success/")}
    return {
        "n": rep.n,
        "success": rep.success_rate,
        "ci_low": rep.success_ci[0],
        "ci_high": rep.success_ci[1],
        "format_rate": rep.metrics.get("format_rate"),
        "mean_steps": rep.metrics.get("mean_steps"),
        **per_task,
    }


def pct_ci(score: dict[str, Any]) -> str:
    """``"34.5 [28.3, 41.3]"``: a held-out score's success and 95 % interval, in percent."""
    return (
        f"{100 * score['success']:.1f} [{100 * score['ci_low']:.1f}, {100 * score['ci_high']:.1f}]"
    )


def stage_overrides(args: argparse.Namespace, seed: int, stage: str) -> list[str]:
    """The overrides of one stage (``warmup`` | ``sft`` | ``grpo``): common, then its own."""
    own = {"warmup": args.warmup_set, "sft": args.sft_set, "grpo": args.grpo_set}[stage]
    return [f"run.seed={seed}", "run.progress=false", *args.overrides, *own]


def anneal_overrides(
    args: argparse.Namespace, seed: int, sft_cfg: Any, sft_steps: int
) -> list[str]:
    """The anneal stage's overrides: the SFT stage's, then ``--anneal-set`` (its budget and a
    decaying ``sft.lr_schedule``: warmup-stable-decay), on training tasks after the ones SFT
    read, and never stopped early (it starts where SFT's accuracy stop already holds)."""
    fresh = sft_cfg.task.train_seed_offset + sft_steps * sft_cfg.sft.batch_size
    return [
        *stage_overrides(args, seed, "sft"),
        f"task.train_seed_offset={fresh}",
        *args.anneal_set,
        "sft.stop_accuracy=0",
        "sft.plateau_patience=0",
    ]


def control_overrides(
    args: argparse.Namespace, seed: int, last_cfg: Any, last_steps: int
) -> list[str]:
    """The control stage's overrides: the SFT stage's, then ``--control-set`` (its budget and
    rate, e.g. ``sft.steps=300 sft.lr=1e-4``), on training tasks after every task the SFT
    stages read (``last_cfg`` ran ``last_steps`` steps: SFT, or the anneal when there is one),
    never stopped early: more SFT from GRPO's own start, for the same held-out tasks."""
    fresh = last_cfg.task.train_seed_offset + last_steps * last_cfg.sft.batch_size
    return [
        *stage_overrides(args, seed, "sft"),
        f"task.train_seed_offset={fresh}",
        *args.control_set,
        "sft.stop_accuracy=0",
        "sft.plateau_patience=0",
    ]


def _sft(recipe: str, overrides: list[str], start: str, out: Path) -> tuple[Any, Any]:
    """One SFT stage from the checkpoint ``start`` into ``out``: (its config, its result)."""
    cfg = load_config(RECIPES_DIR / f"{recipe}.yaml", overrides)
    cfg = dataclasses.replace(
        cfg,
        model=dataclasses.replace(cfg.model, path=start, build_tiny=False),
        run=dataclasses.replace(cfg.run, out_dir=str(out)),
    )
    return cfg, run_sft(cfg)


def run_seed(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Warm-up SFT (optional), SFT, anneal (optional), held-out score, GRPO, held-out score for
    one seed."""
    root = Path(args.out) / f"seed_{seed}"
    model = str(root / "model")
    base = load_config(RECIPES_DIR / f"{args.sft_recipe}.yaml", stage_overrides(args, seed, "sft"))
    ensure_model(dataclasses.replace(base.model, path=model, tiny_seed=seed, build_tiny=True))
    row: dict[str, Any] = {"seed": seed}
    start = model
    if args.warmup_set:
        _, warm = _sft(args.sft_recipe, stage_overrides(args, seed, "warmup"), start,
                       root / "warmup")  # fmt: skip
        row["warmup_steps"] = warm.steps
        start = warm.final_dir
    sft_cfg, sft = _sft(args.sft_recipe, stage_overrides(args, seed, "sft"), start, root / "sft")
    row["sft_steps"] = sft.steps
    start, last_steps = sft.final_dir, sft.steps
    if args.anneal_set:
        row["sft_before_anneal"] = held_out(start, sft_cfg, args.episodes)
        log.info("seed %d SFT before the anneal: %.3f", seed, row["sft_before_anneal"]["success"])
        sft_cfg, anneal = _sft(args.sft_recipe, anneal_overrides(args, seed, sft_cfg, sft.steps),
                               start, root / "anneal")  # fmt: skip
        row["anneal_steps"] = anneal.steps
        start, last_steps = anneal.final_dir, anneal.steps
    row["sft"] = held_out(start, sft_cfg, args.episodes)
    log.info("seed %d SFT: %.3f", seed, row["sft"]["success"])
    grpo_cfg = load_config(
        RECIPES_DIR / f"{args.grpo_recipe}.yaml",
        [
            *stage_overrides(args, seed, "grpo"),
            f"model.path={start}",
            "model.build_tiny=false",
            f"run.out_dir={root / 'grpo'}",
        ],
    )
    grpo = run_grpo(grpo_cfg)
    row["grpo_steps"] = grpo.steps
    row["grpo"] = held_out(grpo.final_dir, grpo_cfg, args.episodes)
    log.info("seed %d GRPO: %.3f", seed, row["grpo"]["success"])
    if args.control_set:
        ctl_cfg, ctl = _sft(args.sft_recipe, control_overrides(args, seed, sft_cfg, last_steps),
                            start, root / "control")  # fmt: skip
        row["control_steps"] = ctl.steps
        row["control"] = held_out(ctl.final_dir, ctl_cfg, args.episodes)
        log.info("seed %d control: %.3f", seed, row["control"]["success"])
    return row


def parse_args(argv: list[str] | None = None, **defaults: Any) -> argparse.Namespace:
    """The driver's arguments; ``defaults`` set a world's recipes (``web_sft_vs_grpo``)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sft-recipe", default="sft", help="recipe name under vlagent/configs")
    p.add_argument("--grpo-recipe", default="grpo")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--episodes", type=int, default=100, help="held-out tasks per evaluation")
    p.add_argument("--out", default="runs/sft_vs_grpo", help="models, metrics, checkpoints")
    p.add_argument("--json", default=None, help="JSON file to write (atomically, per seed)")
    p.add_argument("--warmup-set", nargs="*", default=[], help="a warm-up SFT stage's overrides")
    p.add_argument("--sft-set", nargs="*", default=[], help="SFT-only overrides")
    p.add_argument("--anneal-set", nargs="*", default=[],
                   help="an anneal stage after SFT (e.g. sft.steps=300 sft.lr_schedule=linear): "
                   "GRPO starts from it, and its score is the row's sft")  # fmt: skip
    p.add_argument("--grpo-set", nargs="*", default=[], help="GRPO-only overrides")
    p.add_argument("--control-set", nargs="*", default=[],
                   help="a control stage after GRPO: more SFT from GRPO's start on fresh tasks "
                   "(e.g. sft.steps=300 sft.lr=1e-4), scored on the same held-out tasks")  # fmt: skip
    p.add_argument("overrides", nargs="*", help="key=value, applied to every stage")
    p.set_defaults(**defaults)
    return p.parse_args(argv)


def main(
    argv: list[str] | None = None, module: str = "experiments.sft_vs_grpo", **defaults: Any
) -> int:
    """Run every seed, write the JSON after each, print one line per seed."""
    args = parse_args(argv, **defaults)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_transformers()
    rows: list[dict[str, Any]] = []
    words = sys.argv[1:] if argv is None else argv
    for s in args.seeds.split(","):
        rows.append(run_seed(int(s), args))
        gains = [r["grpo"]["success"] - r["sft"]["success"] for r in rows]
        controls = [r["control"]["success"] - r["sft"]["success"] for r in rows if "control" in r]
        if args.json:
            atomic_write_json(
                args.json,
                {
                    "command": " ".join([f"python -m {module}", *words]),
                    "sft_recipe": args.sft_recipe,
                    "grpo_recipe": args.grpo_recipe,
                    "overrides": args.overrides,
                    "warmup_set": args.warmup_set,
                    "sft_set": args.sft_set,
                    "anneal_set": args.anneal_set,
                    "grpo_set": args.grpo_set,
                    "control_set": args.control_set,
                    "rows": rows,
                    "mean_gain": statistics.fmean(gains),
                    "mean_control_gain": statistics.fmean(controls) if controls else None,
                },
            )
    for r in rows:
        ctl = f", control {pct_ci(r['control'])}" if "control" in r else ""
        sys.stdout.write(
            f"seed {r['seed']}: SFT {pct_ci(r['sft'])} -> GRPO {pct_ci(r['grpo'])}{ctl}\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
