"""The action grammar (``codec/action_grammar.py``) accepts exactly the codec's replies."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vlagent.codec.action_grammar import TokenGrammar, action_grammar, padded_grammar
from vlagent.codec.robot_actions import RobotActionCodec
from vlagent.errors import VlagentError
from vlagent.models.loading import load_policy


@pytest.fixture(scope="module")
def tokenizer(tiny_dirs):
    return load_policy(tiny_dirs["qwen3_vl"]).tokenizer


def _accepts(g: TokenGrammar, ids: list[int]) -> bool:
    state = g.start
    for t in ids:
        if t not in g.step[state]:
            return False
        state = g.step[state][t]
    return True


def _language(g: TokenGrammar, eos: int, limit: int = 40) -> set[tuple[int, ...]]:
    """Every accepted sequence that ends at its first eos (depth-first, ``limit`` tokens)."""
    out, stack = set(), [(g.start, ())]
    while stack:
        state, seq = stack.pop()
        for t, nxt in g.step[state].items():
            if t == eos:
                out.add((*seq, t))
            elif len(seq) < limit:
                stack.append((nxt, (*seq, t)))
    return out


def test_one_number_language_is_exactly_the_bins(tokenizer):
    """dims 1, 256 bins: the accepted replies are "000" .. "255" and eos, nothing else."""
    eos = int(tokenizer.eos_token_id)
    codec = RobotActionCodec(dims=1, n_bins=256, style="padded")
    g = padded_grammar(codec, tokenizer, eos)
    words = {tokenizer.decode(list(s[:-1])) for s in _language(g, eos)}
    assert words == {f"{b:03d}" for b in range(256)}


def test_bound_of_a_non_power_of_ten(tokenizer):
    """1,000 bins -> "000".."999" (no bound below 9), 100 bins -> "00".."99", 37 -> up to "36"."""
    eos = int(tokenizer.eos_token_id)
    for n_bins, width in ((1000, 3), (100, 2), (37, 2)):
        g = padded_grammar(RobotActionCodec(dims=1, n_bins=n_bins, style="padded"), tokenizer, eos)
        words = {tokenizer.decode(list(s[:-1])) for s in _language(g, eos)}
        assert words == {str(b).zfill(width) for b in range(n_bins)}


def test_rendered_chunks_are_accepted_and_broken_ones_are_not(tokenizer):
    eos = int(tokenizer.eos_token_id)
    codec = RobotActionCodec(dims=4, chunk=2, n_bins=256, style="padded")
    g = action_grammar(codec, tokenizer, eos)
    rng = np.random.default_rng(0)
    enc = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    for _ in range(50):
        text = codec.render(rng.uniform(-1, 1, (2, 4)))
        assert _accepts(g, enc(text) + [eos]), text
    for bad in (
        "071 164 018 000;001 002 003 004 005",  # a fifth number
        "071 164 018 000",  # one action of two, then eos
        "256 000 000 000;000 000 000 000",  # past the last bin
        "71 164 018 000;000 000 000 000",  # not padded
        "071 164 018 000 000 000 000 000",  # a space where ";" belongs
    ):
        assert not _accepts(g, enc(bad) + [eos]), bad
    # the accepted text with eos is exactly 31 tokens + eos: no room for anything else
    ok = enc("255 000 128 007;000 000 000 000")
    assert len(ok) == 31 and _accepts(g, ok + [eos])
    assert not _accepts(g, ok + [enc("0")[0]])


def test_tokens_grammar_accepts_reserved_ids_only(tokenizer):
    eos = int(tokenizer.eos_token_id)
    codec = RobotActionCodec(dims=4, n_bins=16, style="tokens", tokenizer=tokenizer)
    g = action_grammar(codec, tokenizer, eos)
    ids = codec.render_ids(np.array([-1.0, 0.0, 0.5, 1.0]))
    assert _accepts(g, ids + [eos])
    assert not _accepts(g, ids[:3] + [eos])
    assert not _accepts(g, ids + [ids[0]])
    assert set(g.union) == set(codec.token_ids) | {eos}


def test_digits_style_is_refused(tokenizer):
    with pytest.raises(VlagentError, match="padded or tokens"):
        action_grammar(RobotActionCodec(style="digits"), tokenizer, 0)


def test_states_and_restrict(tokenizer):
    """Teacher-forced states restart at each masked run; restrict_ keeps only accepted ids."""
    eos = int(tokenizer.eos_token_id)
    g = padded_grammar(RobotActionCodec(dims=1, n_bins=256, style="padded"), tokenizer, eos)
    d = {c: tokenizer.encode(c, add_special_tokens=False)[0] for c in "0123456789"}
    pad = 0
    ids = torch.tensor([[d["2"], d["5"], d["5"], eos, pad, d["1"], d["9"]]])
    mask = torch.tensor([[1, 1, 1, 1, 0, 1, 1]])
    st = g.states(ids, mask)
    # the second run starts over: same state as position 0
    assert st[0, 5] == st[0, 0] == g.start
    scores = torch.zeros(7, len(tokenizer))
    g.restrict_(scores, st[0])
    ok = lambda r: {int(i) for i in torch.isfinite(scores[r]).nonzero().flatten()}  # noqa: E731
    assert ok(0) == {d["0"], d["1"], d["2"]}
    assert ok(1) == {d[c] for c in "012345"}  # after "2"
    assert ok(2) == {d[c] for c in "012345"}  # after "25"
    assert ok(3) == {eos}
    assert ok(6) == {d[c] for c in "0123456789"}  # after "1": no bound
    with pytest.raises(VlagentError, match="outside the action grammar"):
        g.states(torch.tensor([[d["2"], d["6"]]]), torch.ones(1, 2))
