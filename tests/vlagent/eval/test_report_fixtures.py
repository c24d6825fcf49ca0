"""Small run folders for the report tests, written by the real writers: ``JsonlSink``
(metrics.jsonl), ``write_trajectories_jsonl`` (eval --trajectories), ``benchmark_tables`` +
``write_tables`` (eval_table.json), ``AppsWorld.save_pictures`` / ``RobotWorld.save_pictures``
(samples/), and an ``eval_summary.json`` shaped like ``cmd_eval``'s. Also an HTML reader."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np

from vlagent.codec import Answer, ParseError
from vlagent.eval.stats import wilson_interval
from vlagent.eval.tables import benchmark_tables, write_tables
from vlagent.eval.trajectory_log import write_trajectories_jsonl
from vlagent.io import atomic_write_json
from vlagent.rollout.trajectory import Trajectory, Turn
from vlagent.train.outputs import JsonlSink

METAS = [
    {"data_type": "text", "data_source": "ios"},
    {"data_type": "icon", "data_source": "windows"},
    {"data_type": "text", "data_source": "gitlab"},
]


def screen(seed: int, h: int = 24, w: int = 32) -> np.ndarray:
    """A random ``uint8 (h, w, 3)`` screenshot."""
    return np.random.default_rng(seed).integers(0, 255, (h, w, 3), dtype=np.uint8)


def grounding_trajectories() -> list[Trajectory]:
    """Three grounding episodes (two share a screenshot): a hit, a miss, a parse error."""
    answers = [
        Answer((0.2, 0.3), None, "click(200, 300)"),
        Answer((0.7, 0.6), (0.6, 0.5, 0.8, 0.7), "box"),
        ParseError("no coordinates", "hello"),
    ]
    out = []
    for i, ans in enumerate(answers):
        terms = {"point_in_box": 1.0 if i == 0 else 0.0, "format": 0.0 if i == 2 else 0.1}
        turn = Turn(0, 0, 3, ans.text, reward=sum(terms.values()), reward_terms=terms)
        out.append(
            Trajectory(
                task_id=i,
                turns=[turn],
                instruction=f"click the button {i}",
                status="terminated",
                success=i == 0,
                info={"sample_id": f"data:{i}"},
                extras={
                    "image": screen(i % 2),
                    "target_box_norm": (0.1, 0.2, 0.3, 0.4),
                    "answer": ans,
                    "meta": METAS[i],
                },
            )
        )
    return out


EVAL_SUMMARY = {
    "model": "tiny",
    "world": "grounding",
    "n": 3.0,
    "success_rate": 1 / 3,
    "success_ci_low": wilson_interval(1, 3)[0],
    "success_ci_high": wilson_interval(1, 3)[1],
    "mean_reward": 0.4,
    "mean_turns": 1.0,
    "generated_tokens": 7.333333333333333,
    "reward_terms/format": 0.06666666666666667,
    "reward_terms/point_in_box": 1 / 3,
    "accuracy": 1 / 3,
    "format_rate": 2 / 3,
    "baselines": {"random_click": 0.04, "center_click": 0.1},
}


def eval_dir(root: Path) -> Path:
    """An eval ``--out`` folder: eval_summary.json, eval_table.json/.md, trajectories.jsonl."""
    trajs = grounding_trajectories()
    write_trajectories_jsonl(trajs, root / "trajectories.jsonl", root / "images")
    tables = benchmark_tables([t.extras["meta"] for t in trajs], [t.success for t in trajs])
    write_tables(tables, root)
    atomic_write_json(root / "eval_summary.json", EVAL_SUMMARY)
    return root


def metrics_rows(steps: int = 6) -> list[dict[str, float]]:
    """GRPO-like scalars per step; ``val/*`` every 2 steps."""
    rows = []
    for s in range(1, steps + 1):
        r = {"reward/mean": 0.1 * s, "success_rate": s / (2 * steps), "loss": 1.0 / s}
        r |= {"reward_terms/point_in_box": 0.05 * s, "reward_terms/format": 0.1}
        if s % 2 == 0:
            r |= {"val/success_rate": s / (3 * steps), "val/n": 8.0}
        rows.append(r)
    return rows


def train_dir(root: Path, steps: int = 6) -> Path:
    """A training run folder: metrics.jsonl (phase grpo) written by the real sink."""
    root.mkdir(parents=True, exist_ok=True)
    sink = JsonlSink(root, "grpo")
    for s, r in enumerate(metrics_rows(steps), 1):
        sink.write(s, r)
    sink.close()
    return root


def apps_trajectories() -> list[Trajectory]:
    """Two phone-app episodes of two turns each (one success, one invalid action)."""
    out = []
    for k in range(2):
        turns = [
            Turn(
                0,
                0,
                1,
                "tap",
                action={"type": "click", "point": [0.5, 0.5]},
                reward_terms={"success": 0.0},
                info={"status": "ok"},
            ),  # fmt: skip
            Turn(
                1,
                0,
                1,
                "bad" if k else "done",
                action={"type": "invalid", "reason": "no json"} if k else {"type": "status"},
                reward_terms={"success": 0.0 if k else 1.0, "invalid_action": -0.1 * k},
                info={"status": "ok"},
                invalid=bool(k),
            ),  # fmt: skip
        ]
        out.append(
            Trajectory(
                task_id=f"toggle_wifi:{k}",
                turns=turns,
                instruction="turn wifi on",
                status="terminated",
                success=k == 0,
                extras={"screens": [screen(10 + k, 40, 24), screen(20 + k, 40, 24)]},
            )  # fmt: skip
        )
    return out


def robot_trajectory() -> Trajectory:
    turns = [Turn(0, 0, 1, "<act>", reward_terms={"progress": 0.2})]
    return Trajectory(task_id="pick_red:0", turns=turns, instruction="pick the red cube",
                      status="truncated", extras={"frames": [screen(30), screen(31)]})  # fmt: skip


def samples_dir(run: Path) -> Path:
    """``run/samples`` with apps and robot records written by the worlds' ``save_pictures``."""
    from vlagent.worlds.apps import AppsWorld
    from vlagent.worlds.robot import RobotWorld

    folder = run / "samples"
    folder.mkdir(parents=True, exist_ok=True)
    AppsWorld.save_pictures(None, apps_trajectories(), folder, "grpo_step_000002")  # type: ignore[arg-type]
    RobotWorld.save_pictures(None, [robot_trajectory()], folder, "robot_val")  # type: ignore[arg-type]
    return folder


class PageReader(HTMLParser):
    """Tables (id -> row key -> [(text, data-value)]), attributes by element id, every
    src / href, and the JSON of ``<script type=application/json>`` blocks by id."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tables: dict[str, dict[str, list[tuple[str, str | None]]]] = {}
        self.by_id: dict[str, dict[str, str | None]] = {}
        self.links: list[str] = []
        self.scripts: dict[str, Any] = {}
        self.problems: list[str] = []
        self._table: str | None = None
        self._row: str | None = None
        self._cell: list[Any] | None = None
        self._script: str | None = None
        self._li: list[str] | None = None
        self._in_problems = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.by_id[str(a["id"])] = a
        self.links += [str(a[k]) for k in ("src", "href") if a.get(k)]
        if tag == "table":
            self._table = a.get("id")
            self.tables.setdefault(str(self._table), {})
        elif tag == "tr" and self._table is not None:
            self._row = a.get("data-key")
            if self._row is not None:
                self.tables[self._table][self._row] = []
        elif tag == "td" and self._row is not None:
            self._cell = ["", a.get("data-value")]
        elif tag == "script" and a.get("type") == "application/json":
            self._script, self._buf = str(a.get("id")), ""
        elif tag == "section" and a.get("id") == "problems":
            self._in_problems = True
        elif tag == "li" and self._in_problems:
            self._li = [str(a.get("data-file")), ""]

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._table and self._row is not None:
            self.tables[self._table][self._row].append((self._cell[0], self._cell[1]))
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "script" and self._script:
            self.scripts[self._script] = json.loads(self._buf)
            self._script = None
        elif tag == "li" and self._li is not None:
            self.problems.append(f"{self._li[0]}: {self._li[1]}")
            self._li = None
        elif tag == "section":
            self._in_problems = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[0] += data
        if self._script:
            self._buf += data
        if self._li is not None:
            self._li[1] += data


def read_page(index: Path) -> PageReader:
    return PageReader(index.read_text(encoding="utf-8"))


def test_fixtures_match_the_writers(tmp_path):
    """The fixture folders hold what the real writers write (guards the tests' assumptions)."""
    run = eval_dir(tmp_path / "eval")
    lines = (run / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 3 and len(list((run / "images").glob("*.png"))) == 2
    assert json.loads(lines[2])["parse_error"] == "no coordinates"
    samples = samples_dir(tmp_path / "run")
    assert sorted(p.name for p in samples.iterdir()) == [
        "grpo_step_000002_00.json", "grpo_step_000002_00.png", "grpo_step_000002_01.json",
        "grpo_step_000002_01.png", "robot_val_00.gif", "robot_val_00.json",
    ]  # fmt: skip
    rows = (train_dir(tmp_path / "train") / "metrics.jsonl").read_text().splitlines()
    assert json.loads(rows[1])["val/success_rate"] == 2 / 18
