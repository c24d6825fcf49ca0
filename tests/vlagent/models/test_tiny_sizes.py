"""``model.tiny``: the sizes of the tiny model a run builds, checked against a folder built before."""

from __future__ import annotations

import json

import pytest

from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.train.common import ensure_model

SIZES = ["model.tiny.text_hidden=64", "model.tiny.text_layers=3", "model.tiny.vision_layers=1"]


def test_sizes_reach_the_built_model_and_a_mismatch_is_refused(tmp_path):
    path = tmp_path / "tiny"
    cfg = load_config(None, [f"model.path={path}", *SIZES])
    assert ensure_model(cfg.model) == str(path)
    spec = json.loads((path / "vlagent_tiny_spec.json").read_text())
    assert (spec["text_hidden"], spec["text_layers"], spec["vision_layers"]) == (64, 3, 1)
    model_cfg = json.loads((path / "config.json").read_text())
    assert model_cfg["text_config"]["num_hidden_layers"] == 3
    assert model_cfg["vision_config"]["depth"] == 1
    assert ensure_model(cfg.model) == str(path)  # same sizes: reused
    other = load_config(None, [f"model.path={path}", "model.tiny.text_hidden=128"])
    with pytest.raises(ConfigError, match="text_hidden"):
        ensure_model(other.model)


def test_unknown_size_field_is_refused(tmp_path):
    cfg = load_config(None, [f"model.path={tmp_path / 'x'}", "model.tiny.hidden=3"])
    with pytest.raises(ConfigError, match="unknown field"):
        ensure_model(cfg.model)
    assert not (tmp_path / "x").exists()
