"""FLOPs of one GRPO step of the bench job, and the share of this machine's matmul peak it reaches.

    python -m bench.flops --matmul-peak          # writes bench/results/flops.json
    python -m bench.flops                        # FLOPs only, no peak measurement

A matmul [m, k] @ [k, n] is 2·m·n·k FLOPs; only matmuls count (not norms, activations,
softmax, rotary, the optimizer). Pure functions of the model config and the step's shapes:

- **vision tower** per image of N patches: patch embedding (N × C·T·P·P → D), per block the
  qkv / out projections, the attention core (QKᵀ and AV over each chunk the kernel sees: the
  whole image, or Qwen2.5-VL's windows) and the MLP (2 matmuls, 3 when gated), then the patch
  merger (and Qwen3-VL's deepstack mergers).
- **prefill**: the text decoder over each distinct prompt's P tokens (causal attention).
- **decode**: each of the B·G rows' completion tokens, one at a time, attending to the cached
  prompt and earlier tokens.
- **lm_head**: vocab × hidden per position whose logits are computed (the last prompt
  position, then one per decoded token), counted apart from the decoder.

Phases of a step with a shared prefix (``vlagent/rollout/prefix.py``): ``generate`` is the
sum above; ``recompute`` (teacher-forced log-probs, no grad) does the same matmuls in one
forward; ``update`` = forward + backward = 3 × forward less one patch-embedding forward (no
pixel gradient). ``--matmul-peak`` measures the fp32 ``torch.mm`` rate on 1 and 2 threads and
turns the recorded phase times of ``bench/results/grpo_vs_trl.json`` into achieved GFLOP/s and
a fraction of that peak.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, BenchError, JobConfig, ModelSize, ensure_bench_model, machine_info

PARTS = ("vision", "prefill", "decode", "lm_head")  # of every phase (module docstring)


@dataclasses.dataclass(frozen=True)
class VisionDims:
    """Vision-tower sizes. ``patch_dim`` = C·T·P·P values per patch; ``window`` > 0: Qwen2.5-VL
    window side in merged tokens (blocks not in ``full_blocks`` attend within windows)."""

    hidden: int
    intermediate: int
    depth: int
    patch_dim: int
    merge: int
    out_hidden: int
    gated_mlp: bool = False
    window: int = 0
    full_blocks: tuple[int, ...] = ()
    deepstack: int = 0


@dataclasses.dataclass(frozen=True)
class TextDims:
    """Text-decoder sizes (grouped-query attention: ``kv_heads`` ≤ ``heads``; gated MLP)."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int


@dataclasses.dataclass(frozen=True)
class StepShape:
    """One GRPO step: B prompts of P tokens, each with one image of ``grid`` (t, h, w) patches,
    G completions of ``completion_tokens`` tokens each (a mean or a padded length)."""

    prompts: int
    group_size: int
    prompt_tokens: float
    completion_tokens: float
    grid: tuple[int, int, int]


def dims_of(config: Any) -> tuple[VisionDims, TextDims]:
    """Sizes of a transformers Qwen2-VL / Qwen2.5-VL / Qwen3-VL config."""
    v, t = config.vision_config, config.text_config
    kind = config.model_type
    if kind not in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl"):
        raise BenchError(f"model_type {kind!r}: only qwen2_vl, qwen2_5_vl, qwen3_vl are counted")
    qwen2, qwen25 = kind == "qwen2_vl", kind == "qwen2_5_vl"
    hidden = v.embed_dim if qwen2 else v.hidden_size
    vision = VisionDims(
        hidden=hidden,
        intermediate=int(hidden * v.mlp_ratio) if qwen2 else v.intermediate_size,
        depth=v.depth,
        patch_dim=v.in_channels * v.temporal_patch_size * v.patch_size**2,
        merge=v.spatial_merge_size,
        out_hidden=v.hidden_size if qwen2 else v.out_hidden_size,
        gated_mlp=qwen25,
        window=v.window_size // v.spatial_merge_size // v.patch_size if qwen25 else 0,
        full_blocks=tuple(getattr(v, "fullatt_block_indexes", ()) or ()),
        deepstack=len(getattr(v, "deepstack_visual_indexes", ()) or ()),
    )
    head_dim = getattr(t, "head_dim", None) or t.hidden_size // t.num_attention_heads
    text = TextDims(
        t.hidden_size, t.num_hidden_layers, t.num_attention_heads, t.num_key_value_heads,
        head_dim, t.intermediate_size, t.vocab_size,
    )  # fmt: skip
    return vision, text


