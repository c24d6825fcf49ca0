"""The ``vlagent eval`` command: its arguments and what each form does.

- ``--config NAME|FILE [overrides]``: evaluate in that config's world into ``--out``;
- ``--suite a,b [overrides]``: each named suite (``vlagent/eval/suites.py``) into ``OUT/<name>/``,
  then ``OUT/suites.json`` + ``OUT/suites.md``; ``--suite list`` prints the registry;
- ``--compare RUN_A RUN_B``: a side-by-side HTML report, nothing evaluated;
- ``--report``: after evaluating, the HTML report into ``OUT/report/`` (with ``--suite`` also
  each suite's into ``OUT/<name>/report/``; ``OUT/report/`` then shows the suites table).

``--config`` and ``--suite`` exclude each other. The ``json``, ``config`` and ``overrides``
arguments are the CLI's shared ones (``vlagent.cli._add_config_args``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vlagent.errors import VlagentError
from vlagent.eval.run import EvalRequest

DEFAULT_OUT = "runs/eval"
DEFAULT_PICTURES = "runs/eval_pictures"


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    """The ``eval`` subcommand's own arguments."""
    p.add_argument("--model", default=None, help="checkpoint folder or hub id (required)")
    p.add_argument(
        "--out",
        default=DEFAULT_OUT,
        help="report folder: eval_summary.json, and for ScreenSpot-style data eval_table.json "
        "+ eval_table.md (per platform/group x text/icon); with --suite one subfolder per suite "
        f"+ suites.json + suites.md (default: {DEFAULT_OUT})",
    )
    p.add_argument(
        "--suite",
        default=None,
        metavar="NAME[,NAME...]",
        help="evaluate named suites (a recipe config + overrides each) instead of --config; "
        "--suite list prints them",
    )
    p.add_argument(
        "--episodes",
        type=int,
        default=1,
        help="episodes per task (reset seeds 0..k-1); the summary reports avg@k and pass@k",
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="sample at this temperature instead of greedy decoding (with --episodes k: k "
        "samples per task, e.g. for pass@k or rejection sampling)",
    )
    p.add_argument(
        "--trajectories",
        action="store_true",
        help="grounding worlds: also write OUT/trajectories.jsonl (+ OUT/images/), readable back "
        "as training data with task.data.preset=vlagent_trajectory",
    )
    p.add_argument("--pictures", type=int, default=0, help="save this many annotated episodes")
    p.add_argument(
        "--pictures-dir",
        default=None,
        help=f"where pictures go (default {DEFAULT_PICTURES}; with --suite OUT/<name>/samples, "
        "or PICTURES_DIR/<name> when given)",
    )
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
    p.add_argument(
        "--report",
        action="store_true",
        help="after evaluating, write the HTML report into OUT/report/ (see docs/REPORTS.md)",
    )
    p.add_argument(
        "--compare",
        nargs=2,
        metavar=("RUN_A", "RUN_B"),
        default=None,
        help="evaluate nothing: write a side-by-side HTML report of two eval/run folders into "
        "--out (default runs/compare)",
    )


def _request(args: argparse.Namespace, pictures_dir: str | None) -> EvalRequest:
    if args.episodes < 1:
        raise VlagentError(f"--episodes {args.episodes}: must be at least 1")
    return EvalRequest(
        model=args.model,
        episodes=args.episodes,
        temperature=args.temperature,
        trajectories=args.trajectories,
        pictures=args.pictures,
        pictures_dir=Path(pictures_dir or DEFAULT_PICTURES),
        standin_images=args.standin_images,
        standin_max_side=args.standin_max_side,
        json_path=args.json,
    )


def _report(folder: Path, extra: tuple[Path, ...] = ()) -> None:
    from vlagent.eval.report import write_report

    index = write_report(folder, folder / "report", extra_sample_dirs=extra)
    sys.stdout.write(f"report written to {index}\n")


def eval_single(args: argparse.Namespace) -> int:
    """``vlagent eval --config ...``: one evaluation into ``--out`` (and its report)."""
    from vlagent.config import load_config
    from vlagent.eval.run import evaluate_into

    if args.out.endswith(".json"):
        raise VlagentError(
            f"--out {args.out}: --out is the report folder (eval_summary.json, eval_table.json, "
            "eval_table.md); write one JSON file with --json FILE"
        )
    req = _request(args, args.pictures_dir)
    overrides = list(args.overrides)
    folder = Path(args.out)
    evaluate_into(lambda extra: load_config(args.config, [*overrides, *extra]), req, folder)
    if args.report:
        _report(folder, (req.pictures_dir,) if args.pictures else ())
    return 0


def eval_suites(args: argparse.Namespace) -> int:
    """``vlagent eval --suite a,b``: each suite into ``OUT/<name>/``, then suites.json / .md
    (and their reports); exit code 1 when a suite failed."""
    from vlagent.eval.suite_run import run_suites, suites_markdown
    from vlagent.eval.suites import select

    suites = select(args.suite)
    req = _request(args, None)
    out = Path(args.out)
    if out.suffix == ".json":
        raise VlagentError(f"--out {args.out}: with --suite, --out is a folder (suites.json …)")
    pictures_root = Path(args.pictures_dir) if args.pictures_dir else None
    rows = run_suites(suites, args.overrides, req, out, pictures_root=pictures_root)
    if args.json:
        from vlagent.io import atomic_write_json

        atomic_write_json(args.json, {"model": args.model, "suites": rows})
    if args.report:
        for r in rows:
            if not r.get("error"):
                pics = (pictures_root / r["suite"],) if pictures_root and args.pictures else ()
                _report(Path(r["folder"]), pics)
        _report(out)  # the suites table, and every suite's sample records in one viewer
    sys.stdout.write("\n" + suites_markdown(rows))
    json_path, md_path = out / "suites.json", out / "suites.md"
    sys.stdout.write(f"suites written to {json_path} and {md_path}\n")
    return 1 if any(r.get("error") for r in rows) else 0


def eval_command(args: argparse.Namespace) -> int:
    """Dispatch ``vlagent eval`` to compare / suite list / suites / one config."""
    from vlagent.eval.suites import registry_text

    if args.compare:
        from vlagent.eval.report import write_compare

        out = args.out if args.out != DEFAULT_OUT else "runs/compare"
        index = write_compare(args.compare[0], args.compare[1], out)
        sys.stdout.write(f"comparison written to {index}\n")
        return 0
    if args.suite is not None and args.config is not None:
        raise VlagentError(
            "eval: give --config or --suite, not both (a suite names its own config; list "
            "them with --suite list)"
        )
    if args.suite is not None and args.suite.strip() == "list":
        sys.stdout.write(registry_text())
        return 0
    if not args.model:
        raise VlagentError("eval: --model is required (unless --compare RUN_A RUN_B)")
    if args.suite is not None:
        return eval_suites(args)
    return eval_single(args)
