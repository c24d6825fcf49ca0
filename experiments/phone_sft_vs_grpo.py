"""Experiment: multi-step phone tasks, SFT on oracle demos vs SFT + trajectory-level GRPO.

Per seed: build a tiny Qwen3-VL, SFT it on the scripted oracle's episodes of the training toggle
tasks (recipe ``apps_sft``, world ``apps``; :mod:`vlagent.worlds.apps_tasks`), evaluate greedily
on the held-out tasks (split ``test`` = ``apps.eval_suite``), run multi-step GRPO on the training
tasks (recipe ``apps_grpo``), evaluate again. Baselines on the held-out tasks, played through the
same runner, adapter and action codec: the random GUI policy (3 episodes per task) and the
scripted oracle. Budgets are step counts (never seconds), so results do not depend on load.

    python -m experiments.phone_sft_vs_grpo --seeds 0,1,2 --out docs/results/phone_sft_vs_grpo.json

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

from vlagent.config import TrainConfig, load_config
from vlagent.eval.evaluate import EvalReport, evaluate, report_of
from vlagent.rollout.runner import EpisodeSpec, Limits, run_episodes
from vlagent.worlds.apps import ActDemonstrator

log = logging.getLogger(__name__)
SCRIPTED_TURN_TOKENS = 1024
"""Token budget of a scripted (baseline) turn: its rendered action is never cut."""
APP_OF_TEMPLATE: dict[str, str] = {
    "set_toggles": "Settings",
    "set_brightness": "Settings",
    "add_contact": "Contacts",
    "delete_contact": "Contacts",
    "lookup_phone": "Contacts",
    "call_contact": "Contacts",
    "delete_missing_contact": "Contacts",
    "create_note": "Notes",
    "delete_note": "Notes",
    "add_alarm": "Clock",
    "set_alarm_enabled": "Clock",
    "disable_missing_alarm": "Clock",
    "open_missing_app": "Launcher",
}
"""The app a task template is about (for per-app success rates)."""


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--out", default="docs/results/phone_sft_vs_grpo.json")
    p.add_argument("--work", default="runs/phone_sft_vs_grpo", help="models, metrics, trajectories")
    p.add_argument("--sft-steps", type=int, default=150)
    p.add_argument(
        "--sft-batch",
        type=int,
        default=None,
        help="oracle episodes per SFT step (default: the apps_sft recipe's, 6 ≈ 16 turns)",
    )
    p.add_argument("--sft-lr", type=float, default=1e-3)
    p.add_argument("--grpo-steps", type=int, default=50)
    p.add_argument("--grpo-tasks", type=int, default=4, help="tasks per GRPO step (B)")
    p.add_argument("--grpo-group", type=int, default=8, help="episodes per task (G)")
    p.add_argument("--grpo-lr", type=float, default=5e-5)
    p.add_argument("--gigpo-weight", type=float, default=0.0)
    p.add_argument("--train-seeds", type=int, default=3, help="state seeds per single-toggle task")
    p.add_argument("--heldout-seeds", type=int, default=2)
    p.add_argument(
        "--eval-tasks", type=int, default=0, help="held-out tasks evaluated (0 = all of them)"
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--set", nargs="*", default=[], help="extra dotted overrides for both stages")
    return p.parse_args(argv)


def stage_config(phase: str, seed: int, args: argparse.Namespace) -> TrainConfig:
    """The config of one stage (``phase`` = sft | grpo) of one seed."""
    work = Path(args.work) / f"seed{seed}"
    common = [
        f"apps.train_seeds={args.train_seeds}",
        f"apps.heldout_seeds={args.heldout_seeds}",
        f"run.seed={seed}",
        f"run.threads={args.threads}",
        "run.progress=false",
        "run.resume=false",
        "eval.every=0",
        "eval.rollout_pictures=0",  # held-out episodes are saved by evaluate_stage
    ]
    if phase == "sft":
        over = [
            f"model.path={work / 'init'}",
            "model.build_tiny=true",
            "model.family=qwen3_vl",
            f"model.tiny_seed={seed}",
            f"sft.steps={args.sft_steps}",
            f"sft.lr={args.sft_lr}",
            *([f"sft.batch_size={args.sft_batch}"] if args.sft_batch else []),
            f"run.out_dir={work / 'sft'}",
        ]
        return load_config("apps_sft", common + over + list(args.set))
    over = [
        f"model.path={work / 'sft' / 'final'}",
        "model.build_tiny=false",
        f"grpo.steps={args.grpo_steps}",
        f"grpo.prompts_per_step={args.grpo_tasks}",
        f"grpo.group_size={args.grpo_group}",
        f"grpo.lr={args.grpo_lr}",
        f"grpo.gigpo_weight={args.gigpo_weight}",
        f"run.out_dir={work / 'grpo'}",
    ]
    return load_config("apps_grpo", common + over + list(args.set))


def _summary(report: EvalReport) -> dict[str, Any]:
    """Success (per app, per template), mean steps, invalid-action and format rates, errors."""
    s = report.summary()
    by_app: dict[str, list[bool]] = {}
    for t in report.trajectories:
        app = APP_OF_TEMPLATE.get(t.extras.get("template", ""), "other")
        by_app.setdefault(app, []).append(t.success)
    return {
        "success_rate": s["success_rate"],
        "success_ci": list(report.success_ci),
        "per_app": {k: float(np.mean(v)) for k, v in sorted(by_app.items())},
        "per_template": {k.split("/", 1)[1]: v for k, v in s.items() if k.startswith("success/")},
        "mean_steps": s["mean_turns"],
        "invalid_action_rate": s["invalid_action_rate"],
        "format_rate": s.get("format_rate", float("nan")),
        "errored": s["errored"],
        "episodes": report.n,
    }


def _by_kind(report: EvalReport) -> dict[str, float]:
    """Held-out success split into single-toggle (unseen seeds) and two-toggle (unseen params)."""
    out: dict[str, list[bool]] = {"single_toggle": [], "two_toggles": []}
    for t in report.trajectories:
        kind = "two_toggles" if str(t.task_id).count("_o") == 2 else "single_toggle"
        out[kind].append(t.success)
    return {k: float(np.mean(v)) if v else float("nan") for k, v in out.items()}


def _eval_ids(world: Any, args: argparse.Namespace) -> list[Any]:
    total = world.num_tasks("test")
    n = min(args.eval_tasks, total) if args.eval_tasks else total
    return world.task_ids("test", 0, n)


def evaluate_stage(folder: str, cfg: TrainConfig, args: argparse.Namespace, out: Path) -> Any:
    """Greedy held-out episodes of the checkpoint in ``folder``; the first 4 are saved (screens
    with each action drawn + a JSON record of the turns) under ``out``."""
    from vlagent.models.loading import load_policy
    from vlagent.worlds import make_world

    policy = load_policy(folder, dtype=cfg.model.dtype, device=cfg.model.device)  # type: ignore[arg-type]
    world = make_world(cfg, policy)
    ids = _eval_ids(world, args)
    report = evaluate(
        world,
        policy,
        "test",
        len(ids),
        batch_size=cfg.eval.batch_size,
        max_new_tokens=cfg.eval.max_new_tokens,
        task_ids=ids,
    )
    world.save_pictures(report.trajectories[:4], out, "heldout")
    world.close()
    return report


def _metrics(run_dir: str, phase: str) -> list[dict[str, Any]]:
    from vlagent.train.outputs import read_metrics

    return sorted(read_metrics(Path(run_dir) / "metrics.jsonl", phase), key=lambda r: r["step"])


def run_seed(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """SFT → eval → GRPO → eval for one seed; returns the per-seed record."""
    from vlagent.train.grpo import run_grpo
    from vlagent.train.sft import run_sft

    t0 = time.perf_counter()
    work = Path(args.work) / f"seed{seed}"
    if work.exists():
        shutil.rmtree(work)
    sft_cfg = stage_config("sft", seed, args)
    sft = run_sft(sft_cfg)
    t_sft = time.perf_counter()
    after_sft = evaluate_stage(sft.final_dir, sft_cfg, args, work / "eval_sft")
    t_eval = time.perf_counter()
    grpo_cfg = stage_config("grpo", seed, args)
    grpo = run_grpo(grpo_cfg)
    t_grpo = time.perf_counter()
    after_grpo = evaluate_stage(grpo.final_dir, grpo_cfg, args, work / "eval_grpo")
    sft_rows = _metrics(sft_cfg.run.out_dir, "sft")
    grpo_rows = _metrics(grpo_cfg.run.out_dir, "grpo")
    last = grpo_rows[-1] if grpo_rows else {}
    rec = {
        "seed": seed,
        "demo_episodes": sft.steps * sft_cfg.sft.batch_size,  # oracle episodes trained on
        "sft_steps": sft.steps,
        "sft_final_loss": sft_rows[-1]["loss"] if sft_rows else None,
        "after_sft": {**_summary(after_sft), **_by_kind(after_sft)},
        "after_grpo": {**_summary(after_grpo), **_by_kind(after_grpo)},
        "grpo_steps": grpo.steps,
        "grpo_last_round": {k: v for k, v in last.items() if k not in ("phase", "time")},
        "grpo_errored_episodes": int(sum(r.get("episodes_errored") or 0 for r in grpo_rows)),
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


def scripted_report(
    world: Any, policy: Any, ids: list[Any], demonstrator: Any, episodes: int
) -> Any:
    """Held-out success of a scripted policy (every turn forced by ``demonstrator``) through
    the episode runner; reset seeds 0 .. episodes-1 per task."""
    base = world.limits(SCRIPTED_TURN_TOKENS)
    trajs = run_episodes(
        policy,
        world.adapter(),
        lambda: world.make_env("test"),
        [EpisodeSpec(t, seed) for seed in range(episodes) for t in ids],
        Limits(base.max_turns, SCRIPTED_TURN_TOKENS, 0, "none", 0.0),
        demonstrator=demonstrator,
        chunk_size=64,
    )
    return report_of(world, trajs)


def _random_demonstrator(world: Any) -> ActDemonstrator:
    """``gui.apps``' random GUI policy (seeded by the episode's reset seed) plays each episode."""
    from gui.apps.evaluate import POLICIES

    return ActDemonstrator(world.codec, lambda t: POLICIES["random"](world.task(t.task_id), t.seed))


def baselines(cfg: TrainConfig, args: argparse.Namespace) -> dict[str, Any]:
    """Random (3 episodes per task) and oracle success on the held-out tasks. The policy only
    supplies the tokenizer and processor (every turn is scripted)."""
    from vlagent.models.loading import load_policy
    from vlagent.train.common import ensure_model
    from vlagent.worlds import make_world

    policy = load_policy(ensure_model(cfg.model), dtype=cfg.model.dtype, device=cfg.model.device)  # type: ignore[arg-type]
    world = make_world(cfg, policy)
    ids = _eval_ids(world, args)
    out = {
        "random": _summary(scripted_report(world, policy, ids, _random_demonstrator(world), 3)),
        # The world's oracle ScriptedDemonstrator (the SFT demonstrator) on the held-out tasks.
        "oracle": _summary(scripted_report(world, policy, ids, world.demonstrator(), 1)),
    }
    world.close()
    return out


def start_experiment(args: argparse.Namespace, make_suites: Any) -> tuple[dict, dict]:
    """Logging, torch threads, quiet transformers; the suites the apps world generates from
    ``args.train_seeds`` / ``args.heldout_seeds`` written under ``args.work`` for reference.
    Returns ``(train, heldout)`` suite mappings."""
    import torch

    from vlagent.models.loading import quiet_transformers
    from vlagent.worlds.apps_tasks import write_suite

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    torch.set_num_threads(args.threads)
    quiet_transformers()
    train_map, heldout_map = make_suites(args.train_seeds, args.heldout_seeds)
    write_suite(train_map, Path(args.work) / "suite_train.json")
    write_suite(heldout_map, Path(args.work) / "suite_heldout.json")
    return train_map, heldout_map


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import torch

    from vlagent.io import atomic_write_json
    from vlagent.worlds.apps_tasks import toggle_suites

    argv = list(sys.argv[1:] if argv is None else argv)
    args = _args(argv)
    start = time.perf_counter()
    train_map, heldout_map = start_experiment(args, toggle_suites)
    work = Path(args.work)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    per_seed: list[dict[str, Any]] = []
    result: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "experiments.phone_sft_vs_grpo", *argv]),
        "config": vars(args),
        "tasks": {
            "train": len(train_map["tasks"]),
            "heldout": len(heldout_map["tasks"]),
            "evaluated": min(
                args.eval_tasks or len(heldout_map["tasks"]), len(heldout_map["tasks"])
            ),
            "suites": str(work),
        },
        "per_seed": per_seed,
    }
    keys = ("success_rate", "single_toggle", "two_toggles", "mean_steps", "invalid_action_rate")
    for seed in seeds:
        per_seed.append(run_seed(seed, args))
        result["mean"] = {
            stage: {k: float(np.mean([r[stage][k] for r in per_seed])) for k in keys}
            for stage in ("after_sft", "after_grpo")
        }
        result["wall_clock_seconds"] = time.perf_counter() - start
        atomic_write_json(args.out, result)  # after every seed
    # The first seed's initial model (already built) supplies the processor for the baselines.
    result["baselines"] = baselines(stage_config("sft", seeds[0], args), args)
    result["wall_clock_seconds"] = time.perf_counter() - start
    result["torch_threads"] = torch.get_num_threads()
    atomic_write_json(args.out, result)
    log.info("wrote %s (%.0f s)", args.out, result["wall_clock_seconds"])
    return result


if __name__ == "__main__":
    main()
