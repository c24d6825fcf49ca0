"""Experiment: multi-step phone tasks, SFT on oracle demos vs SFT + trajectory-level GRPO.

Per seed: build a tiny Qwen3-VL, SFT it on oracle trajectories of the training toggle tasks
(:mod:`vlagent.apps.tasks`), evaluate greedily on the held-out tasks, run multi-step GRPO on the
training tasks, evaluate again. Baselines on the held-out tasks: the random GUI policy and the
scripted oracle. Budgets are step counts (never seconds), so results do not depend on load.

    python -m vlagent.apps.experiment --seeds 0,1,2 --out docs/results/phone_sft_vs_grpo.json
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--out", default="docs/results/phone_sft_vs_grpo.json")
    p.add_argument("--work", default="runs/phone_sft_vs_grpo", help="models, metrics, trajectories")
    p.add_argument("--sft-steps", type=int, default=150)
    p.add_argument("--sft-batch", type=int, default=16)
    p.add_argument("--sft-lr", type=float, default=1e-3)
    p.add_argument("--grpo-steps", type=int, default=50)
    p.add_argument("--grpo-tasks", type=int, default=4)
    p.add_argument("--grpo-group", type=int, default=8)
    p.add_argument("--grpo-lr", type=float, default=5e-5)
    p.add_argument("--gigpo-weight", type=float, default=0.0)
    p.add_argument("--train-seeds", type=int, default=3, help="state seeds per single-toggle task")
    p.add_argument("--heldout-seeds", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    return p.parse_args(argv)


def _summary(report: Any) -> dict[str, Any]:
    keep = (
        "success_rate",
        "per_app",
        "mean_steps",
        "invalid_action_rate",
        "format_rate",
        "errored",
    )
    return {k: v for k, v in report.summary().items() if k in keep}


def _by_kind(report: Any) -> dict[str, float]:
    """Held-out success split into single-toggle (unseen seeds) and two-toggle (unseen params)."""
    out: dict[str, list[bool]] = {"single_toggle": [], "two_toggles": []}
    for e in report.episodes:
        kind = "two_toggles" if e["task_id"].count("_o") == 2 else "single_toggle"
        out[kind].append(e["success"])
    return {k: float(np.mean(v)) if v else float("nan") for k, v in out.items()}


def run_seed(seed: int, args: argparse.Namespace, train: Any, heldout: Any) -> dict[str, Any]:
    """SFT → eval → GRPO → eval for one seed; returns the per-seed record."""
    import torch

    from vlagent.apps.actor import VLMActor
    from vlagent.apps.config import AppsGRPOConfig, AppsSFTConfig, HistoryConfig
    from vlagent.apps.eval import evaluate_suite, phone_env_factory
    from vlagent.apps.grpo import run_apps_grpo
    from vlagent.apps.sft import oracle_demos, run_apps_sft
    from vlagent.codec.gui_actions import GuiActionCodec
    from vlagent.models.loading import load_policy
    from vlagent.models.tiny import build_tiny_model

    t0 = time.perf_counter()
    work = Path(args.work) / f"seed{seed}"
    if work.exists():
        shutil.rmtree(work)
    torch.manual_seed(seed)
    policy = load_policy(build_tiny_model(work / "init", family="qwen3_vl", seed=seed))
    codec = GuiActionCodec.for_family(policy.family, style="json")
    history = HistoryConfig()
    train_env, _ = phone_env_factory(train)
    test_env, _ = phone_env_factory(heldout)

    def evaluate(name: str) -> Any:
        actor = VLMActor(policy, codec, greedy=True, max_new_tokens=32)
        return evaluate_suite(
            actor,
            test_env,
            heldout.ids,
            history=history,
            out_dir=work / f"eval_{name}",
            save_trajectories=4,
        )

    demos = oracle_demos(policy.processor, codec, train_env, train.ids, history)
    sft_cfg = AppsSFTConfig(
        steps=args.sft_steps, batch_size=args.sft_batch, lr=args.sft_lr, seed=seed
    )
    sft = run_apps_sft(policy, demos, sft_cfg, work / "sft")
    t_sft = time.perf_counter()
    after_sft = evaluate("sft")
    t_eval = time.perf_counter()
    grpo_cfg = AppsGRPOConfig(
        steps=args.grpo_steps,
        tasks_per_step=args.grpo_tasks,
        group_size=args.grpo_group,
        lr=args.grpo_lr,
        gigpo_weight=args.gigpo_weight,
        seed=seed,
    )
    grpo = run_apps_grpo(
        policy, train_env, train.ids, grpo_cfg, work / "grpo", history=history, codec=codec
    )
    t_grpo = time.perf_counter()
    after_grpo = evaluate("grpo")
    rec = {
        "seed": seed,
        "demos": len(demos),
        "sft_final_loss": sft["final_loss"],
        "after_sft": {**_summary(after_sft), **_by_kind(after_sft)},
        "after_grpo": {**_summary(after_grpo), **_by_kind(after_grpo)},
        "grpo_last_round": grpo["last"],
        "grpo_errored_episodes": grpo["errored_episodes"],
        "seconds": {
            "sft": t_sft - t0,
            "eval": t_eval - t_sft,
            "grpo": t_grpo - t_eval,
            "total": time.perf_counter() - t0,
        },
    }
    log.info(
        "seed %d: held-out success after SFT %.3f, after SFT + GRPO %.3f (%.0f s)",
        seed,
        rec["after_sft"]["success_rate"],
        rec["after_grpo"]["success_rate"],
        rec["seconds"]["total"],
    )
    return rec


def baselines(heldout: Any) -> dict[str, Any]:
    """Random and oracle success on the held-out tasks (random: 3 episodes per task)."""
    from gui.apps.evaluate import POLICIES
    from vlagent.apps.eval import evaluate_suite, phone_env_factory
    from vlagent.apps.rollout import ScriptedActor

    env, _ = phone_env_factory(heldout)
    return {
        "random": _summary(
            evaluate_suite(ScriptedActor(POLICIES["random"]), env, heldout.ids, episodes=3)
        ),
        "oracle": _summary(evaluate_suite(ScriptedActor(POLICIES["oracle"]), env, heldout.ids)),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import torch

    from gui.apps.suite import parse_suite
    from vlagent.apps.tasks import toggle_suites, write_suite
    from vlagent.io import atomic_write_json
    from vlagent.train.common import quiet_transformers

    args = _args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    torch.set_num_threads(args.threads)
    quiet_transformers()
    start = time.perf_counter()
    train_map, heldout_map = toggle_suites(args.train_seeds, args.heldout_seeds)
    work = Path(args.work)
    write_suite(train_map, work / "suite_train.json")
    write_suite(heldout_map, work / "suite_heldout.json")
    train, heldout = parse_suite(train_map), parse_suite(heldout_map)
    per_seed = [run_seed(int(s), args, train, heldout) for s in args.seeds.split(",")]
    keys = ("success_rate", "single_toggle", "two_toggles", "mean_steps", "invalid_action_rate")
    mean = {
        stage: {k: float(np.mean([r[stage][k] for r in per_seed])) for k in keys}
        for stage in ("after_sft", "after_grpo")
    }
    result = {
        "command": " ".join(
            [Path(sys.executable).name, "-m", "vlagent.apps.experiment", *(argv or sys.argv[1:])]
        ),
        "config": vars(args),
        "tasks": {"train": len(train), "heldout": len(heldout), "suites": str(work)},
        "per_seed": per_seed,
        "mean": mean,
        "baselines": baselines(heldout),
        "wall_clock_seconds": time.perf_counter() - start,
        "torch_threads": torch.get_num_threads(),
    }
    atomic_write_json(args.out, result)
    log.info("wrote %s (%.0f s)", args.out, result["wall_clock_seconds"])
    return result


if __name__ == "__main__":
    main()
