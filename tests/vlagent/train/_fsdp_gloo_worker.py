"""Worker of ``test_fsdp_gloo.py``, run under ``torchrun`` (gloo, CPU):

    torchrun --standalone --nproc-per-node 2 _fsdp_gloo_worker.py TINY OUT

Every rank loads the same tiny policy, shards it, and runs ``distributed_update`` on its
``rank_share`` of a fixed batch of 5 rows (3 + 2: one padding row on rank 1), then one more
update and a DCP save to ``OUT/ckpt``. A fresh sharded policy then loads ``OUT/ckpt1`` (which
the test wrote with one process). Rank 0 also runs ``policy_update`` on the full batch with an
unsharded copy and writes ``OUT/update.json`` (losses, grad norms, largest weight differences,
1-process → 2-process load differences) and ``OUT/full.pt`` (the gathered model and optimizer
state at the DCP save). The helpers (``config``, ``fixed_batch``, ``adam``, ``max_diff``) are
shared with the test, which loads this file by path. With ``VLAGENT_FSDP_DEVICE=cuda`` the
same check runs on GPUs with nccl (``scripts/gpu_check.sh``; ``OUT/ckpt1`` is then optional).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.models.loading import load_policy
from vlagent.rollout.rows import build_rows
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.train.dist_checkpoint import full_state, load_distributed, save_distributed
from vlagent.train.distributed import (
    distributed_update,
    init_distributed,
    rank_share,
    shard_policy,
)
from vlagent.train.update import UpdateBatch, policy_update, recompute_logprobs

LENGTHS = [3, 6, 2, 5, 4]  # loss tokens per row: ranks get 3+5+4 = 12 and 6+2 = 8 tokens
ADV = [1.0, -0.5, 0.8, -1.2, 0.3]


def config() -> GRPOConfig:
    """Token-mean PPO-clip, 2 epochs, micro-batches of 1 row, gradient clipping that binds."""
    return GRPOConfig(
        prompts_per_step=1,
        group_size=5,
        max_new_tokens=8,
        epochs=2,
        micro_batch_size=1,
        max_grad_norm=0.05,
        shared_prefix=True,
    )


def fixed_batch(policy) -> UpdateBatch:
    """5 rows over 2 prompts; fixed continuation ids; old log-probs = current ones + noise."""
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 255, (56 + 28 * i, 84, 3), dtype=np.uint8) for i in range(2)]
    prompts = [
        encode_prompt(policy.processor, [im], f"Click item {i}") for i, im in enumerate(imgs)
    ]
    gen = torch.Generator().manual_seed(1)
    trajs = []
    for i, n_tok in enumerate(LENGTHS):
        seg = Segment(prompts[i % 2])
        ids = torch.randint(10, 200, (n_tok,), generator=gen).tolist()
        start, end = seg.append(ids, policy=True, logprobs=[0.0] * n_tok)
        trajs.append(Trajectory(i, group_id=i, segments=[seg], turns=[Turn(0, start, end, "")]))
    rows = build_rows(trajs, [[a] for a in ADV], policy.tokenizer.pad_token_id)
    g = config()
    cur = recompute_logprobs(policy, rows, g)
    noise = torch.randn(cur.shape, generator=torch.Generator().manual_seed(2))
    old = (cur + 0.3 * noise) * rows.mask
    return UpdateBatch(rows, old, rows.mask.clone())


def select(b: UpdateBatch, idx: list[int]) -> UpdateBatch:
    i = torch.tensor(idx)
    return UpdateBatch(b.rows.select(i), b.old_logp[i], b.mask[i])


def adam(model) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-6)


def max_diff(a: dict, b: dict) -> float:
    """Largest |a - b| over matching tensor leaves of two nested state dicts (inf on a key or
    shape mismatch)."""
    if isinstance(a, dict):
        if not isinstance(b, dict) or set(a) != set(b):
            return float("inf")
        return max([max_diff(a[k], b[k]) for k in a] or [0.0])
    if isinstance(a, list | tuple):
        return max([max_diff(x, y) for x, y in zip(a, b, strict=True)] or [0.0])
    if isinstance(a, torch.Tensor):
        if a.shape != b.shape:
            return float("inf")
        return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0
    return 0.0 if a == b else float("inf")


def _cpu(state: dict) -> dict:
    return {k: v.detach().cpu() for k, v in state.items()}


def update(tiny: str, out: Path) -> None:
    """The 2-process part (module docstring): update, DCP save, DCP load of ``OUT/ckpt1``."""
    torch.set_num_threads(1)
    cuda = os.environ.get("VLAGENT_FSDP_DEVICE", "cpu") == "cuda"  # scripts/gpu_check.sh
    info = init_distributed("nccl" if cuda else "gloo")
    device = f"cuda:{info.local_rank}" if cuda else "cpu"
    policy = load_policy(tiny, device=device)
    batch = fixed_batch(policy)
    g = config()
    shard_policy(policy.model)
    opt = adam(policy.model)
    local = select(batch, rank_share(len(batch.rows), info))
    stats = distributed_update(policy, local, g, opt, None, 0, info)
    after = full_state(policy.model)["model"]
    # one more step so the optimizer has state worth checkpointing, then save and gather
    distributed_update(policy, local, g, opt, None, 1, info)
    save_distributed(out / "ckpt", policy.model, opt)
    state = full_state(policy.model, opt)
    # a checkpoint the test wrote with one process, loaded into a fresh 2-process run
    loaded = None
    if (out / "ckpt1").exists():
        fresh = load_policy(tiny, device=device)
        shard_policy(fresh.model)
        fresh_opt = adam(fresh.model)
        load_distributed(out / "ckpt1", fresh.model, fresh_opt)
        loaded = full_state(fresh.model, fresh_opt)
    # a rank with nothing to train on (all its rows are filler): only rank 0's rows count
    filled = load_policy(tiny, device=device)
    shard_policy(filled.model)
    n_local = len(local.rows)
    n_fill = 0 if info.is_main else n_local
    fill_stats = distributed_update(
        filled, local, g, adam(filled.model), None, 0, info, n_filler=n_fill
    )
    fill_after = full_state(filled.model)["model"]
    if info.is_main:
        ref = load_policy(tiny, device=device)
        ref_stats = policy_update(ref, batch, g, adam(ref.model), None, 0)
        ref0 = load_policy(tiny, device=device)
        mine = rank_share(len(batch.rows), info)
        ref0_stats = policy_update(ref0, select(batch, mine), g, adam(ref0.model), None, 0)
        result = {
            "world_size": info.world_size,
            "loss": stats["loss"],
            "ref_loss": ref_stats["loss"],
            "grad_norm": stats["grad_norm"],
            "ref_grad_norm": ref_stats["grad_norm"],
            "rows_padded": stats["rows_padded"],
            "optimizer_steps": stats["optimizer_steps"],
            "max_weight_diff": max_diff(after, _cpu(ref.model.state_dict())),
            "max_weight_change": max_diff(after, load_policy(tiny).model.state_dict()),
        }
        result["filler_loss"] = fill_stats["loss"]
        result["filler_ref_loss"] = ref0_stats["loss"]
        result["filler_weight_diff"] = max_diff(fill_after, _cpu(ref0.model.state_dict()))
        if loaded is not None:
            want1 = torch.load(out / "full1.pt", weights_only=False)
            result["load1_model"] = max_diff(want1["model"], loaded["model"])
            result["load1_optim"] = max_diff(want1["optim"], loaded["optim"])
        torch.save(state, out / "full.pt")
        (out / "update.json").write_text(json.dumps(result))


if __name__ == "__main__":
    update(sys.argv[1], Path(sys.argv[2]))
