"""LR multipliers: hand-computed values, properties, and use inside LambdaLR."""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.algos.schedule import lr_lambda


def test_constant_with_warmup():
    f = lr_lambda("constant", warmup_steps=2, total_steps=10)
    # warmup (step + 1) / 2: .5, 1 ; then 1 forever
    assert [f(s) for s in range(5)] + [f(50)] == [0.5, 1.0, 1.0, 1.0, 1.0, 1.0]


def test_linear_hand_computed():
    f = lr_lambda("linear", warmup_steps=2, total_steps=6, min_ratio=0.2)
    # warmup .5, 1 ; decay over 4 steps, p = (s - 2)/4: .2 + .8 * (1 - p)
    # s=2: 1 ; s=3: .8 ; s=4: .6 ; s=5: .4 ; s=6: .2 ; beyond: .2
    want = [0.5, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2, 0.2]
    assert [f(s) for s in (0, 1, 2, 3, 4, 5, 6, 9)] == pytest.approx(want)


def test_cosine_hand_computed():
    f = lr_lambda("cosine", warmup_steps=0, total_steps=4)
    # p = s/4: .5 (1 + cos(pi p)) -> 1, (1 + .707107)/2 = .853553, .5, .146447, 0
    c = math.cos(math.pi / 4)
    assert [f(s) for s in range(6)] == pytest.approx([1, (1 + c) / 2, 0.5, (1 - c) / 2, 0, 0])
    g = lr_lambda("cosine", warmup_steps=1, total_steps=5, min_ratio=0.1)
    # warmup 1/1 = 1 at s=0; s=3: p = 2/4 -> .1 + .9 * .5 = .55
    assert g(0) == 1.0 and g(3) == pytest.approx(0.55) and g(5) == pytest.approx(0.1)


@pytest.mark.parametrize("kind", ["constant", "linear", "cosine"])
def test_properties(kind):
    f = lr_lambda(kind, warmup_steps=5, total_steps=40, min_ratio=0.25)
    values = [f(s) for s in range(60)]
    assert values[0] == pytest.approx(0.2)  # the first update already moves the weights
    assert values[4] == values[5] == 1.0  # warmup ends at 1 and decay starts from 1
    assert all(0.25 <= v <= 1.0 for v in values[4:])
    assert all(a >= b for a, b in zip(values[4:], values[5:], strict=False))  # non-increasing
    assert values[-1] == pytest.approx(1.0 if kind == "constant" else 0.25)


def test_drives_lambda_lr():
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=0.1)
    f = lr_lambda("linear", warmup_steps=2, total_steps=6)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, f)
    seen = []
    for _ in range(7):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    # .1 * [.5, 1, 1, .75, .5, .25, 0]
    assert seen == pytest.approx([0.05, 0.1, 0.1, 0.075, 0.05, 0.025, 0.0])


def test_invalid_arguments():
    with pytest.raises(ValueError, match="unknown"):
        lr_lambda("step", 0, 10)
    with pytest.raises(ValueError, match="warmup_steps"):
        lr_lambda("linear", 11, 10)
    with pytest.raises(ValueError, match="min_ratio"):
        lr_lambda("cosine", 0, 10, min_ratio=1.5)
