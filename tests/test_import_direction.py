"""Imports only go downward (DESIGN.md §2): walk every module's imports and fail on an upward edge."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = {"torch", "transformers", "vllm", "ray", "peft", "trl", "torchvision"}
# package -> packages it must never import
FORBIDDEN = {
    "gui": {"vlagent", "embodied"} | HEAVY,
    "embodied": {"vlagent", "gui"} | HEAVY,
    "sim": {"vlagent", "gui", "embodied", "rewards"} | HEAVY,
    "rewards": {"vlagent", "gui", "embodied", "sim"} | HEAVY,
    "perception_tools": {"vlagent", "gui", "embodied", "sim", "rewards"} | HEAVY,
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module.split(".")[0]))
    return out


def test_no_upward_imports():
    bad = []
    for pkg, forbidden in FORBIDDEN.items():
        for path in sorted((REPO / pkg).rglob("*.py")):
            for line, mod in _imports(path):
                if mod in forbidden:
                    bad.append(f"{path.relative_to(REPO)}:{line} imports {mod}")
    assert not bad, "upward or heavy imports:\n" + "\n".join(bad)


def test_walker_catches_an_upward_edge(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from vlagent.config import TrainConfig\n")
    assert (2, "vlagent") in _imports(f)
