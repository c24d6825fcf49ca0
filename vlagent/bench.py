"""``vlagent bench NAME [ARGS]``: run a benchmark from the repository's ``bench/`` folder.

Benchmarks live beside the package (``bench/``, not installed), so this entry needs a source
checkout; each benchmark is also runnable as ``python -m bench.<module>`` from the repo root.

    vlagent bench grpo-vs-trl [--repeats 3 ...]   # bench/grpo_vs_trl.py
    vlagent bench env-speed [--seconds 5 ...]     # bench/env_speed.py
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

BENCHMARKS: dict[str, str] = {
    "grpo-vs-trl": "bench.grpo_vs_trl",
    "env-speed": "bench.env_speed",
    "env-pool": "bench.env_pool",
    "desktop-env": "bench.desktop_env",
    "robot-env": "bench.robot_env",
    "flops": "bench.flops",
    "logits-chunk": "bench.logits_chunk",
}
REPO = Path(__file__).resolve().parent.parent


def load(name: str):  # noqa: ANN201  (a module)
    """Import the benchmark module registered as ``name``.

    Raises:
        SystemExit: unknown name, or no ``bench/`` folder (an installed package, not a checkout).
    """
    if name not in BENCHMARKS:
        raise SystemExit(
            f"vlagent bench: unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}"
        )
    if not (REPO / "bench" / "__init__.py").is_file():
        raise SystemExit(
            f"vlagent bench: no bench/ folder next to {Path(__file__).parent}; benchmarks run "
            "from a source checkout (git clone, then pip install -e '.[bench]')"
        )
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    return importlib.import_module(BENCHMARKS[name])


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv[0]`` (a benchmark name) with the remaining arguments."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__ + "\n")
        return 0 if argv else 2
    return int(load(argv[0]).main(argv[1:]))
