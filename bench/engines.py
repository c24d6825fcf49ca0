"""GRPO on CPU with the ``vllm`` rollout engine against the ``hf`` engine, on one job.

    bash scripts/setup_vllm.sh          # once: the vLLM venv the engine's worker runs in
    python -m bench.engines             # writes bench/results/engines_cpu.json

Job: the quickstart task (``basic`` screens, one shape), a tiny Qwen2.5-VL built here (text
hidden 128, 4 heads: vLLM's CPU attention needs head_dim >= 32), fp32, 4 prompts x G = 8,
20 new tokens, ``--steps`` GRPO steps per run. Each run is a fresh ``vlagent train`` process
(``grpo.engine=hf`` or ``vllm``); runs alternate hf / vllm ``--repeats`` times. From each run's
``metrics.jsonl`` (step 1 left out: engine start-up and first compilations):
samples/s (episodes per second of the whole step), generate / update / push seconds per step,
and ``logp_gap``, the mean |behaviour - trainer| log-prob of the sampled tokens: the off-policy
error of the engine (hf is exact by construction: it is the trainer's own forward). The vLLM
worker's start-up (20-30 s here) is reported apart, not in any step.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, BenchError, machine_info

log = logging.getLogger("bench.engines")
SCHEMA_VERSION = 1
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"


def _overrides(model: Path, out: Path, engine: str, steps: int) -> list[str]:
    return [
        "world=grounding",
        "task.level=basic",
        f"model.path={model}",
        "model.build_tiny=false",
        f"grpo.engine={engine}",
        f"grpo.vllm_python={VLLM_PYTHON}",
        f"grpo.steps={steps}",
        "grpo.prompts_per_step=4",
        "grpo.group_size=8",
        "grpo.max_new_tokens=20",
        "grpo.max_seconds=0",
        "eval.every=0",
        "eval.monitor_screens=0",
        "run.samples_every=0",
        "run.checkpoint_every=0",
        "run.progress=false",
        "run.threads=1",
        f"run.out_dir={out}",
    ]


def _one_run(model: Path, out: Path, engine: str, steps: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "vlagent.cli", "train", "--config", "grpo"]
    cmd += _overrides(model, out, engine, steps)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise BenchError(f"{engine} run failed:\n{proc.stderr[-3000:]}")
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r.get("phase") == "grpo" and r["step"] > 1]
    if not rows:
        raise BenchError(f"{engine} run wrote no GRPO steps after step 1")

    def med(key: str) -> float:
        vals = [float(r[key]) for r in rows if key in r]
        return statistics.median(vals) if vals else 0.0

    steps_s = sum(float(r.get("time/generate", 0)) + float(r.get("time/update", 0)) for r in rows)
    return {
        "engine": engine,
        "samples_per_s": med("samples_per_s"),
        "generate_s": med("time/generate"),
        "update_s": med("time/update"),
        "push_weights_s": med("time/push_weights"),
        "old_logprob_s": med("time/old_logprob"),
        "logp_gap": med("logp_gap") if engine != "hf" else 0.0,
        "logp_gap_max": max((float(r.get("logp_gap", 0.0)) for r in rows), default=0.0),
        "steps_timed": len(rows),
        "step_seconds_total": steps_s,
        "process_wall_s": wall,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--work", default="/tmp/vlagent_bench_engines")
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "engines_cpu.json"))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if not VLLM_PYTHON.exists():
        raise BenchError(f"{VLLM_PYTHON} is missing: run `bash scripts/setup_vllm.sh` first")
    from vlagent.io import atomic_write_json
    from vlagent.models.tiny import build_tiny_model

    work = Path(args.work)
    model = build_tiny_model(work / "model", family="qwen2_5_vl")
    runs: list[dict[str, Any]] = []
    for rep in range(args.repeats):
        for engine in ("hf", "vllm"):
            log.info("repeat %d: %s", rep, engine)
            runs.append(_one_run(Path(model), work / f"{engine}_{rep}", engine, args.steps))
    summary = {}
    for engine in ("hf", "vllm"):
        mine = [r for r in runs if r["engine"] == engine]
        summary[engine] = {
            k: statistics.median(r[k] for r in mine)
            for k in ("samples_per_s", "generate_s", "update_s", "push_weights_s", "logp_gap")
        }
    summary["vllm_over_hf_samples_per_s"] = (
        summary["vllm"]["samples_per_s"] / summary["hf"]["samples_per_s"]
    )
    result = {
        "schema_version": SCHEMA_VERSION,
        "command": " ".join(["python -m bench.engines", *(argv or sys.argv[1:])]),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "load_average_at_end": list(os.getloadavg()),
        "config": {
            **vars(args),
            "job": _overrides(Path("MODEL"), Path("OUT"), "ENGINE", args.steps),
        },
        "runs": runs,
        "median": summary,
    }
    atomic_write_json(args.out, result)
    log.info("wrote %s: %s", args.out, json.dumps(summary))
    return result


if __name__ == "__main__":
    main()
