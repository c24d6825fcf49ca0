"""Robot world through the one runner: scripted demonstrations succeed through the codec (both
styles), malformed replies are recorded invalid no-ops, group members share their prompts,
splits never meet, the proprio text, and a short SFT + GRPO run end to end."""

from __future__ import annotations

import numpy as np
import pytest

from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import EpisodeSpec
from vlagent.rollout.trajectory import Trajectory
from vlagent.worlds import make_world
from vlagent.worlds.robot import system_prompt, turn_text

ROBOT = ["world=robot", "robot.task=reach", "robot.image_size=32"]


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return load_policy(tiny_dir)


def _world(policy, *extra: str):
    return make_world(load_config(None, [*ROBOT, *extra]), policy)


def _demo(world, split: str, n: int, **kw) -> list[Trajectory]:
    specs = [EpisodeSpec(t) for t in world.task_ids(split, 0, n)]
    demo = world.demonstrator()
    trajs = world.episodes(world.policy, split, specs, 64, demonstrator=demo, chunk_size=n, **kw)
    assert not demo._twins, "twin envs of finished episodes must be closed"
    return trajs


@pytest.mark.parametrize("style", ["digits", "padded", "tokens"])
@pytest.mark.parametrize("chunk", [1, 2])
def test_scripted_demonstrations_succeed_through_the_codec(policy, style, chunk) -> None:
    """The demonstrator's text (or ids) is read back by the adapter into the env's actions: if
    any link (render, forced ids, parse from ids, chunk reshape) were wrong the scripted
    controller could not finish its reaches."""
    world = _world(policy, f"robot.action_style={style}", f"robot.chunk={chunk}")
    trajs = _demo(world, "demo", 4)
    assert all(t.success for t in trajs), [t.status for t in trajs]
    assert all(not x.invalid for t in trajs for x in t.turns)
    # the policy's tokens are the codec's: digits text, or exactly the reserved ids
    t = trajs[0]
    ids = t.segments[0].ids[t.turns[0].start : t.turns[0].end]
    if style == "tokens":
        assert set(ids[:-1]) <= set(world.codec.token_ids) and len(ids) - 1 == 4 * chunk
    else:
        assert world.codec.parse(t.turns[0].text).invalid is False
    assert world.summarize(trajs)["format_rate"] == 1.0
    assert world.summarize(trajs)["success/reach"] == 1.0


def test_demonstrations_render_only_the_frames_the_prompts_show(policy, monkeypatch) -> None:
    """A chunk of 4 renders one frame per turn, and the demonstrator's twin env renders only
    at its reset: rendering is most of a step's cost, and before ``RobotEnv.advance`` a
    chunk-4 SFT batch drew 8 frames per turn and used 1."""
    from sim.robot.render import OffscreenRenderer

    calls = {"n": 0}
    real = OffscreenRenderer.render

    def counted(self, *a, **kw):
        calls["n"] += 1
        return real(self, *a, **kw)

    monkeypatch.setattr(OffscreenRenderer, "render", counted)
    world = _world(policy, "robot.action_style=padded", "robot.chunk=4", "robot.task=push")
    trajs = _demo(world, "demo", 3)
    assert all(t.success for t in trajs), [t.status for t in trajs]
    turns = sum(len(t.turns) for t in trajs)
    shown = sum(len(t.extras["frames"]) for t in trajs)  # one per prompt: the resets and turns
    # each episode: its own reset and one frame per turn (the last turn's frame ends the
    # episode unshown), plus the twin env's reset
    assert calls["n"] == turns + 2 * len(trajs), (calls["n"], turns, shown)
    assert shown == turns