def _chunks(n: int, size: int) -> list[int]:
    """Lengths of ``n`` cut into pieces of ``size`` (the last one shorter)."""
    return [size] * (n // size) + ([n % size] if n % size else [])


def vision_flops(v: VisionDims, grid: tuple[int, int, int]) -> dict[str, float]:
    """Matmul FLOPs of one image of ``grid`` = (t, h, w) patches through the vision tower.

    Returns:
        ``patch_embed``, ``attn_linear`` (qkv + out), ``attn_core`` (QKᵀ + AV), ``mlp``,
        ``merger`` (incl. deepstack mergers).
    """
    t, h, w = grid
    n = t * h * w
    d = v.hidden
    full = t * 4 * d * (h * w) ** 2  # QKᵀ and AV, 2·n·n·d each, per frame
    if v.window:
        m2 = v.merge**2
        wins = [
            a * b * m2
            for a in _chunks(h // v.merge, v.window)
            for b in _chunks(w // v.merge, v.window)
        ]
        windowed = t * sum(4 * d * s * s for s in wins)
    else:
        windowed = full
    n_full = sum(1 for i in range(v.depth) if not v.window or i in v.full_blocks)
    merged, wide = n / v.merge**2, d * v.merge**2
    per_merger = 2 * merged * wide * wide + 2 * merged * wide * v.out_hidden
    return {
        "patch_embed": 2.0 * n * v.patch_dim * d,
        "attn_linear": v.depth * 2.0 * n * d * 4 * d,
        "attn_core": float(n_full * full + (v.depth - n_full) * windowed),
        "mlp": v.depth * 2.0 * n * d * v.intermediate * (3 if v.gated_mlp else 2),
        "merger": (1 + v.deepstack) * per_merger,
    }


def text_linear_flops(t: TextDims, tokens: float) -> float:
    """Projections (q, k, v, o) and gated MLP of every decoder layer for ``tokens`` tokens."""
    q, kv = t.heads * t.head_dim, t.kv_heads * t.head_dim
    per_token = t.hidden * q + 2 * t.hidden * kv + q * t.hidden + 3 * t.hidden * t.intermediate
    return 2.0 * tokens * per_token * t.layers


def text_attention_flops(t: TextDims, queries: float, cached: float) -> float:
    """Causal attention core (QKᵀ + AV) of ``queries`` new tokens after ``cached`` keys: query i
    (1-based) attends to cached + i keys; 4·heads·head_dim FLOPs per key, every layer."""
    keys = queries * cached + queries * (queries + 1) / 2
    return 4.0 * t.heads * t.head_dim * keys * t.layers


def lm_head_flops(t: TextDims, positions: float) -> float:
    """The LM head (vocab × hidden) over ``positions`` positions."""
    return 2.0 * positions * t.vocab * t.hidden


def forward_flops(v: VisionDims, t: TextDims, s: StepShape) -> dict[str, float]:
    """One pass over a step with a shared prefix, by part (:data:`PARTS`).

    B images through the vision tower, B prompts prefilled (LM head on their last position),
    then B·G rows of T completion tokens: the first is predicted from the prompt's logits, the
    other T − 1 are fed after the prompt (the sampler one at a time, the teacher-forced passes
    at once: the same matmuls).
    """
    rows, fed = s.prompts * s.group_size, max(s.completion_tokens - 1, 0.0)
    return {
        "vision": s.prompts * sum(vision_flops(v, s.grid).values()),
        "prefill": s.prompts
        * (text_linear_flops(t, s.prompt_tokens) + text_attention_flops(t, s.prompt_tokens, 0.0)),
        "decode": rows
        * (text_linear_flops(t, fed) + text_attention_flops(t, fed, s.prompt_tokens)),
        "lm_head": lm_head_flops(t, s.prompts + rows * fed),
    }


def step_flops(
    v: VisionDims, t: TextDims, s: StepShape, *, recompute: bool
) -> dict[str, dict[str, float]]:
    """FLOPs by phase (generate, recompute, update) and part of one step; ``recompute`` False:
    the sampler's log-probs are reused (the bench job), so that phase is 0."""
    fwd = forward_flops(v, t, s)
    update = {k: 3.0 * x for k, x in fwd.items()}
    update["vision"] -= s.prompts * vision_flops(v, s.grid)["patch_embed"]  # no pixel gradient
    return {
        "generate": fwd,
        "recompute": dict(fwd) if recompute else dict.fromkeys(PARTS, 0.0),
        "update": update,
    }


def matmul_peak(threads: int, n: int = 2048, repeats: int = 6) -> dict[str, Any]:
    """fp32 ``torch.mm`` of two n × n matrices on ``threads`` threads, after one warm-up.

    Each repeat gives a wall rate (2n³ / wall seconds) and an on-CPU rate (threads · 2n³ /
    process CPU seconds): what the threads do while they run, which other jobs on shared cores
    do not lower (they lower the wall rate) and which equals the wall rate on an idle machine.
    ``peak_gflops`` is the best on-CPU rate: still a lower bound of the peak.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    work = 2.0 * n**3
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        torch.mm(a, b)
        wall, cpu = [], []
        for _ in range(repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            torch.mm(a, b)
            w, c = time.perf_counter() - w0, time.process_time() - c0
            wall.append(work / w / 1e9)
            cpu.append(threads * work / max(c, 1e-9) / 1e9)
    finally:
        torch.set_num_threads(before)
    peaks = {"peak_wall_gflops": max(wall), "peak_gflops": max(cpu)}
    return {"threads": threads, "n": n, "wall_gflops": wall, "cpu_gflops": cpu, **peaks}


def bench_shape(
    work_dir: Path, release: dict[str, int] | None = None, samples: int = 8
) -> tuple[Any, float, tuple[int, int, int]]:
    """The job's model config, mean prompt length and image grid, from real prompts.

    Builds the model in ``work_dir`` — the bench model (``bench.common.ModelSize``, job 1), or
    with ``release`` (``{"hidden", "layers"}``) the release-shaped model of job 2 — and renders
    the first ``samples`` training prompts of the grounding world exactly as the GRPO run does.
    """
    from bench.ours import overrides
    from vlagent.config import load_config
    from vlagent.models.loading import load_policy
    from vlagent.rollout.trajectory import Trajectory
    from vlagent.worlds.base import make_world

    size, job = ModelSize(), JobConfig()
    if release:
        from bench.grpo_vs_trl import ensure_release_model

        size = ModelSize(family="qwen3_vl")
        model_dir = ensure_release_model(work_dir, **release)
    else:
        model_dir = ensure_bench_model(size, work_dir)
    cfg = load_config(None, overrides(job, str(model_dir), size.family, work_dir / "run", 1, None))
    policy = load_policy(model_dir)
    world = make_world(cfg, policy)
    lengths, grids = [], set()
    try:
        adapter = world.adapter()
        for tid in world.task_ids("train", 0, samples):
            env = world.make_env("train")
            obs, info = env.reset(seed=job.seed, options={"task_id": tid})
            traj = Trajectory(task_id=tid)
            adapter.start(traj, obs, info)
            env.close()
            prompt = traj.segments[0].prompt
            lengths.append(len(prompt))
            grids.add(tuple(int(x) for x in prompt.image_grid_thw[0].tolist()))
    finally:
        world.close()
    if len(grids) != 1:  # one screen size in the bench job
        raise BenchError(f"bench prompts have several image grids {sorted(grids)}; expected one")
    return policy.model.config, statistics.mean(lengths), grids.pop()


def _recorded(path: Path, system: str) -> dict[str, Any]:
    """Median phase seconds, completion length and threads of ``system`` in a grpo_vs_trl JSON."""
    if not path.is_file():
        raise BenchError(f"--results {path}: no such file (run python -m bench.grpo_vs_trl first)")
    report = json.loads(path.read_text())
    try:
        summary = report["throughput"][system]["summary"]
        job = report["config"]["job"]
    except KeyError as exc:
        raise BenchError(f"--results {path}: no throughput.{system}.summary / config.job") from exc
    keys = {"generate": "generate_s", "recompute": "logprob_s", "update": "update_s"}
    return {
        "source": str(path.relative_to(REPO) if path.is_relative_to(REPO) else path),
        "created": report.get("created"),
        "system": system,
        "seconds": {phase: summary[key]["median"] for phase, key in keys.items()},
        "completion_tokens_mean": summary["completion_tokens_mean"]["median"],
        "cpu_model": report.get("machine", {}).get("cpu_model"),
        "job": job,
        "release_model": report["config"].get("model", {}).get("release_model"),
    }


def _fractions(flops: dict[str, dict[str, float]], seconds: dict[str, float], peak: float):
    """Per phase: GFLOP, recorded seconds, achieved GFLOP/s and its fraction of ``peak``."""
    out = {}
    for phase, parts in flops.items():
        total, sec = sum(parts.values()), seconds.get(phase) or 0.0
        rate = total / sec / 1e9 if sec > 0 else None
        out[phase] = {
            "gflop": total / 1e9,
            "seconds": sec,
            "achieved_gflops": rate,
            "fraction_of_peak": rate / peak if rate is not None else None,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--matmul-peak", action="store_true", help="measure the fp32 torch.mm peak")
    p.add_argument("--results", type=Path, default=REPO / "bench/results/grpo_vs_trl.json")
    p.add_argument("--system", default="ours", help="which system's recorded step times")
    p.add_argument("--mm-size", type=int, default=2048, help="side of the square fp32 matrices")
    p.add_argument("--repeats", type=int, default=6, help="timed torch.mm calls per thread count")
    p.add_argument("--work-dir", type=Path, default=REPO / "bench/out")
    p.add_argument("--out", type=Path, default=REPO / "bench/results/flops.json")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its threads
    from vlagent.io import atomic_write_json

    t_start = time.perf_counter()
    machine = machine_info()
    rec = _recorded(args.results, args.system)
    config, prompt_len, grid = bench_shape(args.work_dir, rec["release_model"])
    vis, txt = dims_of(config)
    job = rec["job"]
    shapes = {
        "useful": rec["completion_tokens_mean"],  # mean sampled tokens per row
        "padded": float(job["max_new_tokens"]),  # upper bound: every row padded to the maximum
    }
    report: dict[str, Any] = {
        "kind": "flops",
        "command": "python -m bench.flops " + " ".join(sys.argv[1:] if argv is None else argv),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine,
        "model": {"vision": dataclasses.asdict(vis), "text": dataclasses.asdict(txt)},
        "recorded": {k: v for k, v in rec.items() if k != "job"},
        "job": "job 2 (release-shaped model)" if rec["release_model"] else "job 1 (bench model)",
        "recorded_on_this_cpu": rec["cpu_model"] == machine["cpu_model"],
        "steps": {},
    }
    threads = int(job.get("threads_resolved") or len(os.sched_getaffinity(0)))
    peaks = {}
    if args.matmul_peak:
        for k in sorted({1, 2, threads}):
            peaks[k] = matmul_peak(k, args.mm_size, args.repeats)
        report["matmul_peak"] = list(peaks.values())
        report["note"] = (
            "peak = best on-CPU rate of the repeats (matmul_peak), measured now; the phase "
            "seconds are the recorded run's, so fractions mean something only when "
            "recorded_on_this_cpu is true."
        )
    for name, tokens in shapes.items():
        shape = StepShape(job["prompts_per_step"], job["group_size"], prompt_len, tokens, grid)
        flops = step_flops(vis, txt, shape, recompute=rec["seconds"]["recompute"] > 0)
        entry: dict[str, Any] = {"shape": dataclasses.asdict(shape), "flops": flops}
        entry["vision_parts_per_image"] = vision_flops(vis, grid)
        if peaks:
            entry["phases"] = _fractions(flops, rec["seconds"], peaks[threads]["peak_gflops"])
            entry["peak_threads"] = threads
        report["steps"][name] = entry
    report["seconds"] = round(time.perf_counter() - t_start, 1)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    atomic_write_json(args.out, report)
    sys.stdout.write(format_summary(report) + "\n")
    return 0


def format_summary(report: dict[str, Any]) -> str:
    """Human-readable lines of a report."""
    lines = []
    for p in report.get("matmul_peak", []):
        lines.append(
            f"fp32 mm {p['n']}², {p['threads']} thread(s): on-CPU peak {p['peak_gflops']:.1f}, "
            f"wall peak {p['peak_wall_gflops']:.1f} GFLOP/s"
        )
    if "recorded_on_this_cpu" in report and not report["recorded_on_this_cpu"]:
        lines.append(
            f"recorded times come from another CPU ({report['recorded']['cpu_model']}): "
            "fractions of this machine's peak are indicative only"
        )
    for name, entry in report["steps"].items():
        s = entry["shape"]
        lines.append(
            f"[{name}] B={s['prompts']} G={s['group_size']} P={s['prompt_tokens']:.1f} "
            f"T={s['completion_tokens']:.1f} grid={s['grid']}"
        )
        for phase, parts in entry["flops"].items():
            row = " ".join(f"{k}={x / 1e9:.2f}" for k, x in parts.items())
            ph = entry.get("phases", {}).get(phase) or {}
            extra = ""
            if ph.get("achieved_gflops") is not None:
                extra = f" | {ph['achieved_gflops']:.1f} GFLOP/s, "
                extra += f"{100 * ph['fraction_of_peak']:.1f} % of peak"
            lines.append(f"  {phase:9s} {sum(parts.values()) / 1e9:7.2f} GFLOP ({row}){extra}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
