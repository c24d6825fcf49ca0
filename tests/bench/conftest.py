"""Fixtures of the benchmark tests: a tiny Qwen2.5-VL (the bench family) built once, offline."""

from __future__ import annotations

import os

import pytest
import torch

from vlagent.models.loading import quiet_transformers


@pytest.fixture(scope="session", autouse=True)
def _torch_setup():
    torch.set_num_threads(int(os.environ.get("VLAGENT_TEST_THREADS", "2")))
    quiet_transformers()


@pytest.fixture(scope="session")
def tiny_qwen25_dir(tmp_path_factory):
    """A tiny random Qwen2.5-VL checkpoint (default tiny sizes, seed 0)."""
    from vlagent.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen2_5_vl", family="qwen2_5_vl")
