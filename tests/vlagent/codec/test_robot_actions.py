"""The VLA action codec: uniform bins, digit and reserved-token replies, hostile replies.

Hand-computed bins (256 bins on [-1, 1], width 1/128): -1 -> 0, 1 -> 255, 0 -> 128 (0 is the
edge between bins 127 and 128; bins are ``floor((a + 1) * 128)``), -1/256 -> 127; centres are
``-1 + (b + 0.5) / 128``: bin 0 -> -0.99609375, bin 128 -> +0.00390625.
"""

from __future__ import annotations

import numpy as np
import pytest
from hostile_text import hostile_corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vlagent.codec.robot_actions import (
    ActionBins,
    ParsedActions,
    RobotActionCodec,
    reserved_token_ids,
)
from vlagent.models.tokenizer import build_qwen_tokenizer


@pytest.fixture(scope="module")
def tok():
    """The tiny models' tokenizer (``vlagent.models.tiny`` builds it the same way)."""
    return build_qwen_tokenizer(1024)


def _assert_invalid(p: ParsedActions, shape: tuple[int, int]) -> None:
    assert p.invalid and p.reason
    assert p.actions.shape == shape and p.actions.dtype == np.float32
    assert np.isnan(p.actions).all()
    assert (p.bins == -1).all() and p.bins.shape == shape


def _assert_sane(p: ParsedActions, codec: RobotActionCodec) -> None:
    """Whatever came in: the documented shape, and either all NaN or real bin centres."""
    shape = (codec.chunk, codec.dims)
    assert isinstance(p, ParsedActions) and p.actions.shape == shape
    if p.invalid:
        _assert_invalid(p, shape)
    else:
        assert p.reason == "" and ((p.bins >= 0) & (p.bins < codec.n_bins)).all()
        np.testing.assert_array_equal(p.actions, codec.bins.centres(p.bins))


# -- bins ------------------------------------------------------------------------------------


def test_bins_hand_computed_256():
    b = ActionBins(256)
    a = np.array([-1.0, 1.0, 0.0, -1 / 256, 1 / 128, -1 + 1 / 128, 1 - 1 / 128, -5.0, np.inf])
    np.testing.assert_array_equal(b.to_bins(a), [0, 255, 128, 127, 129, 1, 255, 0, 255])
    assert b.to_bins(a).dtype == np.int64


def test_bins_hand_computed_4():
    b = ActionBins(4)  # width 0.5: edges -1, -0.5, 0, 0.5, 1
    a = np.array([-1.0, -0.75, -0.5, -0.01, 0.0, 0.49, 0.5, 0.99, 1.0])
    np.testing.assert_array_equal(b.to_bins(a), [0, 0, 1, 1, 2, 2, 3, 3, 3])


def test_centres_are_centres_not_edges():
    b = ActionBins(256)
    c = b.centres(np.array([0, 127, 128, 255]))
    np.testing.assert_array_equal(c, [-0.99609375, -0.00390625, 0.00390625, 0.99609375])
    assert c.dtype == np.float32
    np.testing.assert_array_equal(ActionBins(4).centres(np.arange(4)), [-0.75, -0.25, 0.25, 0.75])


@settings(max_examples=200, deadline=None)
@given(
    n_bins=st.integers(2, 1024),
    low=st.floats(-10, 0, allow_nan=False),
    span=st.floats(0.01, 20),
    a=arrays(np.float64, st.integers(1, 12), elements=st.floats(allow_nan=False)),
)
def test_centre_within_half_a_bin(n_bins, low, span, a):
    b = ActionBins(n_bins, low, low + span)
    bins = b.to_bins(a)
    assert ((bins >= 0) & (bins < n_bins)).all()
    err = np.abs(b.centres(bins).astype(np.float64) - np.clip(a, low, low + span))
    assert (err <= b.width / 2 + 1e-6 * max(1.0, abs(low) + span)).all()


