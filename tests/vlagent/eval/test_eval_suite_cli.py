"""End to end: ``vlagent eval --suite quickstart`` on the tiny model with k = 2 episodes per
task; the suite's folder, suites.json / suites.md and the reports agree with the episodes
written to trajectories.jsonl (counts recomputed here from the episodes themselves)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
import torch
from test_report_fixtures import read_page

from vlagent.cli import main
from vlagent.eval.stats import wilson_interval

TASKS, K = 3, 2


def test_suite_quickstart_end_to_end(tiny_dir, tmp_path, capsys):
    threads = torch.get_num_threads()
    out = tmp_path / "out"
    argv = ["eval", "--suite", "quickstart", "--model", str(tiny_dir), "--out", str(out),
            "--episodes", str(K), "--trajectories", "--report", f"eval.num_screens={TASKS}",
            "eval.max_new_tokens=4", "eval.batch_size=8"]  # fmt: skip
    assert main(argv) == 0
    torch.set_num_threads(threads)  # the CLI may set its own thread count
    printed = capsys.readouterr().out
    folder = out / "quickstart"
    summary = json.loads((folder / "eval_summary.json").read_text())
    episodes = [json.loads(x) for x in (folder / "trajectories.jsonl").read_text().splitlines()]
    assert len(episodes) == summary["n"] == TASKS * K and summary["world"] == "grounding"

    by_task: dict[int, list[bool]] = defaultdict(list)
    by_ref: dict[str, list[bool]] = defaultdict(list)
    for ep in episodes:
        by_task[ep["task_id"]].append(ep["success"])
        by_ref[str(ep["meta"]["reference"]).lower()].append(ep["success"])
    assert sorted(len(v) for v in by_task.values()) == [K] * TASKS
    passed = sum(any(v) for v in by_task.values())
    wins = sum(ep["success"] for ep in episodes)
    assert (summary["k"], summary["tasks"]) == (K, TASKS)
    assert summary["avg@k"] == pytest.approx(wins / (TASKS * K)) == summary["success_rate"]
    assert summary["pass@k"] == pytest.approx(passed / TASKS)
    lo, hi = wilson_interval(passed, TASKS)
    assert (summary["pass@k_ci_low"], summary["pass@k_ci_high"]) == pytest.approx((lo, hi))
    refs = summary["category_tables"]["reference"]
    assert set(refs) == set(by_ref)
    for value, outcomes in by_ref.items():
        assert (refs[value]["n"], refs[value]["successes"]) == (len(outcomes), sum(outcomes))
        assert refs[value]["ci95"] == pytest.approx(list(wilson_interval(sum(outcomes),
                                                                         len(outcomes))))  # fmt: skip

    (row,) = json.loads((out / "suites.json").read_text())["suites"]
    assert row["suite"] == "quickstart" and row["folder"] == str(folder)
    for key in ("n", "success_rate", "success_ci_low", "success_ci_high", "mean_turns",
                "generated_tokens", "k", "avg@k", "pass@k"):  # fmt: skip
        assert row[key] == summary[key], key
    md = (out / "suites.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("| quickstart |"))
    assert line.split(" | ")[1:3] == ["grounding", str(TASKS * K)] and line in printed

    page = read_page(folder / "report" / "index.html")
    assert page.problems == [] and len(page.scripts["episodes-data"]) == TASKS * K
    assert float(page.tables["overall"]["pass@k"][1][1]) == summary["pass@k"]
    assert set(page.tables["category-reference"]) == set(refs)
    top = read_page(out / "report" / "index.html")
    assert float(top.tables["suites"]["quickstart"][3][1]) == summary["success_rate"]


def test_policies_load_once_and_undo_a_worlds_pixel_budget(tiny_dir):
    """Suites share one loaded checkpoint; a world that sets ``task.pixel_budget`` on the
    processor (zoom_hires) must not change what the next suite's world sees."""
    from vlagent.eval.run import Policies
    from vlagent.rollout.tokens import pixel_budget, set_pixel_budget

    policies = Policies(str(tiny_dir))
    first = policies.get("float32", "cpu")
    loaded = pixel_budget(first.processor)
    set_pixel_budget(first.processor, 114688)
    again = policies.get("float32", "cpu")
    assert again is first and pixel_budget(again.processor) == loaded != 114688
