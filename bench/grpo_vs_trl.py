"""GRPO throughput and time-to-accuracy: our recipe vs TRL's ``GRPOTrainer`` on one job.

    python -m bench.grpo_vs_trl                     # the measurement (docs/BENCHMARKS.md)
    python -m bench.grpo_vs_trl --preset smoke      # a tiny end-to-end check of the harness

Both systems train the same tiny Qwen2.5-VL from the same SFT checkpoint on the same 448×448
screens, prompts, reward, sampling and optimizer settings (``bench/trl_peer.py`` lists every
TRL field). Throughput repeats alternate ours, TRL, ours, TRL …, each a fresh process started
from the same checkpoint. Time-to-threshold runs train until held-out accuracy (our
``vlagent.eval.evaluate`` on the val screens, every k steps, eval time excluded) reaches the
threshold.
Results: ``bench/results/grpo_vs_trl.json`` (atomic write, rewritten after every worker).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from bench.common import (
    REPO,
    BenchError,
    JobConfig,
    ModelSize,
    SFTStart,
    ThresholdConfig,
    ensure_bench_model,
    ensure_sft_start,
    machine_info,
    run_worker,
    summarize,
)

log = logging.getLogger("bench.grpo_vs_trl")
SYSTEMS = ("ours", "trl")
SCHEMA_VERSION = 1

PRESETS: dict[str, dict[str, Any]] = {
    "bench": {},
    # Job 2: the release-shaped model (Qwen's real 151,936-row vocabulary and tokenizer, tiny
    # random weights: bench/logits_chunk.py build_release_model), same job settings as "bench".
    "release": {
        "release_model": {"hidden": 128, "layers": 2},
        "size": ModelSize(family="qwen3_vl"),
        # our chunked LM-head log-probs (the same numbers, docs/BENCHMARKS.md): with 151,936
        # ids, full [rows, tokens, vocab] logits cost memory and time that chunks avoid
        "ours_set": ["grpo.logits_chunk=64"],
    },
    # Job 3, for time to threshold: the README quickstart's job (its tiny Qwen3-VL with the
    # localization init, 224x224 `basic` screens, 8 screens x 8 completions, 20 new tokens),
    # started from SFT on 64 fixed demonstrations (a scarce-label start GRPO climbs from; the
    # quickstart's plateau rule is replaced by a fixed step count so the start is one checkpoint).
    "quickstart": {
        "size": ModelSize(
            family="qwen3_vl",
            text_hidden=128,
            text_layers=2,
            text_heads=4,
            text_kv_heads=2,
            text_intermediate=256,
            vision_hidden=64,
            vision_layers=2,
            vision_heads=4,
        ),
        "level": "basic",
        "prompts": 8,
        "group": 8,
        "max_new_tokens": 20,
        "sft_steps": 300,
        "sft_num_demos": 64,
        "threshold": 0.4,
        "eval_every": 20,
        "ttt_max_steps": 500,
        "eval_max_new_tokens": 20,
    },
    # Seconds, not minutes: checks the harness end to end, says nothing about speed.
    "smoke": {
        "size": ModelSize(
            text_hidden=64,
            text_layers=1,
            text_heads=2,
            text_kv_heads=1,
            text_intermediate=128,
            vision_hidden=32,
            vision_layers=1,
            vision_heads=2,
        ),
        "level": "basic",
        "prompts": 2,
        "group": 2,
        "max_new_tokens": 8,
        "steps": 2,
        "repeats": 1,
        "sft_steps": 2,
        "sft_batch_size": 4,
        "val_screens": 4,
        "eval_every": 1,
        "ttt_max_steps": 2,
        "eval_batch_size": 4,
        "eval_max_new_tokens": 8,
    },
}


def ensure_release_model(work_dir: Path, hidden: int, layers: int) -> Path:
    """Build (once) the release-shaped model of job 2 under ``work_dir``."""
    from bench.logits_chunk import build_release_model

    path = work_dir / f"release-h{hidden}-l{layers}"
    if not (path / "config.json").exists():
        log.info("building the release-shaped model at %s", path)
        build_release_model(path, hidden, layers)
    return path


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench.grpo_vs_trl", description=__doc__.splitlines()[0], allow_abbrev=False
    )
    p.add_argument("--preset", choices=list(PRESETS), default="bench", help="size preset")
    p.add_argument("--label", default=None, help="label in the JSON (default: the preset)")
    p.add_argument("--out", type=Path, default=REPO / "bench/results/grpo_vs_trl.json")
    p.add_argument("--work-dir", type=Path, default=REPO / "bench/out")
    p.add_argument("--systems", default="ours,trl", help="comma list, run in this order")
    p.add_argument("--repeats", type=int, default=None, help="throughput repeats per system [3]")
    p.add_argument("--steps", type=int, default=None, help="measured steps per repeat [20]")
    p.add_argument("--warmup-steps", type=int, default=1)
    p.add_argument("--prompts", type=int, default=None, help="B, screens per step [4]")
    p.add_argument("--group", type=int, default=None, help="G, completions per screen [8]")
    p.add_argument("--max-new-tokens", type=int, default=None, help="[24]")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--level", default=None, help="screen level [basic448]")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = all usable cores)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sft-steps", type=int, default=None, help="SFT start budget [150]")
    p.add_argument("--sft-batch-size", type=int, default=None, help="[16]")
    p.add_argument("--threshold", type=float, default=None, help="held-out accuracy to reach [0.5]")
    p.add_argument("--val-screens", type=int, default=None, help="[200]")
    p.add_argument("--eval-every", type=int, default=None, help="steps between evals [10]")
    p.add_argument("--ttt-max-steps", type=int, default=None, help="step cap [200]")
    p.add_argument(
        "--ttt-repeats",
        type=int,
        default=1,
        help="time-to-threshold runs per system, run r with seed --seed + r (0 disables it)",
    )
    p.add_argument(
        "--ours-set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="extra dotted overrides for ours only, e.g. grpo.shared_prefix=false (the plain "
        "path, the 'before' of docs/BENCHMARKS.md); recorded in the JSON",
    )
    p.add_argument("--worker-timeout", type=float, default=4 * 3600.0)
    return p


def configs_from_args(
    args: argparse.Namespace,
) -> tuple[ModelSize, JobConfig, SFTStart, ThresholdConfig, int]:
    """Model, job, SFT start and threshold configs: preset values unless a flag overrides."""
    preset = PRESETS[args.preset]

    def pick(flag: str, default: Any) -> Any:
        value = getattr(args, flag)
        return value if value is not None else preset.get(flag, default)

    job = JobConfig(
        level=pick("level", "basic448"),
        prompts_per_step=pick("prompts", 4),
        group_size=pick("group", 8),
        max_new_tokens=pick("max_new_tokens", 24),
        temperature=args.temperature,
        lr=args.lr,
        steps=pick("steps", 20),
        warmup_steps=args.warmup_steps,
        seed=args.seed,
        threads=args.threads,
        device=args.device,
    )
    sft = SFTStart(
        steps=pick("sft_steps", 150),
        batch_size=pick("sft_batch_size", 16),
        num_demos=preset.get("sft_num_demos", 0),
    )
    ttt = ThresholdConfig(
        threshold=pick("threshold", 0.5),
        val_screens=pick("val_screens", 200),
        eval_every=pick("eval_every", 10),
        max_steps=pick("ttt_max_steps", 200),
        eval_batch_size=preset.get("eval_batch_size", 64),
        eval_max_new_tokens=preset.get("eval_max_new_tokens", 24),
    )
    repeats = pick("repeats", 3)
    if repeats < 1:
        raise BenchError(f"--repeats must be >= 1, got {repeats}")
    return preset.get("size", ModelSize()), job, sft, ttt, repeats


def preset_ours_job(
    preset: str, work_dir: Path, *, steps: int, threads: int = 0, seed: int = 0
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A throughput job of ours on ``preset``'s job, from its (cached) SFT start.

    For the tools that run our step alone (``bench/profile_grpo.py``, ``bench/omp_policy.py``).

    Returns:
        (worker job without ``run_dir``, the SFT start's info as ``ensure_sft_start`` gives it).
    """
    args = build_parser().parse_args(
        ["--preset", preset, "--steps", str(steps), "--threads", str(threads), "--seed", str(seed)]
    )
    size, job, sft_cfg, ttt, _ = configs_from_args(args)
    work = work_dir.resolve()
    release = PRESETS[preset].get("release_model")
    model_dir = ensure_release_model(work, **release) if release else ensure_bench_model(size, work)
    sft = ensure_sft_start(model_dir, size, job, sft_cfg, ttt, work)
    job_dict = {
        "job": dataclasses.asdict(job),
        "ttt": dataclasses.asdict(ttt),
        "model_dir": sft["path"],
        "family": size.family,
        "system": "ours",
        "mode": "throughput",
        "ours_set": list(PRESETS[preset].get("ours_set", [])),
    }
    return job_dict, sft


