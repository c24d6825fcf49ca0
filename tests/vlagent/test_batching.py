"""Prompt batching, completion masks, and log-prob agreement between sampler and trainer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vlagent.batching import (
    completion_logprobs,
    completion_mask,
    encode_prompts,
    forbidden_token_ids,
    repeat_prompts,
)
from vlagent.models.loading import load_policy
from vlagent.rollout.hf import generate


def _images(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (224, 224, 3), dtype=np.uint8) for _ in range(n)]


def test_completion_mask_hand_case():
    ids = torch.tensor([[5, 6, 9, 0, 0], [5, 9, 9, 7, 0], [5, 6, 7, 8, 4]])
    # eos = 9, pad = 0: up to and including the first eos
    mask = completion_mask(ids, [9], pad_id=0)
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]


def test_repeat_prompts_keeps_image_rows_together(tiny_dir):
    policy = load_policy(tiny_dir)
    imgs = _images(2)
    batch = encode_prompts(policy.processor, imgs, ["a", "bb bb"])
    rep = repeat_prompts(batch, 3)
    assert rep.inputs["input_ids"].shape[0] == 6
    rows = int(batch.inputs["image_grid_thw"][0].prod())
    pv, rpv = batch.inputs["pixel_values"], rep.inputs["pixel_values"]
    assert torch.equal(rpv[2 * rows : 3 * rows], pv[:rows])  # third copy of image 0
    assert torch.equal(rpv[3 * rows : 4 * rows], pv[rows:])  # first copy of image 1
    assert rep.frames == [batch.frames[0]] * 3 + [batch.frames[1]] * 3


def test_frames_match_processor_resize(tiny_dirs):
    policy = load_policy(tiny_dirs["qwen2_5_vl"])
    img = np.zeros((300, 500, 3), dtype=np.uint8)
    batch = encode_prompts(policy.processor, [img], ["x"])
    t, h, w = batch.inputs["image_grid_thw"][0].tolist()
    patch = policy.processor.image_processor.patch_size
    assert (batch.frames[0].resized.width, batch.frames[0].resized.height) == (w * patch, h * patch)
    assert (batch.frames[0].orig.width, batch.frames[0].orig.height) == (500, 300)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_behaviour_logprobs_match_teacher_forcing(tiny_dirs, family):
    """The sampler's log-probs (KV cache, incremental M-RoPE) equal a fresh forward pass."""
    policy = load_policy(tiny_dirs[family])
    prompts = encode_prompts(policy.processor, _images(2, 1), ["Click the red circle.", "Tap it"])
    ro = generate(
        policy, prompts, group_size=3, max_new_tokens=12, temperature=0.7, generator_seed=0
    )
    forbidden = forbidden_token_ids(policy.tokenizer)
    assert not torch.isin(ro.completion_ids, torch.tensor(forbidden)).any()
    with torch.no_grad():
        lp = completion_logprobs(
            policy.model,
            ro.row_prompts(),
            ro.completion_ids,
            ro.mask,
            temperature=0.7,
            forbidden=forbidden,
        )
    assert ro.mask.sum() > 0
    assert torch.allclose(lp, ro.behaviour_logprobs, atol=1e-4)


def test_generation_is_seeded(tiny_dir):
    policy = load_policy(tiny_dir)
    prompts = encode_prompts(policy.processor, _images(1), ["x"])
    a = generate(policy, prompts, group_size=4, max_new_tokens=8, generator_seed=5)
    b = generate(policy, prompts, group_size=4, max_new_tokens=8, generator_seed=5)
    assert torch.equal(a.completion_ids, b.completion_ids)
    assert a.group_ids.tolist() == [0, 0, 0, 0]
