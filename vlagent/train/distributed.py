"""Multi-process training: ``torchrun`` + FSDP2 (``fully_shard``), gloo on CPU, nccl on CUDA.

Launch with ``torchrun --nproc-per-node N ...``; each process calls ``init_distributed`` (which
reads torchrun's ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK``), builds the same policy, and
``shard_policy`` wraps every decoder layer and vision block, then the root, in ``fully_shard``.

**Exact gradients.** Each rank runs ``policy_update`` on its own rows; FSDP averages the
gradients over the W ranks. ``policy_update`` divides a minibatch's loss by the minibatch's
normalizer (tokens for ``token_mean``, rows with a loss token otherwise), which on one rank is
the *local* normalizer t_r. ``distributed_update`` all-reduces the global normalizer T = Σ t_r
and multiplies rank r's advantages (and its in-loss KL coefficient) by c_r = W·t_r / T. The
policy loss is positively homogeneous in the advantage (ρA, clip(ρ)A, dual-clip c·A), so rank r
then contributes W·(its terms)/T, and FSDP's average gives (Σ over all rows' terms) / T: the
single-process gradient on the union of the rows, up to float rounding.

FSDP's collectives need every rank to run the same number of forwards and backwards, so in the
distributed path rows without loss tokens are dropped (they add nothing to the loss nor to the
normalizer), every rank runs the same number of rows per minibatch (a shorter share is padded
with copies of its first row at advantage 0, which add no gradient when the loss has no KL
term), and the zero-advantage skip of ``policy_update`` is off. ``grpo.logits_chunk`` calls the
decoder and the LM head separately, bypassing the root's FSDP hooks, so it must be 0 here.

Checkpoints of sharded models are in ``train/dist_checkpoint.py``; the recipes' use of all this
(an unsharded sampling copy, rank 0's outputs) is in ``train/parallel.py``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import defaultdict
from typing import Any

import torch
import torch.distributed as dist

from vlagent.algo_config import GRPOConfig
from vlagent.errors import ConfigError, ModelError
from vlagent.train.update import UpdateBatch, normalizer, policy_update, skipping_is_exact

log = logging.getLogger(__name__)

#: The ``policy_update`` outputs that are not means of a per-token / per-row statistic.
_COUNTS = ("optimizer_steps", "lr", "rows_skipped_zero_adv", "update_skipped")


@dataclasses.dataclass(frozen=True)
class DistInfo:
    """Where this process stands: rank of world_size, its local GPU index, the backend
    ("gloo", "nccl", or "none" for a single process without a process group)."""

    rank: int
    world_size: int
    local_rank: int
    backend: str

    @property
    def is_main(self) -> bool:
        """Rank 0: the one process that writes metrics, checkpoints' extras and samples."""
        return self.rank == 0

    @property
    def active(self) -> bool:
        """A process group is initialized (even with one process)."""
        return self.backend != "none"


def init_distributed(backend: str | None = None) -> DistInfo:
    """Join the process group torchrun set up, or run as a single process.

    Under torchrun (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` set) the default process group is
    initialized with ``backend`` (default: nccl when CUDA is available, gloo otherwise) and,
    with nccl, this process's GPU becomes ``cuda:LOCAL_RANK``. Without those variables nothing
    is initialized and ``DistInfo(0, 1, 0, "none")`` is returned. Calling it again returns the
    existing group's info.
    """
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        if dist.is_available() and dist.is_initialized():
            return DistInfo(dist.get_rank(), dist.get_world_size(), 0, dist.get_backend())
        return DistInfo(0, 1, 0, "none")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        chosen = backend or ("nccl" if torch.cuda.is_available() else "gloo")
        if chosen == "nccl":
            if not torch.cuda.is_available():
                raise ConfigError("backend nccl needs CUDA, which is not available; use gloo")
            torch.cuda.set_device(local)
        dist.init_process_group(backend=chosen)
    return DistInfo(rank, world, local, dist.get_backend())


def rank_share(n: int, info: DistInfo) -> list[int]:
    """Indices of the rows (or prompts) this rank takes out of ``n``: ``rank::world_size``."""
    return list(range(info.rank, n, info.world_size))


def _base(model: torch.nn.Module) -> torch.nn.Module:
    return model.get_base_model() if hasattr(model, "get_base_model") else model  # type: ignore[operator]


