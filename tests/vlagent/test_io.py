"""Atomic writes: a crash mid-write leaves the previous file or checkpoint intact."""

from __future__ import annotations

import os

import pytest
import torch

from vlagent.io import atomic_dir, atomic_path, atomic_write_json
from vlagent.models.loading import load_policy
from vlagent.train.checkpoint import latest_checkpoint, load_trainer_state, save_checkpoint


def test_atomic_dir_crash_keeps_old(tmp_path):
    dest = tmp_path / "ck"
    with atomic_dir(dest) as tmp:
        (tmp / "a.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_dir(dest) as tmp:
        (tmp / "a.txt").write_text("new, half")
        raise RuntimeError("killed mid-save")
    assert (dest / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["ck"]  # no temp folders left


def test_atomic_json_replaces_whole_file(tmp_path):
    f = tmp_path / "s.json"
    atomic_write_json(f, {"a": 1})
    atomic_write_json(f, {"b": 2})
    assert f.read_text().strip().startswith("{") and '"b": 2' in f.read_text()


def test_atomic_writes_get_the_umask_permissions(tmp_path):
    """Not mkstemp's 0600: a shared results folder must stay readable by others."""
    old = os.umask(0o022)
    try:
        atomic_write_json(tmp_path / "r.json", {"a": 1})
        with atomic_dir(tmp_path / "ck") as tmp:
            (tmp / "x").write_text("x")
        with pytest.raises(ValueError), atomic_path(tmp_path / "r.json") as p:
            p.write_text("half")
            raise ValueError("crash")
    finally:
        os.umask(old)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "ck").stat().st_mode & 0o777 == 0o755
    assert '"a": 1' in (tmp_path / "r.json").read_text()  # the crash kept the old file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck", "r.json"]


def test_checkpoint_crash_mid_save_keeps_latest(tmp_path, tiny_dir, monkeypatch):
    policy = load_policy(tiny_dir)
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    save_checkpoint(tmp_path, "grpo", 1, policy, opt, {"train_seconds": 1.0})

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(policy.processor, "save_pretrained", boom)
    with pytest.raises(OSError):
        save_checkpoint(tmp_path, "grpo", 2, policy, opt, {"train_seconds": 2.0})
    latest = latest_checkpoint(tmp_path, "grpo")
    assert latest is not None and latest.name == "step_000001"
    assert not (tmp_path / "checkpoints" / "grpo" / "step_000002").exists()
    state = load_trainer_state(latest, opt)
    assert state["step"] == 1 and state["extra"]["train_seconds"] == 1.0
    assert load_policy(latest).family == "qwen3_vl"  # the checkpoint is a normal HF folder


def test_keep_only_recent(tmp_path, tiny_dir):
    policy = load_policy(tiny_dir)
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3)
    for s in (1, 2, 3):
        save_checkpoint(tmp_path, "sft", s, policy, opt, {}, keep=2)
    names = sorted(p.name for p in (tmp_path / "checkpoints" / "sft").glob("step_*"))
    assert names == ["step_000002", "step_000003"]
