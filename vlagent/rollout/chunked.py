"""Log-probs and entropies of chosen tokens through the LM head, a chunk of positions at a time.

With a real Qwen vocabulary (151,936 rows) the ``[rows, tokens, vocab]`` float32 logits of a
training forward dominate time and memory. Here only the positions that carry loss are sent
through the head, ``chunk`` positions at a time: hidden states ``[c, H]`` → logits ``[c, V]`` →
log-sum-exp, the chosen token's logit and the entropy → the chunk's logits are dropped. The
backward recomputes each chunk's logits instead of storing them, so no ``[M, V]`` tensor lives
longer than one chunk.

The distribution is exactly the sampler's (``docs/DESIGN.md``, "Trajectory"): softmax of the
logits, cast to float32, with the forbidden ids (vision placeholders, ids past the tokenizer)
set to -inf, divided by the temperature — the expression of :func:`scaled_logits`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from vlagent.batching import fill_forbidden_, mask_logits, mask_logits_
from vlagent.errors import VlagentError


def decoder_and_head(model: Any) -> tuple[Any, torch.nn.Module]:
    """The decoder (returns last hidden states [N, L, H]) and the LM head of a Qwen-VL model.

    A PEFT-wrapped policy (LoRA) keeps its adapters: they live inside the decoder's modules.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = getattr(base, "model", None)
    get_head = getattr(base, "get_output_embeddings", None)
    head = get_head() if callable(get_head) else None
    if decoder is None or head is None:
        raise VlagentError(
            f"{type(base).__name__} has no .model decoder and output embeddings: "
            "grpo.logits_chunk supports Qwen-VL *ForConditionalGeneration models; "
            "set grpo.logits_chunk=0 for other models"
        )
    return decoder, head


def scaled_logits(
    logits: torch.Tensor, forbidden: Sequence[int] | None, temperature: float
) -> torch.Tensor:
    """The sampler's scores [..., V]: float32 logits, forbidden ids at -inf, over temperature."""
    return mask_logits(logits.float(), forbidden) / temperature


