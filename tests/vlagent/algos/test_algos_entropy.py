"""Token entropy: hand-computed values, loop reference, chunking and gradients."""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.algos.entropy import token_entropy
from vlagent.algos.losses import masked_mean


def ref_entropy(logits, mask):
    out = []
    for row, mrow in zip(logits.tolist(), mask.tolist(), strict=True):
        vals = []
        for z, m in zip(row, mrow, strict=True):
            top = max(z)
            weights = [math.exp(x - top) for x in z]
            total = sum(weights)
            h = -sum(w / total * math.log(w / total) for w in weights if w > 0)
            vals.append(h if m else 0.0)
        out.append(vals)
    return out


def test_hand_computed():
    inf = float("inf")
    logits = torch.tensor(
        [
            [[0.0, 0.0, 0.0, 0.0], [math.log(3.0), 0.0, -inf, -inf]],
            [[5.0, -inf, -inf, -inf], [1.0, 2.0, 3.0, 4.0]],
        ]
    )
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    got = token_entropy(logits, mask)
    # uniform over 4: ln 4 = 1.386294 ; p = (.75, .25): -(.75 ln .75 + .25 ln .25) = .562335
    # one-hot (other logits -inf): 0, not NaN ; masked: 0
    h2 = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert got.flatten().tolist() == pytest.approx([math.log(4.0), h2, 0.0, 0.0])
    assert masked_mean(got, mask).item() == pytest.approx((math.log(4.0) + h2) / 3)


@pytest.mark.parametrize("chunk_rows", [1, 2, 4, 100])
def test_matches_reference_for_any_chunking(chunk_rows):
    g = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn(5, 3, 7, generator=g)
    mask = (torch.rand(5, 3, generator=g) > 0.3).float()
    got = token_entropy(logits, mask, chunk_rows=chunk_rows)
    for row_got, row_want in zip(got.tolist(), ref_entropy(logits, mask), strict=True):
        assert row_got == pytest.approx(row_want, abs=1e-5)


def test_gradient_matches_unchunked_categorical_and_low_precision_input():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(4, 3, 6, generator=g, requires_grad=True)
    mask = torch.ones(4, 3)
    (mine,) = torch.autograd.grad(token_entropy(logits, mask, chunk_rows=3).sum(), logits)
    full = torch.distributions.Categorical(logits=logits).entropy()
    (want,) = torch.autograd.grad(full.sum(), logits)
    assert torch.allclose(mine, want, atol=1e-6)
    low = token_entropy(logits.detach().to(torch.bfloat16), mask)
    assert low.dtype == torch.float32
    assert torch.allclose(low, full.detach(), atol=3e-2)
    with pytest.raises(ValueError, match="chunk_rows"):
        token_entropy(logits, mask, chunk_rows=0)
