"""vlagent command line: quickstart, train, sft, eval, make-standins, bench, build-tiny-model, envs.

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
from typing import Any

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

    level = [f"task.level={args.level}"] if args.level else []
    init = [f"model.path={args.init}", "model.build_tiny=false"] if args.init else []
    cfg = load_config(_config_path(args.config, "quickstart"), [*level, *init, *args.overrides])
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    ctl = args.control
    summaries = run_seeds(cfg, seeds, ctl) if seeds else [run_quickstart(cfg, ctl)]
    if args.json and os.environ.get("RANK", "0") == "0":  # under torchrun: rank 0 writes
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
    if args.json and os.environ.get("RANK", "0") == "0":  # under torchrun: rank 0 writes
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
    """``vlagent eval``: one config, named suites, or a comparison (``vlagent/eval/command.py``)."""
    from vlagent.eval.command import eval_command
    from vlagent.models.loading import quiet_transformers

    quiet_transformers()
    return eval_command(args)


def cmd_make_standins(args: argparse.Namespace) -> int:
    from sim.screens.standins import make_standins

    made = make_standins(
        args.annotations,
        args.dir,
        version=args.version,
        limit=args.limit,
        max_side=args.max_side,
    )
    sys.stdout.write(
        f"{made.images} stand-in images for {made.records} records in {made.image_dir} "
        f"({made.scaled} downscaled)\nannotations: {made.annotation_file}\n"
        f"evaluate: vlagent eval --config screenspot_eval --model PATH "
        f"task.annotation_file={made.annotation_file} task.image_dir={made.image_dir}\n"
    )
    return 0


def cmd_build_tiny(args: argparse.Namespace) -> int:
    from vlagent.models.loading import quiet_transformers
    from vlagent.models.tiny import build_tiny_model

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
    from vlagent.eval.command import add_eval_arguments

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
    p.add_argument(
        "--level",
        default=None,
        help="synthetic screen level (basic, basic2, shapes, widgets ...; sim.screens.LEVELS): "
        "the same story on another rung of the ladder (= task.level=NAME)",
    )
    p.add_argument(
        "--init",
        default=None,
        help="start from this trained checkpoint instead of a fresh tiny model, e.g. the "
        "previous rung of a level curriculum (= model.path=PATH model.build_tiny=false)",
    )
    p.add_argument(
        "--control",
        default="same_updates_and_sequences",
        choices=("same_updates_and_sequences", "same_seconds"),
        help="how the continued-SFT control matches GRPO: as many updates and sequences "
        "(default; independent of machine load) or as many training seconds (fresh-label SFT "
        "then reads screens past those the SFT stage read)",
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
        "eval",
        help="held-out success of a checkpoint in a config's world or on named suites "
        "(--suite list), or a comparison of two eval folders (--compare A B)",
    )
    add_eval_arguments(p)
    _add_config_args(p, None)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser(
        "make-standins",
        help="draw stand-in screenshots for a ScreenSpot annotation file (no real images needed)",
    )
    p.add_argument("annotations", help="ScreenSpot v1 / v2 / Pro JSON annotation file")
    p.add_argument("dir", help="output folder (images + <stem>.standin.json)")
    p.add_argument("--version", default="v2", choices=["v1", "v2", "pro"], help="bbox convention")
    p.add_argument("--limit", type=int, default=None, help="only the first N records")
    p.add_argument("--max-side", type=int, default=0, help="downscale longer sides above this")
    p.set_defaults(func=cmd_make_standins)

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

    p = sub.add_parser(
        "osworld-check",
        help="which tasks of an OSWorld-format suite run on the local desktop, and why not",
    )
    p.add_argument("suite", help="bundled suite (local, os) or a folder / file of task JSON")
    p.add_argument("--json", default=None, help="write the rows to this JSON file")
    p.set_defaults(func=cmd_osworld_check)

    _add_report_commands(sub)

    return parser


def cmd_osworld_check(args: argparse.Namespace) -> int:
    """Run each task with a do-nothing agent, or say why it cannot run (docs/OSWORLD.md)."""
    from collections import Counter

    from gui.osworld.check import check_suite
    from vlagent.io import atomic_write_json

    rows = check_suite(args.suite)
    for r in rows:
        extra = r.get("reason") or f"do-nothing success: {r.get('done_agent_success')}"
        sys.stdout.write(f"{r['id'][:8]}  {r['status']:22s} {extra}\n")
    counts = Counter(r["status"] for r in rows)
    sys.stdout.write(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + "\n")
    if args.json:
        command = "vlagent osworld-check " + " ".join(sys.argv[2:])
        atomic_write_json(args.json, {"command": command, "suite": str(args.suite), "rows": rows})
    return 0


# --- reports (vlagent report, vlagent eval --report / --compare; see docs/REPORTS.md) ---------


def _add_report_commands(sub: Any) -> None:
    """``vlagent report RUN_DIR [--out DIR]`` (``eval --report`` / ``--compare A B`` are
    arguments of ``eval``: ``vlagent/eval/command.py``)."""
    p = sub.add_parser("report", help="write the HTML report of a run or eval folder")
    p.add_argument("run_dir", help="run folder, eval --out folder or quickstart root")
    p.add_argument("--out", default=None, help="report folder (default: RUN_DIR/report)")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from vlagent.eval.report import write_report

    index = write_report(args.run_dir, args.out)
    sys.stdout.write(f"report written to {index}\n")
    return 0


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
