"""Token log-probs under a grammar-constrained sampler (``codec/action_grammar.py``).

The constrained sampler draws from softmax(z / τ) restricted to the ids the automaton's state
accepts, A(s): p(v | s) = exp(z_v / τ) / Σ_{a ∈ A(s)} exp(z_a / τ) for v ∈ A(s). The full
vocabulary's normalizer cancels, so the learner needs only the head's rows for the union of
accepted ids (K of them: a few dozen, against V = 151,936): one [m, H] × [H, K] product per
batch of positions, never an [m, V] tensor.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vlagent.models.grammar import TokenGrammar


def union_scores(
    head: torch.nn.Module, hidden: torch.Tensor, grammar: TokenGrammar, temperature: float
) -> torch.Tensor:
    """Scaled float32 logits [m, K] of the grammar's union ids from hidden states [m, H].

    An ``nn.Linear`` head multiplies by its K rows only; any other head (a LoRA-wrapped one)
    runs in full and is indexed.
    """
    union = grammar.union_ids(hidden.device)
    if type(head) is torch.nn.Linear:
        bias = None if head.bias is None else head.bias[union]
        z = F.linear(hidden, head.weight[union], bias)
    else:
        z = head(hidden)[..., union]
    return z.float() / temperature


def grammar_token_stats(
    z_union: torch.Tensor, states: torch.Tensor, ids: torch.Tensor, grammar: TokenGrammar
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs [m] of ``ids`` [m] and entropies [m] (detached) under the constrained sampler.

    Args:
        z_union: [m, K] scaled logits of the grammar's union ids (:func:`union_scores`).
        states: [m] the automaton state each token was chosen in.
        ids: [m] the chosen tokens (each accepted by its state).
    """
    member = grammar.member.to(z_union.device)[states]  # [m, K]
    z = z_union.masked_fill(~member, float("-inf"))
    col = torch.searchsorted(grammar.union_ids(z.device), ids)  # [m]: ids are in the union
    lse = torch.logsumexp(z, dim=-1)
    logp = z.gather(-1, col[:, None]).squeeze(-1) - lse
    with torch.no_grad():
        lp = z - lse[:, None]
        p = lp.exp()
        ent = -torch.where(member, p * lp, torch.zeros_like(p)).sum(-1)
    return logp, ent
