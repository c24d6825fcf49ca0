"""Checkpoints of FSDP-sharded training: DCP folders that reshard, and full-state gathers.

``save_distributed`` / ``load_distributed`` write and read model and optimizer state with
``torch.distributed.checkpoint`` (DCP): a checkpoint written by N processes loads into M
processes (or one process without a process group). ``load_full_optimizer`` reads a
single-process optimizer ``state_dict`` (keyed by parameter position) into a sharded optimizer.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch
import torch.distributed as dist

from vlagent.errors import CheckpointError, ConfigError


def full_state(model: torch.nn.Module, opt: torch.optim.Optimizer | None = None) -> dict:
    """The unsharded model (and optimizer) state on CPU, keyed by parameter name; collective.

    Returns ``{"model": ..., "optim": ...}`` on rank 0 and empty dicts on the other ranks.
    """
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    if opt is None:
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        return {"model": get_model_state_dict(model, options=opts), "optim": {}}
    msd, osd = get_state_dict(model, opt, options=opts)
    return {"model": msd, "optim": osd}


def save_distributed(path: str | Path, model: torch.nn.Module, opt: torch.optim.Optimizer) -> Path:
    """Write model + optimizer state as a DCP checkpoint folder ``path`` (collective).

    Every rank writes its shards into ``<path>.tmp``; rank 0 then swaps it in, so a crash
    mid-write leaves the previous checkpoint intact. Works without a process group too.
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    group = dist.is_available() and dist.is_initialized()
    rank0 = not group or dist.get_rank() == 0
    if rank0 and tmp.exists():
        shutil.rmtree(tmp)
    if group:
        dist.barrier()
    msd, osd = get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=str(tmp), no_dist=not group)
    if group:
        dist.barrier()
    if rank0:
        old = path.with_name(path.name + ".old")
        if path.exists():
            os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    if group:
        dist.barrier()
    return path


def load_distributed(path: str | Path, model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
    """Read a ``save_distributed`` folder into ``model`` and ``opt`` (collective), resharding
    to this run's process count: N writers, M readers."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    path = Path(path)
    if not (path / ".metadata").is_file():
        raise ConfigError(f"{path} is not a distributed checkpoint (no .metadata file)")
    msd, osd = get_state_dict(model, opt)
    state = {"model": msd, "optim": osd}
    group = dist.is_available() and dist.is_initialized()
    dcp.load(state, checkpoint_id=str(path), no_dist=not group)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])


def load_full_optimizer(model: torch.nn.Module, opt: torch.optim.Optimizer, saved: dict) -> None:
    """Load a plain (single-process) optimizer ``state_dict`` into ``opt`` of a sharded model.

    ``saved`` is keyed by parameter position in ``opt``'s groups, which were made from the
    trainable parameters in ``model.parameters()`` order (the recipes' optimizers are); they
    are renamed to parameter names and scattered to this rank's shards (collective).
    """
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    names = [n for n, p in model.named_parameters() if p.requires_grad]
    count = sum(len(g["params"]) for g in saved.get("param_groups", []))
    if count != len(names):
        raise CheckpointError(
            f"the saved optimizer holds {count} parameters, this model trains {len(names)}: "
            "the checkpoint is of another model"
        )
    state = {names[int(i)]: v for i, v in saved["state"].items()}
    groups = [{**g, "params": [names[int(i)] for i in g["params"]]} for g in saved["param_groups"]]
    # torch's loader only maps the keys the live groups already have; a key an LR scheduler
    # added to the saved groups (LambdaLR's ``initial_lr``) is set after, not dropped.
    extra = [
        {k: v for k, v in g.items() if k not in live}
        for g, live in zip(groups, opt.param_groups, strict=True)
    ]
    for g, more in zip(groups, extra, strict=True):
        for k in more:
            del g[k]
    set_optimizer_state_dict(
        model,
        opt,
        {"state": state, "param_groups": groups},
        options=StateDictOptions(full_state_dict=True),
    )
    for live, more in zip(opt.param_groups, extra, strict=True):
        live.update(more)
