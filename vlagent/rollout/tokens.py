"""Token pieces of a multi-turn conversation, built without re-rendering the whole chat.

The first user turn goes through the checkpoint's own chat template and processor (tools passed
as the template's ``tools=``, see :func:`render_prompt`). Every later
observation turn is tokenized alone as the suffix

    ``\\n<|im_start|>user\\n`` [``<|vision_start|>`` N x ``<|image_pad|>`` ``<|vision_end|>``]
    text ``<|im_end|>\\n<|im_start|>assistant\\n``

where N = grid_t·grid_h·grid_w / merge² comes from the image processor's own grid for that
image, so the number of image placeholders always equals the number of image features. Special
tokens inside observation text (a hostile tool argument echoed in an error message) are split
into plain characters, so text can never open an image slot or end a turn.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from perception_tools.geometry import Frame
from perception_tools.tools import render_tool_block
from vlagent.batching import forbidden_token_ids, image_frame, user_message
from vlagent.rollout.trajectory import Prompt


@dataclasses.dataclass(frozen=True)
class ChatTokens:
    """Ids of the fixed pieces of Qwen chat turns for one tokenizer.

    Attributes:
        eos_id: ``<|im_end|>`` (ends an assistant turn). pad_id: padding id.
        image_pad_id, vision_start_id, vision_end_id: the image placeholder ids.
        user_open: ids of ``\\n<|im_start|>user\\n`` (the previous turn's eos precedes it).
        assistant_open: ids of ``<|im_end|>\\n<|im_start|>assistant\\n``.
        forbidden: ids the policy may never emit (vision placeholders).
        merge: the image processor's spatial merge size.
    """

    eos_id: int
    pad_id: int
    image_pad_id: int
    vision_start_id: int
    vision_end_id: int
    user_open: tuple[int, ...]
    assistant_open: tuple[int, ...]
    forbidden: tuple[int, ...]
    merge: int

    @classmethod
    def of(cls, processor: Any) -> ChatTokens:
        tok = processor.tokenizer

        def ids(text: str) -> tuple[int, ...]:
            return tuple(tok(text, add_special_tokens=False)["input_ids"])

        return cls(
            eos_id=int(tok.convert_tokens_to_ids("<|im_end|>")),
            pad_id=int(tok.pad_token_id),
            image_pad_id=int(tok.convert_tokens_to_ids("<|image_pad|>")),
            vision_start_id=int(tok.convert_tokens_to_ids("<|vision_start|>")),
            vision_end_id=int(tok.convert_tokens_to_ids("<|vision_end|>")),
            user_open=ids("\n<|im_start|>user\n"),
            assistant_open=ids("<|im_end|>\n<|im_start|>assistant\n"),
            forbidden=tuple(forbidden_token_ids(tok)),
            merge=int(processor.image_processor.merge_size),
        )


@dataclasses.dataclass
class EncodedImage:
    """One image as the processor feeds it to the model.

    Attributes:
        pixel_values: [patches, D] processor rows.
        grid_thw: [t, h, w] patch grid.
        n_tokens: image placeholders it needs: t·h·w / merge².
        frame: original size and the size the processor resized it to.
    """

    pixel_values: torch.Tensor
    grid_thw: list[int]
    n_tokens: int
    frame: Frame


def set_pixel_budget(processor: Any, max_pixels: int) -> None:
    """Set the image processor's ``max_pixels`` (in place); 0 leaves it unchanged."""
    if max_pixels <= 0:
        return
    size = processor.image_processor.size
    key = "longest_edge" if "longest_edge" in size else "max_pixels"
    size[key] = int(max_pixels)


def pixel_budget(processor: Any) -> int:
    """The image processor's ``max_pixels``."""
    size = processor.image_processor.size
    return int(size["longest_edge"] if "longest_edge" in size else size["max_pixels"])


def patch_factor(processor: Any) -> int:
    """Side in pixels of one merged visual token (patch size x merge size)."""
    ip = processor.image_processor
    return int(ip.patch_size) * int(ip.merge_size)


def _grid_tokens(grid_thw: list[int], merge: int) -> int:
    t, h, w = grid_thw
    return t * h * w // (merge * merge)


def encode_image(processor: Any, image: np.ndarray) -> EncodedImage:
    """Run the image processor on one uint8 HxWx3 image."""
    from PIL import Image

    pil = Image.fromarray(np.asarray(image, dtype=np.uint8))
    out = processor.image_processor(images=[pil], return_tensors="pt")
    grid = [int(v) for v in out["image_grid_thw"][0].tolist()]
    merge = int(processor.image_processor.merge_size)
    return EncodedImage(
        pixel_values=out["pixel_values"],
        grid_thw=grid,
        n_tokens=_grid_tokens(grid, merge),
        frame=image_frame(processor, pil.width, pil.height),
    )


def text_ids(tokenizer: Any, text: str) -> list[int]:
    """Ids of untrusted ``text`` with every special / added token split into plain characters."""
    return list(tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])


