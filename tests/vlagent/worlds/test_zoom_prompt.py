"""The zoom world's first prompt goes through the chat template with ``tools=``.

``tools.system_prompt: schema`` on the tiny model: :data:`TODAY` is the text the hand-written
tool block gave (captured before the switch to ``tools=``). Byte identity is impossible while the
block is the one Qwen's templates write, for two reasons, and only these two
(:func:`test_schema_prompt_differs_from_before_only_as_qwens_template_demands`):

1. Order: Qwen's templates write the system text first, then a blank line, then ``# Tools``;
   the hand-written block came first and the answer hint after it.
2. The call format is ``<tool_call>\\n{...}\\n</tool_call>`` (three lines) in Qwen's templates,
   one line in the hand-written block.

The tool JSON lines are byte-identical (transformers' ``tojson`` is ``json.dumps`` with
``ensure_ascii=False`` and keys in insertion order, like the old ``json.dumps``). The test pins
the new text, :data:`PINNED`.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from perception_tools.tools import TOOLS_FOOTER, render_tool_block, tool_schemas
from vlagent.batching import user_message
from vlagent.config import load_config
from vlagent.models.chat_template import TINY_CHAT_TEMPLATE
from vlagent.models.loading import load_policy
from vlagent.rollout.tokens import render_prompt
from vlagent.rollout.trajectory import Trajectory
from vlagent.worlds import make_world

INSTRUCTION = "Click the red checkered icon."
HINT = (
    'When you know the answer, reply with {"point_2d": [x, y]} in the coordinates of the '
    "latest image."
)

TODAY = (
    "<|im_start|>system\n"
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    '{"type": "function", "function": {"name": "zoom_in", "description": "Zoom in on '
    "a region of the screenshot to see small details: the region is cropped from the "
    'full-resolution screenshot and returned enlarged as a new image.", '
    '"parameters": {"type": "object", "properties": {"bbox_2d": {"type": "array", '
    '"items": {"type": "number"}, "minItems": 4, "maxItems": 4, "description": '
    '"Region [x0, y0, x1, y1] of the source image, in the same coordinates as your '
    'answers (normalized 0..1 when coords is \'norm\')."}, "source": {"type": '
    '"string", "pattern": "^(original|observation_[0-9]+)$", "description": "Image '
    "to use: 'original' or 'observation_<i>' (default: the latest).\"}, \"coords\": "
    '{"type": "string", "enum": ["model", "norm"], "description": "\'norm\' when the '
    'numbers are fractions 0..1 of the image."}, "label": {"type": "string", '
    '"description": "What you expect there (echoed back)."}}, "required": '
    '["bbox_2d"], "additionalProperties": false}}}\n'
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n"
    '<tool_call>{"name": <function-name>, "arguments": '
    "<args-json-object>}</tool_call>\n"
    "\n"
    'When you know the answer, reply with {"point_2d": [x, y]} in the coordinates of '
    "the latest image.<|im_end|>\n"
    "<|im_start|>user\n"
    "<|vision_start|><|image_pad|><|vision_end|>Click the red checkered "
    "icon.<|im_end|>\n"
    "<|im_start|>assistant\n"
)

PINNED = (
    "<|im_start|>system\n"
    'When you know the answer, reply with {"point_2d": [x, y]} in the coordinates of '
    "the latest image.\n"
    "\n"
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    '{"type": "function", "function": {"name": "zoom_in", "description": "Zoom in on '
    "a region of the screenshot to see small details: the region is cropped from the "
    'full-resolution screenshot and returned enlarged as a new image.", '
    '"parameters": {"type": "object", "properties": {"bbox_2d": {"type": "array", '
    '"items": {"type": "number"}, "minItems": 4, "maxItems": 4, "description": '
    '"Region [x0, y0, x1, y1] of the source image, in the same coordinates as your '
    'answers (normalized 0..1 when coords is \'norm\')."}, "source": {"type": '
    '"string", "pattern": "^(original|observation_[0-9]+)$", "description": "Image '
    "to use: 'original' or 'observation_<i>' (default: the latest).\"}, \"coords\": "
    '{"type": "string", "enum": ["model", "norm"], "description": "\'norm\' when the '
    'numbers are fractions 0..1 of the image."}, "label": {"type": "string", '
    '"description": "What you expect there (echoed back)."}}, "required": '
    '["bbox_2d"], "additionalProperties": false}}}\n'
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n"
    "<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n"
    "<|vision_start|><|image_pad|><|vision_end|>Click the red checkered "
    "icon.<|im_end|>\n"
    "<|im_start|>assistant\n"
)

# The template tiny checkpoints were saved with before it had tools (it ignores ``tools=``).
PRE_TOOLS_TEMPLATE = (
    "{%- for message in messages -%}"
    "<|im_start|>{{ message['role'] }}{{ '\\n' }}"
    "{%- if message['content'] is string -%}"
    "{{ message['content'] }}"
    "{%- else -%}"
    "{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' or 'image' in item -%}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif item['type'] == 'video' or 'video' in item -%}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{%- elif item['type'] == 'text' -%}"
    "{{ item['text'] }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "<|im_end|>{{ '\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant{{ '\\n' }}{%- endif -%}"
)


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return load_policy(tiny_dir)


def _adapter(policy, mode: str):
    cfg = load_config(None, ["world=zoom", f"tools.system_prompt={mode}"])
    return make_world(cfg, policy).adapter()


def _first_prompt(adapter, image: np.ndarray):
    traj = Trajectory(task_id=0)
    adapter.start(traj, {"image": image, "instruction": INSTRUCTION}, {})
    return traj.segments[0].prompt


def test_schema_prompt_is_the_pinned_text(policy):
    adapter = _adapter(policy, "schema")
    assert adapter.tool_schemas == tool_schemas(["zoom_in"])
    assert policy.processor.chat_template == TINY_CHAT_TEMPLATE  # saved with the checkpoint
    msgs = user_message(INSTRUCTION, adapter.system)
    kw = {"add_generation_prompt": True, "tokenize": False}
    assert policy.processor.apply_chat_template(msgs, tools=adapter.tool_schemas, **kw) == PINNED
    assert render_prompt(policy.processor, msgs, adapter.tool_schemas) == PINNED
    image = np.random.default_rng(0).integers(0, 256, (64, 96, 3), dtype=np.uint8)
    prompt = _first_prompt(adapter, image)
    from PIL import Image

    ref = policy.processor(text=[PINNED], images=[Image.fromarray(image)], return_tensors="pt")
    assert torch.equal(prompt.input_ids, ref["input_ids"][0])


def test_a_tiny_checkpoint_from_before_tools_support_renders_the_same(policy, tiny_dir):
    """A tiny checkpoint saved with the template that had no tools gets the same text: the
    template drops ``tools=``, so Qwen's block goes into the system text."""
    from transformers import AutoProcessor

    old = AutoProcessor.from_pretrained(tiny_dir)
    old.chat_template = PRE_TOOLS_TEMPLATE
    msgs = user_message(INSTRUCTION, HINT)
    kw = {"add_generation_prompt": True, "tokenize": False}
    assert old.apply_chat_template(msgs, tools=tool_schemas(), **kw) == old.apply_chat_template(
        msgs, **kw
    )
    assert render_prompt(old, msgs, tool_schemas()) == PINNED


