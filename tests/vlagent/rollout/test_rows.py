"""Prompt batching, trajectories flattened into rows, and log-prob agreement between the
sampler (``rollout/engine.py``) and the training forward (``rollout/forward.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vlagent.batching import (
    completion_logprobs,
    completion_mask,
    encode_prompts,
    forbidden_token_ids,
    repeat_prompts,
    select_prompts,
)
from vlagent.models.loading import load_policy
from vlagent.rollout.engine import sample_turns
from vlagent.rollout.forward import row_logprobs
from vlagent.rollout.rows import batch_prompts, build_rows
from vlagent.rollout.tokens import encode_prompt
from vlagent.rollout.trajectory import Prompt, Segment, Trajectory, Turn


def _images(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (224, 224, 3), dtype=np.uint8) for _ in range(n)]


def _segments(policy, texts, group, seed=0):
    """``group`` fresh segments per prompt; a group's segments share one Prompt object."""
    prompts = [
        encode_prompt(policy.processor, [im], t)
        for im, t in zip(_images(len(texts), seed), texts, strict=True)
    ]
    return [Segment(p) for p in prompts for _ in range(group)]


def _trajectories(segments, outs, group):
    """One single-turn trajectory per segment after appending its sampled turn."""
    trajs = []
    for i, (seg, (ids, logps, hit)) in enumerate(zip(segments, outs, strict=True)):
        start, end = seg.append(ids, policy=True, logprobs=logps)
        turn = Turn(0, start, end, "", truncated=not hit)
        trajs.append(Trajectory(i, group_id=i // group, segments=[seg], turns=[turn]))
    return trajs


def test_completion_mask_hand_case():
    ids = torch.tensor([[5, 6, 9, 0, 0], [5, 9, 9, 7, 0], [5, 6, 7, 8, 4]])
    # eos = 9, pad = 0: up to and including the first eos
    mask = completion_mask(ids, [9], pad_id=0)
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]


def test_repeat_prompts_keeps_image_rows_together(tiny_dir):
    policy = load_policy(tiny_dir)
    imgs = _images(2)
    batch = encode_prompts(policy.processor, imgs, ["a", "bb bb"])
    rep = repeat_prompts(batch, 3)
    assert rep.inputs["input_ids"].shape[0] == 6
    rows = int(batch.inputs["image_grid_thw"][0].prod())
    pv, rpv = batch.inputs["pixel_values"], rep.inputs["pixel_values"]
    assert torch.equal(rpv[2 * rows : 3 * rows], pv[:rows])  # third copy of image 0
    assert torch.equal(rpv[3 * rows : 4 * rows], pv[rows:])  # first copy of image 1
    assert rep.frames == [batch.frames[0]] * 3 + [batch.frames[1]] * 3


def test_frames_match_processor_resize(tiny_dirs):
    policy = load_policy(tiny_dirs["qwen2_5_vl"])
    img = np.zeros((300, 500, 3), dtype=np.uint8)
    batch = encode_prompts(policy.processor, [img], ["x"])
    t, h, w = batch.inputs["image_grid_thw"][0].tolist()
    patch = policy.processor.image_processor.patch_size
    assert (batch.frames[0].resized.width, batch.frames[0].resized.height) == (w * patch, h * patch)
    assert (batch.frames[0].orig.width, batch.frames[0].orig.height) == (500, 300)
    # the trajectory prompt encoder agrees with the batch encoder
    prompt = encode_prompt(policy.processor, [img], "x")
    assert prompt.frame == batch.frames[0]
    assert torch.equal(prompt.input_ids, batch.inputs["input_ids"][0])
    assert torch.equal(prompt.image_grid_thw, batch.inputs["image_grid_thw"])


def _fake_prompt(n, tag):
    return Prompt(
        input_ids=torch.full((n,), tag, dtype=torch.long),
        mm_token_type_ids=torch.zeros(n, dtype=torch.long),
        pixel_values=torch.full((n, 2), float(tag)),
        image_grid_thw=torch.tensor([[1, 1, n]]),
        frames=[f"frame{tag}"],  # type: ignore[list-item]
    )


def test_build_rows_hand_case():
    """Rows = segments with policy tokens; turn advantages land on their own tokens."""
    pa, pb = _fake_prompt(3, 7), _fake_prompt(5, 8)
    # episode 0: one segment, policy turn (3 tokens) + observation (2) + policy turn (2)
    s0 = Segment(pa)
    s0.append([11, 12, 13], policy=True, logprobs=[-1.0, -2.0, -3.0])
    s0.append([40, 41], policy=False)
    s0.append([14, 15], policy=True, logprobs=[-4.0, -5.0])
    t0 = Trajectory(
        "a",
        group_id=0,
        segments=[s0],
        turns=[Turn(0, 0, 3, "x"), Turn(0, 5, 7, "y", truncated=True)],
    )
    # episode 1: same prompt object (same group), one short turn
    s1 = Segment(pa)
    s1.append([21], policy=True, logprobs=[-0.5])
    t1 = Trajectory("a", group_id=0, segments=[s1], turns=[Turn(0, 0, 1, "z")])
    # episode 2: two segments (multi-step), another prompt for the second
    s2a, s2b = Segment(pb), Segment(pa)
    s2a.append([31, 32], policy=True, logprobs=[-0.1, -0.2])
    s2b.append([33], policy=True, logprobs=[-0.3])
    t2 = Trajectory(
        "b", group_id=1, segments=[s2a, s2b], turns=[Turn(0, 0, 2, "p"), Turn(1, 0, 1, "q")]
    )
    # episode 3: masked (no policy token left): no row
    s3 = Segment(pb)
    s3.append([51, 52], policy=True, logprobs=[-1.0, -1.0])
    t3 = Trajectory("b", group_id=1, segments=[s3], turns=[Turn(0, 0, 2, "r")])
    t3.mask_out()

    trajs = [t0, t1, t2, t3]
    rows = build_rows(trajs, [[1.0, 2.0], [-1.0], [0.5, -0.5], [9.0]], pad_id=0)
    assert len(rows) == 4
    assert rows.traj_index.tolist() == [0, 1, 2, 2]
    assert rows.group_ids.tolist() == [0, 0, 1, 1]
    assert len(rows.prompts) == 2 and rows.prompts[0] is pa and rows.prompts[1] is pb
    assert rows.row_prompt.tolist() == [0, 0, 1, 0]
    assert rows.ids.tolist() == [
        [11, 12, 13, 40, 41, 14, 15],
        [21, 0, 0, 0, 0, 0, 0],
        [31, 32, 0, 0, 0, 0, 0],
        [33, 0, 0, 0, 0, 0, 0],
    ]
    assert rows.valid.tolist() == [[1] * 7, [1] + [0] * 6, [1, 1] + [0] * 5, [1] + [0] * 6]
    assert rows.mask[0].tolist() == [1, 1, 1, 0, 0, 1, 1]
    assert rows.old_logp[0].tolist() == [-1.0, -2.0, -3.0, 0.0, 0.0, -4.0, -5.0]
    assert rows.truncated.tolist() == [True, False, False, False]
    # turns of row 0 differ -> per-token advantages, each on its own turn's tokens
    assert rows.advantages.shape == (4, 7)
    assert rows.advantages[0].tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 2.0, 2.0]
    assert (rows.advantages[1] * rows.mask[1]).tolist() == [-1.0] + [0.0] * 6
    assert (rows.advantages[2] * rows.mask[2]).tolist()[:2] == [0.5, 0.5]
    assert (rows.advantages[3] * rows.mask[3]).tolist()[:1] == [-0.5]
    # uniform advantages collapse to one per row
    flat = build_rows(trajs, [[1.0, 1.0], [-1.0], [0.5, 0.5], [9.0]], pad_id=0)
    assert flat.advantages.tolist() == [1.0, -1.0, 0.5, 0.5]
    assert build_rows(trajs, None, pad_id=0).advantages.tolist() == [0.0] * 4  # SFT
    # select keeps only the prompts its rows continue, remapped
    sub = rows.select([2, 1])
    assert len(sub.prompts) == 2 and sub.prompts[sub.row_prompt[0]] is pb
    assert sub.prompts[sub.row_prompt[1]] is pa
    assert sub.ids[0].tolist() == rows.ids[2].tolist()
    only_b = rows.select([2])
    assert only_b.prompts == [pb] and only_b.row_prompt.tolist() == [0]


