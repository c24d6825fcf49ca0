"""Agent loop: image tokens vs features, token-in-token-out, loss mask, crop answers, limits,
and behaviour vs teacher-forced log-probs on multi-turn, multi-image trajectories."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from perception_tools.geometry import CoordSpace
from vlagent.agent.config import LoopConfig, ToolsConfig
from vlagent.agent.logprobs import trajectory_logprobs
from vlagent.agent.loop import AgentRuntime, EpisodeSpec
from vlagent.agent.trajectory import pack
from vlagent.models.loading import load_policy

BUDGET = 160 * 96  # small observations keep the tests fast
ZOOMS = [(0.5, 0.5, 1.0, 1.0), (0.0, 0.0, 0.5, 0.5), (0.25, 0.25, 0.75, 0.75), (0.1, 0.2, 0.9, 0.6)]


def _runtime(path, **loop) -> AgentRuntime:
    knobs = {"max_turns": 6, "max_images": 6, "max_turn_tokens": 64, "max_episode_tokens": 400}
    knobs.update(loop)
    tools = ToolsConfig(system_prompt="short")
    return AgentRuntime(load_policy(path), tools, LoopConfig(**knobs), pixel_budget_px=BUDGET)


def _spec(seed: int = 0, instruction: str = "Click the red checkered icon.") -> EpisodeSpec:
    image = np.random.default_rng(seed).integers(0, 256, (192, 320, 3), dtype=np.uint8)
    return EpisodeSpec(image, instruction, (0.6, 0.6, 0.7, 0.7), key=seed)


def _zoom(box_norm, source: str | None = None) -> str:
    args = {"bbox_2d": list(box_norm), "coords": "norm"}
    if source is not None:
        args["source"] = source
    return "<tool_call>" + json.dumps({"name": "zoom_in", "arguments": args}) + "</tool_call>"


def _forward(model, batch):
    keys = ("input_ids", "attention_mask", "mm_token_type_ids", "pixel_values", "image_grid_thw")
    with torch.no_grad():
        return model(**{k: batch[k] for k in keys}, use_cache=False)


# ----------------------------------------------------------------- image tokens vs features
@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_image_pads_equal_image_features_for_1_to_5_images(tiny_dirs, family):
    rt = _runtime(tiny_dirs[family])
    merge = rt.tokens.merge
    for n_images in range(1, 6):
        forced = [_zoom(b) for b in ZOOMS[: n_images - 1]] + ['{"point_2d": [1, 2]}']
        (traj,) = rt.run([_spec(n_images)], forced=[forced])
        assert traj.n_images == n_images and not traj.over_limit
        batch = pack([traj], rt.tokens.pad_id)
        pads = int((batch["input_ids"] == rt.tokens.image_pad_id).sum())
        features = int((batch["image_grid_thw"].prod(-1) // merge**2).sum())
        assert pads == features == int(batch["mm_token_type_ids"].sum())
        _forward(rt.policy.model, batch)  # the model's own check raises on a mismatch
    # negative control: one pad fewer and the model refuses the input
    batch["input_ids"][0, batch["input_ids"][0].tolist().index(rt.tokens.image_pad_id)] = 0
    with pytest.raises(Exception, match="(?i)image features and image tokens"):
        _forward(rt.policy.model, batch)


def test_batched_trajectories_with_different_image_counts_forward(tiny_dir):
    rt = _runtime(tiny_dir)
    forced = [[_zoom(b) for b in ZOOMS[:k]] + ['{"point_2d": [5, 5]}'] for k in (0, 2, 1)]
    trajs = rt.run([_spec(i) for i in range(3)], forced=forced)
    assert [t.n_images for t in trajs] == [1, 3, 2]
    for side in ("left", "right"):
        batch = pack(trajs, rt.tokens.pad_id, side=side)
        assert _forward(rt.policy.model, batch).logits.shape[:2] == batch["input_ids"].shape


def test_token_in_token_out_equals_rendering_the_whole_chat(tiny_dir):
    """Appending suffix ids gives the same ids as the processor on the fully rendered chat."""
    from PIL import Image

    rt = _runtime(tiny_dir)
    texts = [_zoom(ZOOMS[0]), _zoom(ZOOMS[1]), '{"point_2d": [120, 340]}']
    (traj,) = rt.run([_spec(3)], forced=[texts])
    user0 = [{"type": "image"}, {"type": "text", "text": traj.instruction}]
    msgs = [
        {"role": "system", "content": [{"type": "text", "text": rt.system}]},
        {"role": "user", "content": user0},
    ]
    for turn in traj.turns:
        msgs.append({"role": "assistant", "content": turn.text})
        if turn.new_image is not None:
            content = [{"type": "image"}, {"type": "text", "text": turn.observation_text}]
            msgs.append({"role": "user", "content": content})
    proc = rt.policy.processor
    text = proc.apply_chat_template(msgs, tokenize=False)
    images = [Image.fromarray(im) for im in traj.images]
    enc = proc(text=[text], images=images, return_tensors="pt")
    rendered = enc["input_ids"][0].tolist()
    assert rendered[: len(traj)] == traj.input_ids
    assert rendered[len(traj) :] == proc.tokenizer("\n", add_special_tokens=False)["input_ids"]
    assert torch.equal(enc["image_grid_thw"], torch.tensor(traj.image_grid_thw))


# --------------------------------------------------------------------------- loss mask
def test_loss_mask_covers_exactly_the_assistant_turns(tiny_dir):
    rt = _runtime(tiny_dir)
    texts = [_zoom(ZOOMS[0]), "<tool_call>not json</tool_call>", '{"point_2d": [10, 20]}']
    (traj,) = rt.run([_spec(1)], forced=[texts])
    assert [t.kind for t in traj.turns] == ["tool", "tool_error", "answer"]
    mask = traj.loss_mask
    spans, start = [], None
    for i, m in enumerate([*mask, 0.0]):
        if m and start is None:
            start = i
        if not m and start is not None:
            spans.append((start, i))
            start = None
    assert spans == [(t.start, t.end) for t in traj.turns]
    tok = rt.policy.tokenizer
    decoded = [tok.decode(traj.input_ids[a:b]) for a, b in spans]
    assert decoded == [t + "<|im_end|>" for t in texts]
    assert "Error:" in traj.turns[1].observation_text
    assert traj.n_tool_calls == 1 and traj.n_images == 2


# ---------------------------------------------------------------------- crop answers
@pytest.mark.parametrize("family", ["qwen3_vl", "qwen2_5_vl"])
def test_answer_on_a_zoom_maps_back_to_original_coordinates(tiny_dirs, family):
    rt = _runtime(tiny_dirs[family])
    (probe,) = rt.run([_spec(2)], forced=[[_zoom((0.5, 0.5, 1.0, 1.0))]])
    frame = probe.ctx.frame(1)
    assert probe.ctx.crops[1].box_in_original_norm == (0.5, 0.5, 1.0, 1.0)
    if family == "qwen3_vl":  # [0, 1000) of the zoomed view
        assert rt.space == CoordSpace.K1000
        x, y = 500, 250
    else:  # pixels of the zoomed view as resized for the encoder
        assert rt.space == CoordSpace.RESIZED_PX
        x, y = frame.resized.width / 2, frame.resized.height / 4
    answers = [
        json.dumps({"point_2d": [x, y]}),
        json.dumps({"point_2d": [x, y], "source": "original"}),
    ]
    for answer, expected in zip(answers, [(0.75, 0.625), None], strict=True):
        (traj,) = rt.run([_spec(2)], forced=[[_zoom((0.5, 0.5, 1.0, 1.0)), answer]])
        assert traj.answer_observation == (1 if expected else 0)
        if expected is None:  # read in observation_0's space, no crop
            f0 = traj.ctx.frame(0)
            sx, sy = (1000, 1000) if family == "qwen3_vl" else (f0.resized.width, f0.resized.height)
            expected = (x / sx, y / sy)
        assert traj.answer.point_norm == pytest.approx(expected)


# ------------------------------------------------------------------------------ limits
@pytest.mark.parametrize("mode", ["mask", "penalize"])
def test_limits_flag_trajectories_masked_or_penalized(tiny_dir, mode):
    from rewards import RewardSpec
    from rewards.tool_use import ToolRewardConfig
    from vlagent.agent.reward import advantage_rewards, score_trajectories

    cases = {
        "max_turns": ({"max_turns": 2}, [_zoom(ZOOMS[0]), _zoom(ZOOMS[1])]),
        "max_images": ({"max_images": 2}, [_zoom(ZOOMS[0]), _zoom(ZOOMS[1]), "x"]),
        "max_turn_tokens": ({"max_turn_tokens": 8}, ['{"point_2d": [100, 200, 300]} and more']),
        "max_episode_tokens": (
            {"max_episode_tokens": 50},
            [_zoom(ZOOMS[0]), '{"point_2d": [100, 200]} ' * 2],
        ),
    }
    spec = RewardSpec.from_dict({"point_in_box": 1.0, "format": 0.1})
    for reason, (limits, texts) in cases.items():
        rt = _runtime(tiny_dir, over_limit=mode, over_limit_penalty=0.5, **limits)
        (traj,) = rt.run([_spec(4)], forced=[texts])
        assert traj.over_limit and traj.limit_reason == reason, (reason, traj.limit_reason)
        assert traj.answer is None and traj.done
        score_trajectories([traj], spec, ToolRewardConfig(), mode, 0.5)
        assert traj.reward == pytest.approx(sum(traj.reward_terms.values()))
        if mode == "mask":
            assert traj.masked and sum(traj.loss_mask) == 0
            assert torch.isnan(advantage_rewards([traj])).all()
        else:
            assert not traj.masked and sum(traj.loss_mask) == traj.n_generated > 0
            assert traj.reward_terms["over_limit"] == -0.5
    ok = _runtime(tiny_dir, over_limit=mode)
    (fine,) = ok.run([_spec(4)], forced=[[_zoom(ZOOMS[0]), '{"point_2d": [1, 2]}']])
    assert not fine.over_limit and fine.limit_reason is None


# ---------------------------------------------------------------------------- log-probs
@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_behaviour_logprobs_equal_teacher_forced_over_three_turns(tiny_dirs, family):
    """Sampled tokens in every turn (each turn = sampled prefix + a forced zoom call), after 1,
    2 and 3 images, in a left-padded lockstep batch of episodes of different lengths."""
    rt = _runtime(tiny_dirs[family], temperature=0.7)
    tok = rt.policy.tokenizer
    trajs = [rt.start(_spec(i, "Click " + "the blue one " * (i + 1))) for i in range(3)]
    sampled = [[] for _ in trajs]  # positions of sampled tokens per trajectory
    for turn in range(3):
        rows = rt.sample(trajs, 6, seed=turn)
        for k, (traj, (ids, logps)) in enumerate(zip(trajs, rows, strict=True)):
            ids, logps = [i for i in ids if i != rt.tokens.eos_id], logps[: len(ids)]
            sampled[k] += range(len(traj), len(traj) + len(ids))
            tail = ' {"point_2d": [1, 2]}' if turn == 2 else _zoom(ZOOMS[turn])
            forced = tok(tail, add_special_tokens=False)["input_ids"] + [rt.tokens.eos_id]
            rt.after_turn(traj, ids + forced, logps + [0.0] * len(forced), True, 10_000)
    assert [t.n_images for t in trajs] == [3, 3, 3] and all(t.done for t in trajs)
    with torch.no_grad():
        logp, batch = trajectory_logprobs(
            rt.policy.model, trajs, rt.tokens.pad_id, temperature=0.7, forbidden=rt.tokens.forbidden
        )
    for k, pos in enumerate(sampled):
        assert len(pos) >= 6
        got, want = logp[k, pos], batch["behaviour_logprobs"][k, pos]
        assert torch.all(want < 0)
        assert torch.allclose(got, want, atol=1e-4), (got - want).abs().max()


def test_rollout_picture_has_one_panel_per_observation(tiny_dir):
    from perception_tools.crop import MARK_RGB
    from vlagent.agent.viz import PANEL_HEIGHT, render_episode

    rt = _runtime(tiny_dir)
    # the second zoom looks away from the target, so the target is outside that view
    texts = [_zoom((0.5, 0.5, 1.0, 1.0)), _zoom((0.0, 0.0, 0.1, 0.1)), '{"point_2d": [1, 2]}']
    (traj,) = rt.run([_spec(5)], forced=[texts])
    assert traj.n_images == 3
    picture = render_episode(traj)
    assert picture.dtype == np.uint8 and picture.shape[0] > PANEL_HEIGHT
    widths = sum(round(im.shape[1] * PANEL_HEIGHT / im.shape[0]) for im in traj.images)
    assert picture.shape[1] >= widths  # panels side by side

    def magenta_on_left_edge(pic: np.ndarray) -> float:
        """Best share of MARK_RGB pixels over the columns around x = 0.5 of panel 0, along
        the lower half (where the (0.5, 0.5, 1, 1) zoom's left edge is)."""
        w0 = round(traj.images[0].shape[1] * PANEL_HEIGHT / traj.images[0].shape[0])
        pad, x = 4, 4 + round(0.5 * w0)  # tile_images pads 4 px around each cell
        strip = pic[pad + PANEL_HEIGHT // 2 + 8 : pad + PANEL_HEIGHT - 8, x - 3 : x + 4]
        return float(np.all(strip == np.array(MARK_RGB), axis=-1).mean(axis=0).max())

    assert magenta_on_left_edge(picture) > 0.95  # the zoom box is drawn where it looked
    (direct,) = rt.run([_spec(5)], forced=[['{"point_2d": [1, 2]}']])
    assert magenta_on_left_edge(render_episode(direct)) < 0.05  # no zoom, no box
