"""Chat template for locally built tiny models.

Real checkpoints ship their own template; tiny models built by ``build-tiny-model`` get this one.
It renders the same turn structure as Qwen-VL instruct models (``<|im_start|>role\\n … <|im_end|>``,
images as ``<|vision_start|><|image_pad|><|vision_end|>``, which the processor expands to one pad
per visual token) but adds no default system prompt, to keep tiny-model sequences short.

``tools=`` (OpenAI / Qwen ``{"type": "function", "function": {...}}`` entries) are rendered as
the Qwen2.5 / Qwen3 / Qwen3-VL templates render them: a system turn holding the system text, a
blank line, then ``# Tools`` with one ``tool | tojson`` line per tool inside ``<tools></tools>``
and the ``<tool_call>`` call format (``perception_tools.tools.render_tool_block`` writes the same
bytes). Without ``tools`` the output is unchanged from the template's first version.
"""

from __future__ import annotations

_SYSTEM_TEXT = (
    "{%- if messages[0]['content'] is string -%}"
    "{{ messages[0]['content'] }}"
    "{%- else -%}"
    "{%- for item in messages[0]['content'] -%}"
    "{%- if 'text' in item -%}{{ item['text'] }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
)

_TOOLS_TURN = (
    "{%- if tools -%}"
    "<|im_start|>system{{ '\\n' }}"
    "{%- if messages[0]['role'] == 'system' -%}" + _SYSTEM_TEXT + "{{ '\\n\\n' }}{%- endif -%}"
    "{{ '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools -%}{{ '\\n' }}{{ tool | tojson }}{%- endfor -%}"
    "{{ '\\n</tools>\\n\\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n"
    '{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n'
    "</tool_call><|im_end|>\\n' }}"
    "{%- endif -%}"
)

TINY_CHAT_TEMPLATE = (
    _TOOLS_TURN + "{%- for message in messages -%}"
    "{%- if not (tools and loop.first and message['role'] == 'system') -%}"
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
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant{{ '\\n' }}{%- endif -%}"
)
