"""Pieces shared by the benchmarks: the job both trainers run, the machine, workers, statistics.

Every benchmark process is a fresh Python process (``python -m bench.grpo_vs_trl _worker JOB``)
so one system's allocator state, thread pools and imports never leak into the other's numbers;
the parent samples each worker's resident set size with psutil while it runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
log = logging.getLogger(__name__)


class BenchError(RuntimeError):
    """A benchmark could not run (bad arguments, a worker failed, a missing dependency)."""


@dataclasses.dataclass(frozen=True)
class ModelSize:
    """Sizes of the tiny Qwen2.5-VL both trainers start from (``TinyModelSpec`` fields)."""

    family: str = "qwen2_5_vl"
    text_hidden: int = 256
    text_layers: int = 4
    text_heads: int = 4
    text_kv_heads: int = 2
    text_intermediate: int = 512
    vision_hidden: int = 128
    vision_layers: int = 4
    vision_heads: int = 4
    seed: int = 0

    def spec(self) -> Any:
        """The ``TinyModelSpec`` (localization init on, 448² pixel budget: the defaults)."""
        from vlagent.models.tiny import TinyModelSpec

        return TinyModelSpec(**dataclasses.asdict(self))


@dataclasses.dataclass(frozen=True)
class JobConfig:
    """One GRPO job, identical for both trainers. Field names say what each knob is."""

    level: str = "basic448"
    """Synthetic screen level (``basic448``: one coloured shape on a 448×448 screen)."""
    answer_format: str = "qwen_json"
    reward: tuple[tuple[str, float], ...] = (
        ("point_in_box", 1.0),
        ("gaussian_point", 0.5),
        ("format", 0.1),
    )
    prompts_per_step: int = 4
    """B: screens per step."""
    group_size: int = 8
    """G: completions per screen."""
    max_new_tokens: int = 24
    temperature: float = 1.0
    lr: float = 2e-4
    max_grad_norm: float = 1.0
    clip_eps: float = 0.2
    steps: int = 20
    """Measured steps (after the warm-up steps)."""
    warmup_steps: int = 1
    """Steps run first and left out of samples/s and the step-time split."""
    seed: int = 0
    threads: int = 0
    """torch CPU threads in each worker (0 = every core this process may use)."""
    device: str = "cpu"

    def __post_init__(self) -> None:
        for name in ("prompts_per_step", "max_new_tokens", "steps"):
            if getattr(self, name) < 1:
                raise BenchError(f"job.{name} must be >= 1, got {getattr(self, name)}")
        if self.group_size < 2:
            raise BenchError(f"job.group_size must be >= 2 (GRPO groups), got {self.group_size}")
        if self.warmup_steps < 1:
            raise BenchError(
                f"job.warmup_steps must be >= 1 (samples/s is timed from the end of a step), "
                f"got {self.warmup_steps}"
            )

    @property
    def total_steps(self) -> int:
        return self.warmup_steps + self.steps

    @property
    def completions_per_step(self) -> int:
        return self.prompts_per_step * self.group_size

    def resolved_threads(self) -> int:
        return self.threads or len(os.sched_getaffinity(0))

    def reward_dict(self) -> dict[str, float]:
        return dict(self.reward)


@dataclasses.dataclass(frozen=True)
class SFTStart:
    """The shared starting checkpoint: ``run_sft`` for a fixed budget of steps.

    ``num_demos`` = 0 trains on fresh labelled screens every step; N > 0 on N fixed
    demonstrations (the quickstart's scarce-label start, which leaves GRPO room to climb).
    """

    steps: int = 150
    batch_size: int = 16
    lr: float = 1e-3
    num_demos: int = 0


@dataclasses.dataclass(frozen=True)
class ThresholdConfig:
    """Time-to-accuracy runs: train until held-out accuracy reaches ``threshold``."""

    threshold: float = 0.5
    val_screens: int = 200
    eval_every: int = 10
    max_steps: int = 200
    eval_batch_size: int = 64
    eval_max_new_tokens: int = 24


def config_hash(*parts: Any) -> str:
    """Short stable hash of dataclasses / JSON-able values (names cache folders)."""
    blob = json.dumps(
        [dataclasses.asdict(p) if dataclasses.is_dataclass(p) else p for p in parts],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def machine_info(device: str = "cpu") -> dict[str, Any]:
    """CPU, cores, RAM, load and library versions of this machine."""
    import psutil

    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for mod in ("torch", "transformers", "trl", "accelerate", "datasets", "numpy", "PIL"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            versions[mod] = None
    info: dict[str, Any] = {
        "cpu_model": cpu,
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "usable_cores": len(os.sched_getaffinity(0)),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
    }
    if device.startswith("cuda"):
        import torch

        info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return info


def summarize(values: Sequence[float]) -> dict[str, float | None]:
    """Median, min and max (None for an empty list)."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}


def worker_env(overrides: dict[str, str | None] | None = None) -> dict[str, str]:
    """The environment of a benchmark worker: this one, plus the repo on ``PYTHONPATH``, quiet
    libraries, ``OMP_WAIT_POLICY=PASSIVE`` unless set, then ``overrides`` (a value sets a
    variable, None removes it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    # The same OpenMP wait policy for both systems (vlagent's CLI defaults to PASSIVE).
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_worker(
    job: dict[str, Any],
    work_dir: Path,
    name: str,
    timeout_s: float,
    env_overrides: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """Run one worker in a fresh process, sampling its RSS; return its result dict.

    Args:
        job: the worker's job (``system``, ``mode``, sizes …); written to ``<name>.job.json``.
        work_dir: folder for the job, result and log files.
        name: file stem of this worker (e.g. ``tp-ours-r0``).
        timeout_s: kill the worker after this long.
        env_overrides: environment variables to set (a value) or remove (None) for this
            worker, applied after the defaults below (``bench/omp_policy.py`` varies
            ``OMP_WAIT_POLICY`` and ``GOMP_SPINCOUNT`` this way).
    Returns:
        The worker's result with ``peak_rss_mb`` (psutil samples every 0.1 s, the maximum)
        and ``process_seconds`` (wall time of the whole process, start-up included) added.
    """
    import psutil

    work_dir.mkdir(parents=True, exist_ok=True)
    job_path = work_dir / f"{name}.job.json"
    result_path = work_dir / f"{name}.result.json"
    log_path = work_dir / f"{name}.log"
    result_path.unlink(missing_ok=True)
    job_path.write_text(json.dumps({**job, "result_path": str(result_path)}, indent=2))
    env = worker_env(env_overrides)
    cmd = [sys.executable, "-m", "bench.grpo_vs_trl", "_worker", str(job_path)]
    t0 = time.perf_counter()
    peak = 0
    with log_path.open("w") as out:
        proc = psutil.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            with contextlib.suppress(psutil.Error):  # the process may exit between calls
                peak = max(peak, proc.memory_info().rss)
            if time.perf_counter() - t0 > timeout_s:
                proc.kill()
                proc.wait()
                raise BenchError(f"worker {name} ran past {timeout_s:.0f} s; log: {log_path}")
            time.sleep(0.1)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0 or not result_path.exists():
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-25:])
        raise BenchError(
            f"worker {name} failed (exit {proc.returncode}); log {log_path}, last lines:\n{tail}"
        )
    result = json.loads(result_path.read_text())
    result["peak_rss_mb"] = round(peak / 2**20, 1)
    result["process_seconds"] = round(elapsed, 2)
    return result


def max_rss_mb() -> float:
    """This process's peak RSS so far (kernel high-water mark; ``ru_maxrss`` is in KiB on Linux)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def ensure_bench_model(size: ModelSize, work_dir: Path) -> Path:
    """Build (once) the tiny bench model; cached by its sizes under ``work_dir``."""
    from vlagent.models.tiny import build_tiny_model

    path = work_dir / f"model-{config_hash(size)}"
    if not (path / "config.json").exists():
        log.info("building the bench model at %s", path)
        build_tiny_model(path, size.spec())
    return path


def sft_overrides(
    model_dir: Path, family: str, job: JobConfig, sft: SFTStart, out_dir: Path
) -> list[str]:
    """Dotted overrides of the SFT run that makes the shared start checkpoint."""
    reward = "{" + ", ".join(f"{k}: {v}" for k, v in job.reward) + "}"
    return [
        "recipe=sft",
        f"model.path={model_dir}",
        "model.build_tiny=false",
        f"model.family={family}",
        f"model.device={job.device}",
        f"task.level={job.level}",
        f"task.answer_format={job.answer_format}",
        f"task.reward={reward}",
        f"sft.steps={sft.steps}",
        f"sft.batch_size={sft.batch_size}",
        f"sft.lr={sft.lr}",
        f"sft.num_demos={sft.num_demos}",
        "sft.max_seconds=0",
        "sft.plateau_patience=0",
        "eval.every=0",
        "eval.rollout_pictures=0",
        f"run.out_dir={out_dir}",
        f"run.seed={job.seed}",
        f"run.threads={job.resolved_threads()}",
        "run.checkpoint_every=0",
        "run.samples_every=0",
        "run.progress=false",
        "run.resume=false",
    ]


def ensure_sft_start(
    model_dir: Path,
    size: ModelSize,
    job: JobConfig,
    sft: SFTStart,
    ttt: ThresholdConfig,
    work_dir: Path,
) -> dict[str, Any]:
    """The SFT start checkpoint (built once, cached) and its held-out accuracy.

    Returns:
        ``{"path", "steps", "seconds", "val_accuracy", "val_screens", "cached"}``.
    """
    key = config_hash(
        size,
        sft,
        job.level,
        job.answer_format,
        job.reward,
        job.seed,
        ttt.val_screens,
        model_dir.name,
    )
    out_dir = work_dir / f"sft-{key}"
    info_path = out_dir / "sft_start.json"
    if info_path.exists() and (out_dir / "final" / "config.json").exists():
        return {**json.loads(info_path.read_text()), "cached": True}
    import shutil

    from vlagent.config import load_config
    from vlagent.eval.evaluate import evaluate
    from vlagent.io import atomic_write_json
    from vlagent.models.loading import load_policy
    from vlagent.train.sft import run_sft
    from vlagent.worlds import make_world

    shutil.rmtree(out_dir, ignore_errors=True)
    cfg = load_config(None, sft_overrides(model_dir, size.family, job, sft, out_dir))
    log.info(
        "SFT start: %d steps on %s %s screens",
        sft.steps,
        f"{sft.num_demos} fixed" if sft.num_demos else "fresh",
        job.level,
    )
    result = run_sft(cfg)
    policy = load_policy(result.final_dir, device=job.device)
    world = make_world(cfg, policy)
    report = evaluate(
        world,
        policy,
        "val",
        ttt.val_screens,
        batch_size=ttt.eval_batch_size,
        max_new_tokens=ttt.eval_max_new_tokens,
    )
    world.close()
    info = {
        "path": str(result.final_dir),
        "steps": result.steps,
        "seconds": round(result.train_seconds, 2),
        "val_accuracy": report.accuracy,
        "val_format_rate": report.metrics["format_rate"],
        "val_screens": ttt.val_screens,
    }
    atomic_write_json(info_path, info)
    return {**info, "cached": False}


def threshold_result(
    evals: list[tuple[int, float, float, float]], t0: float, threshold: float
) -> dict[str, Any]:
    """Training seconds until held-out accuracy first reached ``threshold``, evals excluded.

    Args:
        evals: per eval, in order: (step, accuracy, wall start time, eval seconds).
        t0: wall time training began.
    """
    curve, excluded, reached = [], 0.0, None
    for step, accuracy, start, eval_seconds in evals:
        seconds = start - t0 - excluded
        curve.append({"step": step, "accuracy": accuracy, "train_seconds": seconds})
        excluded += eval_seconds
        if reached is None and accuracy >= threshold:
            reached = curve[-1]
    return {
        "reached": reached is not None,
        "seconds": reached["train_seconds"] if reached else None,
        "steps": reached["step"] if reached else None,
        "best_accuracy": max((c["accuracy"] for c in curve), default=None),
        "eval_seconds_excluded": excluded,
        "curve": curve,
    }
