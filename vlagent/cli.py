"""vlagent command line: quickstart, train, sft, eval, bench, build-tiny-model, envs.

Every training command takes ``--config FILE|NAME`` (a YAML file or a packaged recipe) and dotted overrides
(``grpo.lr=1e-5 run.seed=3``); the resolved config is saved in the run folder.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

# Idle OpenMP threads sleep instead of spinning. With the default (spin) policy, torch's CPU
# threads slow down 10-30x as soon as another busy process shares the cores (measured here:
# a 2-thread matmul loop took 117 s instead of 3.5 s next to two other jobs on 2 cores). Must be
# set before torch is imported; an explicit OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from vlagent.errors import VlagentError


def _config_path(value: str | None, default: str | None) -> str | None:
    """A config file path, or a packaged recipe name (``grpo``, ``quickstart`` …)."""
    return value or default


def _add_config_args(p: argparse.ArgumentParser, default: str | None) -> None:
    p.add_argument("--json", default=None, help="also write the result as JSON to this path")
    p.add_argument(
        "--config",
        default=None,
        help=f"YAML config file or packaged recipe name (default: {default})",
    )
    p.add_argument("overrides", nargs="*", help="dotted overrides, e.g. grpo.lr=1e-5 run.seed=3")


def cmd_quickstart(args: argparse.Namespace) -> int:
    from vlagent.config import load_config
    from vlagent.quickstart import print_summary, run_quickstart, run_seeds

    cfg = load_config(_config_path(args.config, "quickstart"), args.overrides)
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    summaries = run_seeds(cfg, seeds) if seeds else [run_quickstart(cfg)]
    if args.json:
        from vlagent.io import atomic_write_json

        atomic_write_json(args.json, {"command": " ".join(sys.argv), "summaries": summaries})
    sys.stdout.write(print_summary(summaries, cfg.run.out_dir))
    return 0


def cmd_train(args: argparse.Namespace, recipe: str | None = None) -> int:
    from vlagent.config import load_config

    overrides = list(args.overrides) + ([f"recipe={recipe}"] if recipe else [])
    cfg = load_config(_config_path(args.config, None), overrides)
    if cfg.recipe == "sft":
        from vlagent.train.sft import run_sft

        result = run_sft(cfg)
    else:
        from vlagent.train.grpo import run_grpo

        result = run_grpo(cfg)
    if args.json:
        from vlagent.io import atomic_write_json
        from vlagent.train.outputs import read_metrics

        curve = [
            {
                "step": r["step"],
                "train_seconds": r["train_seconds"],
                **{k: v for k, v in r.items() if k.startswith("val/")},
            }
            for r in read_metrics(Path(cfg.run.out_dir) / "metrics.jsonl", cfg.recipe)
            if "val/success_rate" in r
        ]
        atomic_write_json(
            args.json,
            {"command": " ".join(sys.argv), "result": result.__dict__, "val_curve": curve},
        )
    sys.stdout.write(json.dumps(result.__dict__, indent=2) + "\n")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from vlagent.bench import main as bench_main

    return bench_main([args.name, *args.bench_args])


def cmd_eval(args: argparse.Namespace) -> int:
    from vlagent.config import load_config
    from vlagent.eval.evaluate import evaluate
    from vlagent.io import atomic_write_json
    from vlagent.models.loading import load_policy
    from vlagent.train.common import quiet_transformers
    from vlagent.worlds import make_world

    quiet_transformers()
    cfg = load_config(_config_path(args.config, None), args.overrides)
    policy = load_policy(args.model, dtype=cfg.model.dtype, device=cfg.model.device)  # type: ignore[arg-type]
    world = make_world(cfg, policy)
    report = evaluate(
        world,
        policy,
        "test",
        cfg.eval.num_screens,
        batch_size=cfg.eval.batch_size,
        max_new_tokens=cfg.eval.max_new_tokens,
        episodes_per_task=args.episodes,
        keep_inputs=max(16, args.pictures),
    )
    ids = [t.task_id for t in report.trajectories]
    out = {
        "model": args.model,
        "world": cfg.world,
        **report.summary(),
        "baselines": world.baselines(ids),
    }
    if args.pictures:
        world.save_pictures(report.trajectories[: args.pictures], Path(args.pictures_dir), "eval")
    world.close()
    if args.out:
        atomic_write_json(args.out, out)
    sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")
    return 0


def cmd_build_tiny(args: argparse.Namespace) -> int:
    from vlagent.models.tiny import build_tiny_model
    from vlagent.train.common import quiet_transformers

    quiet_transformers()
    path = build_tiny_model(args.dir, family=args.family, seed=args.seed)
    sys.stdout.write(f"built tiny {args.family} model in {path}\n")
    return 0


def cmd_envs(args: argparse.Namespace) -> int:
    import gymnasium

    import gui

    for env_id in gui.registered_env_ids():
        spec = gymnasium.spec(env_id)
        sys.stdout.write(f"{env_id:40s} available  entry_point={spec.entry_point}\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vlagent", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "quickstart", help="build a tiny VLM, SFT it, GRPO it, compare (CPU, minutes)"
    )
    _add_config_args(p, "quickstart")
    p.add_argument(
        "--seeds", default=None, help="comma-separated seeds, e.g. 0,1,2 (default: run.seed)"
    )
    p.set_defaults(func=cmd_quickstart)

    p = sub.add_parser(
        "train",
        help="run the config's `recipe` (sft | grpo) in its `world` (grounding | zoom | apps)",
    )
    _add_config_args(p, None)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("sft", help="run the sft recipe")
    _add_config_args(p, None)
    p.set_defaults(func=lambda a: cmd_train(a, "sft"))

    p = sub.add_parser(
        "eval", help="held-out success of a checkpoint in the config's world (greedy episodes)"
    )
    p.add_argument("--model", required=True, help="checkpoint folder or hub id")
    p.add_argument("--out", default=None, help="write the report as JSON here")
    p.add_argument("--episodes", type=int, default=1, help="episodes per task (reset seeds 0..k-1)")
    p.add_argument("--pictures", type=int, default=0, help="save this many annotated episodes")
    p.add_argument("--pictures-dir", default="runs/eval_pictures", help="where pictures go")
    _add_config_args(p, None)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("build-tiny-model", help="build a tiny random Qwen-VL checkpoint offline")
    p.add_argument("dir", help="output folder")
    p.add_argument("--family", default="qwen3_vl", choices=["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_build_tiny)

    p = sub.add_parser(
        "bench", help="run a benchmark from bench/ (grpo-vs-trl | env-speed); needs a checkout"
    )
    p.add_argument("name", help="benchmark name: grpo-vs-trl | env-speed")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="arguments of the benchmark")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("envs", help="list registered environments")
    p.set_defaults(func=cmd_envs)

    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    from gui.errors import GuiError
    from perception_tools.geometry import GeometryError
    from rewards import RewardError
    from sim.errors import SimError

    try:
        return int(args.func(args))
    except (VlagentError, GuiError, SimError, RewardError, GeometryError) as exc:
        sys.stderr.write(f"vlagent: error: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
