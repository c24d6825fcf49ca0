"""CLI wiring of ``vlagent eval-suite`` (light: the handler imports the heavy parts lazily)."""

from __future__ import annotations

import argparse
from typing import Any


def _run(args: argparse.Namespace) -> int:
    from vlagent.apps.eval import cmd_eval_suite

    return cmd_eval_suite(args)


def add_eval_suite_parser(sub: Any) -> None:
    """Register ``eval-suite`` on the CLI's subparsers."""
    p = sub.add_parser(
        "eval-suite",
        help="success rate (overall, per app), steps and saved trajectories on a task suite",
    )
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--model", help="checkpoint folder")
    who.add_argument("--baseline", choices=["oracle", "random"], help="a scripted policy instead")
    p.add_argument("--suite", required=True, help="task suite file or builtin name (phone_basic)")
    p.add_argument("--out", default=None, help="folder for report.json and trajectories/")
    p.add_argument("--episodes", type=int, default=1, help="episodes per task (default 1)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--keep-images", type=int, default=1, help="screenshots per prompt (history)")
    p.add_argument(
        "--style", default="json", choices=["json", "androidworld"], help="action text style"
    )
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.set_defaults(func=_run)
