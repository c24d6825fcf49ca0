"""The benchmark harness end to end on a micro budget, plus its pure parts (no processes)."""

from __future__ import annotations

import json

import pytest

from vlagent import bench as bench_cli

jsonschema = pytest.importorskip("jsonschema")
grpo_vs_trl = bench_cli.load("grpo-vs-trl")
env_speed = bench_cli.load("env-speed")
from bench import schema  # noqa: E402  (importable once bench_cli.load put the repo on sys.path)


def _repeat(system: str, sps: float) -> dict:
    return {
        "system": system,
        "samples_per_s": sps,
        "step_seconds": 32 / sps,
        "steps_measured": 2,
        "completions": 64,
        "wall_seconds": 64 / sps,
        "buckets": {"generate": 1.0, "logprob": 0.0, "update": 0.5, "other": 0.1},
        "peak_rss_mb": 900.0,
        "maxrss_mb": 910.0,
        "torch_threads": 2,
        "process_seconds": 20.0,
        "reward_mean": 0.3,
        "completion_tokens_mean": 12.0,
    }


def test_aggregate_computes_medians_and_speedup():
    report = {
        "throughput": {
            "ours": {"repeats": [_repeat("ours", s) for s in (10.0, 12.0, 11.0)]},
            "trl": {"repeats": [_repeat("trl", s) for s in (4.0, 5.0, 6.0)]},
        },
        "time_to_threshold": {
            "threshold": 0.5,
            "ours": {"runs": [{"reached": True, "seconds": 30.0, "steps": 20}]},
            "trl": {"runs": [{"reached": True, "seconds": 90.0, "steps": 20}]},
        },
    }
    grpo_vs_trl.aggregate(report)
    ours = report["throughput"]["ours"]["summary"]["samples_per_s"]
    assert ours == {"median": 11.0, "min": 10.0, "max": 12.0}
    assert report["speedup"] == pytest.approx(11.0 / 5.0)
    assert report["speedup_range"] == pytest.approx([10.0 / 6.0, 12.0 / 4.0])
    assert report["time_to_threshold"]["trl_over_ours_seconds"] == pytest.approx(3.0)
    assert report["throughput"]["trl"]["summary"]["update_s"]["median"] == 0.5


def test_defaults_are_the_documented_job():
    args = grpo_vs_trl.build_parser().parse_args([])
    size, job, sft, ttt, repeats = grpo_vs_trl.configs_from_args(args)
    assert (size.family, size.text_hidden, size.text_layers) == ("qwen2_5_vl", 256, 4)
    assert (size.vision_layers, size.vision_hidden) == (4, 128)
    assert (job.level, job.prompts_per_step, job.group_size, job.max_new_tokens) == (
        "basic448",
        4,
        8,
        24,
    )
    assert (repeats, ttt.threshold, ttt.val_screens) == (3, 0.5, 200)


def test_trl_config_matches_the_job():
    from pathlib import Path

    from bench.trl_peer import grpo_config_kwargs

    _, job, _, _, _ = grpo_vs_trl.configs_from_args(grpo_vs_trl.build_parser().parse_args([]))
    kw = grpo_config_kwargs(job, Path("/tmp/x"), job.total_steps)
    assert kw["per_device_train_batch_size"] == job.prompts_per_step * job.group_size
    assert kw["num_generations"] == job.group_size
    assert (kw["beta"], kw["num_iterations"], kw["loss_type"]) == (0.0, 1, "dapo")
    assert (kw["bf16"], kw["gradient_checkpointing"], kw["top_k"]) == (False, False, 0)
    trl = pytest.importorskip("trl")
    cfg = trl.GRPOConfig(**kw)  # every field exists and validates in the installed TRL
    assert cfg.generation_batch_size == job.prompts_per_step * job.group_size


def test_cli_dispatch_rejects_unknown_benchmarks():
    with pytest.raises(SystemExit, match="unknown benchmark"):
        bench_cli.main(["nope"])
    assert bench_cli.main(["--help"]) == 0


