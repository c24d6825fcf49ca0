"""MiniWoB++: a tiny VLM after SFT on the DOM oracle's episodes vs after SFT + GRPO (issue 14).

For each seed: build the tiny model (``model.tiny_seed`` = seed), SFT it with the ``web_sft``
recipe on oracle demonstrations of training pages, score it greedily on held-out pages (page
seeds from 1,000,000 up: never a training page), then GRPO it with the ``web_grpo`` recipe
(MiniWoB's own success as the reward) and score again on the same held-out pages. Every
budget is a step count. Success rates carry Wilson 95 % intervals.

    python -m experiments.web_sft_vs_grpo --seeds 0,1,2 --episodes 100 \\
        --json docs/results/web_sft_vs_grpo.json run.threads=1

Trailing ``key=value`` overrides apply to both recipes (e.g. ``web.tasks=[click-test]``).
Run from the repository root (``experiments`` is not an installed package).
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
from vlagent.models.loading import load_policy
from vlagent.train.common import ensure_model, quiet_transformers
from vlagent.train.grpo import run_grpo
from vlagent.train.sft import run_sft
from vlagent.worlds import make_world

log = logging.getLogger(__name__)

TASKS = "web.tasks=[click-test,focus-text]"
"""Default tasks: one target each (a button, a text field), so a model this size can learn
where to click; the instruction must still be read from the page."""


def held_out(path: str, cfg: Any, n: int) -> dict[str, Any]:
    """Greedy success of the checkpoint at ``path`` on the first ``n`` held-out pages."""
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
        **per_task,
    }


def run_seed(seed: int, out: Path, episodes: int, overrides: list[str]) -> dict[str, Any]:
    """SFT, held-out score, GRPO, held-out score for one seed."""
    common = [f"run.seed={seed}", "run.progress=false", TASKS, *overrides]
    sft_cfg = load_config(RECIPES_DIR / "web_sft.yaml", common)
    sft_cfg = dataclasses.replace(
        sft_cfg,
        model=dataclasses.replace(
            sft_cfg.model, path=str(out / f"seed_{seed}" / "model"), tiny_seed=seed
        ),
        run=dataclasses.replace(sft_cfg.run, out_dir=str(out / f"seed_{seed}" / "sft")),
    )
    ensure_model(sft_cfg.model)
    sft = run_sft(sft_cfg)
    row: dict[str, Any] = {"seed": seed, "sft_steps": sft.steps}
    row["sft"] = held_out(sft.final_dir, sft_cfg, episodes)
    log.info("seed %d SFT: %.3f", seed, row["sft"]["success"])
    grpo_cfg = load_config(
        RECIPES_DIR / "web_grpo.yaml",
        [*common, f"model.path={sft.final_dir}", f"run.out_dir={out / f'seed_{seed}' / 'grpo'}"],
    )
    grpo = run_grpo(grpo_cfg)
    row["grpo_steps"] = grpo.steps
    row["grpo"] = held_out(grpo.final_dir, grpo_cfg, episodes)
    log.info("seed %d GRPO: %.3f", seed, row["grpo"]["success"])
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--episodes", type=int, default=100, help="held-out pages per evaluation")
    p.add_argument("--out", default="runs/web_sft_vs_grpo")
    p.add_argument("--json", default=None, help="JSON file to write (atomically, per seed)")
    p.add_argument("overrides", nargs="*", help="key=value, applied to SFT and GRPO")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_transformers()
    rows: list[dict[str, Any]] = []
    for s in args.seeds.split(","):
        rows.append(run_seed(int(s), Path(args.out), args.episodes, args.overrides))
        gains = [r["grpo"]["success"] - r["sft"]["success"] for r in rows]
        if args.json:
            atomic_write_json(
                args.json,
                {
                    "command": " ".join(["python -m experiments.web_sft_vs_grpo", *sys.argv[1:]]),
                    "tasks": TASKS,
                    "rows": rows,
                    "mean_gain": statistics.fmean(gains),
                },
            )
    for r in rows:
        sys.stdout.write(
            f"seed {r['seed']}: SFT {100 * r['sft']['success']:.1f} "
            f"[{100 * r['sft']['ci_low']:.1f}, {100 * r['sft']['ci_high']:.1f}] -> GRPO "
            f"{100 * r['grpo']['success']:.1f} "
            f"[{100 * r['grpo']['ci_low']:.1f}, {100 * r['grpo']['ci_high']:.1f}]\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
