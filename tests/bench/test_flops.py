"""bench/flops.py: FLOP formulas by hand on a 1-layer case, and against torch's FlopCounterMode."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from bench import flops as F
from bench.common import REPO, BenchError

TEXT = F.TextDims(hidden=8, layers=1, heads=2, kv_heads=1, head_dim=4, intermediate=16, vocab=10)
VISION = F.VisionDims(hidden=4, intermediate=8, depth=1, patch_dim=6, merge=2, out_hidden=8)
LINEAR_OPS = ("aten.mm", "aten.addmm", "aten.convolution", "aten.convolution_backward")


def test_one_layer_by_hand():
    # Text, per token: q 8·8 + k 8·4 + v 8·4 + o 8·8 + MLP 3·8·16 = 576 multiply-adds = 1152 FLOPs.
    assert F.text_linear_flops(TEXT, 1) == 1152
    # Causal prefill of 3 tokens: 1 + 2 + 3 = 6 keys; QKᵀ and AV: 2 · 2 · (2 heads · 4) per key.
    assert F.text_attention_flops(TEXT, 3, 0) == 6 * 4 * 8 == 192
    # 2 tokens after 3 cached: 4 + 5 = 9 keys.
    assert F.text_attention_flops(TEXT, 2, 3) == 9 * 32
    assert F.lm_head_flops(TEXT, 1) == 2 * 10 * 8
    # Vision, one image of 2 × 2 patches (n = 4), one block, hidden 4:
    parts = F.vision_flops(VISION, (1, 2, 2))
    assert parts == {
        "patch_embed": 2 * 4 * 6 * 4,  # 192
        "attn_linear": 2 * 4 * (4 * 12 + 4 * 4),  # qkv 4→12, out 4→4: 512
        "attn_core": 2 * (2 * 4 * 4 * 4),  # QKᵀ [4,4]@[4,4] and AV: 256
        "mlp": 2 * 4 * (4 * 8 + 8 * 4),  # fc1, fc2: 512
        "merger": 2 * 1 * 16 * 16 + 2 * 1 * 16 * 8,  # 1 merged token of width 16 → 16 → 8: 768
    }
    vision = 192 + 512 + 256 + 512 + 768  # 2240
    # One step: B = 1 prompt of 3 tokens, G = 2 rows of 3 completion tokens (2 fed back).
    step = F.step_flops(VISION, TEXT, F.StepShape(1, 2, 3, 3, (1, 2, 2)), recompute=False)
    gen = {
        "vision": vision,
        "prefill": 3 * 1152 + 192,  # 3648
        "decode": 2 * (2 * 1152 + 9 * 32),  # 5184
        "lm_head": (1 + 2 * 2) * 160,  # last prompt position + 2 fed tokens per row: 800
    }
    assert step["generate"] == gen
    assert step["recompute"] == dict.fromkeys(F.PARTS, 0.0)
    assert step["update"] == {
        "vision": 3 * vision - 192,  # backward needs no gradient for the pixels
        "prefill": 3 * 3648,
        "decode": 3 * 5184,
        "lm_head": 3 * 800,
    }
    assert (
        F.step_flops(VISION, TEXT, F.StepShape(1, 2, 3, 3, (1, 2, 2)), recompute=True)["recompute"]
        == gen
    )


def test_qwen25_windows_by_hand():
    # 6 × 6 patches = 3 × 3 merged tokens, windows of 2 merged: sides [2, 1] → windows of
    # 4, 2, 2, 1 merged = 16, 8, 8, 4 patches. Block 0 windowed, block 1 full attention.
    v = F.VisionDims(4, 8, 2, 6, 2, 8, gated_mlp=True, window=2, full_blocks=(1,))
    core = F.vision_flops(v, (1, 6, 6))["attn_core"]
    assert core == 4 * 4 * (16**2 + 8**2 + 8**2 + 4**2) + 4 * 4 * 36**2
    assert F.vision_flops(v, (1, 6, 6))["mlp"] == 2 * 2 * 36 * 4 * 8 * 3  # gate, up, down


@pytest.fixture(scope="module")
def tinies(tmp_path_factory):
    from vlagent.models.loading import load_policy
    from vlagent.models.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("flops")
    return {
        fam: load_policy(build_tiny_model(root / fam, family=fam, seed=0))
        for fam in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
    }


def _counted(counter: FlopCounterMode) -> tuple[float, float]:
    """(matmul FLOPs of linear layers and convolutions, FLOPs of bmm: attention on the math path)."""
    counts = {str(k): v for k, v in counter.get_flop_counts()["Global"].items()}
    return sum(counts.get(k, 0) for k in LINEAR_OPS), counts.get("aten.bmm", 0)


def _prompts(policy):
    from vlagent.batching import encode_prompts

    rng = np.random.default_rng(0)
    images = [rng.integers(0, 255, (224, 320, 3), dtype=np.uint8) for _ in range(2)]
    batch = encode_prompts(policy.processor, images, ["Click the red circle."] * 2)
    grid = tuple(int(x) for x in batch.inputs["image_grid_thw"][0].tolist())
    return batch, int(batch.inputs["input_ids"].shape[1]), grid


def _cores(v, t, s: F.StepShape) -> float:
    """Attention-core FLOPs inside ``forward_flops`` (vision chunks, causal prefill, decode)."""
    rows, fed = s.prompts * s.group_size, s.completion_tokens - 1
    return (
        s.prompts * F.vision_flops(v, s.grid)["attn_core"]
        + s.prompts * F.text_attention_flops(t, s.prompt_tokens, 0)
        + rows * F.text_attention_flops(t, fed, s.prompt_tokens)
    )


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_generate_matches_flop_counter(tinies, family):
    from vlagent.rollout.prefix import sample_with_prefix

    policy = tinies[family]
    v, t = F.dims_of(policy.model.config)
    batch, p_len, grid = _prompts(policy)
    # The math attention path runs as bmm, so the counter sees the attention cores too.
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        ids, _ = sample_with_prefix(
            policy.model, batch, group_size=3, max_new_tokens=6, temperature=1.0, greedy=False,
            forbidden=[], eos=[-1], pad_id=0, seed=0,
        )  # fmt: skip
    shape = F.StepShape(2, 3, p_len, ids.shape[1], grid)
    ours = F.step_flops(v, t, shape, recompute=False)["generate"]
    linear, bmm = _counted(fc)
    cores = _cores(v, t, shape)
    assert linear == pytest.approx(sum(ours.values()) - cores, rel=0.02)
    # The math path computes the whole P × P prefill square; our count is causal (P(P+1)/2).
    masked = 2 * 4 * t.heads * t.head_dim * t.layers * (p_len * p_len - p_len * (p_len + 1) / 2)
    assert bmm == pytest.approx(cores + masked, rel=0.02)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_update_matches_flop_counter(tinies, family):
    from vlagent.rollout.prefix import completion_logprobs_shared

    policy = tinies[family]
    v, t = F.dims_of(policy.model.config)
    batch, p_len, grid = _prompts(policy)
    ids = torch.randint(0, 100, (6, 5))
    with FlopCounterMode(display=False) as fc:
        logp = completion_logprobs_shared(
            policy.model, batch, torch.arange(2).repeat_interleave(3), ids, torch.ones(6, 5)
        )
        logp.sum().backward()
    shape = F.StepShape(2, 3, p_len, 5, grid)
    update = F.step_flops(v, t, shape, recompute=False)["update"]
    linear, _ = _counted(fc)  # CPU flash attention is not counted by torch: compare the rest
    assert linear == pytest.approx(sum(update.values()) - 3 * _cores(v, t, shape), rel=0.02)


def test_vision_tower_with_a_conv_matches_flop_counter(tinies):
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(tinies["qwen2_5_vl"].source)
    v, _ = F.dims_of(model.config)
    grid = (1, 20, 28)  # 10 × 14 merged: windows of 4 leave partial windows on both sides
    pixels = torch.randn(20 * 28, v.patch_dim)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        model.model.visual(pixels, grid_thw=torch.tensor([grid]))
    counts = {str(k): x for k, x in fc.get_flop_counts()["Global"].items()}
    parts = F.vision_flops(v, grid)
    assert counts["aten.convolution"] == pytest.approx(parts["patch_embed"], rel=1e-6)
    assert counts["aten.bmm"] == pytest.approx(parts["attn_core"], rel=1e-6)
    rest = parts["attn_linear"] + parts["mlp"] + parts["merger"]
    assert counts["aten.addmm"] + counts.get("aten.mm", 0) == pytest.approx(rest, rel=1e-6)


def test_matmul_peak_is_a_positive_rate():
    peak = F.matmul_peak(1, n=128, repeats=2)
    assert peak["threads"] == 1 and len(peak["wall_gflops"]) == len(peak["cpu_gflops"]) == 2
    assert peak["peak_wall_gflops"] == max(peak["wall_gflops"]) > 0
    assert peak["peak_gflops"] == max(peak["cpu_gflops"]) > 0


def test_recorded_times_and_bad_results_file(tmp_path):
    rec = F._recorded(REPO / "bench/results/grpo_vs_trl.json", "ours")
    assert set(rec["seconds"]) == {"generate", "recompute", "update"}
    assert rec["seconds"]["update"] > 0 and rec["job"]["group_size"] >= 2
    with pytest.raises(BenchError, match="no such file"):
        F._recorded(tmp_path / "missing.json", "ours")
    (tmp_path / "r.json").write_text(json.dumps({"throughput": {}}))
    with pytest.raises(BenchError, match="throughput.ours"):
        F._recorded(tmp_path / "r.json", "ours")


def test_fraction_of_peak():
    flops = {"generate": {"vision": 2e9, "prefill": 0.0}, "update": {"vision": 0.0}}
    out = F._fractions(flops, {"generate": 0.5, "update": 0.0}, peak=40.0)
    assert out["generate"]["achieved_gflops"] == pytest.approx(4.0)
    assert out["generate"]["fraction_of_peak"] == pytest.approx(0.1)
    assert out["update"]["fraction_of_peak"] is None  # no recorded time: no rate
