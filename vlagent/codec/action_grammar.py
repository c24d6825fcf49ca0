"""Constrained decoding of robot actions: the reply's grammar as a token-level automaton.

OpenVLA decodes exactly ``dims`` action tokens, so its replies always parse. A sampled digit
reply can break: at rollout temperature a 15-token padded action may run on past its fourth
number (``"213 193 018 1838 009"``) and become a no-op. :class:`TokenGrammar` is a deterministic
automaton over token ids that accepts exactly the codec's well-formed replies followed by eos;
the sampler masks every id the current state does not allow, and the training forward scores
tokens under the same renormalized distribution (``rollout/grammar_head.py``), so behaviour and
learner log-probs stay one distribution. The automaton itself is
:class:`vlagent.models.grammar.TokenGrammar` (a property of the policy's decoding); this module
builds it from a codec and a tokenizer.

Accepted replies (``chunk`` actions of ``dims`` numbers, then eos):
    padded  every bin at full width, ``" "`` between numbers, ``";"`` between actions; a
            number's digits are bounded by ``n_bins - 1`` (with 256 bins: ``000``..``255``, a
            first ``2`` allows ``0``-``5`` next, ``25`` allows ``0``-``5`` last);
    tokens  ``chunk * dims`` of the codec's reserved bin ids.
``digits`` (variable width) has no fixed-length grammar here and is refused.

States are ints; ``allowed[s]`` lists the ids state ``s`` accepts, ``step[s][id]`` the next
state. After eos the automaton sits in a final state that accepts only eos (the sampler pads
finished rows; the learner ignores positions past eos). Every accepted id is in
:attr:`TokenGrammar.union` (a few dozen ids, or ``n_bins`` + 3 for ``tokens``), which is what
lets the learner score only those columns of the LM head.
"""

from __future__ import annotations

from typing import Any

import torch

from vlagent.codec.robot_actions import RobotActionCodec
from vlagent.errors import VlagentError
from vlagent.models.grammar import TokenGrammar

__all__ = ["TokenGrammar", "action_grammar", "padded_grammar", "tokens_grammar"]


def _single_ids(tokenizer: Any, chars: str) -> dict[str, int]:
    """Each character's one token id; an error if the tokenizer splits or merges it."""
    out = {}
    for ch in chars:
        ids = tokenizer.encode(ch, add_special_tokens=False)
        if len(ids) != 1:
            raise VlagentError(
                f"constrained decoding needs {ch!r} to be one token; this tokenizer gives {ids}"
            )
        out[ch] = int(ids[0])
    return out


def padded_grammar(codec: RobotActionCodec, tokenizer: Any, eos: int) -> TokenGrammar:
    """The automaton of ``codec``'s ``padded`` replies in ``tokenizer``'s ids, then ``eos``.

    Raises:
        VlagentError: a digit or separator is not a single token, or a rendered reply does not
            tokenize character by character (the grammar would not describe the SFT targets).
    """
    tok = _single_ids(tokenizer, "0123456789 ;")
    top = str(codec.n_bins - 1).zfill(codec._width)  # the largest number, e.g. "255"
    slots: list[tuple[str, int]] = []  # ("digit", j) | ("sep", id)
    for a in range(codec.chunk):
        for d in range(codec.dims):
            slots += [("digit", j) for j in range(codec._width)]
            if d < codec.dims - 1:
                slots.append(("sep", tok[" "]))
        if a < codec.chunk - 1:
            slots.append(("sep", tok[";"]))
    # one state per slot, two (tight: the number so far equals ``top``'s prefix, or loose)
    # for a digit after a number's first; then eos, then a final state
    state: dict[tuple[int, bool], int] = {}
    for s, (kind, arg) in enumerate(slots):
        for tight in (True, False) if kind == "digit" and arg > 0 else (True,):
            state[(s, tight)] = len(state)
    eos_state, final = len(state), len(state) + 1

    def target(s: int, tight: bool) -> int:
        if s == len(slots):
            return eos_state
        return state[(s, tight if slots[s][0] == "digit" and slots[s][1] > 0 else True)]

    step: list[dict[int, int]] = []
    for s, tight in state:  # in state order
        kind, arg = slots[s]
        if kind == "sep":
            step.append({arg: target(s + 1, True)})
        else:
            bound = int(top[arg]) if tight else 9
            step.append(
                {tok[str(d)]: target(s + 1, tight and d == bound) for d in range(bound + 1)}
            )
    step += [{eos: final}, {eos: final}]
    grammar = TokenGrammar([sorted(e) for e in step], step)
    _check_targets(grammar, codec, tokenizer, eos)
    return grammar


def tokens_grammar(codec: RobotActionCodec, eos: int) -> TokenGrammar:
    """The automaton of ``codec``'s ``tokens`` replies: ``chunk * dims`` reserved ids, eos."""
    n = codec.chunk * codec.dims
    ids = list(codec.token_ids)
    allowed = [ids] * n + [[eos], [eos]]
    step = [dict.fromkeys(ids, s + 1) for s in range(n)] + [{eos: n + 1}, {eos: n + 1}]
    return TokenGrammar(allowed, step)


def action_grammar(codec: RobotActionCodec, tokenizer: Any, eos: int) -> TokenGrammar:
    """The grammar of ``codec``'s replies (``padded`` or ``tokens``).

    Raises:
        VlagentError: ``digits`` (no fixed-width grammar), or a tokenizer that does not fit.
    """
    if codec.style == "padded":
        return padded_grammar(codec, tokenizer, eos)
    if codec.style == "tokens":
        return tokens_grammar(codec, eos)
    raise VlagentError(
        "robot.constrained=true needs robot.action_style=padded or tokens "
        f"(got {codec.style!r}: plain digits have no fixed-width grammar)"
    )


def _check_targets(
    grammar: TokenGrammar, codec: RobotActionCodec, tokenizer: Any, eos: int
) -> None:
    """Demonstrations (rendered, tokenized, eos) must be accepted: the smallest, the largest
    and a mixed chunk."""
    import numpy as np

    for value in (-1.0, 1.0, 0.3):
        acts = np.full((codec.chunk, codec.dims), value, dtype=np.float32)
        acts[..., 0] = -value
        ids = tokenizer.encode(codec.render(acts), add_special_tokens=False) + [eos]
        t = torch.tensor([ids])
        try:
            grammar.states(t, torch.ones_like(t))
        except VlagentError as err:
            raise VlagentError(
                f"this tokenizer does not split padded actions into single characters ({err})"
            ) from err
