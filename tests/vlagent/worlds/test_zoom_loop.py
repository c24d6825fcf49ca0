"""Zoom world through the one runner: image tokens vs features, token-in-token-out, loss mask,
crop answers, limits, and behaviour vs teacher-forced log-probs on multi-turn, multi-image
trajectories (prefix engine for the first turn, ``generate`` for the later ones)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from gui.grounding.sources import BASE_CHARSET, GroundingSample
from perception_tools.geometry import CoordSpace
from vlagent.batching import forbidden_token_ids
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.engine import context_inputs
from vlagent.rollout.forward import full_inputs, row_logprobs
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import EpisodeSpec, run_episodes
from vlagent.rollout.trajectory import Trajectory
from vlagent.train.credit import episode_rewards, turn_advantages
from vlagent.worlds import make_world
from vlagent.worlds.zoom import n_tool_calls

BUDGET = 160 * 96  # small observations keep the tests fast
ZOOMS = [(0.5, 0.5, 1.0, 1.0), (0.0, 0.0, 0.5, 0.5), (0.25, 0.25, 0.75, 0.75), (0.1, 0.2, 0.9, 0.6)]
TARGET = (0.6, 0.6, 0.7, 0.7)


class NoiseSource:
    """Screens of random noise (fast to encode, exact crop sizes): key -> a 320 x 192 image."""

    name = "noise"
    num_samples = None
    image_size = (320, 192)
    charset = BASE_CHARSET

    def __init__(self) -> None:
        self.instructions: dict[int, str] = {}

    def sample(self, key: int) -> GroundingSample:
        image = np.random.default_rng(key).integers(0, 256, (192, 320, 3), dtype=np.uint8)
        image.flags.writeable = False
        text = self.instructions.get(key, "Click the red checkered icon.")
        return GroundingSample(image, text, TARGET, sample_id=f"noise:{key}", meta={"seed": key})


def _world(path, *overrides: str):
    knobs = [
        "world=zoom",
        f"task.pixel_budget={BUDGET}",
        "tools.system_prompt=short",
        "loop.max_turns=6",
        "loop.max_images=6",
        "loop.max_episode_tokens=400",
        *overrides,
    ]
    world = make_world(load_config(None, knobs), load_policy(path))
    world.source = NoiseSource()  # the env reads screens from here
    return world


class Forced:
    """Demonstrator: the given texts per task id, in order; then None (the policy samples)."""

    def __init__(self, texts: dict[int, list[str]]) -> None:
        self.texts = texts

    def text(self, traj, obs, info):
        texts = self.texts.get(traj.task_id, [])
        k = len(traj.turns)
        return texts[k] if k < len(texts) else None


def _run(world, texts: dict[int, list[str]], turn_tokens: int = 64, **kw) -> list[Trajectory]:
    specs = [EpisodeSpec(k) for k in texts]
    return run_episodes(
        world.policy,
        kw.pop("adapter", None) or world.adapter(),
        lambda: world.make_env("train"),
        specs,
        world.limits(turn_tokens),
        demonstrator=Forced(texts),
        seed=0,
        **kw,
    )


def _zoom(box_norm, source: str | None = None) -> str:
    args = {"bbox_2d": list(box_norm), "coords": "norm"}
    if source is not None:
        args["source"] = source
    return "<tool_call>" + json.dumps({"name": "zoom_in", "arguments": args}) + "</tool_call>"


def _forward(model, inputs):
    with torch.no_grad():
        return model(**inputs, use_cache=False)


def _obs_ids(traj: Trajectory, k: int) -> list[int]:
    """Ids of the observation turn after policy turn ``k`` (up to the next turn)."""
    seg = traj.segments[traj.turns[k].segment]
    end = traj.turns[k + 1].start if k + 1 < len(traj.turns) else len(seg.ids)
    return seg.ids[traj.turns[k].end : end]


def _n_images(traj: Trajectory) -> int:
    return len(traj.extras["images"])


# ----------------------------------------------------------------- image tokens vs features
@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_image_pads_equal_image_features_for_1_to_5_images(tiny_dirs, family):
    world = _world(tiny_dirs[family])
    tokens = world.adapter().tokens
    pad = world.policy.tokenizer.pad_token_id
    for n_images in range(1, 6):
        forced = [_zoom(b) for b in ZOOMS[: n_images - 1]] + ['{"point_2d": [1, 2]}']
        (traj,) = _run(world, {n_images: forced})
        assert _n_images(traj) == n_images and traj.status == "terminated"
        assert [t.kind for t in traj.turns] == ["tool"] * (n_images - 1) + ["env"]
        inputs = full_inputs(build_rows([traj], None, pad), pad)
        pads = int((inputs["input_ids"] == tokens.image_pad_id).sum())
        features = int((inputs["image_grid_thw"].prod(-1) // tokens.merge**2).sum())
        assert inputs["image_grid_thw"].shape[0] == n_images
        assert pads == features == int(inputs["mm_token_type_ids"].sum())
        _forward(world.policy.model, inputs)  # the model's own check raises on a mismatch
    # negative control: one pad fewer and the model refuses the input
    ids = inputs["input_ids"]
    ids[0, ids[0].tolist().index(tokens.image_pad_id)] = 0
    with pytest.raises(Exception, match="(?i)image features and image tokens"):
        _forward(world.policy.model, inputs)


def test_batched_trajectories_with_different_image_counts_forward(tiny_dir):
    world = _world(tiny_dir)
    pad = world.policy.tokenizer.pad_token_id
    forced = {
        k: [_zoom(b) for b in ZOOMS[:n]] + ['{"point_2d": [5, 5]}'] for k, n in enumerate((0, 2, 1))
    }
    trajs = _run(world, forced)
    assert [_n_images(t) for t in trajs] == [1, 3, 2]
    rows = build_rows(trajs, None, pad)
    assert len(rows) == 3 and not rows.text_only
    # the sampler's layout (whole contexts, left padded) and the trainer's (prompts left
    # padded, continuations right padded) both forward
    for inputs in (context_inputs([t.segment for t in trajs], pad), full_inputs(rows, pad)):
        assert _forward(world.policy.model, inputs).logits.shape[:2] == inputs["input_ids"].shape
    with torch.no_grad():
        logp = row_logprobs(world.policy.model, rows, pad, shared=False)
    assert logp.shape == rows.mask.shape and torch.isfinite(logp).all()
    assert bool((logp[rows.mask > 0] < 0).all()) and bool((logp[rows.mask == 0] == 0).all())


def test_token_in_token_out_equals_rendering_the_whole_chat(tiny_dir):
    """Appending suffix ids gives the same ids as the processor on the fully rendered chat."""
    from PIL import Image

    world = _world(tiny_dir)
    adapter = world.adapter()
    tok, tokens = world.policy.tokenizer, adapter.tokens
    texts = [_zoom(ZOOMS[0]), _zoom(ZOOMS[1]), '{"point_2d": [120, 340]}']
    (traj,) = _run(world, {3: texts})
    (seg,) = traj.segments
    user0 = [{"type": "image"}, {"type": "text", "text": traj.instruction}]
    msgs = [
        {"role": "system", "content": [{"type": "text", "text": adapter.system}]},
        {"role": "user", "content": user0},
    ]
    for k, turn in enumerate(traj.turns):
        msgs.append({"role": "assistant", "content": turn.text})
        if traj.extras["new_image"][k] is not None:
            obs = _obs_ids(traj, k)  # user_open, vision_start, pads, vision_end, text, open
            n_tokens = obs.count(tokens.image_pad_id)
            skip = len(tokens.user_open) + n_tokens + 2
            said = tok.decode(obs[skip : len(obs) - len(tokens.assistant_open)])
            assert said and "<|" not in said
            content = [{"type": "image"}, {"type": "text", "text": said}]
            msgs.append({"role": "user", "content": content})
    proc = world.policy.processor
    text = proc.apply_chat_template(msgs, tokenize=False)
    images = [Image.fromarray(im) for im in traj.extras["images"]]
    enc = proc(text=[text], images=images, return_tensors="pt")
    rendered = enc["input_ids"][0].tolist()
    ours = seg.prompt.input_ids.tolist() + seg.ids
    assert rendered[: len(ours)] == ours
    assert rendered[len(ours) :] == tok("\n", add_special_tokens=False)["input_ids"]
    grids = seg.prompt.image_grid_thw.tolist() + [g for _, g in seg.images]
    assert torch.equal(enc["image_grid_thw"], torch.tensor(grids))


# --------------------------------------------------------------------------- loss mask
def test_loss_mask_covers_exactly_the_assistant_turns(tiny_dir):
    world = _world(tiny_dir)
    pad = world.policy.tokenizer.pad_token_id
    texts = [_zoom(ZOOMS[0]), "<tool_call>not json</tool_call>", '{"point_2d": [10, 20]}']
    (traj,) = _run(world, {1: texts})
    assert [t.kind for t in traj.turns] == ["tool", "tool_error", "env"]
    (seg,) = traj.segments
    spans, start = [], None
    for i, m in enumerate([*seg.loss_mask, 0.0]):
        if m and start is None:
            start = i
        if not m and start is not None:
            spans.append((start, i))
            start = None
    assert spans == [(t.start, t.end) for t in traj.turns]
    tok = world.policy.tokenizer
    decoded = [tok.decode(seg.ids[a:b]) for a, b in spans]
    assert decoded == [t + "<|im_end|>" for t in texts]
    assert "Error:" in tok.decode(_obs_ids(traj, 1))
    assert n_tool_calls(traj) == 1 and _n_images(traj) == 2
    # the training rows carry the same mask (the prompt never gets loss)
    rows = build_rows([traj], None, pad)
    assert rows.mask[0, : len(seg)].tolist() == seg.loss_mask
    assert rows.mask[0, len(seg) :].sum() == 0
    assert all(lp == 0.0 for lp in seg.logprobs)  # forced turns carry no behaviour log-probs


# ---------------------------------------------------------------------- crop answers
@pytest.mark.parametrize("family", ["qwen3_vl", "qwen2_5_vl"])
def test_answer_on_a_zoom_maps_back_to_original_coordinates(tiny_dirs, family):
    world = _world(tiny_dirs[family])
    zoom = _zoom((0.5, 0.5, 1.0, 1.0))
    (probe,) = _run(world, {2: [zoom, "probe"]})
    ctx = probe.extras["ctx"]
    frame = ctx.frame(1)
    assert ctx.crops[1].box_in_original_norm == (0.5, 0.5, 1.0, 1.0)
    if family == "qwen3_vl":  # [0, 1000) of the zoomed view
        assert world.adapter().space == CoordSpace.K1000
        x, y = 500, 250
    else:  # pixels of the zoomed view as resized for the encoder
        assert world.adapter().space == CoordSpace.RESIZED_PX
        x, y = frame.resized.width / 2, frame.resized.height / 4
    answers = [
        json.dumps({"point_2d": [x, y]}),
        json.dumps({"point_2d": [x, y], "source": "original"}),
    ]
    for answer, expected in zip(answers, [(0.75, 0.625), None], strict=True):
        (traj,) = _run(world, {2: [zoom, answer]})
        assert traj.extras["answer_observation"] == (1 if expected else 0)
        if expected is None:  # read in observation_0's space, no crop
            f0 = traj.extras["ctx"].frame(0)
            sx, sy = (1000, 1000) if family == "qwen3_vl" else (f0.resized.width, f0.resized.height)
            expected = (x / sx, y / sy)
        assert traj.extras["answer"].point_norm == pytest.approx(expected)
        # the env scored the ORIGINAL-coordinate point
        assert traj.turns[-1].info["prediction"]["point"] == pytest.approx(expected)


# ------------------------------------------------------------------------------ limits
@pytest.mark.parametrize("mode", ["mask", "penalize"])
def test_limits_flag_trajectories_masked_or_penalized(tiny_dir, mode):
    cases = {
        "max_turns": (["loop.max_turns=2"], 64, [_zoom(ZOOMS[0]), _zoom(ZOOMS[1])]),
        "max_images": (["loop.max_images=2"], 64, [_zoom(ZOOMS[0]), _zoom(ZOOMS[1]), "x"]),
        "max_turn_tokens": ([], 8, ['{"point_2d": [100, 200, 300]} and more']),
        "max_episode_tokens": (
            ["loop.max_episode_tokens=50"],
            64,
            [_zoom(ZOOMS[0]), '{"point_2d": [100, 200]} ' * 2],
        ),
    }
    common = [f"loop.over_limit={mode}", "loop.over_limit_penalty=0.5"]
    world = _world(tiny_dir)
    zoom_tokens = len(world.policy.tokenizer(_zoom(ZOOMS[0]))["input_ids"]) + 1  # with eos
    # a tool call that spends the last episode token cannot be followed up
    cases["max_episode_tokens (tool call)"] = (
        [f"loop.max_episode_tokens={zoom_tokens}"],
        64,
        [_zoom(ZOOMS[0]), '{"point_2d": [1, 2]}'],
    )
    for case, (limits, turn_tokens, texts) in cases.items():
        reason = case.split()[0]
        world = _world(tiny_dir, *common, *limits)
        (traj,) = _run(world, {4: texts}, turn_tokens)
        assert traj.status == "over_limit", (reason, traj.status)
        assert traj.extras["limit_reason"] == reason, (reason, traj.extras["limit_reason"])
        assert traj.turns[-1].kind == "over_limit" and traj.extras.get("answer") is None
        assert traj.done and traj.error is None
        assert traj.reward == pytest.approx(sum(traj.reward_terms.values()))
        loss = sum(sum(s.loss_mask) for s in traj.segments)
        if mode == "mask":
            assert traj.masked and loss == 0
            assert torch.isnan(episode_rewards([traj])).all()
            pad = world.policy.tokenizer.pad_token_id
            assert len(build_rows([traj], None, pad)) == 0  # nothing to train on
        else:
            assert not traj.masked and loss == traj.n_generated > 0
            assert traj.reward_terms["over_limit"] == -0.5
            assert torch.isfinite(episode_rewards([traj])).all()
    ok = _world(tiny_dir, *common)
    (fine,) = _run(ok, {4: [_zoom(ZOOMS[0]), '{"point_2d": [1, 2]}']})
    assert fine.status == "terminated" and fine.extras.get("limit_reason") is None
    assert "over_limit" not in fine.reward_terms and not fine.masked


def test_masked_episode_gets_no_advantage_in_its_group(tiny_dir):
    """An over-limit (masked) member has advantage 0 and is left out of its group's baseline."""
    from vlagent.algo_config import GRPOConfig

    world = _world(tiny_dir, "loop.over_limit=mask", "loop.max_turns=2")
    texts = {
        5: ['{"point_2d": [650, 650]}'],  # on the target
        6: ['{"point_2d": [10, 10]}'],  # off it
        7: [_zoom(ZOOMS[0]), _zoom(ZOOMS[1])],  # a tool call on the last turn: over limit
    }
    trajs = _run(world, texts)  # one group: every spec has group id 0
    assert [t.masked for t in trajs] == [False, False, True]
    adv = turn_advantages(trajs, GRPOConfig(scale_by_std=False))
    hit, miss = trajs[0].reward, trajs[1].reward
    assert hit > miss
    assert adv[0] == [pytest.approx((hit - miss) / 2)]
    assert adv[1] == [pytest.approx((miss - hit) / 2)]
    assert adv[2] == [0.0, 0.0]


