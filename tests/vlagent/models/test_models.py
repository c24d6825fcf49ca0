"""Tiny model building and the real loading path (Auto classes, local folders)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from vlagent.batching import encode_prompts
from vlagent.errors import ModelError
from vlagent.models.loading import load_policy
from vlagent.models.tiny import TinyModelSpec, build_tiny_model, sincos_table_2d


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_every_family_loads_and_runs(tiny_dirs, family):
    policy = load_policy(tiny_dirs[family])
    assert policy.family == family
    expected = {"qwen2_vl": "Qwen2VL", "qwen2_5_vl": "Qwen2_5_VL", "qwen3_vl": "Qwen3VL"}[family]
    assert type(policy.model).__name__ == f"{expected}ForConditionalGeneration"
    n_params = sum(p.numel() for p in policy.model.parameters())
    assert n_params < 2_000_000
    img = np.full((224, 224, 3), 200, dtype=np.uint8)
    batch = encode_prompts(policy.processor, [img, img], ["Click the red circle.", "Tap"])
    n_pad = int(
        (batch.inputs["input_ids"] == policy.tokenizer.convert_tokens_to_ids("<|image_pad|>")).sum()
    )
    grid = batch.inputs["image_grid_thw"]
    merge = policy.processor.image_processor.merge_size
    assert n_pad == int(grid.prod(-1).sum()) // merge**2  # one pad per visual token
    out = policy.model(**batch.inputs)
    assert torch.isfinite(out.logits).all()


def test_build_is_deterministic(tmp_path):
    a = build_tiny_model(tmp_path / "a", family="qwen2_5_vl", seed=3)
    b = build_tiny_model(tmp_path / "b", family="qwen2_5_vl", seed=3)
    c = build_tiny_model(tmp_path / "c", family="qwen2_5_vl", seed=4)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    assert (a / "model.safetensors").read_bytes() != (c / "model.safetensors").read_bytes()
    assert (a / "tokenizer.json").read_text() == (b / "tokenizer.json").read_text()
    assert json.loads((a / "vlagent_tiny_spec.json").read_text())["seed"] == 3


def test_localization_init_sets_position_table(tiny_dir):
    policy = load_policy(tiny_dir)
    table = policy.model.model.visual.pos_embed.weight.detach()
    assert float(table.std()) == pytest.approx(1.0, abs=0.05)
    assert torch.allclose(table, sincos_table_2d(32, table.shape[1]), atol=1e-6)


def test_tokenizer_has_qwen_specials_and_single_digit_tokens(tiny_dir):
    tok = load_policy(tiny_dir).tokenizer
    for t in ("<|im_start|>", "<|im_end|>", "<|image_pad|>", "<|vision_start|>", "<tool_call>"):
        assert tok.convert_tokens_to_ids(t) != tok.unk_token_id
    ids = tok("[523, 118]", add_special_tokens=False)["input_ids"]
    assert [tok.decode([i]) for i in ids if tok.decode([i]).strip().isdigit()] == list("523118")


def test_unknown_family():
    with pytest.raises(ModelError, match="llava.*known families"):
        TinyModelSpec(family="llava")  # type: ignore[arg-type]


def test_missing_checkpoint_dir(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        load_policy(tmp_path / "nothing")


def test_folder_without_config(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="no config.json"):
        load_policy(tmp_path / "empty")


def test_unsupported_model_type(tmp_path):
    d = tmp_path / "llama"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ModelError, match="'llama' is not a supported Qwen-VL family"):
        load_policy(d)
