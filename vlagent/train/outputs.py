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
from vlagent.errors import ConfigError
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


# Keys a resumed run may change: budgets, evaluation and run plumbing. Anything else differing
# from the saved config means the checkpoint belongs to another experiment.
_RESUME_FREE_PREFIXES = ("run.", "eval.")
_RESUME_FREE_SUFFIXES = (".steps", ".max_seconds", ".max_samples")


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix[:-1]: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}."))
    return out


def check_resume_config(run_dir: Path, cfg: Any) -> None:
    """Refuse to resume checkpoints written under a different config.

    Raises:
        ConfigError: ``run_dir`` has checkpoints and its ``config.yaml`` differs from ``cfg`` in
            a key other than budgets (``*.steps``, ``*.max_seconds``, ``*.max_samples``),
            ``eval.*`` or ``run.*``; the message lists the keys.
    """
    import yaml

    saved_path = run_dir / "config.yaml"
    ckpts = run_dir / "checkpoints"
    if not saved_path.is_file() or not ckpts.is_dir() or not any(ckpts.iterdir()):
        return
    old = _flat(yaml.safe_load(saved_path.read_text()) or {})
    new = _flat(yaml.safe_load(to_yaml(cfg)))
    diff = [
        f"{k}: {old.get(k)!r} -> {new.get(k)!r}"
        for k in sorted(set(old) | set(new))
        if old.get(k) != new.get(k)
        and not k.startswith(_RESUME_FREE_PREFIXES)
        and not k.endswith(_RESUME_FREE_SUFFIXES)
    ]
    if diff:
        raise ConfigError(
            f"{run_dir} holds checkpoints of a run with another config ({'; '.join(diff)}); "
            "resuming would mix two experiments. Use a new run.out_dir, or run.resume=false "
            "to start over in this folder."
        )


def prepare_run_dir(cfg: Any) -> Path:
    """Create the run folder and save the resolved config in it (after checking that a run
    being resumed has the same config, see ``check_resume_config``)."""
    run_dir = Path(cfg.run.out_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if cfg.run.resume:
        check_resume_config(run_dir, cfg)
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
