"""Equivalence guard: the GRPO loss our trainer optimizes is PPO-clip token-mean, written plainly.

On a fixed batch (2 prompts × 4 fixed completions of different lengths, fixed advantages and
old log-probs chosen so that both clip edges are active), ``policy_update`` — whatever fast path
it takes (prefix sharing, micro-batching, the full forward under gradient checkpointing) — must
give the loss and the gradients of a reference that runs one full, unpadded forward per row
(prompt + completion) and writes log-softmax, gather and the clipped surrogate out by hand.
The batch goes the trainer's own way: one-turn trajectories (one shared ``Prompt`` per group)
flattened by ``build_rows`` into a ``RowBatch``. Only public functions are called, so a rewrite
of the hot path is checked, not bypassed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.batching import completion_logprobs, forbidden_token_ids, repeat_prompts
from vlagent.models.loading import load_policy
from vlagent.rollout.forward import row_logprobs
from vlagent.rollout.rows import RowBatch, batch_prompts, build_rows
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.train.update import UpdateBatch, policy_update

G = 4
TEMPERATURE = 0.8
EPS_LOW, EPS_HIGH = 0.2, 0.28
INSTRUCTIONS = ["Click the red circle.", "Click the small blue square near the top."]
# (answer text, ends with eos): different lengths; two rows are truncated (no eos).
ANSWERS = [
    ('{"point_2d": [12, 34]}', True),
    ('{"point_2d": [100, 7]}', True),
    ('{"point_2d": [5', False),
    ("oops", True),
    ('{"point_2d": [200, 150]}', True),
    ('{"point_2d": [1, 1]}', False),
    ("[3, 4]", True),
    ('{"point_2d": [64, 64]}', True),
]
ADVANTAGES = torch.tensor([1.0, -1.0, 0.5, -0.5, -1.2, 1.2, 0.3, -0.3])
# Names of parameters whose gradients are compared (vision tower, merger, text, tied head).
PARAMS = (
    "model.visual.patch_embed.proj.weight",
    "model.visual.blocks.0.attn.qkv.weight",
    "model.visual.merger.mlp.2.weight",
    "model.language_model.layers.0.self_attn.q_proj.weight",
    "model.language_model.layers.1.mlp.down_proj.weight",
    "model.language_model.embed_tokens.weight",
)


class GradRecorder(torch.optim.Optimizer):
    """An optimizer whose step only copies the gradients it is given (weights never move)."""

    def __init__(self, named: list[tuple[str, torch.nn.Parameter]]) -> None:
        self.names = {id(p): n for n, p in named}
        super().__init__([p for _, p in named], {"lr": 0.0})
        self.grads: dict[str, torch.Tensor] = {}
        self.steps = 0

    def step(self, closure=None):  # noqa: ANN001, ANN201
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.grads[self.names[id(p)]] = p.grad.detach().clone()
        self.steps += 1


def _fixed_batch(policy):
    """Prompts (our encoder: one ``Prompt`` per screen), the fixed completions [8, T] and their
    mask [8, T]."""
    imgs = [
        np.random.default_rng(i).integers(0, 255, (224, 224, 3), dtype=np.uint8) for i in range(2)
    ]
    prompts = [
        encode_prompt(policy.processor, [im], text)
        for im, text in zip(imgs, INSTRUCTIONS, strict=True)
    ]
    tok = policy.tokenizer
    rows = []
    for text, ends in ANSWERS:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        rows.append(ids + [tok.eos_token_id] if ends else ids)
    t = max(len(r) for r in rows)
    ids = torch.full((len(rows), t), tok.pad_token_id, dtype=torch.long)
    mask = torch.zeros(len(rows), t)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1.0
    return prompts, ids, mask


def _reference_token_logprobs(model, prompts, ids, mask, forbidden):
    """Per row: one forward over (unpadded prompt + its completion tokens), log-softmax, gather.

    Returns:
        List of N tensors [L_r] (L_r = completion tokens of row r), differentiable.
    """
    out = []
    for r in range(ids.shape[0]):
        prompt = prompts[r // G]  # rows are prompt-major: row r continues prompt r // G
        prompt_ids = prompt.input_ids
        n_prompt, n_tok = prompt_ids.shape[0], int(mask[r].sum())
        seq = torch.cat([prompt_ids, ids[r, :n_tok]])[None]  # [1, P + L]
        types = prompt.mm_token_type_ids
        kwargs = {
            "input_ids": seq,
            "attention_mask": torch.ones_like(seq),
            "pixel_values": prompt.pixel_values,
            "image_grid_thw": prompt.image_grid_thw,
            "mm_token_type_ids": torch.cat([types, types.new_zeros(n_tok)])[None],
            "use_cache": False,
        }
        logits = model(**kwargs).logits[0].float()  # [P + L, V]
        pred = logits[n_prompt - 1 : n_prompt - 1 + n_tok]  # position i predicts token i + 1
        banned = torch.zeros(pred.shape[-1], dtype=torch.bool)
        banned[forbidden] = True
        pred = pred.masked_fill(banned, float("-inf"))
        logp = torch.log_softmax(pred / TEMPERATURE, dim=-1)
        out.append(logp.gather(-1, ids[r, :n_tok, None]).squeeze(-1))
    return out


def _reference_loss(token_logps, old_logp, advantages):
    """PPO-clip, token mean over the whole batch: Σ_rows Σ_tokens −min(ρA, clip(ρ)A) / Σ tokens."""
    total, tokens = 0.0, 0
    for r, logp in enumerate(token_logps):
        ratio = torch.exp(logp - old_logp[r, : logp.shape[0]])
        a = advantages[r]
        surrogate = torch.minimum(ratio * a, torch.clamp(ratio, 1 - EPS_LOW, 1 + EPS_HIGH) * a)
        total = total - surrogate.sum()
        tokens += logp.shape[0]
    return total / tokens


def _old_logprobs(token_logps, mask):
    """Behaviour log-probs: the current ones shifted by a fixed ±0.35 pattern (ratios leave the
    clip range on both sides)."""
    old = torch.zeros_like(mask)
    pattern = torch.tensor([0.35, -0.35, 0.1, -0.05, 0.0, 0.25, -0.3])
    for r, logp in enumerate(token_logps):
        n = logp.shape[0]
        shift = pattern[(torch.arange(n) + r) % len(pattern)]
        old[r, :n] = logp.detach() + shift
    return old


def _assert_both_clip_edges_active(token_logps, old_logp):
    """The fixture is only a test of clipping if some tokens sit beyond each clip edge."""
    high = low = 0
    for r, logp in enumerate(token_logps):
        ratio = torch.exp(logp - old_logp[r, : logp.shape[0]])
        a = float(ADVANTAGES[r])
        high += int(((ratio > 1 + EPS_HIGH) & (a > 0)).sum())
        low += int(((ratio < 1 - EPS_LOW) & (a < 0)).sum())
    assert high > 0 and low > 0, (high, low)


@dataclasses.dataclass
class Reference:
    """The plain computation's results on the fixed batch (weights are never changed)."""

    policy: object
    prompts: object
    ids: torch.Tensor
    mask: torch.Tensor
    old: torch.Tensor
    token_logps: list[torch.Tensor]
    loss: float
    grads: dict[str, torch.Tensor]


