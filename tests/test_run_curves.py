"""``experiments.sft_curves`` on a GRPO run: it reads the phase the run's config names, the
rollouts' rates from the right window, and copies the held-out summary of the named eval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from experiments.sft_curves import main, summarize


def _run(tmp_path: Path, recipe: str = "grpo") -> Path:
    run = tmp_path / "run"
    run.mkdir()
    cfg = {
        "recipe": recipe,
        "world": "robot",
        "robot": {"task": "reach"},
        "model": {"path": "sft/final"},
        "sft": {"steps": 9, "batch_size": 2, "lr": 1e-3, "num_demos": 0},
        "grpo": {
            "steps": 30,
            "prompts_per_step": 8,
            "group_size": 8,
            "lr": 1e-4,
            "temperature": 1.0,
            "mask_truncated": True,
        },
    }
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    rows = [{"phase": "sft", "step": 1, "loss": 5.0}]  # another phase's row: must be ignored
    for step in range(1, 31):
        row = {"phase": "grpo", "step": step, "success_rate": 0.2 if step <= 25 else 0.8}
        row["invalid_rate"] = 0.0 if step <= 5 else 0.5
        if step % 10 == 0:
            row.update({"val/success_rate": step / 100, "val/n": 100, "val/format_rate": 1.0})
        rows.append(row)
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev = tmp_path / "eval"
    ev.mkdir()
    summary = {"model": "run/final", "n": 200.0, "success_rate": 0.55, "format_rate": 0.97}
    summary.update(success_ci_low=0.48, success_ci_high=0.62, mean_turns=2.0)
    (ev / "eval_summary.json").write_text(json.dumps(summary))
    return run


def test_grpo_run_summary(tmp_path: Path) -> None:
    run = _run(tmp_path)
    out = summarize(run, tmp_path / "eval")
    assert out["phase"] == "grpo" and out["steps_run"] == 30
    assert out["grpo"]["lr"] == 1e-4 and out["grpo"]["temperature"] == 1.0
    assert [v["step"] for v in out["val"]] == [10, 20, 30]
    assert [v["success_rate"] for v in out["val"]] == [0.1, 0.2, 0.3]
    r = out["rollouts"]
    assert r["success_rate_first25"] == pytest.approx(0.2)
    assert r["success_rate_last25"] == pytest.approx((20 * 0.2 + 5 * 0.8) / 25)
    assert r["invalid_rate_mean"] == pytest.approx(25 * 0.5 / 30)
    assert r["invalid_rate_last25"] == pytest.approx(0.5)
    held = out["heldout"]
    assert held["success_rate"] == 0.55 and held["n"] == 200.0
    assert held["success_ci_low"] == 0.48 and held["model"] == "run/final"
    assert "loss_last50" not in out


def test_sft_run_reads_only_sft_rows(tmp_path: Path) -> None:
    run = _run(tmp_path, recipe="sft")
    out = summarize(run)
    assert out["phase"] == "sft" and out["steps_run"] == 1 and out["loss_last50"] == 5.0
    assert out["val"] == [] and "heldout" not in out and "rollouts" not in out


def test_cli_pairs_run_and_eval(tmp_path: Path) -> None:
    run = _run(tmp_path)
    dest = tmp_path / "out.json"
    assert main(["--out", str(dest), f"a={run},{tmp_path / 'eval'}", f"b={run}"]) == 0
    runs = json.loads(dest.read_text())["runs"]
    assert runs["a"]["heldout"]["success_rate"] == 0.55 and "heldout" not in runs["b"]
    with pytest.raises(SystemExit, match="name=run_dir"):
        main(["--out", str(dest), "no_equals_sign"])
