"""``task.answer_label=phrase``: qwen_box demonstrations name their target (the instruction's
noun phrase) in the object reference, right before the coordinates."""

from __future__ import annotations

import pytest

from perception_tools.geometry import Frame, ImageSize
from vlagent.codec import GroundingCodec
from vlagent.codec.grounding import instruction_phrase
from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.worlds import make_world


@pytest.mark.parametrize(
    ("instruction", "phrase"),
    [
        ("Click the red circle.", "the red circle"),
        ("  Tap   the rectangle. ", "the rectangle"),
        ("Select the leftmost shape.", "the leftmost shape"),
        ("Tap 'Settings'.", "'Settings'"),
        ("the blue icon", "the blue icon"),
        ("Open", "Open"),
        ("Click <|object_ref_end|><|box_start|>(1,2)", "(1,2)"),
        ("", "target"),
    ],
)
def test_instruction_phrase(instruction, phrase):
    assert instruction_phrase(instruction) == phrase


def test_qwen_box_renders_the_label_and_parses_back():
    frame = Frame(orig=ImageSize(224, 224), resized=ImageSize(224, 224))
    codec = GroundingCodec.for_family("qwen3_vl", fmt="qwen_box")
    text = codec.render((0.2, 0.4, 0.4, 0.6), frame, label="the red circle")
    assert (
        text
        == "<|object_ref_start|>the red circle<|object_ref_end|><|box_start|>(300,500)<|box_end|>"
    )
    assert codec.parse(text, frame).point_norm == pytest.approx((0.3, 0.5))
    assert "target" in codec.render((0.2, 0.4, 0.4, 0.6), frame)


def test_world_demonstrations_name_the_target(tiny_dir):
    from vlagent.train.sft import demonstrations

    policy = load_policy(tiny_dir)
    replies = {}
    for label in ("fixed", "phrase"):
        cfg = load_config(
            None,
            [
                f"model.path={tiny_dir}",
                "task.level=basic2",
                "task.answer_format=qwen_box",
                f"task.answer_label={label}",
            ],
        )
        world = make_world(cfg, policy)
        ids = world.task_ids("train", 0, 4)
        trajs = demonstrations(policy, world, ids)
        assert len(trajs) == 4
        ref = policy.tokenizer.convert_tokens_to_ids("<|object_ref_start|>")
        assert all(t.segments[0].ids[0] == ref for t in trajs)  # the special tokens are there
        replies[label] = [(world.sample(t.task_id).instruction, t.turns[0].text) for t in trajs]
    for (instruction, fixed), (_, phrase) in zip(replies["fixed"], replies["phrase"], strict=True):
        assert fixed.startswith("target(")  # the turn's text drops the special tokens
        named = instruction_phrase(instruction)
        assert named.split()[-1] in ("circle", "rectangle", "triangle", "diamond")
        assert phrase == named + fixed[len("target") :]


def test_phrase_needs_qwen_box_and_the_single_turn_world(tiny_dir):
    with pytest.raises(ConfigError, match="qwen_box"):
        load_config(None, ["task.answer_label=phrase"])
    with pytest.raises(ConfigError, match="answer_label"):
        load_config(None, ["task.answer_label=noun"])
    cfg = load_config(
        None,
        [
            f"model.path={tiny_dir}",
            "world=zoom",
            "task.answer_format=qwen_box",
            "task.answer_label=phrase",
        ],
    )
    with pytest.raises(ConfigError, match="answer_label"):
        make_world(cfg, load_policy(tiny_dir))
