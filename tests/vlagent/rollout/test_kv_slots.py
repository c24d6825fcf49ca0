"""The in-place decode cache (``rollout/kv_slots.py``) holds the same keys and values as
``DynamicCache`` with ``batch_select_indices`` + concatenation, so decoding gives the same logits."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from transformers.cache_utils import DynamicLayer

from vlagent.models.loading import load_policy
from vlagent.rollout.kv_slots import SlotLayer, expand_into_slots
from vlagent.rollout.prefix import prefill, text_positions
from vlagent.rollout.rows import batch_prompts
from vlagent.rollout.tokens import encode_prompt


def _layer(n=2, length=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    k, v = torch.randn(n, 2, length, 4, generator=g), torch.randn(n, 2, length, 4, generator=g)
    layer = DynamicLayer()
    layer.update(k, v)
    return layer, k, v


def test_slot_layer_matches_concatenation_and_falls_back_past_capacity():
    plain, k, v = _layer()
    slot = SlotLayer(k, v, capacity=5)
    g = torch.Generator().manual_seed(1)
    for _ in range(4):  # 3 + 4 = 7 > 5: the last two updates concatenate
        nk, nv = torch.randn(2, 2, 1, 4, generator=g), torch.randn(2, 2, 1, 4, generator=g)
        pk, pv = plain.update(nk, nv)
        sk, sv = slot.update(nk, nv)
        assert torch.equal(pk, sk) and torch.equal(pv, sv)
        assert slot.get_seq_length() == plain.get_seq_length()


def test_expand_into_slots_selects_the_given_rows():
    class Cache:  # the part of DynamicCache the function uses
        def __init__(self, layers):
            self.layers = layers

    layer, k, v = _layer(n=3)
    rows = torch.tensor([2, 0, 0, 1])
    cache = Cache([layer])
    assert expand_into_slots(cache, rows, extra=2) == 1
    assert isinstance(cache.layers[0], SlotLayer)
    assert torch.equal(cache.layers[0].keys, k[rows]) and torch.equal(
        cache.layers[0].values, v[rows]
    )


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_decoding_with_slots_equals_dynamic_cache(tiny_dirs, family):
    policy = load_policy(tiny_dirs[family])
    model = policy.model.eval()
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 255, (224 + 56 * i, 280, 3), dtype=np.uint8) for i in range(2)]
    prompts = [encode_prompt(policy.processor, [im], f"Click {i}.") for i, im in enumerate(imgs)]
    batch = batch_prompts(prompts, policy.tokenizer.pad_token_id)
    rows = torch.tensor([1, 1, 0, 1, 0])
    with torch.no_grad():
        cache, _, deltas = prefill(model, batch)
        plain = copy.deepcopy(cache)
        plain.batch_select_indices(rows)
        assert expand_into_slots(cache, rows, extra=3) == len(cache.layers)
        attention = batch.inputs["attention_mask"][rows]
        toks = torch.randint(0, 50, (5, 4), generator=torch.Generator().manual_seed(0))
        for t in range(4):  # one step past the slots' room
            attention = torch.cat([attention, torch.ones(5, 1, dtype=attention.dtype)], dim=1)
            kw = dict(
                input_ids=toks[:, t : t + 1],
                attention_mask=attention,
                position_ids=text_positions(attention, deltas[rows], 1),
                use_cache=True,
            )
            a = model(cache=cache, **kw).logits
            b = model(cache=plain, **kw).logits
            assert torch.allclose(a, b, atol=1e-6), (t, (a - b).abs().max())
