"""FSDP2 training with 2 CPU processes (gloo) equals one process; DCP checkpoints reshard.

One ``torchrun --standalone --nproc-per-node 2`` launch (``_fsdp_gloo_worker.py``) shards the
tiny Qwen3-VL policy and runs ``distributed_update`` on its share of a fixed 5-row batch (3 rows on
rank 0, 2 + 1 padding row on rank 1; 12 vs 8 loss tokens, so a per-rank normalizer would weight
the ranks wrongly), 2 epochs, micro-batches of 1 row, gradient clipping that binds, Adam. Rank 0
compares with ``policy_update`` on the full batch in one unsharded process.

Tolerances (fp32): the loss to 1e-6 relative and the pre-clip gradient norm to 1e-4 relative
(the sums run in another order: per micro-batch, per rank, then FSDP's reduce-scatter); updated
weights to 1e-5 absolute, while the update itself moves weights by ~2e-3 (Adam, lr 1e-3), so a
wrongly weighted rank (~50 % gradient error on some entries) or a missing factor shows. The
checkpoints are copies: loaded state must equal the saved one exactly (tolerance 0).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from torch.distributed.checkpoint.state_dict import get_state_dict

from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.train.dist_checkpoint import load_distributed, save_distributed
from vlagent.train.distributed import (
    DistInfo,
    distributed_update,
    init_distributed,
    rank_share,
    shard_units,
)
from vlagent.train.update import policy_update

WORKER = Path(__file__).with_name("_fsdp_gloo_worker.py")
_spec = importlib.util.spec_from_file_location("_fsdp_gloo_worker", WORKER)
assert _spec is not None and _spec.loader is not None
worker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worker)


def _state(model, opt) -> dict:
    msd, osd = get_state_dict(model, opt)
    return {"model": msd, "optim": osd}


@pytest.fixture(scope="module")
def run(tiny_dir, tmp_path_factory, torchrun2):
    """Write a 1-process checkpoint, then run the 2-process worker once; returns its folder."""
    out = tmp_path_factory.mktemp("fsdp")
    policy = load_policy(tiny_dir)
    opt = worker.adam(policy.model)
    policy_update(policy, worker.fixed_batch(policy), worker.config(), opt, None, 5)
    save_distributed(out / "ckpt1", policy.model, opt)
    torch.save(_state(policy.model, opt), out / "full1.pt")
    torchrun2([str(WORKER), str(tiny_dir), str(out)], timeout=300)
    return out


def test_two_processes_update_like_one(run):
    r = json.loads((run / "update.json").read_text())
    assert r["world_size"] == 2 and r["optimizer_steps"] == 2.0
    assert r["rows_padded"] == 2.0  # rank 1: one padding row in each of the 2 epochs
    assert r["loss"] == pytest.approx(r["ref_loss"], rel=1e-6)
    assert r["grad_norm"] == pytest.approx(r["ref_grad_norm"], rel=1e-4)
    assert r["max_weight_change"] > 1e-3  # the update moved the weights
    assert r["max_weight_diff"] < 1e-5


def test_rank_with_only_filler_rows_adds_nothing(run):
    """Rank 1's rows are all filler (``n_filler``): it runs them at advantage 0 and out of the
    normalizer, so the update is one process's on rank 0's 3 rows alone."""
    r = json.loads((run / "update.json").read_text())
    assert r["filler_loss"] == pytest.approx(r["filler_ref_loss"], rel=1e-6)
    assert r["filler_weight_diff"] < 1e-5


def test_dcp_two_processes_to_one(run, tiny_dir):
    policy = load_policy(tiny_dir)
    opt = worker.adam(policy.model)
    load_distributed(run / "ckpt", policy.model, opt)
    want = torch.load(run / "full.pt", weights_only=False)
    got = _state(policy.model, opt)
    assert len(got["optim"]["state"]) == len(list(policy.model.parameters()))
    assert worker.max_diff(want["model"], got["model"]) == 0.0
    assert worker.max_diff(want["optim"], got["optim"]) == 0.0


def test_dcp_one_process_to_two(run):
    r = json.loads((run / "update.json").read_text())
    assert r["load1_model"] == 0.0
    assert r["load1_optim"] == 0.0


def test_single_process_without_torchrun(monkeypatch, tiny_dir, tmp_path):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    info = init_distributed()
    assert info == DistInfo(0, 1, 0, "none") and info.is_main and not info.active
    assert rank_share(5, DistInfo(1, 2, 1, "gloo")) == [1, 3]
    policy = load_policy(tiny_dir)
    cfg = policy.model.config
    layers, blocks = cfg.text_config.num_hidden_layers, cfg.vision_config.depth
    assert len(shard_units(policy.model)) == layers + blocks
    with pytest.raises(ConfigError, match="not a distributed checkpoint"):
        load_distributed(tmp_path, policy.model, worker.adam(policy.model))


def test_logits_chunk_is_refused(tiny_dir):
    import dataclasses

    policy = load_policy(tiny_dir)
    batch = worker.fixed_batch(policy)
    g = dataclasses.replace(worker.config(), logits_chunk=4)
    with pytest.raises(ConfigError, match="grpo.logits_chunk"):
        distributed_update(
            policy, batch, g, worker.adam(policy.model), None, 0, DistInfo(0, 2, 0, "gloo")
        )
