"""Shared fixtures: tiny models built once per session (offline, seeded)."""

from __future__ import annotations

import pytest
import torch

from vlagent.train.common import quiet_transformers


@pytest.fixture(scope="session", autouse=True)
def _torch_setup():
    torch.set_num_threads(2)
    quiet_transformers()


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    """A tiny Qwen3-VL checkpoint folder (the quickstart's family)."""
    from vlagent.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen3_vl", family="qwen3_vl", seed=0)


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory, tiny_dir):
    """Tiny checkpoints of every family."""
    from vlagent.models.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("tinies")
    out = {"qwen3_vl": tiny_dir}
    for fam in ("qwen2_vl", "qwen2_5_vl"):
        out[fam] = build_tiny_model(root / fam, family=fam, seed=0)
    return out