def test_batch_prompts_left_pads():
    pa, pb = _fake_prompt(3, 7), _fake_prompt(5, 8)
    batch = batch_prompts([pa, pb], pad_id=0)
    assert batch.inputs["input_ids"].tolist() == [[0, 0, 7, 7, 7], [8] * 5]
    assert batch.inputs["attention_mask"].tolist() == [[0, 0, 1, 1, 1], [1] * 5]
    assert batch.inputs["pixel_values"].shape == (8, 2)
    assert batch.frames == ["frame7", "frame8"]


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_behaviour_logprobs_match_teacher_forcing(tiny_dirs, family):
    """The sampler's log-probs (KV cache, incremental M-RoPE) equal a fresh forward pass."""
    policy = load_policy(tiny_dirs[family])
    segs = _segments(policy, ["Click the red circle.", "Tap it"], group=3, seed=1)
    outs = sample_turns(policy, segs, [12] * len(segs), temperature=0.7, seed=0)
    forbidden = forbidden_token_ids(policy.tokenizer)
    assert not any(set(ids) & set(forbidden) for ids, _, _ in outs)
    rows = build_rows(_trajectories(segs, outs, 3), None, policy.tokenizer.pad_token_id)
    pad = policy.tokenizer.pad_token_id
    with torch.no_grad():
        plain = completion_logprobs(
            policy.model,
            select_prompts(batch_prompts(rows.prompts, pad), rows.row_prompt),
            rows.ids,
            rows.mask,
            temperature=0.7,
            forbidden=forbidden,
        )
        full = row_logprobs(
            policy.model, rows, pad, temperature=0.7, forbidden=forbidden, shared=False
        )
    assert rows.mask.sum() > 0
    assert torch.allclose(plain, rows.old_logp, atol=1e-4)
    assert torch.allclose(full, rows.old_logp, atol=1e-4)


