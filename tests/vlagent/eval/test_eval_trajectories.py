"""`vlagent eval --trajectories`: a run's episodes as JSONL that trains again (rejection
sampling): k sampled episodes per task, every screenshot saved (also those the evaluation
released), read back by the ``vlagent_trajectory`` preset."""

from __future__ import annotations

import json

import torch

from gui.grounding import DatasetSource
from vlagent.cli import main


def test_eval_writes_sampled_trajectories_that_load_as_data(tiny_dir, tmp_path, capsys):
    threads = torch.get_num_threads()
    out = tmp_path / "out"
    argv = [
        "eval",
        "--model",
        str(tiny_dir),
        "--out",
        str(out),
        "--episodes",
        "2",
        "--temperature",
        "1.0",
        "--trajectories",
        "--config",
        "quickstart",
        "eval.num_screens=10",
        "eval.max_new_tokens=8",
    ]
    assert main(argv) == 0
    torch.set_num_threads(threads)
    lines = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(lines) == 20  # 10 tasks x 2 episodes, including the 4 past keep_inputs=16
    by_task: dict = {}
    for rec in lines:
        assert (out / rec["image"]).is_file()
        by_task.setdefault(rec["task_id"], []).append(rec["completion"])
    assert len(by_task) == 10
    # sampled, not greedy: the two episodes of a task differ somewhere
    assert any(a != b for a, b in by_task.values())
    src = DatasetSource(out / "trajectories.jsonl", preset="vlagent_trajectory")
    assert src.num_samples == 20
    assert src.sample(0).instruction == lines[0]["instruction"]


def test_greedy_eval_repeats_itself(tiny_dir, tmp_path):
    threads = torch.get_num_threads()
    outs = []
    for name in ("a", "b"):
        argv = ["eval", "--model", str(tiny_dir), "--out", str(tmp_path / name)]
        argv += ["--trajectories", "--config", "quickstart", "eval.num_screens=4"]
        argv += ["eval.max_new_tokens=8"]
        assert main(argv) == 0
        text = (tmp_path / name / "trajectories.jsonl").read_text()
        outs.append([json.loads(x)["completion"] for x in text.splitlines()])
    torch.set_num_threads(threads)
    assert outs[0] == outs[1]