def token_stats(z: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-prob [m] of ``ids`` [m] under softmax(``z`` [m, V]) and its entropy [m] (detached).

    Differentiable in ``z`` for the log-prob; ``-inf`` entries (forbidden ids) contribute 0 to
    the entropy.
    """
    lse = torch.logsumexp(z, dim=-1)  # [m]
    logp = z.gather(-1, ids[:, None]).squeeze(-1) - lse
    with torch.no_grad():
        ent = _entropy(z.detach() - lse.detach()[:, None])
    return logp, ent


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    """-Σ p log p [m] of log-distributions ``logp`` [m, V] (``-inf`` entries contribute 0).

    p·log p with the log-probs already at hand (``special.entr`` takes a log again: 25 % slower
    on [64, 151936]); clamping ``-inf`` to the lowest float makes those terms 0·finite = 0."""
    low = torch.finfo(logp.dtype).min
    return -(logp.exp() * logp.clamp(min=low)).sum(dim=-1)


def _scores(
    h: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    forbidden: Sequence[int] | None,
    temperature: float,
) -> torch.Tensor:
    """:func:`scaled_logits` of ``F.linear(h, weight, bias)`` [c, V], masked and scaled in place
    on the fresh logits (no copies of a [c, V] tensor; no pass at all for temperature 1)."""
    z = mask_logits_(F.linear(h, weight, bias).float(), forbidden)
    return z if temperature == 1.0 else z.div_(temperature)


class _LinearHeadLogprob(torch.autograd.Function):
    """Chunked log-probs through a plain ``nn.Linear`` head, recomputing logits in backward.

    Per chunk of c positions, with z [c, V] the scaled, masked logits, m = max z,
    e = exp(z − m) and S = Σ e: log p(id) = z[id] − m − log S, and the entropy is
    log S − (e · (z − m)) / S (one batched dot product over values <= 0, so no large
    cancellation; forbidden columns, where e = 0 and z = −inf, are zeroed first). The forward
    makes four passes over [c, V] (max, subtract, exp, sum) and, with the entropy, one more
    (the dot product).

    The backward of Σ_i g_i log p_i is, per position, g_i (1[v = id_i] − p_v) / T in the
    logits. The dense part is written as sign(−g_i) · exp(z − log S − m + log |g_i|) / T, so
    a recomputed chunk costs one matmul and two passes (subtract, exp); the sign and 1 / T
    scale the rows of the small [c, H] operands, and the one-hot part is a gather of c rows
    of the head.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        ids: torch.Tensor,
        forbidden: Sequence[int] | None,
        temperature: float,
        chunk: int,
        entropy: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        m = hidden.shape[0]
        logp = torch.empty(m, dtype=torch.float32, device=hidden.device)
        ent = torch.zeros_like(logp)
        lse = torch.empty_like(logp)
        for s in range(0, m, chunk):
            e = min(s + chunk, m)
            z = _scores(hidden[s:e], weight, bias, forbidden, temperature)  # [c, V]
            top = z.amax(-1, keepdim=True)  # [c, 1]
            z = z.sub_(top)  # z - m <= 0: the entropy's sum then has no large cancellation
            ex = torch.exp(z)  # [c, V]
            total = ex.sum(-1)  # [c]
            log_total = total.log()
            lse[s:e] = top.squeeze(-1) + log_total
            logp[s:e] = z.gather(-1, ids[s:e, None]).squeeze(-1) - log_total
            if entropy:
                fill_forbidden_(z, forbidden, 0.0)  # e = 0 there; -inf would give nan
                dot = torch.bmm(ex.unsqueeze(1), z.unsqueeze(2)).view(-1)  # [c] = Σ e (z - m)
                ent[s:e] = log_total - dot / total
            del z, ex
        ctx.save_for_backward(hidden, weight, bias, ids, lse)
        ctx.forbidden, ctx.temperature, ctx.chunk = forbidden, temperature, chunk
        ctx.mark_non_differentiable(ent)
        return logp, ent

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, g_logp: torch.Tensor, _g_ent: torch.Tensor) -> tuple[Any, ...]:
        hidden, weight, bias, ids, lse = ctx.saved_tensors
        need_h, need_w, need_b = ctx.needs_input_grad[:3]
        m, temp = hidden.shape[0], ctx.temperature
        g_h = hidden.new_empty(hidden.shape) if need_h else None
        # The head's gradient accumulates in float32 across chunks (one rounding at the end).
        g_w = (
            torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_w else None
        )
        g_b = torch.zeros(bias.shape, dtype=torch.float32, device=bias.device) if need_b else None
        for s in range(0, m, ctx.chunk):
            e = min(s + ctx.chunk, m)
            h, g, tok = hidden[s:e], g_logp[s:e].float(), ids[s:e]
            z = _scores(h, weight, bias, ctx.forbidden, temp)  # [c, V]
            # |g_i| p_v = exp(z - lse_i + log|g_i|); forbidden ids (z = -inf) and g_i = 0 give 0
            dense = z.sub_((lse[s:e] - g.abs().log())[:, None]).exp_().to(weight.dtype)
            row = (-torch.sign(g) / temp).to(weight.dtype)[:, None]  # [c, 1]
            one = (g / temp).to(weight.dtype)[:, None]  # [c, 1]: the one-hot part's weight
            del z
            if g_h is not None:
                g_h[s:e] = row * (dense @ weight) + one * weight[tok]
            if g_w is not None:
                hs = (row * h).to(dense.dtype)
                if dense.dtype == torch.float32:
                    g_w.addmm_(dense.t(), hs)
                else:
                    g_w += (dense.t() @ hs).float()
                g_w.index_add_(0, tok, (one * h).float())
            if g_b is not None:
                g_b += (dense.t() @ row).float().squeeze(-1)
                g_b.index_add_(0, tok, one.float().squeeze(-1))
        return (
            g_h,
            g_w.to(weight.dtype) if g_w is not None else None,
            g_b.to(bias.dtype) if g_b is not None else None,
            None,
            None,
            None,
            None,
            None,
        )


def _module_chunk(
    head: torch.nn.Module,
    h: torch.Tensor,
    ids: torch.Tensor,
    forbidden: Sequence[int] | None,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    return token_stats(scaled_logits(head(h), forbidden, temperature), ids)


def head_logprobs(
    head: torch.nn.Module,
    hidden: torch.Tensor,
    ids: torch.Tensor,
    *,
    temperature: float = 1.0,
    forbidden: Sequence[int] | None = None,
    chunk: int,
    entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs and entropies of ``ids`` given final hidden states, ``chunk`` positions at a time.

    Args:
        head: the LM head (``nn.Linear`` [V, H]; any other module, e.g. a LoRA-wrapped head,
            runs each chunk under ``torch.utils.checkpoint``).
        hidden: [M, H] last hidden states of the positions that predict ``ids``.
        ids: [M] the chosen tokens.
        temperature, forbidden: the sampler's temperature and excluded ids.
        chunk: positions per chunk (>= 1).
        entropy: compute the entropies (False lets the Linear path skip them: zeros).
    Returns:
        (log-probs [M] float32, differentiable w.r.t. ``hidden`` and the head's parameters;
        entropies [M] float32, detached).
    """
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if type(head) is torch.nn.Linear:
        return _LinearHeadLogprob.apply(
            hidden, head.weight, head.bias, ids, forbidden, temperature, chunk, entropy
        )
    logps, ents = [], []
    grad = torch.is_grad_enabled()
    for s in range(0, hidden.shape[0], chunk):
        args = (head, hidden[s : s + chunk], ids[s : s + chunk], forbidden, temperature)
        lp, en = (
            checkpoint(_module_chunk, *args, use_reentrant=False) if grad else _module_chunk(*args)
        )
        logps.append(lp)
        ents.append(en)
    if not logps:
        empty = hidden.new_zeros(0, dtype=torch.float32)
        return empty, empty
    return torch.cat(logps), torch.cat(ents).detach()