def test_second_turn_logprobs_match_teacher_forcing(tiny_dir):
    """A later turn (sampled by HF generate after an observation) lines up with the training
    forward on the whole segment: observation tokens carry no loss and no log-prob."""
    from vlagent.rollout.tokens import text_ids

    policy = load_policy(tiny_dir)
    tok = policy.tokenizer
    segs = _segments(policy, ["Click the red circle.", "Tap it"], group=2)
    first = sample_turns(policy, segs, [6] * 4, seed=0)
    turns: list[list[Turn]] = [[] for _ in segs]
    for seg, tt, (ids, logps, hit) in zip(segs, turns, first, strict=True):
        start, end = seg.append(ids, policy=True, logprobs=logps)
        tt.append(Turn(0, start, end, "", truncated=not hit))
        seg.append(text_ids(tok, " observation: nothing here."), policy=False)
    second = sample_turns(policy, segs, [6] * 4, seed=1)  # continuations: the generate path
    for seg, tt, (ids, logps, hit) in zip(segs, turns, second, strict=True):
        start, end = seg.append(ids, policy=True, logprobs=logps)
        tt.append(Turn(0, start, end, "", truncated=not hit))
    trajs = [
        Trajectory(i, group_id=i // 2, segments=[s], turns=tt)
        for i, (s, tt) in enumerate(zip(segs, turns, strict=True))
    ]
    rows = build_rows(trajs, None, tok.pad_token_id)
    forbidden = forbidden_token_ids(tok)
    with torch.no_grad():
        for shared in (True, False):
            lp = row_logprobs(
                policy.model, rows, tok.pad_token_id, forbidden=forbidden, shared=shared
            )
            assert torch.allclose(lp, rows.old_logp, atol=1e-4), shared
    assert (rows.mask.sum(1) < rows.valid.sum(1)).all()  # the observation is in, without loss


def test_generation_is_seeded(tiny_dir):
    from vlagent.config import load_config
    from vlagent.rollout.runner import group_specs
    from vlagent.worlds import make_world

    policy = load_policy(tiny_dir)
    segs = _segments(policy, ["x"], group=4)
    a = sample_turns(policy, segs, [8] * 4, seed=5)
    b = sample_turns(policy, segs, [8] * 4, seed=5)
    assert a == b
    assert len({tuple(ids) for ids, _, _ in a}) > 1  # the group's samples differ

    world = make_world(load_config(None), policy)

    def episodes():
        return world.episodes(
            policy,
            "train",
            group_specs(world.task_ids("train", 0, 1), 4),
            8,
            seed=5,
        )

    ea, eb = episodes(), episodes()
    assert [t.group_id for t in ea] == [0, 0, 0, 0]
    assert [t.segments[0].ids for t in ea] == [t.segments[0].ids for t in eb]
