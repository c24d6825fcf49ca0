"""A deterministic automaton over token ids: a policy's decoding constraint.

``Policy.grammar`` holds one when the world's replies have a fixed grammar (the robot action
codec, ``codec/action_grammar.py`` builds it): the sampler masks every id the current state does
not accept (:meth:`TokenGrammar.restrict_`), and the learner scores each token under that same
restricted distribution (``rollout/grammar_head.py``) from the teacher-forced states
(:meth:`TokenGrammar.states`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

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