# ---------------------------------------------------------------------------- log-probs
class ZoomEveryTurn:
    """The zoom adapter, except that policy turns 0 and 1 are read as zoom calls (random text
    never is one), so sampled turns follow 1, 2 and 3 images."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def read(self, traj, turn, last):
        k = len(traj.turns) - 1
        if k < 2:
            turn = dataclasses.replace(turn, text=_zoom(ZOOMS[k]))
        return self.inner.read(traj, turn, last)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_behaviour_logprobs_equal_teacher_forced_over_three_turns(tiny_dirs, family):
    """Sampled tokens in every turn, after 1, 2 and 3 images, in one lockstep batch of
    episodes of different lengths: the runner's behaviour log-probs equal the trainer's full
    teacher-forced forward."""
    world = _world(tiny_dirs[family], "loop.max_turns=3")
    for i in range(3):
        world.source.instructions[i] = "Click " + "the blue one " * (i + 1)
    adapter = ZoomEveryTurn(world.adapter())
    trajs = _run(world, {0: [], 1: [], 2: []}, 6, adapter=adapter, temperature=0.7)
    assert [_n_images(t) for t in trajs] == [3, 3, 3]
    assert all(t.done and len(t.turns) == 3 for t in trajs)
    assert [[x.kind for x in t.turns] for t in trajs] == [["tool", "tool", "env"]] * 3
    tok = world.policy.tokenizer
    rows = build_rows(trajs, None, tok.pad_token_id)
    assert len(rows) == 3 and [len(im) for im in rows.images] == [2, 2, 2]
    with torch.no_grad():
        logp = row_logprobs(
            world.policy.model,
            rows,
            tok.pad_token_id,
            temperature=0.7,
            forbidden=forbidden_token_ids(tok),
            shared=False,
        )
    for k in range(3):
        pos = rows.mask[k] > 0
        assert int(pos.sum()) >= 6
        got, want = logp[k, pos], rows.old_logp[k, pos]
        assert torch.all(want < 0)
        assert torch.allclose(got, want, atol=1e-4), (got - want).abs().max()


def test_rollout_picture_has_one_panel_per_observation(tiny_dir):
    from perception_tools.crop import MARK_RGB
    from vlagent.worlds.zoom_viz import PANEL_HEIGHT, render_episode

    world = _world(tiny_dir)
    # the second zoom looks away from the target, so the target is outside that view
    texts = [_zoom((0.5, 0.5, 1.0, 1.0)), _zoom((0.0, 0.0, 0.1, 0.1)), '{"point_2d": [1, 2]}']
    (traj,) = _run(world, {5: texts})
    assert _n_images(traj) == 3
    images = traj.extras["images"]
    picture = render_episode(traj)
    assert picture.dtype == np.uint8 and picture.shape[0] > PANEL_HEIGHT
    widths = sum(round(im.shape[1] * PANEL_HEIGHT / im.shape[0]) for im in images)
    assert picture.shape[1] >= widths  # panels side by side

    def magenta_on_left_edge(pic: np.ndarray) -> float:
        """Best share of MARK_RGB pixels over the columns around x = 0.5 of panel 0, along
        the lower half (where the (0.5, 0.5, 1, 1) zoom's left edge is)."""
        w0 = round(images[0].shape[1] * PANEL_HEIGHT / images[0].shape[0])
        pad, x = 4, 4 + round(0.5 * w0)  # tile_images pads 4 px around each cell
        strip = pic[pad + PANEL_HEIGHT // 2 + 8 : pad + PANEL_HEIGHT - 8, x - 3 : x + 4]
        return float(np.all(strip == np.array(MARK_RGB), axis=-1).mean(axis=0).max())

    assert magenta_on_left_edge(picture) > 0.95  # the zoom box is drawn where it looked
    (direct,) = _run(world, {5: ['{"point_2d": [1, 2]}']})
    assert magenta_on_left_edge(render_episode(direct)) < 0.05  # no zoom, no box


def test_failed_tool_calls_cost_tools_reward_invalid_call(tiny_dir):
    """``tools.reward.invalid_call``: each failed call (here a malformed one and one with an
    unknown tool) costs that much on the last turn; successful calls are never charged by it."""
    bad = "<tool_call>{not json</tool_call>"
    unknown = '<tool_call>{"name": "rotate", "arguments": {}}</tool_call>'
    texts = {4: [bad, unknown, _zoom(ZOOMS[0]), '{"point_2d": [1, 2]}']}
    (traj,) = _run(_world(tiny_dir, "tools.reward.invalid_call=0.25"), texts)
    assert [x.kind for x in traj.turns][:3] == ["tool_error", "tool_error", "tool"]
    assert traj.reward_terms["tool_error_penalty"] == pytest.approx(-0.5)
    assert traj.reward == pytest.approx(sum(traj.reward_terms.values()))
    (free,) = _run(_world(tiny_dir), texts)
    assert "tool_error_penalty" not in free.reward_terms
    assert free.reward == pytest.approx(traj.reward + 0.5)