def system_summary(repeats: list[dict[str, Any]]) -> dict[str, Any]:
    """Median / min / max of each per-repeat number."""
    out = {
        k: summarize([r[k] for r in repeats])
        for k in (
            "samples_per_s",
            "step_seconds",
            "peak_rss_mb",
            "maxrss_mb",
            "reward_mean",
            "completion_tokens_mean",
        )
    }
    for b in ("generate", "logprob", "update", "other"):
        out[f"{b}_s"] = summarize([r["buckets"][b] for r in repeats])
    return out


def threshold_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    reached = [r for r in runs if r["reached"]]
    return {
        "reached": f"{len(reached)}/{len(runs)}",
        "seconds": summarize([r["seconds"] for r in reached]),
        "steps": summarize([r["steps"] for r in reached]),
    }


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def aggregate(report: dict[str, Any]) -> None:
    """Fill summaries, ``speedup`` (ours / TRL samples per second) and time-to-threshold ratios."""
    tp = report["throughput"]
    for system in tp:
        if tp[system]["repeats"]:
            tp[system]["summary"] = system_summary(tp[system]["repeats"])
    if all(tp.get(s, {}).get("summary") for s in SYSTEMS):
        ours, trl = tp["ours"]["summary"]["samples_per_s"], tp["trl"]["summary"]["samples_per_s"]
        report["speedup"] = ratio(ours["median"], trl["median"])
        report["speedup_range"] = [ratio(ours["min"], trl["max"]), ratio(ours["max"], trl["min"])]
    ttt = report["time_to_threshold"]
    for system in SYSTEMS:
        if ttt.get(system, {}).get("runs"):
            ttt[system]["summary"] = threshold_summary(ttt[system]["runs"])
    if all(ttt.get(s, {}).get("summary") for s in SYSTEMS):
        ttt["trl_over_ours_seconds"] = ratio(
            ttt["trl"]["summary"]["seconds"]["median"], ttt["ours"]["summary"]["seconds"]["median"]
        )


