"""vlagent command line: quickstart, train, sft, eval, eval-suite, bench, build-tiny-model, envs.

Every training command takes ``--config FILE`` (YAML under ``configs/``) and dotted overrides
(``grpo.lr=1e-5 run.seed=3``); the resolved config is saved in the run folder.
"""

from __future__ import annotations

import argparse
import dataclasses
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

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


def _config_path(value: str | None, default: str | None) -> Path | None:
    """A path as given, or a bare name looked up in the repository's ``configs/``."""
    name = value or default
    if name is None:
        return None
    path = Path(name)
    if path.exists() or path.suffix:
        return path
    return CONFIG_DIR / f"{name}.yaml"


def _add_config_args(p: argparse.ArgumentParser, default: str | None) -> None:
    p.add_argument("--json", default=None, help="also write the result as JSON to this path")
    p.add_argument(
        "--config", default=None, help=f"YAML config file or name in configs/ (default: {default})"
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
    from vlagent.config import AGENT_RECIPES, load_any_config

    overrides = list(args.overrides) + ([f"recipe={recipe}"] if recipe else [])
    cfg = load_any_config(_config_path(args.config, None), overrides)
    if cfg.recipe in AGENT_RECIPES:
        return _run_agent(cfg, args)
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
            if "val/accuracy" in r
        ]
        atomic_write_json(
            args.json,
            {"command": " ".join(sys.argv), "result": result.__dict__, "val_curve": curve},
        )
    sys.stdout.write(json.dumps(result.__dict__, indent=2) + "\n")
    return 0


def _run_agent(cfg, args: argparse.Namespace) -> int:  # noqa: ANN001  (AgentTrainConfig)
    """The multi-turn "thinking with images" recipes (configs/zoom_*.yaml)."""
    if cfg.recipe == "agent_sft":
        from vlagent.train.agent_sft import run_agent_sft

        result = run_agent_sft(cfg)
    else:
        from vlagent.train.agent_grpo import run_agent_grpo

        result = run_agent_grpo(cfg)
    out = dataclasses.asdict(result) if dataclasses.is_dataclass(result) else dict(result.__dict__)
    if args.json:
        from vlagent.io import atomic_write_json

        atomic_write_json(args.json, {"command": " ".join(sys.argv), "result": out})
    sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from vlagent.bench import main as bench_main

    return bench_main([args.name, *args.bench_args])


def cmd_eval(args: argparse.Namespace) -> int:
    from vlagent.config import load_config
    from vlagent.eval.grounding import baselines, evaluate_policy
    from vlagent.io import atomic_write_json
    from vlagent.models.loading import load_policy
    from vlagent.tasks import GroundingTask
    from vlagent.train.common import quiet_transformers

    quiet_transformers()
    cfg = load_config(_config_path(args.config, None), args.overrides)
    policy = load_policy(args.model, dtype=cfg.model.dtype, device=cfg.model.device)  # type: ignore[arg-type]
    task = GroundingTask(cfg.task, policy.family)
    n = (
        cfg.eval.num_screens
        if task.source.num_samples is None
        else min(cfg.eval.num_screens, task.source.num_samples)
    )
    keys = task.keys("test", 0, n)
    report = evaluate_policy(
        policy, task, keys, batch_size=cfg.eval.batch_size, max_new_tokens=cfg.eval.max_new_tokens
    )
    out = {"model": args.model, **report.summary(), "baselines": baselines(task, keys)}
    if args.out:
        atomic_write_json(args.out, out)
    sys.stdout.write(json.dumps(out, indent=2) + "\n")
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
        help="run the recipe named by the config's `recipe` (sft | grpo | agent_sft | agent_grpo)",
    )
    _add_config_args(p, None)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("sft", help="run the sft recipe")
    _add_config_args(p, None)
    p.set_defaults(func=lambda a: cmd_train(a, "sft"))

    p = sub.add_parser("eval", help="held-out accuracy of a checkpoint on the config's task")
    p.add_argument("--model", required=True, help="checkpoint folder or hub id")
    p.add_argument("--out", default=None, help="write the report as JSON here")
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

    from vlagent.apps.cli import add_eval_suite_parser

    add_eval_suite_parser(sub)
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
