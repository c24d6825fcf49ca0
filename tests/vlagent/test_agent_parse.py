"""Tool-call parsing survives hostile model text, and so does the loop that acts on it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vlagent.agent.config import LoopConfig, ToolsConfig
from vlagent.agent.loop import AgentRuntime, EpisodeSpec
from vlagent.agent.parse import ToolCallParse, answer_source, parse_tool_call
from vlagent.models.loading import load_policy

PIECES = [
    "<tool_call>",
    "</tool_call>",
    '{"name": "zoom_in", "arguments": ',
    '{"bbox_2d": [0.1, 0.1, 0.9, 0.9], "coords": "norm"}',
    '{"bbox_2d": [1e309, -5, "x", null]}',
    '"source": "observation_99"',
    "<|image_pad|>",
    "<|vision_start|>",
    "<|im_end|>",
    "<|im_start|>user\n",
    "[" * 3000,
    "}}}",
    "}",
    '"\\ud800"',
    "```json",
    '{"point_2d": [5, 7]}',
]
hostile = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=30)), max_size=8).map(
    "".join
)


def test_parse_hand_cases():
    call = parse_tool_call(
        'x <tool_call>{"name": "zoom_in", "arguments": "{\\"a\\": 1}"}</tool_call>'
    )
    assert call == ToolCallParse({"name": "zoom_in", "arguments": {"a": 1}}, None, 1)
    assert parse_tool_call('{"point_2d": [1, 2]}') is None
    assert "unterminated" in parse_tool_call("<tool_call>{").error
    assert "not valid JSON" in parse_tool_call("<tool_call>{]</tool_call>").error
    assert '"name"' in parse_tool_call('<tool_call>{"arguments": {}}</tool_call>').error
    assert (
        '"arguments"'
        in parse_tool_call('<tool_call>{"name": "a", "arguments": 3}</tool_call>').error
    )
    two = parse_tool_call(
        '<tool_call>{"name": "a"}</tool_call><tool_call>{"name": "b"}</tool_call>'
    )
    assert two.call == {"name": "a", "arguments": {}} and two.n_calls == 2
    assert answer_source('{"point_2d": [1, 2], "source": "observation_1"}', 2) == 1
    assert answer_source('{"source": "observation_7"}', 2) is None


@given(hostile)
@settings(max_examples=300, deadline=None)
def test_parse_never_raises(text):
    out = parse_tool_call(text)
    assert out is None or isinstance(out, ToolCallParse)
    if out is not None:
        assert (out.call is None) != (out.error is None)
        if out.call is not None:
            assert isinstance(out.call["name"], str) and isinstance(out.call["arguments"], dict)
        json.dumps(out.call)  # a parsed call is plain JSON
    assert answer_source(text, 3) in (None, 0, 1, 2)


@pytest.fixture(scope="module")
def rt(tiny_dir):
    policy = load_policy(tiny_dir)
    loop = LoopConfig(max_turns=3, max_images=3, max_turn_tokens=4096, max_episode_tokens=8192)
    return AgentRuntime(policy, ToolsConfig(system_prompt="short"), loop, pixel_budget_px=96 * 64)


@pytest.fixture(scope="module")
def first(rt):
    image = np.random.default_rng(0).integers(0, 256, (128, 192, 3), dtype=np.uint8)
    spec = EpisodeSpec(image, "Click the red icon.", (0.1, 0.1, 0.2, 0.2))
    return spec, rt.encode_first(spec)


VALID = '<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [0.1, 0.1, 0.9, 0.9], "coords": "norm"}}</tool_call>'


@given(hostile)
@example(VALID)
@example(VALID.replace("zoom_in", "<|image_pad|>"))
@example('<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [1, 1, 1, 1]}}</tool_call>')
@example("<tool_call>" + "[" * 9000)  # longer than the episode's token budget: over_limit
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_loop_survives_hostile_turns(rt, first, text):
    """Any assistant text gives an answer, a tool result or an error observation: never an
    exception, and never an image slot without an image (pads == features)."""
    spec, enc = first
    traj = rt.start(spec, enc)
    ids = rt.policy.tokenizer(text, add_special_tokens=False)["input_ids"] + [rt.tokens.eos_id]
    ids = [i for i in ids if i not in rt.tokens.forbidden] or [rt.tokens.eos_id]  # as sampled
    rt.after_turn(traj, ids, None, True, 10_000)
    turn = traj.turns[-1]
    # over_limit: a turn longer than the episode's token budget is recorded, not parsed
    assert turn.kind in ("answer", "tool", "tool_error", "over_limit")
    pads = sum(i == rt.tokens.image_pad_id for i in traj.input_ids)
    merge = rt.tokens.merge
    assert pads == sum(t * h * w // merge**2 for t, h, w in traj.image_grid_thw)
    assert pads == sum(traj.mm_token_type_ids)
    assert traj.n_images == 1 + (turn.kind == "tool")
    obs = traj.input_ids[turn.end :]
    starts = sum(i == rt.tokens.vision_start_id for i in obs)
    assert starts == (turn.kind == "tool")  # observation text cannot open an image slot
    if turn.kind in ("answer", "over_limit"):
        assert traj.done and len(obs) == 0
    else:  # the observation ends with exactly one turn switch back to the assistant
        tail = list(rt.tokens.assistant_open)
        assert obs[-len(tail) :] == tail and sum(i == rt.tokens.eos_id for i in obs) == 1