class _Fixed:
    """Demonstrator writing one fixed reply every turn."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    def text(self, traj, obs, info):
        return self.reply


def test_malformed_reply_is_an_invalid_noop(policy) -> None:
    world = _world(policy, "robot.reward={success: 1.0, invalid_action: -0.5}")
    specs = [EpisodeSpec(world.task_ids("train", 0, 1)[0])]
    (t,) = world.episodes(policy, "train", specs, 64, demonstrator=_Fixed("move left please"))
    assert t.status == "truncated" and not t.success
    assert len(t.turns) == 12 and all(x.invalid for x in t.turns)  # the reach step budget
    assert all(x.reward_terms["invalid_action"] == -0.5 for x in t.turns)
    first = t.extras["proprio"][0]
    assert len(t.extras["proprio"]) == 12  # the start and 11 non-final steps
    assert all(np.array_equal(first, p) for p in t.extras["proprio"])  # the gripper never moved
    assert world.summarize([t])["format_rate"] == 0.0


def test_a_group_shares_its_prompt_and_layouts_differ_by_task(policy) -> None:
    world = _world(policy)
    tid = world.task_ids("train", 5, 1)[0]
    a, b = world.episodes(policy, "train", [EpisodeSpec(tid)] * 2, 64, demonstrator=_Fixed("x"))
    assert a.segments[0].prompt is b.segments[0].prompt
    (c,) = world.episodes(policy, "train", [EpisodeSpec(tid + 3)], 64, demonstrator=_Fixed("x"))
    assert not np.array_equal(a.extras["frames"][0], c.extras["frames"][0])


def test_splits_are_disjoint(policy) -> None:
    world = _world(policy)
    ids = {s: set(world.task_ids(s, 0, 1000)) for s in ("train", "demo", "val", "test")}
    for s in ids:
        for o in ids:
            if s != o:
                assert not ids[s] & ids[o], (s, o)


def test_turn_text_and_system_prompt() -> None:
    text = turn_text("move the gripper to the red cube", np.array([0.012, -0.04, 0.15, 1.0]))
    assert text.splitlines() == [
        "Task: move the gripper to the red cube",
        "Gripper: x=12 y=-40 z=150 mm, closed",
        "Reply with the next action.",
    ]
    assert "Gripper" not in turn_text("reach", None)
    assert "Gripper: x=1 y=2 z=3 mm\n" in turn_text("t", np.array([0.001, 0.002, 0.003]))
    assert "State: 0.5 -2\n" in turn_text("t", np.array([0.5, -2.0]))
    cfg = load_config(None, [*ROBOT, "robot.chunk=3"]).robot
    assert "3 actions separated by ';'" in system_prompt(cfg) and "0..255" in system_prompt(cfg)


@pytest.mark.parametrize("style", ["padded", "tokens"])
def test_constrained_world_samples_only_valid_replies(tiny_dir, style) -> None:
    """robot.constrained: the untrained policy's sampled replies all parse (without it they
    almost never do), and the scripted demonstrations score under the grammar (SFT)."""
    from vlagent.train.sft import sft_loss

    policy = load_policy(tiny_dir)
    world = _world(
        policy, f"robot.action_style={style}", "robot.constrained=true", "robot.max_steps=3"
    )
    assert policy.grammar is not None
    specs = [EpisodeSpec(t) for t in world.task_ids("train", 0, 2)]
    trajs = world.episodes(policy, "train", specs, 64, temperature=1.5, seed=0)
    assert all(not x.invalid for t in trajs for x in t.turns)
    assert world.summarize(trajs)["format_rate"] == 1.0
    loss, tokens = sft_loss(policy, _demo(world, "demo", 2))
    assert bool(loss.isfinite()) and tokens > 0
    make_world(load_config(None, [*ROBOT, f"robot.action_style={style}"]), policy)
    assert policy.grammar is None  # a world without the constraint lifts it


def test_sft_then_grpo_run_in_the_robot_world(tiny_dir, tmp_path) -> None:
    from vlagent.train.grpo import run_grpo
    from vlagent.train.sft import run_sft

    common = [
        *ROBOT,
        "run.progress=false",
        "run.samples_every=0",
        "run.checkpoint_every=0",
        "eval.monitor_screens=2",
        "eval.every=2",
    ]
    sft_cfg = load_config(
        "robot_sft",
        [
            *common,
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={tmp_path / 'sft'}",
            "sft.steps=2",
            "sft.num_demos=4",
            "sft.batch_size=2",
        ],
    )
    sft = run_sft(sft_cfg)
    assert sft.steps == 2
    grpo_cfg = load_config(
        "robot_grpo",
        [
            *common,
            f"model.path={sft.final_dir}",
            f"run.out_dir={tmp_path / 'grpo'}",
            "grpo.steps=1",
            "grpo.prompts_per_step=2",
            "grpo.group_size=2",
            "grpo.dynamic_sampling=false",
        ],
    )
    grpo = run_grpo(grpo_cfg)
    assert grpo.steps == 1
    pictures = sorted((tmp_path / "grpo").rglob("*.gif"))
    assert (tmp_path / "grpo" / "final").is_dir()
    del pictures


def test_tokens_style_reads_replies_from_ids_not_text(policy) -> None:
    """Reserved-token text can be ambiguous (``"isplay" + "ellow"`` vs ``"ispla" + "yellow"``):
    the adapter must read the turn's ids, which are not."""
    world = _world(policy, "robot.action_style=tokens")
    codec, rng = world.codec, np.random.default_rng(0)
    for _ in range(5000):
        bins = rng.integers(0, 256, (1, 4))
        ids = [codec.token_ids[b] for b in bins[0]]
        if codec.parse(policy.processor.tokenizer.decode(ids)).invalid:
            break
    else:
        pytest.skip("no ambiguous reply found in 5000 draws")

    class _Ids:
        def text(self, traj, obs, info):
            return list(ids)

    specs = [EpisodeSpec(world.task_ids("train", 0, 1)[0])]
    (t,) = world.episodes(policy, "train", specs, 64, demonstrator=_Ids())
    assert not t.turns[0].invalid
    np.testing.assert_array_equal(t.turns[0].action, codec.bins.centres(bins[0]))


