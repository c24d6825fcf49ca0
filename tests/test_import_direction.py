"""Imports only go downward (DESIGN.md §2): walk every module's imports and fail on an upward edge.

Between the top-level packages by FORBIDDEN; inside vlagent/ by VLAGENT_LAYERS, with no cycles.
"""

from __future__ import annotations

import ast
from collections import deque
from itertools import pairwise
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


# Layers inside vlagent/, lowest first. A module's layer is its first path component under
# vlagent/ (vlagent/train/grpo.py -> "train", vlagent/config.py -> "config"); vlagent/__init__.py
# is "errors". A module may import vlagent modules of its own layer or a lower one.
VLAGENT_LAYERS = [
    "errors",
    "io",
    "algo_config",
    "world_config",
    "robot_config",
    "screen_config",
    "config",
    "algos",
    "models",
    "codec",
    "batching",
    "rollout",
    "viz",
    "worlds",
    "eval",
    "train",
    "quickstart",
    "bench",
    "cli",
]
RANK = {layer: i for i, layer in enumerate(VLAGENT_LAYERS)}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _vlagent_modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under ``root``/vlagent."""
    return {_module_name(p, root): p for p in sorted((root / "vlagent").rglob("*.py"))}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "errors"


def _vlagent_imports(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, dotted vlagent module) of every import in the file, at any depth (functions too).

    Relative imports resolve against the module's package; ``from p import name`` gives
    ``p.name`` when that is a module, else ``p``. A name not in ``modules`` is a missing module.
    """
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        else:
            continue
        out += [(node.lineno, n) for n in names if n == "vlagent" or n.startswith("vlagent.")]
    return sorted(set(out))


def _layer_violations(root: Path) -> list[str]:
    modules = _vlagent_modules(root)
    bad = []
    unlayered: dict[str, int] = {}
    for module, path in modules.items():
        src = _layer(module)
        if src not in RANK:
            unlayered[src] = unlayered.get(src, 0) + 1
            continue
        where = path.relative_to(root)
        for line, target in _vlagent_imports(module, path, modules):
            if target not in modules:
                bad.append(f"{where}:{line} imports {target}, which does not exist")
            elif _layer(target) not in RANK:
                bad.append(f"{where}:{line} ({src}) imports {target} (in no layer)")
            elif RANK[_layer(target)] > RANK[src]:
                bad.append(f"{where}:{line} ({src}) imports {target} ({_layer(target)})")
    bad += [
        f"vlagent.{layer} ({n} module{'s' * (n > 1)}) is in no layer"
        for layer, n in sorted(unlayered.items())
    ]
    return bad


def test_vlagent_layers():
    bad = _layer_violations(REPO)
    assert not bad, (
        "vlagent imports against the layers "
        + " < ".join(VLAGENT_LAYERS)
        + ":\n"
        + ("\n".join(bad))
    )


def test_layer_check_catches_an_upward_edge(tmp_path):
    pkg = tmp_path / "vlagent"
    (pkg / "train").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "train" / "__init__.py").write_text("")
    (pkg / "train" / "grpo.py").write_text("from vlagent.config import X\nfrom ..io import y\n")
    (pkg / "config.py").write_text("def f():\n    from .train import grpo\n")
    (pkg / "io.py").write_text("from . import errors\n")
    assert _layer_violations(tmp_path) == [
        "vlagent/config.py:2 (config) imports vlagent.train.grpo (train)"
    ]


def _import_graph(root: Path) -> dict[str, dict[str, int]]:
    """module -> {imported vlagent module: line of the first such import}."""
    modules = _vlagent_modules(root)
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for module, path in modules.items():
        for line, target in _vlagent_imports(module, path, modules):
            if target in modules and target != module:
                graph[module][target] = min(line, graph[module].get(target, line))
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One shortest cycle through the first module of each strongly connected component that
    has more than one module, as [a, b, ..., a]."""
    reach = {}
    for start in graph:
        seen, stack = set(), [start]
        while stack:
            for nxt in graph[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        reach[start] = seen
    done: set[str] = set()
    cycles = []
    for start in sorted(graph):
        if start in done or start not in reach[start]:
            continue
        component = {m for m in reach[start] if start in reach[m]}
        done |= component
        parent: dict[str, str] = {}
        queue, last = deque([start]), None
        while last is None:  # BFS inside the component; it reaches start again
            node = queue.popleft()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    last = node
                    break
                if nxt in component and nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        path = [last]
        while path[-1] != start:
            path.append(parent[path[-1]])
        cycles.append([*reversed(path), start])
    return cycles


def _format_cycle(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    steps = [f"{a} (line {graph[a][b]}) -> " for a, b in pairwise(cycle)]
    return "".join(steps) + cycle[-1]


def test_no_import_cycles_in_vlagent():
    graph = _import_graph(REPO)
    cycles = _cycles(graph)
    assert not cycles, "import cycles among vlagent modules:\n" + "\n".join(
        _format_cycle(c, graph) for c in cycles
    )


def test_cycle_finder_catches_a_cycle(tmp_path):
    pkg = tmp_path / "vlagent"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from vlagent import b\n")
    (pkg / "b.py").write_text("import vlagent.errors\n\n\ndef f():\n    from .c import g\n")
    (pkg / "c.py").write_text("from vlagent.a import x\n")
    (pkg / "errors.py").write_text("")
    graph = _import_graph(tmp_path)
    assert _cycles(graph) == [["vlagent.a", "vlagent.b", "vlagent.c", "vlagent.a"]]
    want = "vlagent.a (line 1) -> vlagent.b (line 5) -> vlagent.c (line 1) -> vlagent.a"
    assert _format_cycle(_cycles(graph)[0], graph) == want
