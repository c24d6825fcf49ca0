"""Experiment: longer phone tasks with scarce demonstrations — SFT vs SFT + GRPO, three credits.

The ``chains`` suites (:func:`vlagent.worlds.apps_tasks.chain_suites`): turn 3 to 5 Settings
switches on or off (4 to 6 steps). 96 switch combinations train, the other 96 are held out, each
on 4 unseen phone-state seeds (384 held-out episodes). Per seed: build a tiny Qwen3-VL, SFT it on
the oracle's episodes of only the first ``--num-demos`` training tasks, evaluate greedily on the
held-out episodes, then from that one SFT checkpoint run multi-step GRPO on all training tasks
(no demonstrations needed: the env's success is the reward) with each credit arm, at equal
budget, and evaluate each:

    episode  every turn gets its episode's group-relative advantage (GiGPO weight 0)
    gigpo    GiGPO step groups only (grpo.episode_weight 0, grpo.gigpo_weight 1)
    both     GiGPO as published: episode + step advantage (weights 1 and 1)

Budgets are step counts. 95 % Wilson intervals come with every held-out success rate.

    python -m experiments.phone_chains --seeds 0,1,2 --out docs/results/phone_chains.json
    python -m experiments.phone_chains --table docs/results/phone_chains*.json   # markdown

Run from the repository root (``experiments`` is not an installed package).
"""

from __future__ import annotations

import argparse
import logging
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from experiments.phone_sft_vs_grpo import (
    _metrics,
    _summary,
    baselines,
    evaluate_stage,
    stage_config,
    start_experiment,
)

log = logging.getLogger(__name__)
ARMS: dict[str, tuple[float, float]] = {
    "episode": (1.0, 0.0),
    "gigpo": (0.0, 1.0),
    "both": (1.0, 1.0),
}
"""Credit arm -> (grpo.episode_weight, grpo.gigpo_weight)."""


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--arms", default="episode,gigpo,both", help=f"of {', '.join(ARMS)}")
    p.add_argument("--out", default="docs/results/phone_chains.json")
    p.add_argument("--work", default="runs/phone_chains", help="models, metrics, trajectories")
    p.add_argument("--num-demos", type=int, default=24, help="demonstrated training tasks")
    p.add_argument("--sft-steps", type=int, default=150)
    p.add_argument("--sft-batch", type=int, default=None)
    p.add_argument("--sft-lr", type=float, default=1e-3)
    p.add_argument("--grpo-steps", type=int, default=100)
    p.add_argument("--grpo-tasks", type=int, default=4, help="tasks per GRPO step (B)")
    p.add_argument("--grpo-group", type=int, default=8, help="episodes per task (G)")
    p.add_argument("--grpo-lr", type=float, default=5e-5)
    p.add_argument("--train-seeds", type=int, default=3, help="state seeds per train combination")
    p.add_argument("--heldout-seeds", type=int, default=4, help="per held-out combination")
    p.add_argument("--eval-tasks", type=int, default=0, help="held-out episodes (0 = all)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--set", nargs="*", default=[], help="extra dotted overrides for both stages")
    p.add_argument(
        "--extend-to",
        type=int,
        default=0,
        help="continue each --arms run of a finished --work from its last checkpoint to this "
        "many GRPO steps (constant lr: the same as a run of that length) and evaluate it again",
    )
    args = p.parse_args(argv)
    bad = [a for a in args.arms.split(",") if a not in ARMS]
    if bad:
        p.error(f"--arms: unknown {bad}; known: {', '.join(ARMS)}")
    return args


def _stage_args(args: argparse.Namespace, work: Path, arm: str = "episode") -> argparse.Namespace:
    """The namespace ``phone_sft_vs_grpo.stage_config`` reads, for the chains suites."""
    ew, gw = ARMS[arm]
    suite = ["apps.train_suite=chains", "apps.eval_suite=chains"]
    extra = [*suite, f"sft.num_demos={args.num_demos}", f"grpo.episode_weight={ew}", *args.set]
    return argparse.Namespace(**{**vars(args), "work": str(work), "gigpo_weight": gw, "set": extra})


def _by_size(report: Any) -> dict[str, float]:
    """Held-out success by the number of switches (3, 4, 5) of the task."""
    out: dict[str, list[bool]] = {}
    for t in report.trajectories:
        n = str(t.task_id).count("_o")
        out.setdefault(f"switches_{n}", []).append(t.success)
    return {k: float(np.mean(v)) for k, v in sorted(out.items())}