def test_bins_refuse_nan_and_bad_input():
    b = ActionBins()
    with pytest.raises(ValueError, match="NaN"):
        b.to_bins(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="numeric"):
        b.to_bins(np.array(["1"]))
    with pytest.raises(ValueError, match=r"\[0, 256\)"):
        b.centres(np.array([256]))
    with pytest.raises(ValueError, match=r"\[0, 256\)"):
        b.centres(np.array([-1]))
    with pytest.raises(ValueError, match="integer"):
        b.centres(np.array([0.5]))
    with pytest.raises(ValueError, match="n_bins"):
        ActionBins(1)
    with pytest.raises(ValueError, match="low < high"):
        ActionBins(8, 1.0, -1.0)


# -- round trips -----------------------------------------------------------------------------

ACTIONS = st.floats(-1.5, 1.5, allow_nan=False)


def _codec(style: str, chunk: int, tok) -> RobotActionCodec:
    return RobotActionCodec(chunk=chunk, style=style, tokenizer=tok if style == "tokens" else None)


@pytest.mark.parametrize("style", ["digits", "padded", "tokens"])
@pytest.mark.parametrize("chunk", [1, 4])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trip_within_half_a_bin(tok, style, chunk, data):
    codec = _codec(style, chunk, tok)
    a = data.draw(arrays(np.float64, (chunk, 4), elements=ACTIONS))
    want = codec.bins.to_bins(a)
    replies = [codec.parse(codec.render(a))]
    if style == "tokens":
        replies.append(codec.parse("", codec.render_ids(a) + [tok.eos_token_id]))
    for p in replies:
        if p.invalid:  # the text path refuses a text with two splits; it never misreads one
            assert style == "tokens" and "more than one way" in p.reason
            continue
        np.testing.assert_array_equal(p.bins, want)
        assert (np.abs(p.actions - np.clip(a, -1, 1)) <= 1 / 256 + 1e-6).all()
    assert not replies[-1].invalid  # digits text and token ids always read back


def test_digits_grammar():
    codec = RobotActionCodec(chunk=2)
    a = np.array([[-1.0, 1.0, 0.0, 0.5], [-0.9, -0.5, 0.25, 0.99]])
    assert codec.render(a) == "0 255 128 192;12 64 160 254"
    p = codec.parse("  0 255 128 192;12 64 160 254\n")
    np.testing.assert_array_equal(p.bins, [[0, 255, 128, 192], [12, 64, 160, 254]])
    assert RobotActionCodec().parse("007 0 0 0").bins.tolist() == [[7, 0, 0, 0]]
    assert RobotActionCodec().render(np.zeros(4)) == "128 128 128 128"


def test_padded_grammar_has_one_place_value_per_digit():
    codec = RobotActionCodec(chunk=2, style="padded")
    a = np.array([[-1.0, 1.0, 0.0, 0.5], [-0.9, -0.5, 0.25, 0.99]])
    assert codec.render(a) == "000 255 128 192;012 064 160 254"
    np.testing.assert_array_equal(
        codec.parse(codec.render(a)).bins, [[0, 255, 128, 192], [12, 64, 160, 254]]
    )
    assert RobotActionCodec(n_bins=1000, style="padded").render(np.full(4, -0.99)) == (
        "005 005 005 005"
    )
    assert RobotActionCodec(n_bins=32, style="padded").render(np.full(4, -1.0)) == "00 00 00 00"
    assert RobotActionCodec(style="padded").parse("0007 0 0 0").invalid  # wider than a bin


