"""A finished run's folder as a kill after one of its checkpoints would have left it."""

from __future__ import annotations

import shutil
from pathlib import Path

from vlagent.train.checkpoint import checkpoint_root


def copy_cut_back(src: Path, dst: Path, phase: str, step: int) -> None:
    """Copy run folder ``src`` to ``dst`` without ``phase``'s checkpoints after ``step``, with
    ``latest`` pointing at ``step``'s (resuming ``dst`` continues from there)."""
    shutil.copytree(src, dst)
    root = checkpoint_root(dst, phase)
    keep = f"step_{step:06d}"
    if not (root / keep).is_dir():
        raise FileNotFoundError(f"{root / keep}: no checkpoint of step {step} to cut back to")
    for folder in root.glob("step_*"):
        if folder.name > keep:
            shutil.rmtree(folder)
    (root / "latest").write_text(keep)
