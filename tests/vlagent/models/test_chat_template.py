"""The tiny models' chat template renders ``tools=`` as the real Qwen3-VL release template does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perception_tools.tools import render_tool_block, tool_schemas
from vlagent.batching import user_message
from vlagent.models.chat_template import TINY_CHAT_TEMPLATE
from vlagent.models.loading import load_policy

QWEN3_VL = json.loads(
    (
        Path(__file__).resolve().parents[2] / "fixtures" / "qwen3_vl" / "chat_template.json"
    ).read_text()
)["chat_template"]
TOOLS = tool_schemas(["zoom_in", "ground"])
KW = {"add_generation_prompt": True, "tokenize": False}


@pytest.fixture(scope="module")
def processor(tiny_dir):
    return load_policy(tiny_dir).processor


@pytest.mark.parametrize(
    "msgs",
    [
        user_message("Click the icon.", "Answer in JSON.", n_images=2),
        user_message("Click the icon.", None, n_images=1),
        [{"role": "system", "content": "plain"}, {"role": "user", "content": "hi é ü"}],
    ],
    ids=["system-list", "no-system", "strings"],
)
def test_tools_render_as_in_qwen3_vl(processor, msgs):
    assert processor.chat_template == TINY_CHAT_TEMPLATE
    ours = processor.apply_chat_template(msgs, tools=TOOLS, **KW)
    assert ours == processor.apply_chat_template(msgs, tools=TOOLS, chat_template=QWEN3_VL, **KW)
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else None
    if isinstance(system, list):
        system = system[0]["text"]
    head = "<|im_start|>system\n" + (system + "\n\n" if system else "") + render_tool_block(TOOLS)
    assert ours.startswith(head + "<|im_end|>\n<|im_start|>user\n")


def test_the_template_survives_save_and_reload(processor, tmp_path):
    from transformers import AutoProcessor

    processor.save_pretrained(tmp_path)
    again = AutoProcessor.from_pretrained(tmp_path)
    assert again.chat_template == TINY_CHAT_TEMPLATE
    msgs = user_message("Click.", "Hint.")
    want = processor.apply_chat_template(msgs, tools=TOOLS, **KW)
    assert again.apply_chat_template(msgs, tools=TOOLS, **KW) == want
