"""The recipes under ``torchrun``: N processes train one FSDP2-sharded policy.

``vlagent train`` launched by ``torchrun --nproc-per-node N`` (or ``--nnodes``) runs the same
recipe in every process; this module holds what differs from one process:

- **Two copies of the weights per rank.** The *learner* is the policy whose model is sharded
  with ``fully_shard`` (``train/distributed.py``); the optimizer holds its shards. The
  *sampler* is an unsharded copy that rolls out, validates and is exported: FSDP runs
  collectives in every forward, so ranks generating episodes of different lengths would wait
  on each other forever, while the copy runs alone. After every optimizer step ``sync``
  gathers the learner's full weights into the sampler (one all-gather per parameter), so the
  sampler always holds the weights just trained. This doubles parameter memory (like a
  colocated vLLM engine), not optimizer memory.
- **Work is split, statistics are not.** GRPO: each rank rolls out its share of each step's
  groups (whole groups, so group-relative credit is local and exact) and the update is
  ``distributed_update`` (gradient equal to one process's on the union of the rows). SFT: each
  rank takes its share of the step's demonstrations, and the loss is normalized by the global
  token count. Metrics are reduced over ranks before rank 0 logs them.
- **Rank 0 writes.** The run folder, metrics, samples, pictures, ``final/`` and the Hugging
  Face part of checkpoints are rank 0's; model and optimizer shards go to a DCP folder inside
  the checkpoint (``dcp/``) that every rank writes and any process count reads.

Single-process runs never come here with a process group: ``Parallel.single()`` makes every
method an identity and the sampler the learner itself.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import torch

from vlagent.errors import ConfigError
from vlagent.train.distributed import (
    DistInfo,
    barrier,
    broadcast_object,
    gather_objects,
    reduce_floats,
)

log = logging.getLogger(__name__)

DCP_DIR = "dcp"
"""Subfolder of a multi-process checkpoint with the sharded model and optimizer state."""

#: Batch metrics that are totals over the batch's episodes, summed over ranks (the rest are
#: means over episodes, weighted by each rank's episode count).
SUMMED = ("episodes", "episodes_errored", "sampled", "tokens")


@dataclasses.dataclass
class Parallel:
    """This process's place in a multi-process run, and its unsharded sampling copy.

    Attributes:
        info: rank, world size, backend (``DistInfo(0, 1, 0, "none")`` for one process).
        sampler: the unsharded policy that samples, validates and is exported (the learner
            itself in one process).
    """

    info: DistInfo
    sampler: Any = None

    @classmethod
    def single(cls) -> Parallel:
        return cls(DistInfo(0, 1, 0, "none"))

    @property
    def on(self) -> bool:
        """More than one process trains."""
        return self.info.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.info.is_main

    def share(self, items: list[Any]) -> list[Any]:
        """This rank's items: ``items[rank::world_size]`` (all of them in one process)."""
        return list(items[self.info.rank :: self.info.world_size])

    def sync(self, learner: Any) -> None:
        """Copy the learner's (sharded) weights into the sampler; collective."""
        if not self.on:
            return
        mine = dict(self.sampler.model.named_parameters())
        with torch.no_grad():
            for name, p in learner.model.named_parameters():
                full = p.full_tensor() if hasattr(p, "full_tensor") else p
                mine[name].copy_(full.to(mine[name].device, mine[name].dtype))

    def gather(self, obj: Any) -> list[Any]:
        return gather_objects(obj) if self.on else [obj]

    def from_main(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank."""
        return broadcast_object(obj) if self.on else obj

    def total(self, value: float) -> float:
        return reduce_floats([value])[0] if self.on else float(value)

    def slowest(self, value: float) -> float:
        """The largest ``value`` over ranks (e.g. elapsed time, so stop rules agree)."""
        return reduce_floats([value], "max")[0] if self.on else float(value)

    def barrier(self) -> None:
        if self.on:
            barrier()

    def on_main(self, fn: Any) -> Any:
        """``fn()`` run by rank 0 alone, its result on every rank; an error there is raised on
        every rank (so no rank waits forever for one that failed)."""
        if not self.on:
            return fn()
        result, error = None, None
        if self.is_main:
            try:
                result = fn()
            except Exception as exc:  # re-raised on every rank below
                error = exc
        result, error = self.from_main((result, error))
        if error is not None:
            raise error
        return result

    def reduce_batch_metrics(self, row: dict[str, float], episodes: int) -> dict[str, float]:
        """Batch metrics of every rank's episodes: totals (``SUMMED``) added, the rest means
        weighted by each rank's episode count. A key some ranks lack (a world summary of an app
        only one rank saw) is averaged over the ranks that have it."""
        if not self.on:
            return row
        keys = sorted({k for part in self.gather(sorted(row)) for k in part})
        weight = float(episodes)
        values = [row.get(k, 0.0) * (1.0 if k in SUMMED else weight) for k in keys]
        weights = [float(k in row) * (1.0 if k in SUMMED else weight) for k in keys]
        total = reduce_floats(values + weights)
        n = len(keys)
        out = {}
        for i, k in enumerate(keys):
            if k in SUMMED:
                out[k] = total[i]
            else:
                out[k] = total[i] / total[n + i] if total[n + i] else 0.0
        return out


def rank_seed(seed: int, info: DistInfo) -> int:
    """A sampling seed per rank (rank 0 keeps ``seed``, so one process is unchanged)."""
    return (seed + 1_000_033 * info.rank) % (2**31 - 1)


def check_config(cfg: Any, info: DistInfo) -> None:
    """Refuse, before any work, what multi-process training does not support (and say why)."""
    if info.world_size == 1:
        return
    w = info.world_size
    problems: list[str] = []
    if cfg.model.lora.enabled:
        problems.append("model.lora.enabled: LoRA is single-process (train the full model)")
    if cfg.recipe == "grpo":
        g = cfg.grpo
        if g.engine != "hf":
            problems.append(f"grpo.engine={g.engine}: multi-process sampling uses hf")
        if g.max_staleness > 0:
            problems.append("grpo.max_staleness > 0: asynchronous rollouts are single-process")
        if g.logits_chunk > 0:
            problems.append("grpo.logits_chunk > 0 bypasses FSDP's hooks: set it to 0")
        if g.advantage == "reinforce_pp" or g.std_level == "batch":
            problems.append(
                "batch-level advantage statistics (reinforce_pp, grpo.std_level=batch) would "
                "differ per rank: use group-level credit"
            )
        if g.prompts_per_step % w:
            problems.append(
                f"grpo.prompts_per_step={g.prompts_per_step} must be a multiple of the "
                f"{w} processes (each rank rolls out whole groups)"
            )
    elif cfg.sft.batch_size < w:
        problems.append(f"sft.batch_size={cfg.sft.batch_size} is below the {w} processes")
    if problems:
        raise ConfigError(f"torchrun with {w} processes: " + "; ".join(problems))


def device_for(cfg_device: str, info: DistInfo) -> str:
    """This rank's device: ``cuda`` / ``cuda:N`` becomes ``cuda:LOCAL_RANK`` under torchrun."""
    if info.world_size > 1 and cfg_device.startswith("cuda"):
        return f"cuda:{info.local_rank}"
    return cfg_device


