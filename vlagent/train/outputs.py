"""A run folder and what gets written into it: resolved config, metrics, tracking, reports.

Layout of ``run.out_dir``::

    config.yaml           the resolved config (defaults + YAML + overrides)
    metrics.jsonl         one JSON object per logged step: {"step", "phase", "time", <name>: ...}
    tb/<phase>/           TensorBoard events (with tensorboard in run.report_to)
    wandb/                W&B run files (with wandb in run.report_to); <phase>.run_id keeps the
                          W&B run id so a resumed run continues the same W&B run
    checkpoints/          resumable checkpoints (see checkpoint.py)
    samples/              annotated sample rollouts (PNG)
    final/                the exported model (see common.export_final)

One ``MetricsLogger`` fans every record out to its sinks under the same names: the bare name
plus a ``phase`` field in JSONL, ``<phase>/<name>`` in TensorBoard and W&B, at the same step.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from vlagent.config import to_yaml
from vlagent.errors import ConfigError
from vlagent.io import atomic_write_text

log = logging.getLogger(__name__)

TRACK_HINT = "pip install 'vlagent[track]'"
"""How to get the optional W&B dependency."""


class Sink(Protocol):
    """One destination of the logged scalars (``None`` = a non-finite value)."""

    def write(self, step: int, scalars: dict[str, float | None]) -> None: ...

    def close(self) -> None: ...


class JsonlSink:
    """``metrics.jsonl``: one flushed line per step; always on (resume and reports read it).

    On resume, lines of this phase with a step beyond the checkpoint's are dropped first, so
    the file reads like an uninterrupted run.
    """

    def __init__(self, run_dir: Path, phase: str, resume_step: int | None = None) -> None:
        self.path = run_dir / "metrics.jsonl"
        self.phase = phase
        if resume_step is not None and self.path.exists():
            self._truncate_after(resume_step)
        self._file = self.path.open("a", encoding="utf-8")

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

    def write(self, step: int, scalars: dict[str, float | None]) -> None:
        rec = {"phase": self.phase, "step": step, "time": round(time.time(), 3), **scalars}
        self._file.write(json.dumps(rec) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class TensorBoardSink:
    """TensorBoard events in ``tb/<phase>/``, tags ``<phase>/<name>``; non-finite values skipped."""

    def __init__(self, run_dir: Path, phase: str) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.phase = phase
        self._writer = SummaryWriter(log_dir=str(run_dir / "tb" / phase))

    def write(self, step: int, scalars: dict[str, float | None]) -> None:
        for k, v in scalars.items():
            if v is not None:
                self._writer.add_scalar(f"{self.phase}/{k}", v, step)

    def close(self) -> None:
        self._writer.close()


@dataclasses.dataclass
class WandbSettings:
    """What ``wandb.init`` needs (from the ``run`` section).

    Attributes:
        project, name, mode: ``run.wandb_project``, the run name, ``run.wandb_mode``.
        config: the resolved config as plain dicts (shown as the W&B run's config).
    """

    project: str
    name: str
    mode: str
    config: dict[str, Any]


def import_wandb() -> Any:
    """The ``wandb`` module, or a ``ConfigError`` saying how to install it."""
    try:
        import wandb
    except ImportError as exc:
        raise ConfigError(
            f"run.report_to: wandb is listed but the wandb package is not installed; "
            f"{TRACK_HINT}, or drop wandb from run.report_to"
        ) from exc
    return wandb


def wandb_run_id(run_dir: Path, phase: str, resuming: bool) -> str:
    """The W&B run id of ``phase`` in ``run_dir``: the stored one when resuming a checkpoint,
    else a fresh one (stored in ``wandb/<phase>.run_id``)."""
    path = run_dir / "wandb" / f"{phase}.run_id"
    if resuming and path.is_file():
        stored = path.read_text(encoding="utf-8").strip()
        if stored:
            return stored
    run_id = f"{phase}-{uuid.uuid4().hex[:12]}"
    atomic_write_text(path, run_id + "\n")
    return run_id


class WandbSink:
    """A W&B run (``dir=<run_dir>``, ``resume="allow"`` with the stored id), keys
    ``<phase>/<name>`` logged at ``step``; non-finite values skipped.

    Offline runs land in ``<run_dir>/wandb/offline-run-*``; each (re)start of a resumed run
    writes its own folder under the same id, and ``wandb sync`` uploads them into one W&B run.
    W&B never rewrites a step it already has: steps logged after the last checkpoint before a
    crash keep their first values there (``metrics.jsonl`` holds the resumed ones).
    """

    def __init__(
        self, run_dir: Path, phase: str, settings: WandbSettings, resuming: bool = False
    ) -> None:
        wandb = import_wandb()
        self.phase = phase
        run_id = wandb_run_id(run_dir, phase, resuming)
        try:
            self._run = wandb.init(
                project=settings.project,
                name=settings.name,
                dir=str(run_dir),
                mode=settings.mode,
                config=settings.config,
                resume="allow",
                id=run_id,
                job_type=phase,
                settings=wandb.Settings(quiet=True),
            )
        except Exception as exc:  # wandb raises its own error types (no login, bad project ...)
            raise ConfigError(
                f"run.report_to: wandb.init failed in mode {settings.mode!r} "
                f"(project {settings.project!r}): {str(exc).rstrip('.')}. Use run.wandb_mode=offline "
                "to log without network or account, or `wandb login` for online"
            ) from exc
        log.info("W&B run %s (%s) in %s/wandb", run_id, settings.mode, run_dir)
        if settings.mode == "offline":
            log.info("upload it later with: wandb sync %s/wandb/offline-run-*", run_dir)

    def write(self, step: int, scalars: dict[str, float | None]) -> None:
        data = {f"{self.phase}/{k}": v for k, v in scalars.items() if v is not None}
        self._run.log(data, step=step)

    def close(self) -> None:
        """Finish the run, and leave its files complete on disk when this returns.

        W&B's service writes the offline transaction log (``run-<id>.wandb``) in 32 KiB blocks and
        writes the last one when it closes the run's stream, which ``finish()`` does not wait for;
        ``wandb.teardown()`` does. Without it the file is complete only once the process exits
        through W&B's ``atexit`` hook, which does not run everywhere (multiprocessing children).
        Skipped when another W&B run is still active in this process.
        """
        self._run.finish()
        wandb = import_wandb()
        if wandb.run is None:
            wandb.teardown()


def check_report_to(report_to: Sequence[str]) -> None:
    """Fail before any work when a listed sink cannot be written (wandb not installed)."""
    if "wandb" in report_to:
        import_wandb()


class MetricsLogger:
    """Log scalars to every sink of ``report_to`` (JSONL always) under the same names.

    Args:
        run_dir: the run folder.
        phase: the recipe phase (sft, grpo ...): the JSONL ``phase`` field and the name prefix.
        resume_step: the checkpoint step a resumed run continues from (None = fresh run).
        report_to: any of tensorboard | wandb | jsonl (jsonl is implied).
        wandb: settings of the W&B run (required with wandb in ``report_to``).
    """

    def __init__(
        self,
        run_dir: Path,
        phase: str,
        resume_step: int | None = None,
        report_to: Sequence[str] = ("tensorboard", "jsonl"),
        wandb: WandbSettings | None = None,
    ) -> None:
        self.phase = phase
        self.sinks: list[Sink] = []
        if "wandb" in report_to:  # first: the one sink whose set-up can fail on the user's side
            if wandb is None:
                raise ConfigError("run.report_to: wandb is listed but no W&B settings were given")
            self.sinks.append(WandbSink(run_dir, phase, wandb, resuming=resume_step is not None))
        self.jsonl = JsonlSink(run_dir, phase, resume_step)
        self.path = self.jsonl.path
        self.sinks.append(self.jsonl)
        if "tensorboard" in report_to:
            try:
                self.sinks.append(TensorBoardSink(run_dir, phase))
            except ImportError:  # a declared dependency; keep JSONL working without it
                log.warning("tensorboard is not installed: TensorBoard events are not written")

    @classmethod
    def for_run(
        cls, cfg: Any, run_dir: Path, phase: str, resume_step: int | None = None
    ) -> MetricsLogger:
        """The logger a ``TrainConfig`` asks for (``run.report_to``, ``run.wandb_*``)."""
        import yaml

        r = cfg.run
        settings = WandbSettings(
            project=r.wandb_project,
            name=r.wandb_name or Path(r.out_dir).resolve().name,
            mode=r.wandb_mode,
            config=yaml.safe_load(to_yaml(cfg)),
        )
        return cls(run_dir, phase, resume_step, r.report_to, settings)

    def log(self, step: int, scalars: dict[str, float]) -> None:
        """Write one record to every sink; non-finite values are null in JSON, skipped elsewhere."""
        clean = {k: (float(v) if math.isfinite(float(v)) else None) for k, v in scalars.items()}
        for sink in self.sinks:
            sink.write(step, clean)

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()


# Keys a resumed run may change: budgets, evaluation and run plumbing. Anything else differing
# from the saved config means the checkpoint belongs to another experiment.
_RESUME_FREE_PREFIXES = ("run.", "eval.")
_RESUME_FREE_SUFFIXES = (".steps", ".max_seconds", ".max_samples", ".env_threads")


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix[:-1]: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}."))
    return out


def check_resume_config(run_dir: Path, cfg: Any) -> None:
    """Refuse to resume checkpoints written under a different config.

    A key the saved config lacks (a field added since) counts as equal when ``cfg`` leaves it
    at its default.

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
    # a field added to the config after the checkpoint was written, left at its default, is
    # what the old code did: not a difference
    defaults = _flat(yaml.safe_load(to_yaml(type(cfg)()))) if dataclasses.is_dataclass(cfg) else {}
    diff = [
        f"{k}: {old.get(k)!r} -> {new.get(k)!r}"
        for k in sorted(set(old) | set(new))
        if old.get(k) != new.get(k)
        and not (k not in old and k in defaults and new.get(k) == defaults[k])
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