def write(report: dict[str, Any], path: Path) -> None:
    from vlagent.io import atomic_write_json

    aggregate(report)
    atomic_write_json(path, report)


def run_benchmark(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the whole benchmark; return (and write) the report."""
    from bench import ours, trl_peer

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    size, job, sft_cfg, ttt, repeats = configs_from_args(args)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown or not systems:
        raise BenchError(f"--systems: unknown {unknown}; known: {', '.join(SYSTEMS)}")
    if "trl" in systems:
        try:
            import trl  # noqa: F401
        except ImportError as err:
            raise BenchError("TRL is not installed: pip install -e '.[bench]'") from err
    ours_set = list(PRESETS[args.preset].get("ours_set", [])) + list(args.ours_set)
    work = args.work_dir.resolve()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    runs_dir = work / "runs" / stamp
    release = PRESETS[args.preset].get("release_model")
    model_dir = ensure_release_model(work, **release) if release else ensure_bench_model(size, work)
    sft = ensure_sft_start(model_dir, size, job, sft_cfg, ttt, work)
    log.info("SFT start %s: val accuracy %.3f", sft["path"], sft["val_accuracy"])
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "grpo_vs_trl",
        "label": args.label or args.preset,
        "command": " ".join(["python -m bench.grpo_vs_trl", *argv]),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "complete": False,
        "machine": machine_info(job.device),
        "config": {
            "preset": args.preset,
            "model": {"release_model": release} if release else dataclasses.asdict(size),
            "job": dataclasses.asdict(job) | {"threads_resolved": job.resolved_threads()},
            "sft_start": dataclasses.asdict(sft_cfg),
            "threshold": dataclasses.asdict(ttt),
            "throughput_repeats": repeats,
            "threshold_repeats": args.ttt_repeats,
            "systems": systems,
            "ours_overrides": ours.overrides(
                job, sft["path"], size.family, Path("<run_dir>"), job.total_steps, None
            )
            + ours_set,
            "trl_grpo_config": {
                k: v
                for k, v in trl_peer.grpo_config_kwargs(
                    job, Path("<run_dir>"), job.total_steps
                ).items()
                if k != "output_dir"
            }
            | {"generation_kwargs": {"suppress_tokens": "vlagent forbidden_token_ids"}},
            "trl_optimizer": "torch.optim.AdamW(lr=job.lr, weight_decay=0) passed as optimizers=",
        },
        "sft_start": sft,
        "throughput": {s: {"repeats": []} for s in systems},
        "time_to_threshold": {
            "threshold": ttt.threshold,
            **{s: {"runs": []} for s in systems},
        },
        "checks": {},
    }
    if args.ttt_repeats and sft["val_accuracy"] >= ttt.threshold:
        report["warnings"] = [
            f"the SFT start already scores {sft['val_accuracy']:.3f} >= threshold {ttt.threshold}"
        ]
    base = {
        "job": dataclasses.asdict(job),
        "ttt": dataclasses.asdict(ttt),
        "model_dir": sft["path"],
        "family": size.family,
        "ours_set": ours_set,
    }
    for r in range(repeats):
        for system in systems:
            name = f"tp-{system}-r{r}"
            log.info("throughput %s repeat %d/%d", system, r + 1, repeats)
            res = run_worker(
                {**base, "system": system, "mode": "throughput", "run_dir": str(runs_dir / name)},
                runs_dir,
                name,
                args.worker_timeout,
            )
            res["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
            if "checks" in res:
                report["checks"][system] = res.pop("checks")
            report["throughput"][system]["repeats"].append(res)
            write(report, args.out)
    for r in range(args.ttt_repeats):
        for system in systems:
            name = f"ttt-{system}-r{r}"
            log.info("time-to-threshold %s run %d/%d", system, r + 1, args.ttt_repeats)
            seeded = {**base, "job": {**base["job"], "seed": job.seed + r}}  # a seed per run
            res = run_worker(
                {**seeded, "system": system, "mode": "ttt", "run_dir": str(runs_dir / name)},
                runs_dir,
                name,
                args.worker_timeout,
            )
            res.pop("checks", None)
            res["seed"] = job.seed + r
            report["time_to_threshold"][system]["runs"].append(res)
            write(report, args.out)
    report["complete"] = True
    write(report, args.out)
    return report


def worker_main(job_path: str) -> int:
    """Entry of a worker process: run one system once and write its result JSON."""
    from vlagent.io import atomic_write_json
    from vlagent.models.loading import quiet_transformers

    quiet_transformers()
    job = json.loads(Path(job_path).read_text())
    if job["system"] == "ours":
        from bench.ours import run
    else:
        from bench.trl_peer import run
    atomic_write_json(job["result_path"], run(job))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if argv[:1] == ["_worker"]:
        return worker_main(argv[1])
    try:
        report = run_benchmark(argv)
    except BenchError as err:
        sys.stderr.write(f"bench.grpo_vs_trl: error: {err}\n")
        return 2
    sys.stdout.write(format_summary(report))
    return 0


def format_summary(report: dict[str, Any]) -> str:
    """A few lines for the terminal: samples/s per system, speedup, time to threshold."""
    lines = [f"GRPO vs TRL ({report['label']}):"]
    for system, data in report["throughput"].items():
        s = data.get("summary", {}).get("samples_per_s")
        if s and s["median"] is not None:
            lines.append(
                f"  {system:5s} {s['median']:.2f} samples/s (min {s['min']:.2f}, max {s['max']:.2f})"
            )
    if report.get("speedup") is not None:
        lines.append(f"  speedup ours/TRL: {report['speedup']:.2f}x")
    for system in SYSTEMS:
        t = report["time_to_threshold"].get(system, {}).get("summary")
        if t:
            sec = t["seconds"]["median"]
            lines.append(
                f"  {system:5s} reached {report['time_to_threshold']['threshold']}: {t['reached']}"
                + (f", median {sec:.1f} s" if sec is not None else "")
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
