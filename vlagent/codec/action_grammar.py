"""Constrained decoding of robot actions: the reply's grammar as a token-level automaton.

OpenVLA decodes exactly ``dims`` action tokens, so its replies always parse. A sampled digit
reply can break: at rollout temperature a 15-token padded action may run on past its fourth
number (``"213 193 018 1838 009"``) and become a no-op. :class:`TokenGrammar` is a deterministic
automaton over token ids that accepts exactly the codec's well-formed replies followed by eos;
the sampler masks every id the current state does not allow, and the training forward scores
tokens under the same renormalized distribution (``rollout/grammar_head.py``), so behaviour and
learner log-probs stay one distribution.

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

from collections.abc import Sequence
from typing import Any

import torch

from vlagent.codec.robot_actions import RobotActionCodec
from vlagent.errors import VlagentError


class TokenGrammar:
    """A deterministic automaton over token ids (module docstring).

    Args:
        allowed: per state, the ids it accepts (non-empty, distinct).
        step: per state, ``{id: next state}`` for exactly the ids in ``allowed[state]``.
        start: the state of a turn's first token.
    """

    def __init__(
        self, allowed: Sequence[Sequence[int]], step: Sequence[dict[int, int]], start: int = 0
    ) -> None:
        if len(allowed) != len(step) or not allowed:
            raise ValueError("allowed and step must list the same, non-zero number of states")
        for s, (ids, nxt) in enumerate(zip(allowed, step, strict=True)):
            if not ids or sorted(set(ids)) != sorted(nxt):
                raise ValueError(f"state {s}: allowed ids and transitions disagree")
            if any(not 0 <= t < len(allowed) for t in nxt.values()):
                raise ValueError(f"state {s}: a transition leaves the automaton")
        self.allowed = [sorted(int(i) for i in ids) for ids in allowed]
        self.step = [{int(k): int(v) for k, v in nxt.items()} for nxt in step]
        self.start = int(start)
        self.union = sorted({i for ids in self.allowed for i in ids})  # [K] ids
        col = {t: j for j, t in enumerate(self.union)}
        member = torch.zeros(len(self.allowed), len(self.union), dtype=torch.bool)
        for s, ids in enumerate(self.allowed):
            member[s, [col[i] for i in ids]] = True
        self.member = member  # [S, K]: state s accepts union[k]
        self._union_t = torch.tensor(self.union, dtype=torch.long)

    @property
    def n_states(self) -> int:
        return len(self.allowed)

    def union_ids(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """[K] long: every id some state accepts, ascending."""
        return self._union_t.to(device)

    def advance(self, states: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """[N] next states after ``tokens`` [N]; an id the state does not accept is an error."""
        out = []
        for s, t in zip(states.tolist(), tokens.tolist(), strict=True):
            nxt = self.step[s].get(t)
            if nxt is None:
                raise VlagentError(
                    f"token {t} is outside the action grammar in state {s} "
                    f"(accepts {self.allowed[s][:12]}{'…' if len(self.allowed[s]) > 12 else ''})"
                )
            out.append(nxt)
        return torch.tensor(out, dtype=torch.long, device=states.device)

    def states(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Teacher-forced states [n, T] long: the state in which each token of ``ids`` [n, T]
        is chosen. Each run of ``mask`` > 0 positions is one turn and starts at :attr:`start`;
        positions outside a run get :attr:`start` and are not checked.

        Raises:
            VlagentError: a loss position holds an id its state does not accept (rows that were
                not sampled under this grammar, or demonstrations it does not describe).
        """
        n, t = ids.shape
        out = torch.full((n, t), self.start, dtype=torch.long)
        ids_l, mask_l = ids.tolist(), (mask > 0).tolist()
        for r in range(n):
            state, inside = self.start, False
            for c in range(t):
                if not mask_l[r][c]:
                    inside = False
                    continue
                if not inside:
                    state, inside = self.start, True
                out[r, c] = state
                nxt = self.step[state].get(ids_l[r][c])
                if nxt is None:
                    raise VlagentError(
                        f"row {r}, position {c}: token {ids_l[r][c]} is outside the action "
                        f"grammar (state {state}); were these rows sampled without it?"
                    )
                state = nxt
        return out.to(ids.device)

    def restrict_(self, scores: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """Set every id that ``states`` [N] do not accept to -inf in ``scores`` [N, V], in
        place; returns ``scores``."""
        keep = torch.zeros_like(scores, dtype=torch.bool)
        union = self.union_ids(scores.device)
        keep[:, union] = self.member.to(scores.device)[states]
        return scores.masked_fill_(~keep, float("-inf"))


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
    index: dict[tuple[int, bool], int] = {}

    def key(s: int, tight: bool) -> tuple[int, bool]:
        kind = slots[s][0] if s < len(slots) else "eos"
        return (s, tight if kind == "digit" and slots[s][1] > 0 else True)

    order = [key(0, True)]
    while len(index) < len(order):  # breadth-first over reachable (slot, tight) states
        index[order[len(index)]] = len(index)
        s, tight = order[len(index) - 1]
        for nxt in _successors(slots, s, tight, top, tok):
            k = key(*nxt[1])
            if k not in order:
                order.append(k)
    allowed: list[list[int]] = []
    step: list[dict[int, int]] = []
    for s, tight in order:
        edges = {i: index[key(*nxt)] for i, nxt in _successors(slots, s, tight, top, tok)}
        if s >= len(slots):  # eos, then a final state that keeps accepting eos only
            edges = {eos: len(order)}
        allowed.append(sorted(edges))
        step.append(edges)
    allowed.append([eos])
    step.append({eos: len(order)})
    grammar = TokenGrammar(allowed, step)
    _check_targets(grammar, codec, tokenizer, eos)
    return grammar


def _successors(
    slots: list[tuple[str, int]], s: int, tight: bool, top: str, tok: dict[str, int]
) -> list[tuple[int, tuple[int, bool]]]:
    """(id, (next slot, next tight)) for every id slot ``s`` accepts (``s`` past the slots:
    none; the caller adds eos)."""
    if s >= len(slots):
        return []
    kind, arg = slots[s]
    if kind == "sep":
        return [(arg, (s + 1, True))]
    bound = int(top[arg]) if tight else 9
    return [(tok[str(d)], (s + 1, tight and d == bound)) for d in range(bound + 1)]


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