def observation_ids(
    tokens: ChatTokens, tokenizer: Any, text: str, n_image_tokens: int | None
) -> tuple[list[int], list[int]]:
    """Ids of an observation turn that follows an assistant turn's eos (module docstring).

    Args:
        tokens: the tokenizer's fixed pieces.
        text: the tool's message (untrusted: special tokens are neutralized).
        n_image_tokens: placeholders of the new image, or None for a text-only observation.

    Returns:
        (ids [S], mm_token_type_ids [S]) of the suffix.
    """
    ids = list(tokens.user_open)
    mm = [0] * len(ids)
    if n_image_tokens is not None:
        ids += [tokens.vision_start_id] + [tokens.image_pad_id] * n_image_tokens
        ids += [tokens.vision_end_id]
        mm += [0] + [1] * n_image_tokens + [0]
    body = text_ids(tokenizer, text)
    ids += body + list(tokens.assistant_open)
    mm += [0] * (len(body) + len(tokens.assistant_open))
    return ids, mm


Tools = Sequence[Mapping[str, Any]]
"""OpenAI / Qwen ``tools`` entries ``{"type": "function", "function": {...}}``."""


def render_prompt(
    processor: Any, messages: list[dict[str, Any]], tools: Tools | None = None
) -> str:
    """The checkpoint's chat template applied to ``messages`` with the generation prompt added.

    ``tools`` go to the template as ``apply_chat_template(tools=...)``, so the tool block is the
    template's own. A template that ignores ``tools`` (the Qwen2-VL / Qwen2.5-VL releases' VL
    templates, tiny checkpoints built before their template had tools) would drop them silently;
    then the block Qwen's tool-aware templates write
    (:func:`perception_tools.tools.render_tool_block`) is put into the system text instead, after
    a blank line, which is where those templates put it.
    """
    kw: dict[str, Any] = {"add_generation_prompt": True, "tokenize": False}
    plain = processor.apply_chat_template(messages, **kw)
    if not tools:
        return plain
    tools = [dict(t) for t in tools]
    rendered = processor.apply_chat_template(messages, tools=tools, **kw)
    if rendered != plain:
        return rendered
    return processor.apply_chat_template(_tools_in_system(messages, tools), **kw)


def _tools_in_system(messages: list[dict[str, Any]], tools: Tools) -> list[dict[str, Any]]:
    """``messages`` with the tool block appended to (or forming) the system turn."""
    block = render_tool_block(tools)
    rest = messages
    if messages and messages[0]["role"] == "system":
        content, rest = messages[0]["content"], messages[1:]
        if not isinstance(content, str):
            content = "".join(str(c.get("text", "")) for c in content)
        block = content + "\n\n" + block
    return [{"role": "system", "content": [{"type": "text", "text": block}]}, *rest]


def encode_prompt(
    processor: Any,
    images: list[np.ndarray],
    text: str,
    system: str | None = None,
    key: str = "",
    tools: Tools | None = None,
    text_first: bool = False,
) -> Prompt:
    """Tokenize one user turn (``images`` then ``text``, or ``text`` first with
    ``text_first``) with the generation prompt added.

    Everything goes through the checkpoint's own chat template and processor
    (:func:`render_prompt`), so the layout is the family's (image pads expanded to one per
    visual token, the tool block as the template writes it).

    Args:
        images: uint8 HxWx3 arrays, oldest first (the last is the current screen).
        text: the user text (instruction, history).
        system: optional system prompt.
        key: content key stored on the prompt (equal keys = equal prompts).
        tools: optional tool schemas, passed to the template as ``tools=``.
    """
    from PIL import Image

    msgs = user_message(text, system, n_images=len(images), text_first=text_first)
    rendered = render_prompt(processor, msgs, tools)
    pil = [Image.fromarray(np.asarray(im, dtype=np.uint8)) for im in images]
    enc = processor(text=[rendered], images=pil, return_tensors="pt")
    ids = enc["input_ids"][0]
    image_pad = int(processor.tokenizer.convert_tokens_to_ids("<|image_pad|>"))
    return Prompt(
        input_ids=ids,
        mm_token_type_ids=(ids == image_pad).long(),
        pixel_values=enc["pixel_values"],
        image_grid_thw=enc["image_grid_thw"],
        frames=[image_frame(processor, im.width, im.height) for im in pil],
        key=key,
    )


def content_key(
    images: list[np.ndarray], text: str, system: str | None = None, tools: Tools | None = None
) -> str:
    """A hash of a prompt's content (equal keys = equal prompts). ``tools`` count in their
    rendered order (key order included); no tools hash as before tools existed."""
    import hashlib

    h = hashlib.sha1()
    for im in images:
        arr = np.ascontiguousarray(im)
        h.update(str(arr.shape).encode())
        h.update(arr.tobytes())
    h.update(text.encode())
    h.update((system or "").encode())
    if tools:
        h.update(b"\0tools\0" + json.dumps([dict(t) for t in tools], ensure_ascii=False).encode())
    return h.hexdigest()


class PromptCache:
    """Encodes prompts once: equal content gives the same :class:`Prompt` object (so the
    sampler and the training forward prefill it once per group). Keeps the last ``size``.
    ``text_first``: every prompt puts the text before the images (:func:`encode_prompt`)."""

    def __init__(self, processor: Any, size: int = 64, text_first: bool = False) -> None:
        from collections import OrderedDict

        self.processor = processor
        self.text_first = text_first
        self.size = size
        self._cache: OrderedDict[str, Prompt] = OrderedDict()

    def get(
        self,
        images: list[np.ndarray],
        text: str,
        system: str | None = None,
        tools: Tools | None = None,
    ) -> Prompt:
        key = content_key(images, text, system, tools)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        prompt = encode_prompt(self.processor, images, text, system, key, tools, self.text_first)
        self._cache[key] = prompt
        if len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return prompt
