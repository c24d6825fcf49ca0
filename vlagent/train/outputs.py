"""A run folder and what gets written into it: resolved config, metrics.jsonl, TensorBoard events.

Layout of ``run.out_dir``::

    config.yaml           the resolved config (defaults + YAML + overrides)
    metrics.jsonl         one JSON object per logged step: {"step", "phase", "time", ...}
    tb/                   TensorBoard events (same scalars)
    checkpoints/          resumable checkpoints (see checkpoint.py)
    samples/              annotated sample rollouts (PNG)
"""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from typing import Any

from vlagent.config import to_yaml
from vlagent.io import atomic_write_text

log = logging.getLogger(__name__)


class MetricsLogger:
    """Append scalars to ``metrics.jsonl`` (flushed per line) and to TensorBoard.

    On resume, lines with a step beyond the checkpoint's step are dropped first, so the file
    reads like an uninterrupted run.
    """

    def __init__(self, run_dir: Path, phase: str, resume_step: int | None = None) -> None:
        self.path = run_dir / "metrics.jsonl"
        self.phase = phase
        if resume_step is not None and self.path.exists():
            self._truncate_after(resume_step)
        self._file = self.path.open("a", encoding="utf-8")
        self._tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(run_dir / "tb" / phase))
        except ImportError:  # tensorboard is a declared dependency; keep JSONL working without it
            log.warning("tensorboard is not installed: TensorBoard events are not written")

    def _truncate_after(self, step: int) -> None:
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a crash
            if rec.get("phase") != self.phase or rec.get("step", 0) <= step:
                kept.append(line)
        atomic_write_text(self.path, "".join(k + "\n" for k in kept))

    def log(self, step: int, scalars: dict[str, float]) -> None:
        """Write one record; non-finite values are kept as null in JSON and skipped in TB."""
        clean = {k: (float(v) if math.isfinite(float(v)) else None) for k, v in scalars.items()}
        rec = {"phase": self.phase, "step": step, "time": round(time.time(), 3), **clean}
        self._file.write(json.dumps(rec) + "\n")
        self._file.flush()
        if self._tb is not None:
            for k, v in clean.items():
                if v is not None:
                    self._tb.add_scalar(f"{self.phase}/{k}", v, step)

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()


def prepare_run_dir(cfg: Any) -> Path:
    """Create the run folder and save the resolved config in it."""
    run_dir = Path(cfg.run.out_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "samples").mkdir(exist_ok=True)
    atomic_write_text(run_dir / "config.yaml", to_yaml(cfg))
    return run_dir


def read_metrics(path: str | Path, phase: str | None = None) -> list[dict[str, Any]]:
    """Read ``metrics.jsonl`` records (optionally of one phase)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if phase is None or rec.get("phase") == phase:
            out.append(rec)
    return out