def test_render_refuses_bad_actions():
    with pytest.raises(ValueError, match=r"shape \(2, 4\)"):
        RobotActionCodec(chunk=2).render(np.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        RobotActionCodec().render(np.array([0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="render_ids is for style 'tokens'"):
        RobotActionCodec().render_ids(np.zeros(4))


def test_constructor_errors(tok):
    with pytest.raises(ValueError, match="tokenizer"):
        RobotActionCodec(style="tokens")
    with pytest.raises(ValueError, match="unknown"):
        RobotActionCodec(style="hex")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="chunk"):
        RobotActionCodec(chunk=0)
    with pytest.raises(ValueError, match="fewer than"):
        RobotActionCodec(n_bins=1000, style="tokens", tokenizer=tok)


# -- hostile replies -------------------------------------------------------------------------

HOSTILE = [
    "", " ", "\n\t ", "1 2 3", "1 2 3 4 5", "256 0 0 0", "-1 0 0 0", "1000000000 0 0 0",
    "1e9 0 0 0", "12.5 0 0 0", "1. 2 3 4", "nan 0 0 0", "NaN NaN NaN NaN", "inf 0 0 0",
    "-0 0 0 0", "+1 2 3 4", "0x10 0 0 0", "1_0 0 0 0", "0001 0 0 0", "255 255 255 2555",
    '{"action": [1, 2, 3, 4]}', "[1, 2, 3, 4]", "[[1 2 3 4]]", "(1 2 3 4)", "١٢ 0 0 0",
    "１２ 0 0 0", "１ ２ ３ ４", "² 0 0 0", "🤖", "1 2 3 4🤖", "1" * 100_000,
    "1 2 3 4;" * 20_000, "None", "null", "undefined", "True", "[]", "{}", "1,2,3,4",
    "1, 2, 3, 4", "1  2 3 4", "1\t2\t3\t4", "1\n2\n3\n4", "1 2 3 4;", ";1 2 3 4",
    "1 2 3 4 garbage", "Action: 1 2 3 4", "<answer>1 2 3 4</answer>", "\x00 1 2 3",
    "1 2 3 4\x00", "1 2 3 \u200b4", "1\u00a02 3 4", "1\u30002 3 4", "\ud800", "12 255 0 130;7 8 9 10",
    "1 2 3 41 2 3 4", "<|im_end|>", "1 2 3 4<|im_end|>", "one two three four", "-", ";", " ; ",
]  # fmt: skip
HOSTILE_CHUNK2 = ["1 2 3 4", "1 2 3 4;5 6 7", "1 2 3 4;;5 6 7 8", "1 2 3 4;5 6 7 8;9 9 9 9"]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_digits_is_invalid(text):
    _assert_invalid(RobotActionCodec().parse(text), (1, 4))


@pytest.mark.parametrize("text", HOSTILE_CHUNK2)
def test_partial_or_extra_chunk_is_invalid(text):
    _assert_invalid(RobotActionCodec(chunk=2).parse(text), (2, 4))


def test_hostile_reasons_name_the_problem():
    parse = RobotActionCodec(chunk=2).parse
    assert "256 is not a bin in 0..255" in parse("1 2 3 4;5 256 7 8").reason
    assert "action 2 number 3" in parse("1 2 3 4;5 6 x 8").reason
    assert "expected 2 action(s)" in parse("1 2 3 4").reason
    assert "expected 4 numbers" in parse("1 2 3;1 2 3 4").reason
    assert "empty" in parse(" ").reason
    assert "longer than 20000" in parse("1" * 100_000).reason
    assert "longer than 2 action(s) can be" in parse("1 2 3 4;" * 1000).reason


def test_hostile_tokens_text_is_invalid(tok):
    codec = RobotActionCodec(style="tokens", tokenizer=tok)
    for text in HOSTILE + HOSTILE_CHUNK2:
        _assert_invalid(codec.parse(text), (1, 4))


def test_hostile_token_ids_are_invalid(tok):
    codec = RobotActionCodec(style="tokens", tokenizer=tok)
    lo, hi = codec.token_ids[0], codec.token_ids[-1]
    eos = tok.eos_token_id
    cases = [
        [], [lo] * 3, [lo] * 5, [lo - 1, lo, lo, lo], [lo, lo, lo, hi + 1], [-1, lo, lo, lo],
        [lo, eos, lo, lo, lo], [eos, lo, lo, lo, lo], [lo] * 1_000_000, [2**70, lo, lo, lo],
        ["a", lo, lo, lo], [None, lo, lo, lo], "abcd", 5, [lo, lo, lo, lo, 0],
    ]  # fmt: skip
    for ids in cases:
        _assert_invalid(codec.parse("", ids), (1, 4))  # type: ignore[arg-type]
    ok = codec.parse("junk", np.array([lo, hi, lo, hi, eos, tok.pad_token_id]))
    assert not ok.invalid and ok.bins.tolist() == [[0, 255, 0, 255]]


@pytest.mark.parametrize("style", ["digits", "padded", "tokens"])
@pytest.mark.parametrize("chunk", [1, 4])
def test_fuzz_corpus_never_raises(tok, style, chunk):
    codec = _codec(style, chunk, tok)
    for text in hostile_corpus(seed=13, n=1500):
        _assert_sane(codec.parse(text), codec)
    for junk in (None, 12, b"1 2 3 4", ["1", "2", "3", "4"]):
        _assert_invalid(codec.parse(junk), (chunk, 4))  # type: ignore[arg-type]


# -- reserved tokens -------------------------------------------------------------------------


def test_reserved_tokens_are_the_last_ordinary_ids(tok):
    codec = RobotActionCodec(style="tokens", tokenizer=tok)
    ids = codec.token_ids
    assert len(ids) == len(set(ids)) == 256 and ids == sorted(ids)
    special = set(tok.all_special_ids) | set(tok.added_tokens_decoder)
    assert not special & set(ids)
    assert max(ids) == tok.vocab_size - 1 and min(ids) == tok.vocab_size - 256
    assert all(i < tok.vocab_size for i in ids)
    # bin b is the b-th reserved id: the ids of bins 0 and 255
    assert codec.render_ids(np.array([-1.0, 1.0, -1.0, 1.0])) == [ids[0], ids[-1]] * 2


def test_reserved_tokens_skip_specials_inside_the_vocabulary():
    """Llama-style vocabularies hold their specials among the ordinary ids (``<s>`` = 0), and
    an added token may repeat a vocabulary entry; neither is a bin."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {"<s>": 0, "a": 1, "b": 2, "c": 3, "</s>": 4}
    word_level = Tokenizer(models.WordLevel(vocab, unk_token="<s>"))
    small = PreTrainedTokenizerFast(tokenizer_object=word_level, bos_token="<s>", eos_token="</s>")
    assert reserved_token_ids(small, 3) == [1, 2, 3]
    with pytest.raises(ValueError, match="3 ordinary ids, fewer than the 4"):
        reserved_token_ids(small, 4)
    small.add_tokens(["c"])  # an added (not special) token that is also in the vocabulary
    assert small.convert_tokens_to_ids("c") == 3
    assert reserved_token_ids(small, 2) == [1, 2]


def test_token_text_does_not_round_trip_through_the_tokenizer(tok):
    """BPE re-merges across the boundaries of the reserved tokens: re-encoding the rendered
    text gives other ids, so SFT targets must be ``render_ids``; the codec's own text reader
    (a split into reserved tokens) still reads it."""
    codec = RobotActionCodec(style="tokens", tokenizer=tok)
    a = codec.bins.centres(np.array([7, 31, 171, 165]))
    ids, text = codec.render_ids(a), codec.render(a)
    assert tok.decode(ids) == text
    assert tok.encode(text, add_special_tokens=False) != ids
    assert codec.parse(text).bins.tolist() == [[7, 31, 171, 165]]
    assert codec.parse(text, ids).bins.tolist() == [[7, 31, 171, 165]]


def test_ambiguous_token_text_is_invalid(tok):
    """'isplay' + 'ellow' and 'ispla' + 'yellow' are both reserved-token pairs."""
    codec = RobotActionCodec(dims=2, style="tokens", tokenizer=tok)
    ids = [tok.convert_tokens_to_ids(t) for t in ("isplay", "ellow")]
    assert set(ids) <= set(codec.token_ids)
    p = codec.parse(tok.decode(ids))
    _assert_invalid(p, (1, 2))
    assert "more than one way" in p.reason
    assert not codec.parse("", ids).invalid


def test_tokens_per_action(tok):
    """The first fact for "digits or tokens": tokens per 4-dim action (uniform random bins)."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (400, 4))
    digits = RobotActionCodec()
    n = [len(tok.encode(digits.render(x), add_special_tokens=False)) for x in a]
    assert 13.0 < np.mean(n) < 13.6  # 4 x 2.57 digits + 3 spaces = 13.28
    assert len(tok.encode(digits.render(np.zeros(4)), add_special_tokens=False)) == 15
    tokens = RobotActionCodec(style="tokens", tokenizer=tok)
    assert {len(tokens.render_ids(x)) for x in a} == {4}
