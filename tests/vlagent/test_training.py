"""Trainer: one GRPO step moves every parameter; CLI smoke run; resume equals an uninterrupted run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from vlagent.batching import encode_prompts
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.hf import generate
from vlagent.train.checkpoint import latest_checkpoint
from vlagent.train.grpo import run_grpo
from vlagent.train.grpo_update import UpdateBatch, policy_update
from vlagent.train.outputs import read_metrics
from vlagent.train.sft import run_sft

SMALL = [
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=12",
    "eval.every=0",
    "eval.monitor_screens=8",
    "eval.max_new_tokens=12",
    "run.progress=false",
    "run.samples_every=0",
]


def test_one_grpo_step_changes_every_parameter(tiny_dir):
    policy = load_policy(tiny_dir)
    cfg = load_config(None, SMALL)
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    import numpy as np

    imgs = [
        np.random.default_rng(i).integers(0, 255, (224, 224, 3), dtype=np.uint8) for i in range(2)
    ]
    prompts = encode_prompts(
        policy.processor, imgs, ["Click the red circle.", "Click the blue square."]
    )
    ro = generate(policy, prompts, group_size=4, max_new_tokens=12, generator_seed=0)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, -1.0, 1.0, 0.3, -0.3])
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    batch = UpdateBatch(ro, adv, ro.behaviour_logprobs, ro.mask, None)
    stats = policy_update(policy, batch, cfg.grpo, opt, None, shuffle_seed=0)
    assert torch.isfinite(torch.tensor(stats["loss"]))
    unchanged = [
        n
        for n, p in policy.model.named_parameters()
        if p.requires_grad and torch.equal(p, before[n])
    ]
    assert not unchanged, f"parameters not updated by one GRPO step: {unchanged}"


def _grpo_cfg(tmp_path, tiny_dir, out, steps, extra=()):
    return load_config(
        None,
        [
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={tmp_path / out}",
            f"grpo.steps={steps}",
            "run.checkpoint_every=2",
            *SMALL,
            *extra,
        ],
    )


def test_resume_equals_uninterrupted(tmp_path, tiny_dir):
    straight = run_grpo(_grpo_cfg(tmp_path, tiny_dir, "straight", 4))
    # interrupted: run 2 steps, then "crash" and rerun with the full budget in the same folder
    run_grpo(_grpo_cfg(tmp_path, tiny_dir, "resumed", 2))
    assert latest_checkpoint(tmp_path / "resumed", "grpo").name == "step_000002"
    resumed = run_grpo(_grpo_cfg(tmp_path, tiny_dir, "resumed", 4))
    assert straight.steps == resumed.steps == 4
    a = read_metrics(tmp_path / "straight" / "metrics.jsonl", "grpo")
    b = read_metrics(tmp_path / "resumed" / "metrics.jsonl", "grpo")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for ra, rb in zip(a, b, strict=True):
        assert ra["reward/mean"] == pytest.approx(rb["reward/mean"], abs=1e-6)
        assert ra["loss"] == pytest.approx(rb["loss"], abs=1e-5)
    pa = load_policy(straight.final_dir).model.state_dict()
    pb = load_policy(resumed.final_dir).model.state_dict()
    for k in pa:
        assert torch.allclose(pa[k], pb[k], atol=1e-6), k


def test_resume_refuses_a_folder_of_another_experiment(tmp_path, tiny_dir):
    """A checkpoint folder written under another config (here: lr) is not silently continued."""
    from vlagent.errors import ConfigError

    run_grpo(_grpo_cfg(tmp_path, tiny_dir, "run", 2))
    assert latest_checkpoint(tmp_path / "run", "grpo") is not None
    with pytest.raises(ConfigError, match=r"grpo\.lr"):
        run_grpo(_grpo_cfg(tmp_path, tiny_dir, "run", 3, ["grpo.lr=3e-4"]))
    # a longer budget is a legitimate resume; run.resume=false starts over in the folder
    assert run_grpo(_grpo_cfg(tmp_path, tiny_dir, "run", 3)).steps == 3
    fresh = _grpo_cfg(tmp_path, tiny_dir, "run", 1, ["grpo.lr=3e-4", "run.resume=false"])
    assert run_grpo(fresh).steps == 1


def test_sft_reduces_loss_on_demos(tmp_path, tiny_dir):
    cfg = load_config(
        None,
        [
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={tmp_path / 'sft'}",
            "recipe=sft",
            "sft.steps=30",
            "sft.num_demos=8",
            "sft.batch_size=8",
            *SMALL,
        ],
    )
    result = run_sft(cfg)
    losses = [r["loss"] for r in read_metrics(tmp_path / "sft" / "metrics.jsonl", "sft")]
    assert result.steps == 30
    assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:5]) / 5


def test_cli_two_step_smoke(tmp_path, tiny_dir):
    out = tmp_path / "cli"
    cmd = [
        sys.executable,
        "-m",
        "vlagent.cli",
        "train",
        f"model.path={tiny_dir}",
        "model.build_tiny=false",
        f"run.out_dir={out}",
        "grpo.steps=2",
        *SMALL,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["steps"] == 2
    rows = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["loss"] is not None for r in rows)
    assert (out / "config.yaml").read_text().count("steps: 2") >= 1
    assert (out / "final" / "model.safetensors").is_file()
    assert list((out / "tb").rglob("events.out.tfevents.*"))


def test_cli_bad_config_is_one_clear_line(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlagent.cli",
            "train",
            "grpo.group_size=1",
            f"run.out_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "grpo.group_size: must be >= 2" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_missing_model_is_clear(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "vlagent.cli", "eval", "--model", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_eval_screenspot_missing_image_names_file(tmp_path, tiny_dir):
    from pathlib import Path

    ann = (
        Path(__file__).resolve().parents[1]
        / "fixtures"
        / "screenspot_v2"
        / "screenspot_desktop_v2.json"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlagent.cli",
            "eval",
            "--model",
            str(tiny_dir),
            "task.source=screenspot",
            f"task.annotation_file={ann}",
            f"task.image_dir={tmp_path}",
            "eval.num_screens=2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-1500:]
    assert ".png" in proc.stderr and str(tmp_path) in proc.stderr and "Traceback" not in proc.stderr
