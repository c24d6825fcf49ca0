"""Group-packed continuations (``rollout/packed.py``): the mask lets each token see exactly its
prompt and its own completion so far, and the outputs equal the expanded-cache path's."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.errors import ConfigError, VlagentError
from vlagent.models.loading import load_policy
from vlagent.rollout.packed import packed_mask, packing_pays, slots
from vlagent.rollout.prefix import continue_rows, prefill, text_positions
from vlagent.rollout.rows import batch_prompts
from vlagent.rollout.tokens import encode_prompt


def test_slots_rank_rows_within_their_prompt():
    slot, k = slots(torch.tensor([1, 0, 1, 1, 0]), 3)
    assert slot.tolist() == [0, 0, 1, 2, 1] and k == 3


def test_packing_pays_by_device():
    k = 8  # rows per prompt
    cpu, gpu = torch.device("cpu"), torch.device("cuda")  # only .type is read
    assert packing_pays(k, 271, 23, cpu)  # bench job 1
    assert packing_pays(k, 31, 23, cpu)  # job 2: span 4x, packing still faster on CPU
    assert packing_pays(k, 31, 512, cpu)  # K * T = 4096, the CPU limit
    assert not packing_pays(k, 31, 513, cpu)
    assert packing_pays(k, 271, 23, gpu)  # 271 + 184 <= 2 * 294
    assert not packing_pays(k, 31, 23, gpu)  # 215 > 108
    assert packing_pays(k, 60, 10, gpu)  # the bound itself: 60 + 80 == 2 * 70
    assert not packing_pays(k, 59, 10, gpu)


def test_always_on_a_model_without_4d_masks_is_a_clear_error():
    class Config:
        _attn_implementation = "flash_attention_2"

    class Model:
        config = Config()

    rows = torch.zeros(2, dtype=torch.long)
    one = torch.ones(1, 3, dtype=torch.long)
    with pytest.raises(VlagentError, match="pack_groups=always.*flash_attention_2"):
        continue_rows(Model(), None, None, one, one[:, :1], rows, one.repeat(2, 1), one, "always")


def test_pack_groups_config_is_checked():
    assert GRPOConfig(pack_groups="never").pack_groups == "never"
    with pytest.raises(ConfigError, match="grpo.pack_groups"):
        GRPOConfig(pack_groups=True)


def test_packed_mask_by_hand():
    # 2 prompts (P = 2; prompt 0 left-padded), rows: r0 -> p0, r1 -> p1, r2 -> p0; T = 2
    prompt_att = torch.tensor([[0, 1], [1, 1]])
    row_prompt = torch.tensor([0, 1, 0])
    slot, k = slots(row_prompt, 2)
    valid = torch.tensor([[1, 1], [1, 0], [1, 1]])
    m = packed_mask(prompt_att, row_prompt, slot, k, valid, None)
    assert m.shape == (2, 1, 4, 6)  # [U, 1, K*T, P + K*T]
    expect_p0 = torch.tensor(
        [  # columns: pad, prompt, (slot 0: j0, j1), (slot 1: j0, j1)
            [0, 1, 1, 0, 0, 0],  # slot 0 (row 0), step 0
            [0, 1, 1, 1, 0, 0],  # slot 0, step 1
            [0, 1, 0, 0, 1, 0],  # slot 1 (row 2), step 0
            [0, 1, 0, 0, 1, 1],  # slot 1, step 1
        ],
        dtype=torch.bool,
    )
    assert torch.equal(m[0, 0], expect_p0)
    expect_p1 = torch.tensor(
        [
            [1, 1, 1, 0, 0, 0],  # row 1 step 0
            [1, 1, 1, 0, 0, 0],  # row 1 step 1: its step 1 is padding, not attended
            [1, 1, 0, 0, 0, 0],  # unused slot: the prompt only
            [1, 1, 0, 0, 0, 0],
        ],
        dtype=torch.bool,
    )
    assert torch.equal(m[1, 0], expect_p1)
    additive = packed_mask(prompt_att, row_prompt, slot, k, valid, torch.float32)
    assert torch.equal(additive == 0, m)
    assert additive.min() == torch.finfo(torch.float32).min


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_packed_equals_expanded_cache_with_gradients(tiny_dirs, impl):
    policy = load_policy(tiny_dirs["qwen2_5_vl"], attn_implementation=impl)
    model = policy.model
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 255, (224 + 56 * i, 280, 3), dtype=np.uint8) for i in range(2)]
    prompts = [encode_prompt(policy.processor, [im], f"Click {i}.") for i, im in enumerate(imgs)]
    batch = batch_prompts(prompts, policy.tokenizer.pad_token_id)
    row_prompt = torch.tensor([1, 0, 1, 1, 0])  # uneven groups, interleaved rows
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 50, (5, 4), generator=g)
    valid = torch.ones(5, 4, dtype=torch.long)
    valid[1, 3] = valid[4, 2:] = 0  # rows that ended early

    def forward(x, c, att, pos):
        return model(input_ids=x, cache=c, attention_mask=att, position_ids=pos).logits

    results = []
    for packed in (True, False):
        model.zero_grad()
        cache, _, deltas = prefill(model, batch)
        att_p = batch.inputs["attention_mask"]
        if packed:  # the dispatcher: packed for sdpa / eager, with that one's mask type
            out = continue_rows(model, forward, cache, att_p, deltas, row_prompt, ids, valid)
            assert cache.layers[0].keys.shape[0] == 2  # the cache was not expanded to 5 rows
            cache2, _, _ = prefill(model, batch)
            with torch.no_grad():  # pack="never" expands; the same numbers
                off = continue_rows(
                    model, forward, cache2, att_p, deltas, row_prompt, ids, valid, "never"
                )
            assert cache2.layers[0].keys.shape[0] == 5
            assert torch.allclose(off[valid.bool()], out[valid.bool()].detach(), atol=1e-5)
        else:
            c = copy.copy(cache)
            c.batch_select_indices(row_prompt)
            att = torch.cat([att_p[row_prompt], valid], dim=1)
            out = forward(ids, c, att, text_positions(att, deltas[row_prompt], 4))
        keep = valid.bool()
        loss = (out[keep] ** 2).mean()
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        results.append((out[keep].detach(), grads))
    (a, ga), (b, gb) = results
    assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()
    assert ga.keys() == gb.keys() and len(ga) > 10
    for name in ga:
        assert torch.allclose(ga[name], gb[name], atol=1e-5, rtol=1e-4), name
