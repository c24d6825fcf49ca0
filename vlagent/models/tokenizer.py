"""A small Qwen-compatible tokenizer built locally, with no network.

The tiny models used by tests and the quickstart need a tokenizer that behaves like Qwen's
(same pre-tokenizer, so digits are single tokens; same special tokens, so the stock Qwen-VL
processors and chat templates work) but has a vocabulary of about a thousand tokens, which keeps
the embedding matrix small. We train a byte-level BPE on a corpus of the phrases our tasks use
and wrap it in transformers' ``Qwen2Tokenizer``.
"""

from __future__ import annotations

import itertools

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

# Qwen2 / Qwen2.5 / Qwen3 special tokens, in their order; ids follow the BPE vocabulary.
QWEN_SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
# Added (non-special) tokens that Qwen checkpoints also carry as single tokens.
QWEN_ADDED_TOKENS: tuple[str, ...] = ("<tool_call>", "</tool_call>", "<think>", "</think>")

# Same split pattern as Qwen2Tokenizer: every digit is its own pre-token.
_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

_WORDS = [
    "click",
    "tap",
    "press",
    "select",
    "choose",
    "open",
    "the",
    "a",
    "an",
    "on",
    "in",
    "at",
    "of",
    "to",
    "and",
    "or",
    "with",
    "next",
    "below",
    "above",
    "left",
    "right",
    "top",
    "bottom",
    "middle",
    "center",
    "centre",
    "leftmost",
    "rightmost",
    "topmost",
    "first",
    "second",
    "third",
    "last",
    "button",
    "icon",
    "toggle",
    "switch",
    "field",
    "text",
    "row",
    "tab",
    "menu",
    "item",
    "list",
    "element",
    "label",
    "link",
    "checkbox",
    "red",
    "green",
    "blue",
    "yellow",
    "purple",
    "orange",
    "cyan",
    "pink",
    "white",
    "black",
    "gray",
    "grey",
    "brown",
    "circle",
    "square",
    "rectangle",
    "triangle",
    "diamond",
    "star",
    "shape",
    "settings",
    "search",
    "home",
    "back",
    "profile",
    "wifi",
    "bluetooth",
    "battery",
    "display",
    "sound",
    "notifications",
    "apps",
    "contacts",
    "notes",
    "clock",
    "alarm",
    "camera",
    "photos",
    "messages",
    "mail",
    "calendar",
    "files",
    "music",
    "maps",
    "browser",
    "save",
    "cancel",
    "ok",
    "submit",
    "delete",
    "edit",
    "add",
    "new",
    "share",
    "send",
    "close",
    "done",
    "next",
    "previous",
    "login",
    "sign",
    "zoom",
    "crop",
    "ground",
    "image",
    "region",
    "point",
    "box",
    "answer",
    "think",
    "tool",
    "call",
    "name",
    "arguments",
    "where",
    "is",
    "find",
    "locate",
    "which",
    "screen",
    "window",
    "title",
    "bar",
    "toolbar",
    "sidebar",
    "panel",
    "dialog",
]

_TEMPLATES = (
    '<answer>{{"point": [{x}, {y}]}}</answer>',
    '<answer>{{"point":[{x},{y}]}}</answer>',
    '<answer>{{"bbox": [{x}, {y}, {x}, {y}]}}</answer>',
    '{{"point_2d": [{x}, {y}]}}',
    '{{"point_2d":[{x},{y}]}}',
    '[{{"bbox_2d": [{x}, {y}, {x}, {y}], "label": "target"}}]',
    '<think>{w}</think><answer>{{"point": [{x}, {y}]}}</answer>',
    '<tool_call>{{"name": "zoom_in", "arguments": {{"bbox_2d": [{x}, {y}, {x}, {y}]}}}}</tool_call>',
    "Action: click(point='<point>{x} {y}</point>')",
    "Click the {w} {w}.",
    "Tap the {w} {w}.",
    "<|im_start|>user\n{w}<|im_end|>\n<|im_start|>assistant\n",
)


def _corpus() -> list[str]:
    """Deterministic training corpus: task phrases and every answer format we parse."""
    lines = [" ".join(_WORDS), " ".join(w.capitalize() for w in _WORDS)]
    for template, (i, word) in itertools.product(_TEMPLATES, enumerate(_WORDS)):
        lines.append(template.format(x=(i * 37) % 1000, y=(i * 91) % 1000, w=word))
    return lines


def build_bpe_tokenizer(vocab_size: int = 1024) -> Tokenizer:
    """Train a byte-level BPE with Qwen's pre-tokenizer on the built-in corpus.

    Args:
        vocab_size: target size of the BPE vocabulary (specials and added tokens come on top).

    Returns:
        A ``tokenizers.Tokenizer``; training is deterministic, so the same call gives the same
        vocabulary and merges on every machine.
    """
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    return tok


def build_qwen_tokenizer(vocab_size: int = 1024):
    """Build a ``Qwen2Tokenizer`` with a small locally trained vocabulary.

    Args:
        vocab_size: BPE vocabulary size before special tokens.

    Returns:
        A transformers ``Qwen2Tokenizer`` carrying Qwen's special tokens (``<|image_pad|>`` …),
        ``<tool_call>`` / ``<think>`` added tokens, and ``<|endoftext|>`` as pad, and
        ``<|im_end|>`` as eos (as in Qwen-VL instruct checkpoints).
    """
    from tokenizers import AddedToken
    from transformers import Qwen2Tokenizer

    bpe = build_bpe_tokenizer(vocab_size)
    model_json = bpe.model.__getstate__()
    import json

    state = json.loads(model_json)
    vocab: dict[str, int] = state["vocab"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in state["merges"]]
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        errors="replace",
    )
    tokenizer.add_special_tokens(
        {"additional_special_tokens": [AddedToken(t, special=True) for t in QWEN_SPECIAL_TOKENS]}
    )
    tokenizer.add_tokens([AddedToken(t, special=False) for t in QWEN_ADDED_TOKENS])
    return tokenizer