def shard_units(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The decoder layers and vision blocks of a Qwen-VL model (through a PEFT wrapper).

    They are the modules whose class is in the model's ``_no_split_modules`` (Qwen2-VL,
    Qwen2.5-VL and Qwen3-VL name their ``*DecoderLayer`` and ``*VisionBlock`` there; the lists
    are ``model.language_model.layers`` and ``model.visual.blocks``).
    """
    names = set(getattr(_base(model), "_no_split_modules", None) or [])
    units = [m for m in model.modules() if type(m).__name__ in names]
    if not units:
        raise ModelError(
            f"{type(_base(model)).__name__} names no decoder layer / vision block classes in "
            "_no_split_modules: shard_policy supports Qwen2-VL, Qwen2.5-VL and Qwen3-VL"
        )
    return units


def shard_policy(
    model: torch.nn.Module, mixed_precision: bool = False, activation_checkpointing: bool = False
) -> torch.nn.Module:
    """Apply FSDP2 ``fully_shard`` to each decoder layer and vision block, then the root.

    The root unit keeps the embeddings, the (tied) LM head, the final norm and the vision
    merger. Needs an initialized process group (``init_distributed`` under torchrun); the model
    must already be on its device (``cuda:LOCAL_RANK`` with nccl, cpu with gloo).

    Args:
        mixed_precision: on CUDA, parameters are all-gathered and computed in bfloat16 and
            gradients reduced in float32 (``MixedPrecisionPolicy``); ignored (logged) on CPU.
        activation_checkpointing: recompute each layer's activations in backward
            (transformers' non-reentrant gradient checkpointing, set before sharding).
    Returns:
        The same module, now an ``FSDPModule`` whose parameters are sharded DTensors.
    """
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if not dist.is_initialized():
        raise ConfigError("shard_policy needs a process group: launch with torchrun")
    if activation_checkpointing:
        model.gradient_checkpointing_enable(  # type: ignore[operator]
            gradient_checkpointing_kwargs={"use_reentrant": False}
        )
    device = next(model.parameters()).device
    kwargs: dict[str, Any] = {}
    if mixed_precision and device.type == "cuda":
        kwargs["mp_policy"] = MixedPrecisionPolicy(
            param_dtype=torch.bfloat16, reduce_dtype=torch.float32
        )
    elif mixed_precision:
        log.info("mixed precision is for CUDA; training on %s in the model's dtype", device)
    if device.type == "cuda":
        from torch.distributed.device_mesh import init_device_mesh

        kwargs["mesh"] = init_device_mesh("cuda", (dist.get_world_size(),))
    for unit in shard_units(model):
        fully_shard(unit, **kwargs)
    fully_shard(model, **kwargs)
    return model


def _reduce(values: list[float], op: Any = None) -> list[float]:
    """All-reduce a few floats (SUM unless ``op``); on the GPU with nccl, which has no CPU
    tensors."""
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=op if op is not None else dist.ReduceOp.SUM)
    return t.tolist()


def reduce_floats(values: list[float], op: str = "sum") -> list[float]:
    """``values`` summed (or their ``max``) over ranks; unchanged without a process group."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [float(v) for v in values]
    return _reduce(values, dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)


def gather_objects(obj: Any) -> list[Any]:
    """Every rank's ``obj`` (picklable), in rank order; ``[obj]`` without a process group."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [obj]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank; ``obj`` itself without a process group."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier() -> None:
    """Wait for every rank (nothing without a process group)."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def all_reduce_metrics(
    metrics: dict[str, float], weight: float = 1.0, info: DistInfo | None = None
) -> dict[str, float]:
    """Weighted means over ranks: Σ_r w_r·m_r / Σ_r w_r for each key (every rank passes the
    same keys in any order). A no-op without a process group or with one process."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return dict(metrics)
    keys = sorted(metrics)
    t = _reduce([metrics[k] * weight for k in keys] + [weight])
    total = t[-1]
    return {k: float(t[i]) / total if total else 0.0 for i, k in enumerate(keys)}


def _select(batch: UpdateBatch, idx: list[int]) -> UpdateBatch:
    i = torch.as_tensor(idx, dtype=torch.long)
    ref = batch.ref_logp[i] if batch.ref_logp is not None else None
    return UpdateBatch(batch.rows.select(i), batch.old_logp[i], batch.mask[i], ref)


def _minibatch(
    policy: Any,
    local: UpdateBatch,
    idx: list[int],
    filler: int | None,
    g: GRPOConfig,
    opt: torch.optim.Optimizer,
    sched: Any,
    info: DistInfo,
) -> tuple[dict[str, float], int]:
    """One optimizer step on this rank's rows ``idx`` of ``local``; returns (stats, padded).

    A rank with fewer rows than the fullest one pads with copies of its first row (or of row
    ``filler`` when it has none) at advantage 0; padding adds nothing to the loss normalizer."""
    n = len(idx)
    t_local = normalizer(local.mask[idx], g.aggregation) if n else 0.0
    total = _reduce([t_local])[0]
    n_max = int(_reduce([float(n)], dist.ReduceOp.MAX)[0])
    if total == 0:  # no loss token anywhere: step with no gradient, as policy_update does
        opt.zero_grad(set_to_none=True)
        opt.step()
        if sched is not None:
            sched.step()
        return {"loss": 0.0}, 0
    source = idx[0] if n else filler
    if _reduce([0.0 if source is None else 1.0], dist.ReduceOp.MIN)[0] == 0:  # all ranks raise
        raise ConfigError(
            f"a rank has no row to run in a minibatch ({n_max} on the fullest rank), and FSDP "
            "needs every rank to run the same forwards: use fewer processes or "
            "grpo.minibatches, or more prompts per step"
        )
    pad = n_max - n
    if pad and not skipping_is_exact(g):
        raise ConfigError(
            "grpo.kl_coef > 0 with the KL in the loss needs the same number of rows with loss "
            f"tokens on every rank (here {n}, up to {n_max}): make rows per step divisible by "
            "the number of processes, or set grpo.kl_in_reward=true"
        )
    batch = _select(local, idx + [source] * pad)
    t_padded = normalizer(batch.mask, g.aggregation)
    c = info.world_size * t_padded / total
    adv = batch.rows.advantages.clone()
    adv[n:] = 0.0
    rows = dataclasses.replace(batch.rows, advantages=adv * c)
    kl = g.kl_coef if g.kl_in_reward else g.kl_coef * c
    one = dataclasses.replace(g, epochs=1, minibatches=1, kl_coef=kl)
    out = policy_update(
        policy, dataclasses.replace(batch, rows=rows), one, opt, sched, 0, skip_zero_adv=False
    )
    stats = {k: v for k, v in out.items() if k not in _COUNTS and k not in ("loss", "grad_norm")}
    merged = all_reduce_metrics(stats, weight=t_padded)
    # rank r's loss is c_r·(its terms)/t_r = W·(its terms)/T: their mean over ranks is the loss
    merged["loss"] = all_reduce_metrics({"loss": out["loss"]})["loss"]
    if "grad_norm" in out:  # the clipped norm of the (global) DTensor gradient: equal on ranks
        merged["grad_norm"] = out["grad_norm"]
    return merged, pad


def distributed_update(
    policy: Any,
    local: UpdateBatch,
    g: GRPOConfig,
    opt: torch.optim.Optimizer,
    sched: Any,
    shuffle_seed: int,
    info: DistInfo,
    n_filler: int = 0,
) -> dict[str, float]:
    """``policy_update`` across ranks: ``g.epochs`` × ``g.minibatches`` optimizer steps.

    Args:
        policy: the policy, its model sharded with ``shard_policy``.
        local: this rank's rows (e.g. ``rank_share`` of a step's rows, or its own rollouts).
        shuffle_seed: seeds this rank's minibatch order (offset by rank).
        n_filler: the last ``n_filler`` rows of ``local`` are not trained on: a rank with no
            other row runs them at advantage 0 so that its forwards match the other ranks'
            (e.g. a rank whose groups dynamic sampling dropped).
    Returns:
        ``policy_update``'s keys, reduced over ranks: ``loss`` is the loss over all ranks'
        rows; statistics are means weighted by each rank's normalizer; ``rows_padded`` counts
        the padding rows all ranks ran. With ``g.minibatches == 1`` the update equals one
        ``policy_update`` over the union of the ranks' rows (see the module docstring); with
        more, minibatch k is the union of the ranks' k-th local minibatches.
    """
    n_real = len(local.rows) - n_filler
    if info.world_size == 1:
        real = local if n_filler == 0 else _select(local, list(range(n_real)))
        return policy_update(policy, real, g, opt, sched, shuffle_seed)
    if g.logits_chunk > 0:
        raise ConfigError(
            "grpo.logits_chunk > 0 runs the decoder and LM head outside the FSDP root's hooks; "
            "set grpo.logits_chunk=0 for multi-process training"
        )
    keep = [i for i in range(n_real) if float(local.mask[i].sum()) > 0]
    fill = [i for i in range(n_real, len(local.rows)) if float(local.mask[i].sum()) > 0]
    filler = (keep or fill or [None])[0]
    gen = torch.Generator().manual_seed(shuffle_seed + 7919 * info.rank)
    sums: dict[str, float] = defaultdict(float)
    steps, padded = 0, 0
    for _ in range(g.epochs):
        order = torch.randperm(len(keep), generator=gen) if g.minibatches > 1 else None
        ordered = [keep[i] for i in order.tolist()] if order is not None else keep
        for mb in torch.tensor_split(torch.tensor(ordered, dtype=torch.long), g.minibatches):
            stats, pad = _minibatch(policy, local, mb.tolist(), filler, g, opt, sched, info)
            for k, v in stats.items():
                sums[k] += v
            steps, padded = steps + 1, padded + pad
    out = {k: v / max(steps, 1) for k, v in sums.items()}
    pads = _reduce([float(padded)])[0]
    out.update(
        optimizer_steps=float(steps),
        lr=float(opt.param_groups[0]["lr"]),
        rows_skipped_zero_adv=0.0,
        update_skipped=0.0,
        rows_padded=pads,
    )
    return out
