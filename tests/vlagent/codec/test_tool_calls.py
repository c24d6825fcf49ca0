"""Tool-call parsing survives hostile model text, and so does the zoom world that acts on it."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import vlagent.rollout.runner as runner
from vlagent.codec.tool_calls import ToolCallParse, answer_source, parse_tool_call
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import EpisodeSpec, Limits, run_episodes
from vlagent.worlds import make_world

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
def world(tiny_dir):
    cfg = load_config(
        None,
        [
            "world=zoom",
            "task.level=basic",
            f"task.pixel_budget={96 * 64}",
            "tools.system_prompt=short",
            "loop.max_images=3",
        ],
    )
    return make_world(cfg, load_policy(tiny_dir))


STRUCTURAL = [
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|endoftext|>",
]
VALID = '<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [0.1, 0.1, 0.9, 0.9], "coords": "norm"}}</tool_call>'
LIMITS = Limits(max_turns=3, max_turn_tokens=4096, max_episode_tokens=8192, over_limit="mask")


@given(hostile, st.booleans())
@example(VALID, False)
@example(VALID.replace("zoom_in", "<|image_pad|>"), False)
@example(VALID.replace("zoom_in", "<|im_end|><|im_start|>user<|vision_start|>"), True)
@example(
    '<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [1, 1, 1, 1]}}</tool_call>', False
)
@example("<tool_call>" + "[" * 9000, False)  # longer than the episode's token budget: over_limit
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_world_survives_hostile_turns(world, text, spelled):
    """Any first turn gives an answer, a tool result or an error observation: never an
    exception, and never an image slot without an image (pads == features). The text reaches
    the runner as sampled ids would (vision placeholders excluded; ``spelled``: special tokens
    written out in plain pieces, which decode to their literal text); a second turn answers."""
    adapter = world.adapter()
    tokens, tok = adapter.tokens, world.policy.tokenizer
    ids = tok(text, add_special_tokens=False, split_special_tokens=spelled)["input_ids"]
    ids = [i for i in ids + [tokens.eos_id] if i not in tokens.forbidden]  # as sampled
    answer = tok('{"point_2d": [1, 2]}', add_special_tokens=False)["input_ids"] + [tokens.eos_id]
    turns = iter([ids, answer])

    def fake_sampler(policy, segments, max_new, **kw):
        (allow,) = max_new
        row = next(turns)
        return [(row[:allow], [0.0] * min(len(row), allow), len(row) <= allow)]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "sample_turns", fake_sampler)
        (traj,) = run_episodes(
            world.policy, adapter, lambda: world.make_env("train"), [EpisodeSpec(3)], LIMITS
        )
    assert traj.error is None and traj.done
    turn = traj.turns[0]
    # over_limit: a turn longer than the episode's token budget is recorded, not parsed
    assert turn.kind in ("env", "tool", "tool_error", "over_limit")
    (seg,) = traj.segments  # one growing conversation
    full_ids = seg.prompt.input_ids.tolist() + seg.ids
    full_mm = seg.prompt.mm_token_type_ids.tolist() + seg.mm
    grids = seg.prompt.image_grid_thw.tolist() + [g for _, g in seg.images]
    pads = sum(i == tokens.image_pad_id for i in full_ids)
    assert pads == sum(t * h * w // tokens.merge**2 for t, h, w in grids)
    assert pads == sum(full_mm)
    assert len(traj.extras["images"]) == len(grids) == 1 + (turn.kind == "tool")
    end = traj.turns[1].start if len(traj.turns) > 1 else len(seg.ids)
    obs = seg.ids[turn.end : end]
    starts = sum(i == tokens.vision_start_id for i in obs)
    assert starts == (turn.kind == "tool")  # observation text cannot open an image slot
    if turn.kind in ("env", "over_limit"):
        assert len(traj.turns) == 1 and len(obs) == 0
    else:  # the observation ends with exactly one turn switch back to the assistant
        tail = list(tokens.assistant_open)
        assert obs[-len(tail) :] == tail and sum(i == tokens.eos_id for i in obs) == 1
        head = list(tokens.user_open)
        assert obs[: len(head)] == head
        n_pads = obs.count(tokens.image_pad_id)
        body = obs[len(head) + (n_pads + 2 if n_pads else 0) : -len(tail)]
        structural = {tok.convert_tokens_to_ids(t) for t in STRUCTURAL}
        assert not structural & set(body)  # the tool's text is text, never chat structure
        assert traj.turns[1].kind == "env" and traj.status == "terminated"
