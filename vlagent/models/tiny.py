"""Tiny random Qwen-VL models built from a config, offline, for tests and the quickstart.

``build_tiny_model(out_dir, family=...)`` writes a normal checkpoint folder (config, safetensors
weights, tokenizer, processor, chat template, generation config) that ``load_policy`` reads like
any Hugging Face checkpoint. Nothing is downloaded.

Localization init (``docs/DESIGN.md``, "The tiny model"): with transformers' default init a tiny
vision tower carries almost no information about *where* things are, and a tiny policy never
learns to click in a CPU budget. ``localization_init=True`` applies the two changes that were
measured to fix it: Qwen3-VL's learned vision position table is filled with a 2-D sin/cos table
scaled to unit std, and the vision tower's 2-D weights are multiplied by ``vision_gain``.
For Qwen2-VL / Qwen2.5-VL (no absolute vision position table) only the gain applies, and the
text M-RoPE base is lowered so that the spatial rotation across a small image is visible.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Literal

from vlagent.errors import ModelError

Family = Literal["qwen2_vl", "qwen2_5_vl", "qwen3_vl"]
FAMILIES: tuple[Family, ...] = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")


@dataclasses.dataclass(frozen=True)
class TinyModelSpec:
    """Sizes of a tiny Qwen-VL model.

    Attributes:
        family: which Qwen-VL architecture to instantiate.
        text_hidden: language-model hidden size.
        text_layers: language-model decoder layers.
        text_heads: attention heads (head_dim = text_hidden / text_heads).
        text_kv_heads: key/value heads (grouped-query attention).
        text_intermediate: MLP width of the language model.
        vision_hidden: vision-tower width.
        vision_layers: vision-tower depth.
        vision_heads: vision-tower attention heads.
        vocab_size: BPE vocabulary size of the locally built tokenizer (before specials).
        rope_theta: text RoPE base; small values make M-RoPE's spatial rotation visible.
        max_pixels: image processor pixel budget (images above it are downscaled).
        min_pixels: image processor minimum pixel count.
        localization_init: apply the init that makes position learnable (module docstring).
        vision_gain: multiplier for the vision tower's 2-D weights when ``localization_init``.
        seed: torch seed for the random weights.
    """

    family: Family = "qwen3_vl"
    text_hidden: int = 128
    text_layers: int = 2
    text_heads: int = 4
    text_kv_heads: int = 2
    text_intermediate: int = 256
    vision_hidden: int = 64
    vision_layers: int = 2
    vision_heads: int = 4
    vocab_size: int = 1024
    rope_theta: float = 10_000.0
    max_pixels: int = 448 * 448
    min_pixels: int = 32 * 32
    localization_init: bool = True
    vision_gain: float = 5.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ModelError(
                f"family {self.family!r} is unknown; known families: {', '.join(FAMILIES)}"
            )
        if self.text_hidden % self.text_heads:
            raise ModelError(
                f"text_hidden={self.text_hidden} must be divisible by text_heads={self.text_heads}"
            )
        if (self.text_hidden // self.text_heads) % 4:
            raise ModelError(
                "head_dim (text_hidden / text_heads) must be a multiple of 4 for M-RoPE"
            )
        if self.vision_hidden % self.vision_heads:
            raise ModelError(
                f"vision_hidden={self.vision_hidden} must be divisible by vision_heads={self.vision_heads}"
            )

    @property
    def head_dim(self) -> int:
        return self.text_hidden // self.text_heads

    @property
    def patch_size(self) -> int:
        return 16 if self.family == "qwen3_vl" else 14


def _mrope_section(head_dim: int) -> list[int]:
    """Split head_dim/2 rotary pairs into (t, h, w) sections in Qwen's 1:1.5:1.5 proportion."""
    half = head_dim // 2
    t = max(1, round(half * 0.25))
    h = (half - t) // 2
    return [t, h, half - t - h]