def save_checkpoint_sharded(
    par: Parallel,
    run_dir: Path,
    phase: str,
    step: int,
    learner: Any,
    opt: torch.optim.Optimizer,
    extra: dict[str, Any],
    scheduler: Any = None,
    keep: int = 2,
) -> Path:
    """``checkpoints/<phase>/step_<step>/`` of a multi-process run (collective, atomic).

    Every rank writes its shards into ``dcp/`` of a temporary folder; rank 0 adds the Hugging
    Face folder (from the sampler, which holds the full current weights: ``vlagent eval`` and
    ``load_policy`` read it as any checkpoint) and ``trainer_state.pt`` (its optimizer entry is
    None: the optimizer is in ``dcp/``), then renames the folder into place and points
    ``latest`` at it, so a crash leaves the previous checkpoint in charge."""
    import shutil

    from vlagent.train.checkpoint import STATE_FILE, checkpoint_root, point_latest, trainer_state
    from vlagent.train.dist_checkpoint import save_distributed

    root = checkpoint_root(run_dir, phase)
    dest = root / f"step_{step:06d}"
    tmp = root / f".{dest.name}.tmp-sharded"
    if par.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    par.barrier()
    save_distributed(tmp / DCP_DIR, learner.model, opt)
    if par.is_main:
        par.sampler.model.save_pretrained(tmp)
        par.sampler.processor.save_pretrained(tmp)
        state = trainer_state(step, None, scheduler, extra)
        state["world_size"] = par.info.world_size
        torch.save(state, tmp / STATE_FILE)
        old = root / f".{dest.name}.old-sharded"
        if dest.exists():
            shutil.rmtree(old, ignore_errors=True)
            dest.rename(old)
        tmp.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
        point_latest(root, dest, keep)
    par.barrier()
    return dest


def load_sharded(ckpt: Path, learner: Any, opt: torch.optim.Optimizer, state: dict) -> None:
    """Restore model and optimizer of ``ckpt`` into this run, whatever process count wrote it.

    A multi-process checkpoint (``dcp/``) reshards to this run; a single-process one holds the
    optimizer as a plain ``state_dict`` (its weights were loaded from the folder already)."""
    from vlagent.train.dist_checkpoint import load_distributed, load_full_optimizer

    if (ckpt / DCP_DIR).is_dir():
        load_distributed(ckpt / DCP_DIR, learner.model, opt)
    elif state.get("optimizer") is not None:
        load_full_optimizer(learner.model, opt, state["optimizer"])
    else:
        raise ConfigError(f"{ckpt} has neither {DCP_DIR}/ nor an optimizer state to resume")
