"""Prompt batches for Qwen-VL policies: chat rendering, processor calls, completion handling.

Everything goes through the checkpoint's own processor and chat template, so the token layout is
the one the model family expects (image pads expanded to one per visual token, M-RoPE inputs,
``mm_token_type_ids``). Shapes: B prompts, P prompt length (left padded), T completion length.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from perception_tools.geometry import Frame, ImageSize, frame_for
from vlagent.algos.entropy import entropy_of_logp


@dataclasses.dataclass
class PromptBatch:
    """Processor outputs for B single-image prompts plus each sample's coordinate frame.

    Attributes:
        inputs: ``input_ids`` [B, P], ``attention_mask`` [B, P], ``mm_token_type_ids`` [B, P],
            ``pixel_values`` [sum of patches, D], ``image_grid_thw`` [B, 3].
        frames: per prompt, original and resized image sizes (for the codec).
    """

    inputs: dict[str, torch.Tensor]
    frames: list[Frame]

    def __len__(self) -> int:
        return int(self.inputs["input_ids"].shape[0])

    def to(self, device: str | torch.device) -> PromptBatch:
        return PromptBatch({k: v.to(device) for k, v in self.inputs.items()}, self.frames)


def image_frame(processor: Any, width: int, height: int) -> Frame:
    """The frame (original and resized size) the processor will use for a width×height image."""
    ip = processor.image_processor
    size = ip.size
    min_pixels = size["shortest_edge"] if "shortest_edge" in size else size["min_pixels"]
    max_pixels = size["longest_edge"] if "longest_edge" in size else size["max_pixels"]
    return frame_for(
        ImageSize(width=width, height=height),
        factor=int(ip.patch_size) * int(ip.merge_size),
        min_pixels=int(min_pixels),
        max_pixels=int(max_pixels),
    )


def user_message(
    instruction: str, system: str | None = None, n_images: int = 1, text_first: bool = False
) -> list[dict[str, Any]]:
    """Chat messages for ``n_images`` screenshots (oldest first) followed by one instruction;
    ``text_first`` puts the instruction before the screenshots (then, under the causal mask,
    the image tokens can attend to it)."""
    msgs: list[dict[str, Any]] = []
    if system:
        msgs.append({"role": "system", "content": [{"type": "text", "text": system}]})
    content: list[dict[str, Any]] = [{"type": "image"} for _ in range(n_images)]
    text = {"type": "text", "text": instruction}
    content = [text, *content] if text_first else [*content, text]
    msgs.append({"role": "user", "content": content})
    return msgs


def encode_prompts(
    processor: Any,
    images: Sequence[np.ndarray],
    instructions: Sequence[str],
    system: str | None = None,
) -> PromptBatch:
    """Render and tokenize B (screenshot, instruction) prompts with generation prompts added.

    Args:
        processor: the policy's Qwen-VL processor (left padding).
        images: B uint8 arrays H×W×3 (sizes may differ).
        instructions: B instruction strings.
        system: optional system prompt.
    """
    from PIL import Image

    if len(images) != len(instructions):
        raise ValueError(f"{len(images)} images but {len(instructions)} instructions")
    texts = [
        processor.apply_chat_template(
            user_message(i, system), add_generation_prompt=True, tokenize=False
        )
        for i in instructions
    ]
    pil = [Image.fromarray(np.asarray(im, dtype=np.uint8)) for im in images]
    enc = processor(text=texts, images=pil, return_tensors="pt", padding=True)
    frames = [image_frame(processor, im.width, im.height) for im in pil]
    return PromptBatch(inputs=dict(enc), frames=frames)


def _image_rows(grid_thw: torch.Tensor) -> list[int]:
    """Number of ``pixel_values`` rows each image owns: t·h·w patches."""
    return [int(n) for n in grid_thw.prod(dim=-1).tolist()]


_ROW_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids")


def select_prompts(batch: PromptBatch, rows: Sequence[int] | torch.Tensor) -> PromptBatch:
    """The prompts at ``rows`` (repeats allowed), with each image's ``pixel_values`` rows."""
    idx = torch.as_tensor(rows, dtype=torch.long)
    inp = batch.inputs
    out = {k: inp[k][idx] for k in _ROW_KEYS if k in inp}
    out["image_grid_thw"] = inp["image_grid_thw"][idx]
    chunks = torch.split(inp["pixel_values"], _image_rows(inp["image_grid_thw"]), dim=0)
    picked = [chunks[i] for i in idx.tolist()]
    out["pixel_values"] = torch.cat(picked, dim=0) if picked else inp["pixel_values"][:0]
    return PromptBatch(out, [batch.frames[i] for i in idx.tolist()])