def _config(spec: TinyModelSpec, tokenizer):
    """Build the transformers config for ``spec`` with token ids taken from ``tokenizer``."""
    from transformers import Qwen2_5_VLConfig, Qwen2VLConfig, Qwen3VLConfig

    ids = {
        name: tokenizer.convert_tokens_to_ids(tok)
        for name, tok in (
            ("image_token_id", "<|image_pad|>"),
            ("video_token_id", "<|video_pad|>"),
            ("vision_start_token_id", "<|vision_start|>"),
            ("vision_end_token_id", "<|vision_end|>"),
        )
    }
    rope = {"rope_type": "default", "rope_theta": spec.rope_theta}
    rope["mrope_section"] = _mrope_section(spec.head_dim)
    text = dict(
        vocab_size=len(tokenizer),
        hidden_size=spec.text_hidden,
        intermediate_size=spec.text_intermediate,
        num_hidden_layers=spec.text_layers,
        num_attention_heads=spec.text_heads,
        num_key_value_heads=spec.text_kv_heads,
        max_position_embeddings=4096,
        rope_parameters=rope,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    if spec.family == "qwen3_vl":
        rope["mrope_interleaved"] = True
        text["head_dim"] = spec.head_dim
        vision = dict(
            depth=spec.vision_layers,
            hidden_size=spec.vision_hidden,
            intermediate_size=spec.vision_hidden * 2,
            num_heads=spec.vision_heads,
            out_hidden_size=spec.text_hidden,
            patch_size=16,
            num_position_embeddings=32 * 32,
            deepstack_visual_indexes=[],
        )
        return Qwen3VLConfig(
            text_config=text, vision_config=vision, tie_word_embeddings=True, **ids
        )
    if spec.family == "qwen2_5_vl":
        vision = dict(
            depth=spec.vision_layers,
            hidden_size=spec.vision_hidden,
            intermediate_size=spec.vision_hidden * 2,
            num_heads=spec.vision_heads,
            out_hidden_size=spec.text_hidden,
            window_size=112,
            fullatt_block_indexes=[spec.vision_layers - 1],
        )
        return Qwen2_5_VLConfig(
            text_config=text, vision_config=vision, tie_word_embeddings=True, **ids
        )
    vision = dict(
        depth=spec.vision_layers,
        embed_dim=spec.vision_hidden,
        hidden_size=spec.text_hidden,
        mlp_ratio=2,
        num_heads=spec.vision_heads,
    )
    return Qwen2VLConfig(text_config=text, vision_config=vision, tie_word_embeddings=True, **ids)


def sincos_table_2d(side: int, dim: int) -> torch.Tensor:  # noqa: F821
    """A 2-D sin/cos position table for a ``side`` × ``side`` grid, scaled to unit std.

    Args:
        side: grid side (rows = columns = side).
        dim: embedding width, a multiple of 4 (half for x, half for y).

    Returns:
        Tensor [side*side, dim], row-major over (row, col), with std 1.
    """
    import torch

    quarter = dim // 4
    freqs = 1.0 / (side ** (torch.arange(quarter, dtype=torch.float64) / max(quarter, 1)))
    coords = torch.arange(side, dtype=torch.float64) * math.pi / 2
    ang = coords[:, None] * freqs[None, :]  # [side, quarter]
    per_axis = torch.cat([ang.sin(), ang.cos()], dim=1)  # [side, 2*quarter]
    rows = per_axis[:, None, :].expand(side, side, -1)
    cols = per_axis[None, :, :].expand(side, side, -1)
    table = torch.cat([rows, cols], dim=-1).reshape(side * side, -1)
    table = table - table.mean()
    return (table / table.std()).float()


def apply_localization_init(model, spec: TinyModelSpec) -> None:
    """Make the vision tower's output carry position (module docstring). In place."""
    import torch

    visual = model.model.visual
    with torch.no_grad():
        for name, param in visual.named_parameters():
            if param.dim() >= 2 and "pos_embed" not in name:
                param.mul_(spec.vision_gain)
        pos = getattr(visual, "pos_embed", None)
        if pos is not None:
            side = int(round(math.sqrt(pos.weight.shape[0])))
            pos.weight.copy_(sincos_table_2d(side, pos.weight.shape[1]))


def build_processor(spec: TinyModelSpec, tokenizer):
    """The stock Qwen-VL processor for ``spec.family`` around the tiny tokenizer."""
    from transformers import (
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    from vlagent.models.chat_template import TINY_CHAT_TEMPLATE

    pixels = {"shortest_edge": spec.min_pixels, "longest_edge": spec.max_pixels}
    if spec.family == "qwen3_vl":
        norm = {"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}
        image = Qwen2VLImageProcessor(patch_size=16, merge_size=2, size=pixels, **norm)
        video = Qwen3VLVideoProcessor(patch_size=16, merge_size=2, **norm)
        cls = Qwen3VLProcessor
    else:
        image = Qwen2VLImageProcessor(patch_size=14, merge_size=2, size=pixels)
        video = Qwen2VLVideoProcessor(patch_size=14, merge_size=2)
        cls = Qwen2_5_VLProcessor if spec.family == "qwen2_5_vl" else Qwen2VLProcessor
    return cls(
        image_processor=image,
        tokenizer=tokenizer,
        video_processor=video,
        chat_template=TINY_CHAT_TEMPLATE,
    )


def build_tiny_model(out_dir: str | Path, spec: TinyModelSpec | None = None, **overrides) -> Path:
    """Build a tiny random Qwen-VL checkpoint in ``out_dir`` and return the folder.

    Args:
        out_dir: destination folder; written atomically (a temp folder renamed at the end).
        spec: sizes; ``overrides`` replace fields of the default spec (e.g. ``family="qwen2_vl"``).

    Returns:
        The checkpoint folder, loadable with ``vlagent.models.load_policy``.
    """
    import torch
    from transformers import AutoModelForImageTextToText, GenerationConfig

    from vlagent.io import atomic_dir
    from vlagent.models.tokenizer import build_qwen_tokenizer

    spec = dataclasses.replace(spec or TinyModelSpec(), **overrides)
    tokenizer = build_qwen_tokenizer(spec.vocab_size)
    config = _config(spec, tokenizer)
    torch.manual_seed(spec.seed)
    model = AutoModelForImageTextToText.from_config(config)
    if spec.localization_init:
        apply_localization_init(model, spec)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )
    processor = build_processor(spec, tokenizer)
    out = Path(out_dir)
    with atomic_dir(out) as tmp:
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        (tmp / "vlagent_tiny_spec.json").write_text(json.dumps(dataclasses.asdict(spec), indent=2))
    return out
