"""One trainer for every world: one trajectory type, one runner, one update, one GRPO config.

Walks the definitions of every package module: the parallel stacks' names must stay gone, and
each pipeline piece must be defined exactly once. Also: nothing in the repository points readers
to files outside it.
"""

from __future__ import annotations

import ast
import subprocess
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("vlagent", "gui", "embodied", "sim", "rewards", "perception_tools")
GONE = {
    "agent_grpo_update",  # the zoom agent's own PPO update
    "ppo_update",  # the phone apps' own PPO update
    "AgentRuntime",
    "AgentTrainConfig",
    "AgentGRPOConfig",
    "AppsGRPOConfig",
    "TrajectoryRewardConfig",  # the phone reward recomputed beside the env's
    "Rollout",  # the single-turn trajectory type
    "Episode",  # the apps trajectory type
    "run_agent_grpo",
    "run_apps_grpo",
    "load_any_config",
}
ONCE = {"Trajectory", "policy_update", "GRPOConfig", "run_episodes", "run_grpo", "run_sft"}


def definitions() -> Counter[str]:
    names: Counter[str] = Counter()
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names[node.name] += 1
    return names


def test_parallel_stacks_are_gone():
    found = sorted(n for n in definitions() if n in GONE)
    assert not found, f"names of the old parallel stacks are back: {found}"


def test_each_pipeline_piece_is_defined_once():
    names = definitions()
    assert {n: names[n] for n in ONCE} == dict.fromkeys(ONCE, 1)


def test_walker_sees_definitions(tmp_path, monkeypatch):
    assert definitions()["policy_update"] == 1  # the walker is not vacuous


def test_nothing_points_outside_the_repository():
    files = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    bad = []
    for name in files:
        path = REPO / name
        if (
            path.suffix not in (".md", ".py", ".yaml", ".toml", ".sh", ".txt", "")
            or not path.is_file()
        ):
            continue
        text = path.read_text(encoding="utf-8", errors="ignore")
        for needle in ("../shared", "shared/DESIGN", "shared/STYLE", "shared/LEARNABILITY"):
            if needle in text and name != "tests/test_one_pipeline.py":
                bad.append(f"{name}: {needle}")
    assert not bad, "files point outside the repository:\n" + "\n".join(bad)