def test_env_speed_micro_run(tmp_path):
    out = tmp_path / "env.json"
    report = env_speed.run_env_speed(
        [
            "--seconds",
            "0.05",
            "--repeats",
            "1",
            "--warmup",
            "1",
            "--label",
            "test",
            "--out",
            str(out),
        ]
    )
    jsonschema.validate(json.loads(out.read_text()), schema.ENV_SPEED)
    assert set(report["envs"]) == {
        "grounding/desktop_hires",
        "grounding/basic",
        "grounding/basic448",
        "phone",
    }
    assert report["envs"]["grounding/basic448"]["size"] == [448, 448]
    assert report["envs"]["grounding/desktop_hires"]["size"] == [1920, 1080]
    assert all(e["steps_per_s"]["median"] > 0 for e in report["envs"].values())


@pytest.mark.slow
def test_grpo_vs_trl_end_to_end_micro_budget(tmp_path):
    pytest.importorskip("trl")
    out = tmp_path / "result.json"
    code = grpo_vs_trl.main(
        [
            "--preset",
            "smoke",
            "--work-dir",
            str(tmp_path / "work"),
            "--out",
            str(out),
            "--ttt-repeats",
            "1",
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    jsonschema.validate(report, schema.GRPO_VS_TRL)
    assert report["complete"] and report["label"] == "smoke"
    for system in ("ours", "trl"):
        (rep,) = report["throughput"][system]["repeats"]
        assert rep["steps_measured"] == 2
        assert rep["completions"] == 2 * 2 * 2  # steps × B × G
        assert rep["buckets"]["update"] > 0 and rep["buckets"]["generate"] > 0
        (run,) = report["time_to_threshold"][system]["runs"]
        assert [c["step"] for c in run["curve"]] == [1, 2]  # eval every step, 2-step cap
    assert report["speedup"] == pytest.approx(
        report["throughput"]["ours"]["summary"]["samples_per_s"]["median"]
        / report["throughput"]["trl"]["summary"]["samples_per_s"]["median"]
    )
    assert report["checks"]["trl"]["prompt_ids_equal"] is True


@pytest.mark.slow
def test_ours_end_to_end_micro_budget(tmp_path):
    """The harness with our side alone (runs without TRL): SFT start, throughput worker and
    time-to-threshold worker, each a fresh process running ``run_grpo``."""
    out = tmp_path / "result.json"
    code = grpo_vs_trl.main(
        [
            "--preset",
            "smoke",
            "--systems",
            "ours",
            "--work-dir",
            str(tmp_path / "work"),
            "--out",
            str(out),
            "--ttt-repeats",
            "1",
            "--threshold",
            "1.01",  # never reached: every eval of the 2-step cap runs
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    jsonschema.validate(report, schema.GRPO_VS_TRL)
    assert report["complete"] and report["config"]["systems"] == ["ours"]
    assert 0.0 <= report["sft_start"]["val_accuracy"] <= 1.0
    (rep,) = report["throughput"]["ours"]["repeats"]
    assert rep["steps_measured"] == 2
    assert rep["completions"] == 2 * 2 * 2  # steps × B × G
    assert rep["buckets"]["update"] > 0 and rep["buckets"]["generate"] > 0
    assert {"time/generate", "time/update"} <= set(rep["phases"])
    (run,) = report["time_to_threshold"]["ours"]["runs"]
    assert not run["reached"] and run["seconds"] is None
    assert [c["step"] for c in run["curve"]] == [1, 2]  # eval every step, 2-step cap
    assert 0 < run["curve"][0]["train_seconds"] < run["curve"][1]["train_seconds"]


def test_quickstart_preset_is_the_readme_quickstart_job():
    """Job 3 (time to threshold) must be the README quickstart's job, read from its recipe."""
    import dataclasses

    from vlagent.config import load_config
    from vlagent.models.tiny import TinyModelSpec

    q = load_config("quickstart")
    args = grpo_vs_trl.build_parser().parse_args(["--preset", "quickstart"])
    size, job, sft, ttt, _ = grpo_vs_trl.configs_from_args(args)
    assert size.family == q.model.family
    spec = TinyModelSpec(family=q.model.family, **q.model.tiny)
    for field in dataclasses.fields(size):
        assert getattr(size, field.name) == getattr(spec, field.name), field.name
    assert (job.level, job.answer_format) == (q.task.level, q.task.answer_format)
    assert job.reward_dict() == dict(q.task.reward)
    assert (job.prompts_per_step, job.group_size) == (q.grpo.prompts_per_step, q.grpo.group_size)
    assert (job.max_new_tokens, job.temperature, job.lr) == (
        q.grpo.max_new_tokens,
        q.grpo.temperature,
        q.grpo.lr,
    )
    assert (sft.num_demos, sft.batch_size, sft.lr) == (
        q.sft.num_demos,
        q.sft.batch_size,
        q.sft.lr,
    )
    assert (ttt.val_screens, ttt.eval_max_new_tokens) == (q.eval.monitor_screens, 20)
    assert ttt.threshold == 0.4
    override = grpo_vs_trl.build_parser().parse_args(
        ["--preset", "quickstart", "--threshold", "0.3"]
    )
    assert grpo_vs_trl.configs_from_args(override)[3].threshold == 0.3


def test_sft_start_uses_the_demo_budget():
    from pathlib import Path

    from bench.common import JobConfig, SFTStart, sft_overrides

    job = JobConfig()
    fixed = sft_overrides(Path("/m"), "qwen3_vl", job, SFTStart(num_demos=64), Path("/o"))
    fresh = sft_overrides(Path("/m"), "qwen3_vl", job, SFTStart(), Path("/o"))
    assert "sft.num_demos=64" in fixed and "sft.num_demos=0" in fresh
    # a fixed step count: neither a plateau rule nor a time cap may end the start early
    assert "sft.plateau_patience=0" in fixed and "sft.max_seconds=0" in fixed


def test_worker_env_defaults_and_overrides(monkeypatch):
    from bench.common import REPO, worker_env

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("GOMP_SPINCOUNT", "7")
    env = worker_env()
    assert env["OMP_WAIT_POLICY"] == "PASSIVE" and env["GOMP_SPINCOUNT"] == "7"
    assert str(REPO) in env["PYTHONPATH"].split(":")
    env = worker_env({"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": None})
    assert env["OMP_WAIT_POLICY"] == "ACTIVE" and "GOMP_SPINCOUNT" not in env
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # a caller's own choice is kept
    assert worker_env()["OMP_WAIT_POLICY"] == "ACTIVE"


def test_omp_policy_runs_each_copy_with_its_setting(monkeypatch, tmp_path):
    from bench import omp_policy

    calls = []

    def fake_worker(job, work_dir, name, timeout, env):
        calls.append((job, name, env))
        t = job["job"]["threads"]
        return {
            "samples_per_s": 10.0 * t,
            "step_seconds": 1.0 / t,
            "buckets": {},
            "torch_threads": t,
            "peak_rss_mb": 1.0,
        }

    monkeypatch.setattr(omp_policy, "run_worker", fake_worker)
    base = {"job": {"threads": 0, "steps": 3}, "system": "ours"}
    one = omp_policy._measure(base, "1 thread", 2, tmp_path, "t", 10.0)
    assert [r["torch_threads"] for r in one] == [1, 1]
    assert len({name for _, name, _ in calls}) == 2  # two processes, two names
    assert len({job["run_dir"] for job, _, _ in calls}) == 2
    calls.clear()
    omp_policy._measure(base, "2 threads, libgomp default", 1, tmp_path, "u", 10.0)
    ((job, _, env),) = calls
    assert job["job"]["threads"] == 2 and env == {"OMP_WAIT_POLICY": None}
    assert base["job"]["threads"] == 0  # the shared base is not mutated