def repeat_prompts(batch: PromptBatch, group_size: int) -> PromptBatch:
    """Repeat each prompt ``group_size`` times in place order: [p0, p0, …, p1, p1, …].

    Returns:
        A batch of B·G prompts; ``pixel_values`` rows are repeated per image.
    """
    return select_prompts(batch, torch.arange(len(batch)).repeat_interleave(group_size))


def completion_mask(
    completion_ids: torch.Tensor, eos_ids: Sequence[int], pad_id: int
) -> torch.Tensor:
    """1 on completion tokens up to and including the first eos; 0 after it and on padding.

    Args:
        completion_ids: [B, T] generated token ids.
    Returns:
        [B, T] float mask.
    """
    is_eos = torch.zeros_like(completion_ids, dtype=torch.bool)
    for e in eos_ids:
        is_eos |= completion_ids == e
    # Tokens strictly after the first eos: the running count of eos before this position is > 0.
    after = (is_eos.cumsum(dim=1) - is_eos.long()) > 0
    mask = ~after
    if pad_id not in eos_ids:
        mask &= completion_ids != pad_id
    return mask.float()


def join_completions(
    prompts: PromptBatch, completion_ids: torch.Tensor, mask: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Model inputs for prompt + completion (for a teacher-forced forward pass).

    Args:
        prompts: B prompts (left padded, length P).
        completion_ids: [B, T]; mask: [B, T] (1 on real completion tokens).
    Returns:
        Model kwargs with sequences of length P + T. Positions (M-RoPE) are recomputed by the
        model from ``input_ids`` and ``mm_token_type_ids`` since no cache is passed.
    """
    inp = prompts.inputs
    out = dict(inp)
    out["input_ids"] = torch.cat([inp["input_ids"], completion_ids], dim=1)
    out["attention_mask"] = torch.cat(
        [inp["attention_mask"], mask.to(inp["attention_mask"].dtype)], dim=1
    )
    if "mm_token_type_ids" in inp:
        zeros = torch.zeros_like(completion_ids, dtype=inp["mm_token_type_ids"].dtype)
        out["mm_token_type_ids"] = torch.cat([inp["mm_token_type_ids"], zeros], dim=1)
    return out


VISION_PLACEHOLDERS = (
    "<|image_pad|>",
    "<|video_pad|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
)


class ForbiddenIds(list[int]):
    """Sorted token ids the policy may never emit: a few ``head`` ids, then ``[tail, end)``.

    A plain ``list`` of every id for callers (sets, tensor indexing, ``suppress_tokens``);
    :func:`mask_logits` masks the block ``[tail, V)`` with one slice instead of an index list.

    Attributes:
        head: the ids below ``tail`` (vision placeholders).
        tail: first id past the tokenizer's vocabulary (``None``: no block).
    """

    def __init__(self, head: Sequence[int], tail: int | None = None, end: int = 0) -> None:
        self.head = sorted(head)
        self.tail = tail
        super().__init__(self.head if tail is None else [*self.head, *range(tail, end)])


def output_vocab_size(model: Any) -> int | None:
    """Rows of the model's output layer (the size V of its logits), ``None`` if unknown."""
    get = getattr(model, "get_output_embeddings", None)
    head = get() if callable(get) else None
    weight = getattr(head, "weight", None)
    if weight is not None and weight.dim() == 2:
        return int(weight.shape[0])
    config = getattr(model, "config", None)
    size = getattr(getattr(config, "text_config", config), "vocab_size", None)
    return int(size) if size else None


def forbidden_token_ids(tokenizer: Any, vocab_size: int | None = None) -> ForbiddenIds:
    """Ids the policy may never emit.

    - Vision placeholders: a completion that contained one would be read as an image slot by
      the next forward pass (features/tokens mismatch).
    - Every id from ``len(tokenizer)`` up to ``vocab_size`` (the model's output rows, see
      :func:`output_vocab_size`): checkpoints pad their embedding past the tokenizer (Qwen3-VL:
      151,936 rows for 151,669 tokens), and those ids decode to nothing. Masked, their logits
      are -inf in the sampler and in every training forward, so their rows get no gradient.

    Args:
        tokenizer: the policy's tokenizer.
        vocab_size: the model's output size V; ``None`` masks the placeholders only.
    """
    unk = tokenizer.unk_token_id
    ids = {tokenizer.convert_tokens_to_ids(t) for t in VISION_PLACEHOLDERS}
    n_tok = len(tokenizer)
    head = sorted(i for i in ids if i is not None and i != unk and 0 <= i < n_tok)
    if vocab_size is None or vocab_size <= n_tok:
        return ForbiddenIds(head)
    return ForbiddenIds(head, tail=n_tok, end=vocab_size)


def policy_forbidden_ids(policy: Any) -> ForbiddenIds:
    """:func:`forbidden_token_ids` of a loaded policy (its tokenizer and output size)."""
    return forbidden_token_ids(policy.tokenizer, output_vocab_size(policy.model))


def fill_forbidden_(
    logits: torch.Tensor, forbidden: Sequence[int] | None, value: float
) -> torch.Tensor:
    """Set the forbidden vocabulary entries of ``logits`` [..., V] to ``value``, in place.

    A :class:`ForbiddenIds` block ``[tail, V)`` is one slice; other ids go by index, so the
    pass covers those columns only. Returns ``logits``.
    """
    if not forbidden:
        return logits
    tail = getattr(forbidden, "tail", None)
    head = getattr(forbidden, "head", ()) if tail is not None else list(forbidden)
    if tail is not None:
        logits[..., tail:] = value
    if head:
        logits[..., list(head)] = value
    return logits


def mask_logits(logits: torch.Tensor, forbidden: Sequence[int] | None) -> torch.Tensor:
    """Set forbidden vocabulary entries of ``logits`` [..., V] to -inf (a masked copy).

    Gradients through masked entries are zero.
    """
    if not forbidden:
        return logits
    return fill_forbidden_(logits.clone(), forbidden, float("-inf"))


def mask_logits_(logits: torch.Tensor, forbidden: Sequence[int] | None) -> torch.Tensor:
    """:func:`mask_logits` in place on ``logits`` [..., V] (a fresh tensor nobody else reads):
    no copy of a [rows, V] tensor. Returns ``logits``."""
    return fill_forbidden_(logits, forbidden, float("-inf"))


def completion_logprobs(
    model: Any,
    prompts: PromptBatch,
    completion_ids: torch.Tensor,
    mask: torch.Tensor,
    temperature: float = 1.0,
    forbidden: Sequence[int] | None = None,
    entropy_out: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """Per-token log-probabilities of ``completion_ids`` under ``model`` (teacher forcing).

    Args:
        model: a Qwen-VL ``*ForConditionalGeneration``.
        prompts: B prompts; completion_ids, mask: [B, T].
        temperature: logits are divided by it (match the sampler's temperature).
        forbidden: token ids excluded from the distribution (``forbidden_token_ids``), exactly as
            the sampler excluded them.
        entropy_out: if a list is given, the detached per-token entropy [B, T] of the
            (tempered, masked) distribution is appended to it (for logging; no extra pass).
    Returns:
        [B, T] log-probs (zero where ``mask`` is 0).
    """
    t = completion_ids.shape[1]
    kwargs = join_completions(prompts, completion_ids, mask)
    # Only the last T+1 positions' logits are needed: avoids a [B, P+T, V] tensor for big vocabs.
    out = model(**kwargs, logits_to_keep=t + 1, use_cache=False)
    logits = mask_logits(out.logits[:, :-1, :].float(), forbidden) / temperature  # [B, T, V]
    logp = torch.log_softmax(logits, dim=-1)
    tok = logp.gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)  # [B, T]
    if entropy_out is not None:
        with torch.no_grad():
            entropy_out.append(entropy_of_logp(logp, mask))  # [B, T]
    return tok * mask
