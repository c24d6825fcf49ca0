"""experiments/binding_probe.py: the pieces its numbers rest on."""

from __future__ import annotations

import json

import numpy as np

from experiments import binding_probe
from gui.grounding.sources import SyntheticSource
from perception_tools.geometry import Frame, ImageSize
from vlagent.codec import GroundingCodec


def test_ridge_classify_separates_separable_classes_and_reports_majority():
    rng = np.random.default_rng(0)
    labels = ["red", "blue", "green", "red"] * 50
    centre = {"red": 0.0, "blue": 5.0, "green": -5.0}
    x = np.array([[centre[c] + rng.normal(0, 0.1), rng.normal()] for c in labels])
    got = binding_probe._ridge_classify(x, labels, fit=150)
    assert got == {"classes": 3, "accuracy": 1.0, "majority": 0.5}
    noise = binding_probe._ridge_classify(rng.normal(size=(200, 2)), labels, fit=150)
    assert noise["accuracy"] < 0.8


def test_instruction_probe_keys_share_one_screen():
    for k in (2, 3, 4):
        src = SyntheticSource("basic2", targets_per_screen=k)
        for screen in (0, 5):
            keys = binding_probe.screen_keys(k, screen)
            assert len(keys) == k and min(keys) >= binding_probe.HELD_OUT
            images = [src.sample(key).image for key in keys]
            assert all((im == images[0]).all() for im in images)
        assert binding_probe.screen_keys(k, 1)[0] == binding_probe.screen_keys(k, 0)[-1] + 1


def test_answer_prefix_stops_before_the_first_digit():
    ex = SyntheticSource("basic2").sample(3)
    frame = Frame(orig=ImageSize(224, 224), resized=ImageSize(224, 224))
    json_codec = GroundingCodec.for_family("qwen3_vl", fmt="qwen_json")
    assert binding_probe._answer_prefix(json_codec, ex, frame, "fixed") == '{"point_2d": ['
    box = GroundingCodec.for_family("qwen3_vl", fmt="qwen_box")
    phrase = " ".join(ex.instruction.rstrip(".").split()[1:])
    assert binding_probe._answer_prefix(box, ex, frame, "phrase") == (
        f"<|object_ref_start|>{phrase}<|object_ref_end|><|box_start|>("
    )


def test_probe_runs_end_to_end_on_the_tiny_model(tiny_dir, tmp_path):
    out = tmp_path / "probe.json"
    spec = f"box={tiny_dir}:qwen_box:phrase"
    assert binding_probe.main(["--screens", "1", "--out", str(out), spec]) == 0
    got = json.loads(out.read_text())["models"]["box"]
    assert got["answer_format"] == "qwen_box" and got["answer_label"] == "phrase"
    assert got["instruction"]["answers"] == 3
    att = got["attention"]
    layers = len(att["mass_on_image"])
    heads = len(att["mass_on_image"][0])
    for key in ("mass_on_instruction_words", "mass_on_colour_word", "entropy_over_image"):
        assert np.asarray(att[key]).shape == (layers, heads)
    total = np.asarray(att["mass_on_image"]) + np.asarray(att["mass_on_instruction_words"])
    assert (total <= 1.0 + 1e-3).all()
    assert (np.asarray(att["entropy_over_image"]) <= att["uniform_entropy"] + 1e-2).all()
