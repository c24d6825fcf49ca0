"""Policy losses and aggregation against slow loop references and hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.algos.losses import aggregate, gspo_loss, masked_mean, policy_loss, ppo_loss


def _kl(kind, lp, ref):
    d = lp - ref
    if kind == "k1":
        return d
    if kind == "k2":
        return 0.5 * d * d
    return torch.exp(-d) + d - 1.0


def _clip_term(ratio, a, eps_low, eps_high, dual):
    # scalar tensors; written out branch by branch as in the papers
    unclipped = ratio * a
    clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * a
    term = -torch.min(unclipped, clipped)
    if dual is not None and a < 0:
        term = torch.min(term, torch.tensor(-dual * float(a)))
    return term


def _reduce(rows, mode, max_len):
    """rows: per sequence, the list of its masked-in scalar terms."""
    if mode == "token_mean":
        flat = [t for row in rows for t in row]
        return sum(flat) / len(flat) if flat else torch.tensor(0.0)
    seqs = [row for row in rows if row]
    if mode == "seq_mean_token_mean":
        per_seq = [sum(row) / len(row) for row in seqs]
    else:
        per_seq = [sum(row) / max_len for row in seqs]
    return sum(per_seq) / len(per_seq) if per_seq else torch.tensor(0.0)


def ref_ppo(logp, old, adv, mask, eps_low, eps_high, dual, mode, max_len, ref, beta, kind):
    """Loop reference built from scalar tensor ops, so gradients can be compared too."""
    rows = []
    for i in range(logp.shape[0]):
        row = []
        for t in range(logp.shape[1]):
            if mask[i, t] == 0:
                continue
            a = adv[i, t] if adv.dim() == 2 else adv[i]
            term = _clip_term(torch.exp(logp[i, t] - old[i, t]), a, eps_low, eps_high, dual)
            if beta:
                term = term + beta * _kl(kind, logp[i, t], ref[i, t])
            row.append(term)
        rows.append(row)
    return _reduce(rows, mode, max_len)


def ref_gspo(logp, old, adv, mask, eps_low, eps_high, dual, mode, max_len):
    rows = []
    for i in range(logp.shape[0]):
        idx = [t for t in range(logp.shape[1]) if mask[i, t] != 0]
        if not idx:
            rows.append([])
            continue
        mean_log_ratio = sum(logp[i, t] - old[i, t] for t in idx) / len(idx)
        term = _clip_term(torch.exp(mean_log_ratio), adv[i], eps_low, eps_high, dual)
        rows.append([term] * len(idx))
    return _reduce(rows, mode, max_len)


def random_inputs(seed, n=6, t=5, token_adv=False):
    g = torch.Generator().manual_seed(seed)
    logp = (-torch.rand(n, t, generator=g)).requires_grad_()
    old = logp.detach() + 0.4 * torch.randn(n, t, generator=g)
    ref = logp.detach() + 0.3 * torch.randn(n, t, generator=g)
    adv = torch.randn(n, t, generator=g) if token_adv else torch.randn(n, generator=g)
    mask = (torch.rand(n, t, generator=g) > 0.3).float()
    mask[0] = 0  # one fully masked row
    mask[1, 0] = 1
    return logp, old, ref, adv, mask


def _grad(loss, x):
    (g,) = torch.autograd.grad(loss, x)
    return g


MODES = ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("eps_low", "eps_high", "dual"), [(0.2, 0.2, None), (0.2, 0.28, 3.0)])
@pytest.mark.parametrize(("beta", "kind"), [(0.0, "k3"), (0.1, "k1"), (0.1, "k2"), (0.05, "k3")])
def test_ppo_matches_reference(mode, eps_low, eps_high, dual, beta, kind):
    for seed, token_adv in ((0, False), (1, True)):
        logp, old, ref, adv, mask = random_inputs(seed, token_adv=token_adv)
        opts = dict(clip_eps_low=eps_low, clip_eps_high=eps_high, dual_clip=dual)
        loss, _ = ppo_loss(
            logp, old, adv, mask, **opts, aggregation=mode, max_len=7,
            ref_logp=ref, kl_coef=beta, kl_estimator=kind,
        )  # fmt: skip
        want = ref_ppo(logp, old, adv, mask, eps_low, eps_high, dual, mode, 7, ref, beta, kind)
        assert loss.item() == pytest.approx(want.item(), rel=1e-5, abs=1e-7)
        assert torch.allclose(_grad(loss, logp), _grad(want, logp), atol=1e-6)


def test_ppo_hand_computed_clip_higher_and_dual_clip():
    # tokens (ratio, A): (1.3, +1) -> clip at 1 + .28: -1.28   [high clip, no gradient]
    #                    (0.7, -1) -> clip at 1 - .2: -min(-.7, -.8) = .8   [low clip]
    #                    (4.0, -1) -> -min(-4, -.8) = 4, capped at -c*A = 3   [dual clip]
    #                    (1.0, +2) -> -2   [unclipped; d/dlogp = -A*ratio / 4 tokens = -.5]
    # token mean = (-1.28 + .8 + 3 - 2) / 4 = .13; ratio mean = (1.3 + .7 + 4 + 1) / 4 = 1.75
    old = torch.zeros(1, 4)
    logp = torch.log(torch.tensor([[1.3, 0.7, 4.0, 1.0]])).requires_grad_()
    adv = torch.tensor([[1.0, -1.0, -1.0, 2.0]])
    loss, stats = ppo_loss(
        logp, old, adv, torch.ones(1, 4), clip_eps_low=0.2, clip_eps_high=0.28, dual_clip=3.0
    )
    assert loss.item() == pytest.approx(0.13)
    assert _grad(loss, logp).flatten().tolist() == pytest.approx([0.0, 0.0, 0.0, -0.5])
    assert stats["clip_frac_low"] == stats["clip_frac_high"] == stats["clip_frac_dual"] == 0.25
    assert stats["ratio_mean"] == pytest.approx(1.75)
    # approx KL (k3 of old vs new): mean of (1/ρ + ln ρ - 1)
    k3 = [1 / r + math.log(r) - 1 for r in (1.3, 0.7, 4.0, 1.0)]
    assert stats["approx_kl"] == pytest.approx(sum(k3) / 4)
    # symmetric clip and no dual clip: (1.3, +1) -> -1.2 ; (4, -1) -> 4: (-1.2 + .8 + 4 - 2) / 4
    loss, stats = ppo_loss(logp, old, adv, torch.ones(1, 4))
    assert loss.item() == pytest.approx(0.4)
    assert stats["clip_frac_dual"] == 0.0


def test_aggregation_hand_computed():
    # rows: [1, 2, 3] all in; [4, x, x] one token; [9, 9, 9] fully masked (ignored everywhere)
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0], [9.0, 9.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert aggregate(per_token, mask, "token_mean").item() == pytest.approx(10 / 4)  # 2.5
    assert aggregate(per_token, mask, "seq_mean_token_mean").item() == pytest.approx(3.0)  # (2+4)/2
    # (6/4 + 4/4) / 2 = 1.25
    got = aggregate(per_token, mask, "seq_mean_token_sum_norm", max_len=4)
    assert got.item() == pytest.approx(1.25)
    assert aggregate(per_token, mask).item() == masked_mean(per_token, mask).item()


def test_aggregation_all_masked_and_errors():
    x = torch.randn(3, 4, requires_grad=True)
    for mode in MODES:
        loss = aggregate(x, torch.zeros(3, 4), mode, max_len=4)
        assert loss.item() == 0.0
        assert _grad(loss, x).abs().sum().item() == 0.0
    with pytest.raises(ValueError, match="max_len"):
        aggregate(x, torch.ones(3, 4), "seq_mean_token_sum_norm")
    with pytest.raises(ValueError, match="unknown"):
        aggregate(x, torch.ones(3, 4), "sum")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dual", [None, 3.0])
def test_gspo_matches_reference(mode, dual):
    for seed in range(4):
        logp, old, _, adv, mask = random_inputs(seed)
        loss, _ = gspo_loss(
            logp, old, adv, mask, clip_eps_low=0.05, clip_eps_high=0.08, dual_clip=dual,
            aggregation=mode, max_len=7,
        )  # fmt: skip
        want = ref_gspo(logp, old, adv, mask, 0.05, 0.08, dual, mode, 7)
        assert loss.item() == pytest.approx(want.item(), rel=1e-5, abs=1e-7)
        assert torch.allclose(_grad(loss, logp), _grad(want, logp), atol=1e-6)


def test_gspo_hand_computed():
    # row 0: token ratios 1.5, .6 -> s = sqrt(.9) = .948683 (geometric mean), A = +1, in range
    #        -> term -.948683; grad per token = -A*s/2 tokens/3 sequences = -.158114
    # row 1: ratios 2, 2 -> s = 2 > 1.2, A = +1 -> -1.2 (high clip, no gradient)
    # row 2: ratios .25, 1 (+ a masked token) -> s = .5 < .8, A = -1 -> .8 (low clip)
    # seq mean token mean: (-.948683 - 1.2 + .8) / 3 = -.449561
    ratios = torch.tensor([[1.5, 0.6, 1.0], [2.0, 2.0, 1.0], [0.25, 1.0, 7.0]])
    logp = ratios.log().requires_grad_()
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    adv = torch.tensor([1.0, 1.0, -1.0])
    loss, stats = gspo_loss(logp, torch.zeros(3, 3), adv, mask, clip_eps_low=0.2, clip_eps_high=0.2)
    s0 = math.sqrt(0.9)
    assert loss.item() == pytest.approx((-s0 - 1.2 + 0.8) / 3)
    g = -s0 / 2 / 3
    assert _grad(loss, logp).flatten().tolist() == pytest.approx([g, g] + [0.0] * 7)
    assert stats["clip_frac_high"] == pytest.approx(1 / 3)
    assert stats["clip_frac_low"] == pytest.approx(1 / 3)
    assert stats["ratio_mean"] == pytest.approx((s0 + 2.0 + 0.5) / 3)


def test_gspo_equals_ppo_when_every_sequence_has_one_token():
    g = torch.Generator().manual_seed(9)
    for t in (1, 4):
        logp = (-torch.rand(8, t, generator=g)).requires_grad_()
        old = logp.detach() + 0.5 * torch.randn(8, t, generator=g)
        adv = torch.randn(8, generator=g)
        mask = torch.zeros(8, t)
        mask[torch.arange(8), torch.randint(0, t, (8,), generator=g)] = 1  # one token per row
        opts = dict(clip_eps_low=0.2, clip_eps_high=0.3, dual_clip=2.0)
        for mode in ("token_mean", "seq_mean_token_mean"):
            a, sa = gspo_loss(logp, old, adv, mask, aggregation=mode, **opts)
            b, sb = ppo_loss(logp, old, adv, mask, aggregation=mode, **opts)
            assert a.item() == pytest.approx(b.item(), rel=1e-6)
            assert torch.allclose(_grad(a, logp), _grad(b, logp), atol=1e-7)
            for key in ("clip_frac_low", "clip_frac_high", "clip_frac_dual", "ratio_mean"):
                assert sa[key] == pytest.approx(sb[key])


def test_loss_errors_and_dispatch():
    logp, old, ref, adv, mask = random_inputs(3)
    with pytest.raises(ValueError, match="dual_clip"):
        ppo_loss(logp, old, adv, mask, dual_clip=1.0)
    with pytest.raises(ValueError, match="clip_eps_low"):
        ppo_loss(logp, old, adv, mask, clip_eps_low=1.0)
    with pytest.raises(ValueError, match="ref_logp"):
        gspo_loss(logp, old, adv, mask, kl_coef=0.1)
    with pytest.raises(ValueError, match=r"\[N\]"):
        gspo_loss(logp, old, adv[:, None].expand_as(logp), mask)
    with pytest.raises(ValueError, match="unknown"):
        policy_loss("trpo", logp, old, adv, mask)
    # dispatch by name, checked against the loop references (GSPO's own default clip range)
    a, _ = policy_loss("gspo", logp, old, adv, mask, clip_eps_high=0.01)
    want = ref_gspo(logp, old, adv, mask, 3e-4, 0.01, None, "seq_mean_token_mean", None)
    assert a.item() == pytest.approx(want.item(), rel=1e-5)
    a, _ = policy_loss("ppo_clip", logp, old, adv, mask, ref_logp=ref, kl_coef=0.1)
    want = ref_ppo(logp, old, adv, mask, 0.2, 0.2, None, "token_mean", None, ref, 0.1, "k3")
    assert a.item() == pytest.approx(want.item(), rel=1e-5)
    assert want.item() != pytest.approx(
        ref_gspo(logp, old, adv, mask, 0.2, 0.2, None, "token_mean", None).item(), rel=1e-3
    )  # the two losses differ here: a swapped dispatch cannot pass