def test_random_baseline_is_measured_on_the_given_tasks(policy) -> None:
    world = _world(policy, "robot.max_step=0.2")
    ids = world.task_ids("test", 0, 30)
    base = world.baselines(ids)
    assert set(base) == {"random_policy"}
    assert 0.0 <= base["random_policy"] < 0.5
    assert base == world.baselines(ids)  # seeded
    assert world.baselines([]) == {}


@pytest.mark.parametrize("fmt", ["libero_hdf5", "lerobot"])
@pytest.mark.parametrize("chunk", [1, 3])
def test_demo_file_episodes_replay_the_recorded_actions(policy, tmp_path, fmt, chunk) -> None:
    """``robot.demo_file``: the demo split replays the file and the demonstrator writes the
    actions it recorded (LIBERO's 7 dims → dx, dy, dz, gripper), quantized by the codec."""
    from tests.embodied.demo_fixtures import write_lerobot, write_libero

    if fmt == "libero_hdf5":
        path = tmp_path / "demo.hdf5"
        demos = write_libero(path, lengths=(4, 6))
        recorded = [a[:, [0, 1, 2, 6]] for _, a, _, _ in demos]
    else:
        path = tmp_path / "lerobot"
        demos = write_lerobot(path, video=False, lengths=(5, 7))
        recorded = [d[1] for d in demos]
    world = _world(policy, f"robot.demo_file={path}", f"robot.chunk={chunk}")
    trajs = _demo(world, "demo", 2)
    bins = world.codec.bins
    for t, actions in zip(trajs, recorded, strict=True):
        sent = np.concatenate([np.asarray(x.action).reshape(-1, 4) for x in t.turns])
        np.testing.assert_allclose(
            sent[: len(actions)], bins.centres(bins.to_bins(np.clip(actions, -1, 1)))
        )
        assert t.status == "truncated" and not t.success  # a recording says nothing of success
        assert len(t.turns) == -(-len(actions) // chunk)
        assert not any(x.invalid for x in t.turns)


def test_press_with_the_wrist_camera_sends_two_images(policy) -> None:
    """``robot.task=press`` with ``robot.wrist_camera``: the scripted presses succeed through the
    codec, and each turn's prompt carries the scene and the wrist images (2 image grids)."""
    world = _world(policy, "robot.task=press", "robot.wrist_camera=true")
    trajs = _demo(world, "demo", 2)
    assert all(t.success for t in trajs), [t.status for t in trajs]
    prompt = trajs[0].segments[0].prompt
    assert prompt.image_grid_thw.shape[0] == 2
    assert "wrist camera" in world.adapter().system
    plain = _demo(_world(policy, "robot.task=press"), "demo", 1)
    assert plain[0].segments[0].prompt.image_grid_thw.shape[0] == 1
    with pytest.raises(ConfigError, match="robot.wrist_camera"):
        load_config(
            None,
            [
                "world=robot",
                "robot.suite=metaworld",
                "robot.task=reach-v3",
                "robot.wrist_camera=true",
            ],
        )


def test_own_suite_envs_come_from_a_pool_and_reset_like_new(policy) -> None:
    """Envs are reused across episodes (a scene costs ~0.1 s to build, a reset ~0.01 s), and a
    reused env's reset gives the state a new env gives: nothing of the last episode leaks."""
    world = _world(policy, "robot.cubes=1")
    try:
        first = world.make_env("train")
        first.reset(seed=3, options={"task_id": 11})
        for _ in range(3):  # leave it somewhere else, gripper closed
            first.step(np.array([1.0, 1.0, -1.0, 1.0], np.float32))
        inner = first.unwrapped
        first.close()
        again = world.make_env("train")
        assert again.unwrapped is inner  # the same simulator, leased again
        obs, _ = again.reset(seed=5, options={"task_id": 2})
        fresh = world._build_env()
        ref, _ = fresh.reset(seed=5, options={"task_id": 2})
        assert np.array_equal(obs["image"], ref["image"])
        assert np.array_equal(obs["proprio"], ref["proprio"])
        assert np.array_equal(again.unwrapped.scene.data.qpos, fresh.unwrapped.scene.data.qpos)
        fresh.close()
        again.close()
    finally:
        world.close()