@pytest.fixture(scope="module")
def reference(tiny_qwen25_dir) -> Reference:
    policy = load_policy(tiny_qwen25_dir)
    model = policy.model
    model.train()
    forbidden = forbidden_token_ids(policy.tokenizer)
    prompts, ids, mask = _fixed_batch(policy)
    with torch.no_grad():
        current = _reference_token_logprobs(model, prompts, ids, mask, forbidden)
    old = _old_logprobs(current, mask)
    _assert_both_clip_edges_active(current, old)
    model.zero_grad(set_to_none=True)
    loss = _reference_loss(
        _reference_token_logprobs(model, prompts, ids, mask, forbidden), old, ADVANTAGES
    )
    loss.backward()
    named = dict(model.named_parameters())
    grads = {n: named[n].grad.detach().clone() for n in PARAMS}
    model.zero_grad(set_to_none=True)
    return Reference(policy, prompts, ids, mask, old, current, loss.item(), grads)


def _trajectories(ref: Reference) -> list[Trajectory]:
    """One one-turn trajectory per row: group g's four rows share prompt g's object, the turn's
    tokens are the fixed completion (loss on every one), its behaviour log-probs the old ones."""
    trajs = []
    for r, (text, ends) in enumerate(ANSWERS):
        n = int(ref.mask[r].sum())
        seg = Segment(ref.prompts[r // G])
        start, end = seg.append(
            ref.ids[r, :n].tolist(), policy=True, logprobs=ref.old[r, :n].tolist()
        )
        turn = Turn(0, start, end, text, truncated=not ends)
        trajs.append(Trajectory(task_id=r // G, group_id=r // G, segments=[seg], turns=[turn]))
    return trajs


def _rows(ref: Reference) -> RowBatch:
    trajs = _trajectories(ref)
    rows = build_rows(trajs, [[float(a)] for a in ADVANTAGES], ref.policy.tokenizer.pad_token_id)
    # The flattening itself: one row per trajectory, prompts shared per group, tokens as given.
    assert len(rows) == len(ANSWERS) and len(rows.prompts) == 2
    assert rows.row_prompt.tolist() == [r // G for r in range(len(ANSWERS))]
    torch.testing.assert_close(rows.mask, ref.mask)
    assert torch.equal(rows.ids * ref.mask.long(), ref.ids * ref.mask.long())
    torch.testing.assert_close(rows.old_logp, ref.old * ref.mask)
    torch.testing.assert_close(rows.advantages, ADVANTAGES)
    assert rows.truncated.tolist() == [not ends for _, ends in ANSWERS]
    return rows


@pytest.mark.parametrize(
    ("micro_batch_size", "gradient_checkpointing"), [(0, False), (3, False), (0, True)]
)
def test_policy_update_matches_plain_reference(reference, micro_batch_size, gradient_checkpointing):
    ref = reference
    policy = ref.policy
    rows = _rows(ref)
    g = GRPOConfig(
        prompts_per_step=2,
        group_size=G,
        temperature=TEMPERATURE,
        max_new_tokens=ref.ids.shape[1],
        clip_eps_low=EPS_LOW,
        clip_eps_high=EPS_HIGH,
        aggregation="token_mean",
        max_grad_norm=0.0,
        micro_batch_size=micro_batch_size,
        gradient_checkpointing=gradient_checkpointing,
    )
    opt = GradRecorder(list(policy.model.named_parameters()))
    stats = policy_update(
        policy, UpdateBatch(rows, rows.old_logp, rows.mask, None), g, opt, None, shuffle_seed=0
    )
    policy.model.zero_grad(set_to_none=True)

    assert opt.steps == 1
    assert stats["loss"] == pytest.approx(ref.loss, abs=1e-5)
    for name in PARAMS:
        expected = ref.grads[name]
        scale = float(expected.abs().max())
        assert scale > 0, f"{name}: reference gradient is zero"
        torch.testing.assert_close(opt.grads[name], expected, atol=1e-4, rtol=0, msg=name)
        # Gradients here are ~1e-3, so also bound the error relative to their size.
        rel = float((opt.grads[name] - expected).abs().max()) / scale
        assert rel < 1e-3, f"{name}: max gradient error is {rel:.2e} of the largest entry"


@pytest.mark.parametrize("shared", [True, False])
def test_row_logprobs_match_plain_reference(reference, shared):
    """The training forward alone, both paths: shared prefill per prompt, and one full forward
    per row."""
    ref = reference
    policy = ref.policy
    rows = _rows(ref)
    with torch.no_grad():
        ours = row_logprobs(
            policy.model,
            rows,
            policy.tokenizer.pad_token_id,
            temperature=TEMPERATURE,
            forbidden=forbidden_token_ids(policy.tokenizer),
            shared=shared,
        )
    for r, logp in enumerate(ref.token_logps):
        n = logp.shape[0]
        torch.testing.assert_close(ours[r, :n], logp, atol=1e-5, rtol=0)
        assert torch.all(ours[r, n:] == 0)


def test_completion_logprobs_match_plain_reference(reference):
    ref = reference
    policy = ref.policy
    prompts = batch_prompts(ref.prompts, policy.tokenizer.pad_token_id)
    with torch.no_grad():
        ours = completion_logprobs(
            policy.model,
            repeat_prompts(prompts, G),
            ref.ids,
            ref.mask,
            temperature=TEMPERATURE,
            forbidden=forbidden_token_ids(policy.tokenizer),
        )
    for r, logp in enumerate(ref.token_logps):
        n = logp.shape[0]
        torch.testing.assert_close(ours[r, :n], logp, atol=1e-5, rtol=0)
        assert torch.all(ours[r, n:] == 0)
