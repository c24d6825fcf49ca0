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
    from vlagent.eval.tables import benchmark_tables, render_markdown, write_tables
    from vlagent.io import atomic_write_json
    from vlagent.models.loading import load_policy
    from vlagent.train.common import quiet_transformers
    from vlagent.worlds import make_world

    if args.out.endswith(".json"):
        raise VlagentError(
            f"--out {args.out}: --out is the report folder (eval_summary.json, eval_table.json, "
            "eval_table.md); write one JSON file with --json FILE"
        )
    quiet_transformers()
    overrides = list(args.overrides)
    cfg = load_config(_config_path(args.config, None), overrides)
    if args.standin_images:
        standins = _make_standins(cfg, args)
        overrides += [
            f"task.annotation_file={standins.annotation_file}",
            f"task.image_dir={standins.image_dir}",
        ]
        cfg = load_config(_config_path(args.config, None), overrides)
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
        temperature=args.temperature,
        seed=cfg.run.seed,
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
    folder = Path(args.out)
    if args.trajectories:
        _write_trajectories(world, report.trajectories, folder)
    world.close()
    atomic_write_json(folder / "eval_summary.json", out)
    if args.json:
        atomic_write_json(args.json, out)
    sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")
    tables = benchmark_tables(
        [dict(t.extras.get("meta") or {}) for t in report.trajectories],
        [bool(t.success) for t in report.trajectories],
    )
    if tables is not None:
        json_path, md_path = write_tables(tables, folder)
        sys.stdout.write("\n" + render_markdown(tables))
        sys.stdout.write(f"\ntables written to {json_path} and {md_path}\n")
    return 0


def _write_trajectories(world: Any, trajectories: list[Any], folder: Path) -> None:
    """``folder/trajectories.jsonl`` + ``folder/images/`` (screenshots re-read from the world
    for episodes whose inputs the evaluation released)."""
    from vlagent.eval.trajectory_log import write_trajectories_jsonl

    if not hasattr(world, "sample"):
        raise VlagentError(
            f"--trajectories: world {type(world).__name__} is not a grounding world; "
            "trajectory JSONL holds grounding episodes"
        )
    path = folder / "trajectories.jsonl"
    n = write_trajectories_jsonl(
        trajectories, path, folder / "images", image_of=lambda t: world.sample(t.task_id).image
    )
    sys.stderr.write(f"{n} episodes written to {path}\n")


def _make_standins(cfg: Any, args: argparse.Namespace) -> Any:
    """Stand-in screenshots for the records ``vlagent eval`` will run (see sim.screens.standins)."""
    from sim.screens.standins import make_standins

    task, n = cfg.task, cfg.eval.num_screens
    if task.source != "screenspot":
        raise VlagentError(
            f"--standin-images needs task.source=screenspot (an annotation file), got {task.source!r}"
        )
    made = make_standins(
        task.annotation_file,
        args.standin_images,
        version=task.screenspot_version,
        limit=n if n > 0 else None,
        max_side=args.standin_max_side,
    )
    sys.stderr.write(
        f"stand-in images: {made.images} images for {made.records} records in {made.image_dir} "
        f"({made.scaled} downscaled); annotations {made.annotation_file}\n"
    )
    return made


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
    p.add_argument("--model", default=None, help="checkpoint folder or hub id (required)")
    p.add_argument(
        "--out",
        default="runs/eval",
        help="report folder: eval_summary.json, and for ScreenSpot-style data eval_table.json "
        "+ eval_table.md (per platform/group x text/icon) (default: runs/eval)",
    )
    p.add_argument("--episodes", type=int, default=1, help="episodes per task (reset seeds 0..k-1)")
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="sample at this temperature instead of greedy decoding (with --episodes k: k "
        "samples per task, e.g. for rejection sampling)",
    )
    p.add_argument(
        "--trajectories",
        action="store_true",
        help="grounding worlds: also write OUT/trajectories.jsonl (+ OUT/images/), readable back "
        "as training data with task.data.preset=vlagent_trajectory",
    )
    p.add_argument("--pictures", type=int, default=0, help="save this many annotated episodes")
    p.add_argument("--pictures-dir", default="runs/eval_pictures", help="where pictures go")
    p.add_argument(
        "--standin-images",
        default=None,
        metavar="DIR",
        help="draw stand-in screenshots for task.annotation_file into DIR and evaluate on them "
        "(when the real ScreenSpot images are not at hand)",
    )
    p.add_argument(
        "--standin-max-side",
        type=int,
        default=0,
        help="downscale stand-ins (image and bbox) whose longer side exceeds this (0: full size)",
    )
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
    """``vlagent report RUN_DIR [--out DIR]``, and ``--report`` / ``--compare A B`` on ``eval``."""
    ev = sub.choices["eval"]
    ev.add_argument(
        "--report",
        action="store_true",
        help="after evaluating, write the HTML report into OUT/report/ (see docs/REPORTS.md)",
    )
    ev.add_argument(
        "--compare",
        nargs=2,
        metavar=("RUN_A", "RUN_B"),
        default=None,
        help="evaluate nothing: write a side-by-side HTML report of two eval/run folders into "
        "--out (default runs/compare)",
    )
    ev.set_defaults(func=cmd_eval_report)
    p = sub.add_parser("report", help="write the HTML report of a run or eval folder")
    p.add_argument("run_dir", help="run folder, eval --out folder or quickstart root")
    p.add_argument("--out", default=None, help="report folder (default: RUN_DIR/report)")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from vlagent.eval.report import write_report

    index = write_report(args.run_dir, args.out)
    sys.stdout.write(f"report written to {index}\n")
    return 0


def cmd_eval_report(args: argparse.Namespace) -> int:
    """``vlagent eval`` with the report flags: compare two folders, or evaluate (then report)."""
    from vlagent.eval.report import write_compare, write_report

    if args.compare:
        out = args.out if args.out != "runs/eval" else "runs/compare"
        index = write_compare(args.compare[0], args.compare[1], out)
        sys.stdout.write(f"comparison written to {index}\n")
        return 0
    if not args.model:
        raise VlagentError("eval: --model is required (unless --compare RUN_A RUN_B)")
    code = cmd_eval(args)
    if code == 0 and args.report:
        extra = (Path(args.pictures_dir),) if args.pictures else ()
        index = write_report(args.out, Path(args.out) / "report", extra_sample_dirs=extra)
        sys.stdout.write(f"report written to {index}\n")
    return code


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
