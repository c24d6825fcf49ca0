"""The one policy update: epochs × minibatches × micro-batches of a policy loss over rows.

Every world and every recipe uses it. Gradient accumulation is exact: each micro-batch's loss is
weighted by its share of the minibatch's normalizer (tokens for ``token_mean``, non-empty rows
for the sequence-level modes), so accumulating micro-batches gives the same gradient as one
forward over the whole minibatch.

Rows whose advantage is 0 on every loss token add nothing to the loss or to its gradient when the
loss has no KL term (``ppo_clip`` and ``gspo`` terms are ρ·A-shaped; there is no entropy bonus):
their forward and backward are skipped, while the normalizer still counts them, so the gradient
is the same. A minibatch left with nothing still takes its optimizer and scheduler step (with
zero gradients, as before), so Adam's state and the LR schedule advance exactly as without the
skip. Logged diagnostics (clip fractions, ratio, approx_kl, entropy) then average over the rows
that ran.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import torch

from vlagent.algo_config import GRPOConfig
from vlagent.algos.losses import policy_loss
from vlagent.batching import policy_forbidden_ids
from vlagent.rollout.forward import row_logprobs
from vlagent.rollout.prefill_stash import finish_stash
from vlagent.rollout.rows import RowBatch


@dataclasses.dataclass
class UpdateBatch:
    """Everything the loss needs for N rows.

    Attributes:
        rows: the rows (prompts, continuations, loss mask, advantages).
        old_logp: [N, T] log-probs of the policy that sampled (or recomputed ones).
        mask: [N, T] loss mask (policy tokens; truncated rows zeroed if configured).
        ref_logp: [N, T] reference log-probs when the KL goes into the loss, else None.
    """

    rows: RowBatch
    old_logp: torch.Tensor
    mask: torch.Tensor
    ref_logp: torch.Tensor | None = None


def normalizer(mask: torch.Tensor, aggregation: str) -> float:
    """The quantity a loss is averaged over: masked tokens, or rows with any token."""
    if aggregation == "token_mean":
        return float(mask.sum())
    return float((mask.sum(dim=-1) > 0).sum())


def chunks(rows: torch.Tensor, size: int) -> list[torch.Tensor]:
    """Split a 1-D index tensor into consecutive pieces of at most ``size``."""
    return list(torch.split(rows, size)) if size > 0 else [rows]


def sequence_logprobs(
    policy: Any,
    rows: RowBatch,
    g: GRPOConfig,
    entropy_out: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """Current-policy log-probs [n, T] of ``rows`` (with grad if enabled).

    Rows that continue the same prompt share one prefill; with gradient checkpointing (which
    disables the KV cache in training) or ``grpo.shared_prefix=false`` every row runs in full.
    """
    return row_logprobs(
        policy.model,
        rows,
        policy.tokenizer.pad_token_id,
        temperature=g.temperature,
        forbidden=policy_forbidden_ids(policy),
        shared=g.shared_prefix and not g.gradient_checkpointing,
        entropy_out=entropy_out,
        logits_chunk=g.logits_chunk,
        pack=g.pack_groups,
        grammar=getattr(policy, "grammar", None),
    )


@torch.no_grad()
def recompute_logprobs(policy: Any, rows: RowBatch, g: GRPOConfig) -> torch.Tensor:
    """Log-probs [N, T] from a forward pass of the current (not yet updated) policy."""
    was = policy.model.training
    policy.model.eval()
    idx = torch.arange(len(rows))
    parts = [
        sequence_logprobs(policy, rows.select(r), g).cpu() for r in chunks(idx, g.micro_batch_size)
    ]
    policy.model.train(was)
    return torch.cat(parts)


@torch.no_grad()
def reference_logprobs(policy: Any, reference: Any, rows: RowBatch, g: GRPOConfig) -> torch.Tensor:
    """Reference log-probs [N, T]: a frozen copy, or the LoRA base with adapters disabled."""
    if reference is None:  # LoRA: the base model is the reference
        with policy.model.disable_adapter():
            return recompute_logprobs(policy, rows, g)
    return recompute_logprobs(dataclasses.replace(policy, model=reference), rows, g)


def zero_advantage_rows(rows: RowBatch, mask: torch.Tensor) -> torch.Tensor:
    """[N] bool: rows with no loss token (``mask`` [N, T] > 0) of nonzero advantage."""
    adv = rows.advantages
    adv_t = adv[:, None].expand_as(mask) if adv.dim() == 1 else adv  # [N, T]
    return ~((adv_t != 0) & (mask > 0)).any(dim=1)


def skipping_is_exact(g: GRPOConfig) -> bool:
    """Whether a zero-advantage row contributes exactly nothing: no KL term in the loss."""
    return g.kl_coef == 0 or g.kl_in_reward


def policy_update(
    policy: Any,
    batch: UpdateBatch,
    g: GRPOConfig,
    opt: torch.optim.Optimizer,
    sched: Any,
    shuffle_seed: int,
    *,
    skip_zero_adv: bool = True,
) -> dict[str, float]:
    """Run ``g.epochs`` × ``g.minibatches`` optimizer steps on ``batch``; return mean stats.

    Args:
        policy: the policy (updated in place).
        batch: rows with advantages, behaviour (or recomputed) log-probs and the loss mask.
        g: loss, clipping, aggregation, KL, batching and clipping knobs.
        opt, sched: the optimizer and (optional) LR scheduler, stepped once per minibatch.
        shuffle_seed: seeds the minibatch order.
        skip_zero_adv: skip the forward/backward of zero-advantage rows where that is exact
            (module docstring); False runs every row.
    Returns:
        Means over optimizer steps (``loss``, ``grad_norm``, the loss stats, ``entropy``), plus
        ``optimizer_steps``, ``lr``, ``rows_skipped_zero_adv`` (rows never run),
        ``update_skipped`` (1 when no row ran at all) and ``prefill_reused`` (prompts per optimizer
        step whose sampling prefill the update reused, ``rollout/prefill_stash.py``).
    """
    model = policy.model
    model.train()
    rows = batch.rows
    n = len(rows)
    mb_size = max(n // g.minibatches, 1)
    opts = dict(
        clip_eps_low=g.clip_eps_low,
        clip_eps_high=g.clip_eps_high,
        dual_clip=g.dual_clip or None,
        aggregation=g.aggregation,
        max_len=g.max_new_tokens,
        kl_coef=0.0 if g.kl_in_reward else g.kl_coef,
        kl_estimator=g.kl_estimator,
    )
    skip = torch.zeros(n, dtype=torch.bool)
    if skip_zero_adv and skipping_is_exact(g):
        skip = zero_advantage_rows(rows, batch.mask)
    sums: dict[str, float] = defaultdict(float)
    steps, dropped = 0, 0  # dropped: minibatches whose rows were all skipped
    gen = torch.Generator().manual_seed(shuffle_seed)
    params = [p for p in model.parameters() if p.requires_grad]
    for _ in range(g.epochs):
        order = torch.randperm(n, generator=gen) if g.minibatches > 1 else torch.arange(n)
        for mb in chunks(order, mb_size):
            total = normalizer(batch.mask[mb], g.aggregation)  # skipped rows count here too
            run = mb[~skip[mb]]
            run_total = normalizer(batch.mask[run], g.aggregation)  # stats: over rows run
            opt.zero_grad(set_to_none=True)
            ent_sum, ent_tokens = 0.0, 0.0
            for micro in chunks(run, g.micro_batch_size) if len(run) else []:
                mask = batch.mask[micro]
                part = normalizer(mask, g.aggregation)
                share = part / total if total > 0 else 0.0
                if share == 0.0:
                    continue
                ents: list[torch.Tensor] = []
                logp = sequence_logprobs(policy, rows.select(micro), g, entropy_out=ents)
                ent_sum += float((ents[0] * mask.to(ents[0].device)).sum())  # loss tokens only
                ent_tokens += float(mask.sum())
                device = logp.device
                ref = (
                    batch.ref_logp[micro].to(device)
                    if batch.ref_logp is not None and g.kl_coef > 0 and not g.kl_in_reward
                    else None
                )
                loss, stats = policy_loss(
                    g.loss,
                    logp,
                    batch.old_logp[micro].to(device),
                    rows.advantages[micro].to(device),
                    mask.to(device),
                    ref_logp=ref,
                    **opts,
                )
                (loss * share).backward()
                sums["loss"] += loss.item() * share
                for k, v in stats.items():
                    sums[k] += v * (part / run_total)
            sums["prefill_reused"] += finish_stash()  # the sampler's prefills: one backward
            empty = run_total == 0 and bool(skip[mb].any())
            if empty:
                dropped += 1
                sums["loss"] += 0.0  # the loss of zero-advantage rows, logged as before
                for p in params:  # the zero gradient the skipped backward would have left
                    p.grad = torch.zeros_like(p)
            if g.max_grad_norm > 0:
                sums["grad_norm"] += float(torch.nn.utils.clip_grad_norm_(params, g.max_grad_norm))
            opt.step()
            if sched is not None:
                sched.step()
            if not empty:
                sums["entropy"] += ent_sum / max(ent_tokens, 1.0)
            steps += 1
    ran = max(steps - dropped, 1)
    every_step = ("loss", "grad_norm")  # zero on dropped minibatches, as without the skip
    out = {k: v / max(steps if k in every_step else ran, 1) for k, v in sums.items()}
    out["optimizer_steps"] = float(steps)
    out["lr"] = float(opt.param_groups[0]["lr"])
    out["rows_skipped_zero_adv"] = float(skip.sum())
    out["update_skipped"] = float(steps > 0 and dropped == steps)
    return out