@pytest.mark.parametrize("system", [None, HINT])
@pytest.mark.parametrize("n_images", [0, 1, 3])
def test_without_tools_the_tiny_template_renders_as_before(policy, system, n_images):
    kw = {"add_generation_prompt": True, "tokenize": False}
    msgs = user_message(INSTRUCTION, system, n_images)
    msgs += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    new = policy.processor.apply_chat_template(msgs, **kw)
    assert new == policy.processor.apply_chat_template(msgs, chat_template=PRE_TOOLS_TEMPLATE, **kw)


def test_schema_prompt_differs_from_before_only_as_qwens_template_demands():
    one_line = '<tool_call>{"name": <function-name>, "arguments": <args-json-object>}</tool_call>'
    old_block = render_tool_block(tool_schemas()).replace(
        TOOLS_FOOTER, TOOLS_FOOTER.split("<tool_call>\n", 1)[0] + one_line
    )
    assert old_block + "\n\n" + HINT in TODAY
    edited = TODAY.replace(
        old_block + "\n\n" + HINT, HINT + "\n\n" + render_tool_block(tool_schemas())
    )
    assert edited == PINNED
    tool_lines = [line for line in PINNED.splitlines() if line.startswith('{"type"')]
    assert tool_lines == [json.dumps(s, ensure_ascii=False) for s in tool_schemas()]


@pytest.mark.parametrize("mode", ["short", "none"])
def test_short_and_none_pass_no_tools(policy, mode):
    adapter = _adapter(policy, mode)
    assert adapter.tool_schemas is None
    image = np.zeros((64, 96, 3), dtype=np.uint8)
    text = policy.tokenizer.decode(_first_prompt(adapter, image).input_ids)
    assert "# Tools" not in text
    assert ("Tools: zoom_in. Call one as <tool_call>" in text) == (mode == "short")
