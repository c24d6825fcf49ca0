"""PPO-clip on turn rows: each turn is one row (its own prompt, its completion, its advantage).

Rows hold 1..k images each, so prompts are re-encoded per micro-batch from the stored turn
contexts (no prefix sharing). The loss mask is 1 exactly on the tokens the policy generated
(the completion up to and including eos); prompt, history and image tokens carry no loss.
Gradient accumulation over micro-batches is exact for the ``token_mean`` aggregation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from vlagent.algos.losses import policy_loss
from vlagent.apps.config import AppsGRPOConfig
from vlagent.apps.credit import TurnCredit
from vlagent.apps.history import SYSTEM_PROMPT, TurnContext, encode_turns
from vlagent.apps.rollout import Episode
from vlagent.batching import completion_logprobs, forbidden_token_ids


@dataclasses.dataclass
class TurnBatch:
    """N turn rows ready for the loss.

    Attributes:
        contexts: N turn prompts.
        completion_ids: [N, T] policy tokens, right padded.
        mask: [N, T] 1 on policy tokens (loss mask).
        old_logp: [N, T] behaviour log-probs (0 off the mask).
        advantages: [N] advantage of each row, broadcast to its tokens by the loss.
    """

    contexts: list[TurnContext]
    completion_ids: torch.Tensor
    mask: torch.Tensor
    old_logp: torch.Tensor
    advantages: torch.Tensor

    def __len__(self) -> int:
        return len(self.contexts)


def turn_batch(episodes: Sequence[Episode], credit: TurnCredit, pad_id: int) -> TurnBatch:
    """Stack the credited turns (those with policy tokens) into a :class:`TurnBatch`."""
    keep = [
        (i, r)
        for i, r in enumerate(credit.rows)
        if episodes[r[0]].turns[r[1]].decision.completion_ids
    ]
    turns = [episodes[e].turns[t] for _, (e, t) in keep]
    width = max((len(t.decision.completion_ids) for t in turns), default=1)
    ids = torch.full((len(turns), width), pad_id, dtype=torch.long)  # [N, T]
    mask = torch.zeros(len(turns), width)  # [N, T]
    old = torch.zeros(len(turns), width)  # [N, T]
    for i, t in enumerate(turns):
        n = len(t.decision.completion_ids)
        ids[i, :n] = torch.tensor(t.decision.completion_ids)
        old[i, :n] = torch.tensor(t.decision.logprobs)
        mask[i, :n] = 1.0
    adv = credit.advantages[[i for i, _ in keep]] if keep else torch.zeros(0)  # [N]
    return TurnBatch([t.context for t in turns], ids, mask, old, adv.float())


def turn_logprobs(
    policy: Any, batch: TurnBatch, rows: torch.Tensor, temperature: float
) -> torch.Tensor:
    """Current-policy log-probs [n, T] of the completion tokens of ``rows`` (grad if enabled)."""
    device = policy.model.device
    prompts = encode_turns(
        policy.processor, [batch.contexts[i] for i in rows.tolist()], SYSTEM_PROMPT
    )
    return completion_logprobs(
        policy.model,
        prompts.to(device),
        batch.completion_ids[rows].to(device),
        batch.mask[rows].to(device),
        temperature=temperature,
        forbidden=forbidden_token_ids(policy.tokenizer),
    )


def ppo_update(
    policy: Any, batch: TurnBatch, opt: torch.optim.Optimizer, cfg: AppsGRPOConfig, seed: int
) -> dict[str, float]:
    """``cfg.epochs`` optimizer steps of PPO-clip (token-mean) over all rows of ``batch``.

    Returns:
        Mean stats: loss, clip fractions, ratio_mean, approx_kl, grad_norm, rows, tokens.
    """
    model = policy.model
    model.train()
    n = len(batch)
    total = float(batch.mask.sum())
    sums: dict[str, float] = {}
    gen = torch.Generator().manual_seed(seed)
    if n == 0 or total == 0:
        return {"rows": 0.0, "tokens": 0.0, "optimizer_steps": 0.0}
    for _ in range(cfg.epochs):
        opt.zero_grad(set_to_none=True)
        order = torch.randperm(n, generator=gen)
        for micro in torch.split(order, cfg.micro_batch_size):
            mask = batch.mask[micro]
            share = float(mask.sum()) / total
            logp = turn_logprobs(policy, batch, micro, cfg.temperature)
            device = logp.device
            loss, stats = policy_loss(
                "ppo_clip",
                logp,
                batch.old_logp[micro].to(device),
                batch.advantages[micro].to(device),
                mask.to(device),
                clip_eps_low=cfg.clip_eps,
                clip_eps_high=cfg.clip_eps,
                aggregation="token_mean",
            )
            (loss * share).backward()
            sums["loss"] = sums.get("loss", 0.0) + loss.item() * share
            for k, v in stats.items():
                sums[k] = sums.get(k, 0.0) + v * share
        if cfg.max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            sums["grad_norm"] = sums.get("grad_norm", 0.0) + float(norm)
        opt.step()
    out = {k: v / cfg.epochs for k, v in sums.items()}
    out.update(rows=float(n), tokens=total, optimizer_steps=float(cfg.epochs))
    return out
