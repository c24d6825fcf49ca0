"""Shared fixtures: tiny models built once per session (offline, seeded)."""

from __future__ import annotations

import pytest
import torch

from vlagent.models.loading import quiet_transformers


@pytest.fixture(scope="session", autouse=True)
def _torch_setup():
    import os

    torch.set_num_threads(int(os.environ.get("VLAGENT_TEST_THREADS", "2")))
    quiet_transformers()


@pytest.fixture(scope="session")
def torchrun2():
    """``torchrun2(args, timeout)``: ``torch.distributed.run --standalone --nproc-per-node 2``
    with ``args`` (a script and its arguments, or ``-m module ...``), one thread per process;
    a non-zero exit fails the test with the tail of stderr."""
    import os
    import subprocess
    import sys

    def run(args: list[str], timeout: float = 600) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
        for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            env.pop(var, None)
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        proc = subprocess.run(
            [*cmd, "--nproc-per-node", "2", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        if proc.returncode != 0:
            pytest.fail(f"torchrun failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")

    return run


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


@pytest.fixture(scope="session")
def sft_dir(tmp_path_factory, tiny_dir):
    """The tiny model after a short SFT: its answers parse, so GRPO rewards vary within groups."""
    from vlagent.config import load_config
    from vlagent.train.sft import run_sft

    out = tmp_path_factory.mktemp("sft")
    cfg = load_config(
        None,
        [
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={out}",
            "recipe=sft",
            "sft.steps=60",
            "sft.batch_size=16",
            "eval.every=0",
            "run.progress=false",
            "run.samples_every=0",
            "run.checkpoint_every=0",
        ],
    )
    return run_sft(cfg).final_dir