def run_seed(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """SFT → eval, then per arm GRPO → eval from the same SFT checkpoint."""
    from vlagent.train.grpo import run_grpo
    from vlagent.train.sft import run_sft

    t0 = time.perf_counter()
    root = Path(args.work) / f"seed{seed}"
    for folder in (root, *(Path(args.work) / arm / f"seed{seed}" for arm in ARMS)):
        if folder.exists():
            shutil.rmtree(folder)
    base = _stage_args(args, Path(args.work))
    sft_cfg = stage_config("sft", seed, base)
    sft = run_sft(sft_cfg)
    after_sft = evaluate_stage(sft.final_dir, sft_cfg, base, root / "eval_sft")
    rec: dict[str, Any] = {
        "seed": seed,
        "demo_tasks": args.num_demos,
        "sft_final_loss": (_metrics(sft_cfg.run.out_dir, "sft") or [{}])[-1].get("loss"),
        "after_sft": {**_summary(after_sft), **_by_size(after_sft)},
        "arms": {},
        "seconds": {"sft_and_eval": time.perf_counter() - t0},
    }
    for arm in args.arms.split(","):
        t1 = time.perf_counter()
        arm_args = _stage_args(args, Path(args.work) / arm, arm)
        grpo_cfg = stage_config("grpo", seed, arm_args)
        grpo_cfg.model.path = sft.final_dir  # every arm starts from this seed's SFT checkpoint
        grpo = run_grpo(grpo_cfg)
        after = evaluate_stage(grpo.final_dir, grpo_cfg, arm_args, root / f"eval_{arm}")
        rows = _metrics(grpo_cfg.run.out_dir, "grpo")
        sampled = [r.get("success_rate", float("nan")) for r in rows]
        rec["arms"][arm] = {
            "episode_weight": ARMS[arm][0],
            "gigpo_weight": ARMS[arm][1],
            "after_grpo": {**_summary(after), **_by_size(after)},
            "grpo_steps": grpo.steps,
            "train_success_first10": float(np.nanmean(sampled[:10])) if sampled else None,
            "train_success_last10": float(np.nanmean(sampled[-10:])) if sampled else None,
            "grpo_errored_episodes": int(sum(r.get("episodes_errored") or 0 for r in rows)),
        }
        rec["seconds"][arm] = time.perf_counter() - t1
        log.info(
            "seed %d %s: held-out success SFT %.3f -> GRPO %.3f",
            seed,
            arm,
            rec["after_sft"]["success_rate"],
            rec["arms"][arm]["after_grpo"]["success_rate"],
        )
    rec["seconds"]["total"] = time.perf_counter() - t0
    return rec


def extend_seed(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Continue each arm's GRPO run of ``seed`` to ``--extend-to`` steps; evaluate again."""
    from vlagent.train.grpo import run_grpo

    root = Path(args.work) / f"seed{seed}"
    sft_final = root / "sft" / "final"
    if not (sft_final / "config.json").exists():
        raise SystemExit(f"--extend-to: {sft_final} is missing: run the seed first")
    rec: dict[str, Any] = {"seed": seed, "grpo_steps": args.extend_to, "arms": {}}
    for arm in args.arms.split(","):
        t0 = time.perf_counter()
        arm_args = _stage_args(args, Path(args.work) / arm, arm)
        cfg = stage_config("grpo", seed, arm_args)
        cfg.model.path = str(sft_final)
        cfg.grpo.steps = args.extend_to
        cfg.run.resume = True  # from the arm's last checkpoint: optimizer, task cursor, RNG
        grpo = run_grpo(cfg)
        after = evaluate_stage(grpo.final_dir, cfg, arm_args, root / f"eval_{arm}_{grpo.steps}")
        rec["arms"][arm] = {
            "after_grpo": {**_summary(after), **_by_size(after)},
            "grpo_steps": grpo.steps,
            "seconds": time.perf_counter() - t0,
        }
        log.info("seed %d %s at %d steps: %.3f", seed, arm, grpo.steps, after.success_rate)
    return rec


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _ci(r: dict[str, Any]) -> str:
    lo, hi = r["success_ci"]
    return f"{_pct(r['success_rate'])} [{_pct(lo)}, {_pct(hi)}]"


def table(paths: list[str]) -> str:
    """Markdown tables (held-out success with 95 % intervals per seed and arm; success by
    switch count) from the JSON files this driver wrote."""
    import json

    seeds = [rec for p in paths for rec in json.loads(Path(p).read_text())["per_seed"]]
    arms = list(ARMS)
    head = "| seed | SFT | " + " | ".join(f"SFT + GRPO ({a})" for a in arms) + " |\n"
    out = head + "|---:|---|" + "---|" * len(arms) + "\n"
    for rec in sorted(seeds, key=lambda r: r["seed"]):
        cells = [_ci(rec["arms"][a]["after_grpo"]) if a in rec["arms"] else "-" for a in arms]
        out += f"| {rec['seed']} | {_ci(rec['after_sft'])} | " + " | ".join(cells) + " |\n"
    out += "\n| seed | stage | 3 switches | 4 switches | 5 switches | mean steps | invalid-step rate |\n"
    out += "|---:|---|---:|---:|---:|---:|---:|\n"
    for rec in sorted(seeds, key=lambda r: r["seed"]):
        stages = [("SFT", rec["after_sft"])]
        stages += [(a, rec["arms"][a]["after_grpo"]) for a in arms if a in rec["arms"]]
        for name, r in stages:
            sizes = " | ".join(_pct(r.get(f"switches_{n}", float("nan"))) for n in (3, 4, 5))
            out += (
                f"| {rec['seed']} | {name} | {sizes} | {r['mean_steps']:.2f} | "
                f"{_pct(r['invalid_action_rate'])} |\n"
            )
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:

    from vlagent.io import atomic_write_json
    from vlagent.worlds.apps_tasks import chain_suites

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--table"]:
        sys.stdout.write(table(argv[1:]))
        return {}
    args = _args(argv)
    start = time.perf_counter()
    train_map, heldout_map = start_experiment(args, chain_suites)
    work = Path(args.work)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    result: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "experiments.phone_chains", *argv]),
        "config": vars(args),
        "tasks": {"train": len(train_map["tasks"]), "heldout": len(heldout_map["tasks"])},
        "per_seed": [],
    }
    if args.extend_to:
        result["extended"] = True
        for seed in seeds:
            result["per_seed"].append(extend_seed(seed, args))
            atomic_write_json(args.out, result)
        return result
    for seed in seeds:
        result["per_seed"].append(run_seed(seed, args))
        result["wall_clock_seconds"] = time.perf_counter() - start
        atomic_write_json(args.out, result)  # after every seed
    result["baselines"] = baselines(stage_config("sft", seeds[0], _stage_args(args, work)), args)
    result["wall_clock_seconds"] = time.perf_counter() - start
    atomic_write_json(args.out, result)
    log.info("wrote %s (%.0f s)", args.out, result["wall_clock_seconds"])
    return result


if __name__ == "__main__":
    main()
