"""MiniWoB++: a tiny VLM after SFT on the DOM oracle's episodes vs after SFT + GRPO (issue 14).

``experiments.sft_vs_grpo`` with the web recipes (``web_sft``, ``web_grpo``) and two one-target
tasks (a button, a text field: a model this size can learn where to click, and must still read
the instruction from the page). Held-out pages have seeds from 1,000,000 up, never a training
page.

    python -m experiments.web_sft_vs_grpo --seeds 0,1,2 --episodes 100 \\
        --json docs/results/web_sft_vs_grpo.json run.threads=1

Trailing ``key=value`` overrides apply to both recipes (``web.tasks=[click-test]`` replaces the
default tasks). Run from the repository root (``experiments`` is not an installed package).
"""

from __future__ import annotations

import sys

from experiments.sft_vs_grpo import main as run

TASKS = "web.tasks=[click-test,focus-text]"
"""Default tasks, applied before the command line's overrides."""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    split = next((i for i, a in enumerate(args) if "=" in a and not a.startswith("-")), len(args))
    return run(
        [*args[:split], TASKS, *args[split:]],
        module="experiments.web_sft_vs_grpo",
        sft_recipe="web_sft",
        grpo_recipe="web_grpo",
        out="runs/web_sft_vs_grpo",
    )


if __name__ == "__main__":
    raise SystemExit(main())
