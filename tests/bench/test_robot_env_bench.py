"""bench.robot_env on a micro budget: the report's shape, the paired-block timing, bad arguments."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # before the first `import mujoco`
pytest.importorskip("mujoco")
from bench import robot_env  # noqa: E402
from bench.common import BenchError  # noqa: E402


def test_micro_run_writes_a_consistent_report(tmp_path):
    out = tmp_path / "robot_env.json"
    argv = ["--sizes", "32", "--seconds", "0.05", "--repeats", "2", "--block", "5"]
    report = robot_env.run_robot_env([*argv, "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    entry = report["sizes"]["32"]
    assert len(entry["repeats"]) == 2 and len(entry["overhead_pct_per_repeat"]) == 2
    for rep in entry["repeats"]:
        assert rep["steps"] == 5 * rep["blocks"] and rep["blocks"] >= 2
        assert rep["env"]["steps_per_s"] > 0 and rep["raw"]["steps_per_s"] > 0
    lo, hi = entry["overhead_pct_quartiles"]
    assert lo <= entry["overhead_pct"] <= hi
    assert entry["block_pairs"] == sum(rep["blocks"] for rep in entry["repeats"])
    assert entry["substeps"] >= 1 and entry["raw_physics"]["steps_per_s"]["median"] > 0
    assert report["config"]["LP_NUM_THREADS"] == "1"
    assert report["command"] == "python -m bench.robot_env " + " ".join([*argv, "--out", str(out)])


def test_paired_repeat_alternates_blocks_and_takes_ratios():
    calls: list[str] = []

    def env(k: int) -> float:
        calls.append("env")
        return 0.011 * k

    def raw(k: int) -> float:
        calls.append("raw")
        return 0.010 * k

    rep = robot_env.paired_repeat(env, raw, seconds=0.95, block=10)
    assert calls[:4] == ["env", "raw", "env", "raw"]
    assert rep["blocks"] == 10 and rep["steps"] == 100  # 10 blocks of 0.10 s pass 0.95 s
    assert rep["ratios"] == pytest.approx([1.1] * 10)
    assert rep["env"]["ms_per_step"] == pytest.approx(11.0)


@pytest.mark.parametrize(
    "argv",
    [
        ["--repeats", "0"],
        ["--seconds", "0"],
        ["--block", "0"],
        ["--sizes", "a,b"],
        ["--sizes", "0"],
    ],
)
def test_bad_arguments_raise_bench_error(argv, tmp_path):
    with pytest.raises(BenchError):
        robot_env.run_robot_env([*argv, "--out", str(tmp_path / "x.json")])
