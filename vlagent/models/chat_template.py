"""Chat template for locally built tiny models.

Real checkpoints ship their own template; tiny models built by ``build-tiny-model`` get this one.
It renders the same turn structure as Qwen-VL instruct models (``<|im_start|>role\\n … <|im_end|>``,
images as ``<|vision_start|><|image_pad|><|vision_end|>``, which the processor expands to one pad
per visual token) but adds no default system prompt, to keep tiny-model sequences short.
"""

from __future__ import annotations

TINY_CHAT_TEMPLATE = (
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
