"""Resumable checkpoints, written atomically.

``checkpoints/step_000100/`` is a normal Hugging Face checkpoint (weights, config, processor) that
``load_policy`` reads, plus ``trainer_state.pt``: optimizer and scheduler state, the step, RNG
states and the recipe's own counters. ``checkpoints/latest`` names the newest complete one; it is
replaced only after the folder is fully written, so a crash mid-save leaves the previous
checkpoint in charge.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vlagent.errors import CheckpointError
from vlagent.io import atomic_dir, atomic_write_text

STATE_FILE = "trainer_state.pt"


def checkpoint_root(run_dir: Path, phase: str) -> Path:
    """``<run_dir>/checkpoints/<phase>``."""
    return run_dir / "checkpoints" / phase


def save_checkpoint(
    run_dir: Path,
    phase: str,
    step: int,
    policy: Any,
    optimizer: torch.optim.Optimizer,
    extra: dict[str, Any],
    keep: int = 2,
    scheduler: Any = None,
) -> Path:
    """Write ``checkpoints/<phase>/step_<step>/`` atomically and point ``latest`` at it.

    Args:
        extra: recipe state (counters, elapsed seconds); must be picklable by torch.save.
        scheduler: an LR scheduler whose state is saved too (optional).
        keep: number of most recent checkpoints kept (older ones are deleted).
    """
    root = checkpoint_root(run_dir, phase)
    dest = root / f"step_{step:06d}"
    with atomic_dir(dest) as tmp:
        policy.model.save_pretrained(tmp)
        policy.processor.save_pretrained(tmp)
        torch.save(trainer_state(step, optimizer.state_dict(), scheduler, extra), tmp / STATE_FILE)
    point_latest(root, dest, keep)
    return dest


def trainer_state(
    step: int, optimizer_state: dict | None, scheduler: Any, extra: dict[str, Any]
) -> dict[str, Any]:
    """What ``trainer_state.pt`` holds: step, optimizer (None when a multi-process checkpoint
    keeps it in ``dcp/``), scheduler, this process's RNG states, the recipe's counters."""
    return {
        "step": step,
        "optimizer": optimizer_state,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "rng": {
            "torch": torch.get_rng_state(),
            "numpy": np.random.get_state(),
            "python": random.getstate(),
        },
        "extra": extra,
    }


def point_latest(root: Path, dest: Path, keep: int) -> None:
    """Name the complete checkpoint ``dest`` in ``root/latest``; delete all but ``keep``."""
    atomic_write_text(root / "latest", dest.name + "\n")
    old = sorted(p for p in root.glob("step_*") if p.is_dir())
    for p in old[:-keep] if keep > 0 else []:
        shutil.rmtree(p, ignore_errors=True)


def latest_checkpoint(run_dir: Path, phase: str) -> Path | None:
    """The newest complete checkpoint of ``phase``, or None."""
    root = checkpoint_root(run_dir, phase)
    pointer = root / "latest"
    if not pointer.is_file():
        return None
    path = root / pointer.read_text().strip()
    if not (path / STATE_FILE).is_file():
        raise CheckpointError(
            f"{pointer} names {path.name}, which has no {STATE_FILE}; delete {root} to start over"
        )
    return path


def load_trainer_state(path: Path, optimizer: torch.optim.Optimizer | None) -> dict[str, Any]:
    """Restore optimizer and RNG state from a checkpoint folder; return the saved state dict.

    ``optimizer`` None: RNG only (a multi-process run restores the optimizer from ``dcp/``)."""
    file = path / STATE_FILE
    if not file.is_file():
        raise CheckpointError(f"checkpoint {path} has no {STATE_FILE}")
    state = torch.load(file, map_location="cpu", weights_only=False)
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"]["torch"])
    np.random.set_state(state["rng"]["numpy"])
    random.setstate(state["rng"]["python"])
    return state
