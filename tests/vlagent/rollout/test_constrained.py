"""Constrained decoding: the sampler draws only well-formed replies, and the learner scores
them under the very distribution they were drawn from (``rollout/grammar_head.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vlagent.batching import forbidden_token_ids
from vlagent.codec.action_grammar import padded_grammar
from vlagent.codec.robot_actions import RobotActionCodec
from vlagent.errors import VlagentError
from vlagent.models.loading import load_policy
from vlagent.rollout.engine import sample_turns
from vlagent.rollout.forward import full_inputs, row_logprobs
from vlagent.rollout.grammar_head import grammar_token_stats
from vlagent.rollout.rows import build_rows
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Segment, Trajectory, Turn

CODEC = RobotActionCodec(dims=4, n_bins=256, style="padded")


@pytest.fixture(scope="module")
def policy(tiny_dirs):
    p = load_policy(tiny_dirs["qwen3_vl"])
    p.grammar = padded_grammar(CODEC, p.tokenizer, int(p.tokenizer.eos_token_id))
    return p


def _segments(policy, group=3, n=2):
    rng = np.random.default_rng(5)
    imgs = [rng.integers(0, 255, (224 + 56 * i, 224, 3), dtype=np.uint8) for i in range(n)]
    prompts = [encode_prompt(policy.processor, [im], "Reach the red cube.") for im in imgs]
    return [Segment(p) for p in prompts for _ in range(group)]


def _rows(policy, segs, outs):
    trajs = []
    for i, (seg, (ids, logps, hit)) in enumerate(zip(segs, outs, strict=True)):
        start, end = seg.append(ids, policy=True, logprobs=logps)
        trajs.append(
            Trajectory(i, group_id=i // 3, segments=[seg], turns=[Turn(0, start, end, "", not hit)])
        )
    return build_rows(trajs, None, policy.tokenizer.pad_token_id)


@pytest.mark.parametrize("shared_prefix", [True, False])
def test_sampled_replies_always_parse_and_logprobs_match_the_learner(policy, shared_prefix):
    """A random tiny model at temperature 1.5 never writes a padded action unaided; under the
    grammar every reply parses, and the learner's log-probs (shared, full and chunked paths)
    equal the sampler's."""
    segs = _segments(policy)
    outs = sample_turns(
        policy, segs, [24] * len(segs), temperature=1.5, seed=0, shared_prefix=shared_prefix
    )
    for ids, _, hit in outs:
        assert hit and len(ids) == 16
        assert not CODEC.parse(policy.tokenizer.decode(ids[:-1])).invalid
    rows = _rows(policy, segs, outs)
    behaviour = torch.zeros_like(rows.mask, dtype=torch.float32)
    for r, (_, lp, _) in enumerate(outs):
        behaviour[r, : len(lp)] = torch.tensor(lp)
    pad = policy.tokenizer.pad_token_id
    forbidden = forbidden_token_ids(policy.tokenizer)
    for kw in ({"shared": True}, {"shared": False}, {"shared": True, "logits_chunk": 7}):
        with torch.no_grad():
            learner = row_logprobs(
                policy.model, rows, pad, temperature=1.5, forbidden=forbidden,
                grammar=policy.grammar, **kw,
            )  # fmt: skip
        assert torch.allclose(learner, behaviour * rows.mask, atol=2e-4), kw


def test_unconstrained_sampler_breaks_the_format(policy):
    """The control: the same random model without the grammar does not write the format."""
    segs = _segments(policy)
    grammar, policy.grammar = policy.grammar, None
    try:
        outs = sample_turns(policy, segs, [24] * len(segs), temperature=1.5, seed=0)
    finally:
        policy.grammar = grammar
    assert all(CODEC.parse(policy.tokenizer.decode(ids)).invalid for ids, _, _ in outs)


def test_learner_gradient_equals_masked_full_softmax(policy):
    """Log-probs and their gradient equal the full-vocabulary reference: logits masked to each
    position's accepted ids, then log_softmax."""
    segs = _segments(policy, group=2, n=1)
    outs = sample_turns(policy, segs, [24] * len(segs), temperature=1.0, seed=1)
    rows = _rows(policy, segs, outs)
    pad, g, model = policy.tokenizer.pad_token_id, policy.grammar, policy.model
    params = [p for p in model.parameters() if p.requires_grad]

    lp = row_logprobs(model, rows, pad, temperature=1.3, grammar=g, shared=False)
    (lp * torch.arange(1.0, lp.shape[1] + 1)).sum().backward()
    got = [p.grad.clone() for p in params]
    model.zero_grad()

    t = rows.ids.shape[1]
    logits = model(**full_inputs(rows, pad), logits_to_keep=t + 1, use_cache=False).logits
    states = g.states(rows.ids, rows.mask)
    z = logits[:, :-1].float()
    z = torch.stack([g.restrict_(z[:, j].clone(), states[:, j]) for j in range(t)], 1) / 1.3
    ref = torch.log_softmax(z, -1).gather(-1, rows.ids[..., None]).squeeze(-1)
    ref = torch.where(rows.mask > 0, ref, torch.zeros_like(ref))
    (ref * torch.arange(1.0, t + 1)).sum().backward()
    assert torch.allclose(lp.detach(), ref.detach(), atol=1e-5)
    for a, p in zip(got, params, strict=True):
        assert torch.allclose(a, p.grad, atol=1e-5, rtol=1e-4)
    model.zero_grad()


def test_grammar_token_stats_by_hand(policy):
    """Two positions: at the first only "0", "1", "2" are accepted; the log-prob is the logit
    minus the log-sum-exp over those three, and the entropy is theirs."""
    g = policy.grammar
    k = len(g.union)
    z = torch.zeros(1, k)
    d = {c: policy.tokenizer.encode(c, add_special_tokens=False)[0] for c in "012"}
    col = {t: j for j, t in enumerate(g.union)}
    z[0, col[d["0"]]], z[0, col[d["1"]]], z[0, col[d["2"]]] = 1.0, 2.0, 3.0
    lp, ent = grammar_token_stats(z, torch.tensor([g.start]), torch.tensor([d["1"]]), g)
    lse = float(np.log(np.exp(1) + np.exp(2) + np.exp(3)))
    assert lp.item() == pytest.approx(2.0 - lse, abs=1e-6)
    p = np.exp(np.array([1.0, 2.0, 3.0]) - lse)
    assert ent.item() == pytest.approx(float(-(p * np.log(p)).sum()), abs=1e-6)


def test_vllm_engine_refuses_a_grammar(policy):
    from vlagent.rollout.runner import Limits, run_episodes

    class Engine:
        name = "vllm"

    with pytest.raises(VlagentError, match="hf engine only"):
        run_episodes(policy, None, None, [], Limits(max_turns=1), engine=Engine())


def test_constrained_needs_a_fixed_width_style():
    from vlagent.config import RECIPES_DIR, load_config

    with pytest.raises(Exception, match="robot.constrained"):
        load_config(RECIPES_DIR / "robot_sft.yaml", ["robot.constrained=true"])
    cfg = load_config(
        RECIPES_DIR / "robot_sft.yaml", ["robot.constrained=true", "robot.action_style=padded"]
    )
    assert cfg.robot.constrained
