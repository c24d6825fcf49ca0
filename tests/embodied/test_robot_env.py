"""embodied.RobotEnv: the env contract, group resets, snapshots, invalid actions, rewards, push
physics, spaces and argument checks (64 px renders)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # before the first `import mujoco`
pytest.importorskip("mujoco")

import gymnasium  # noqa: E402
from gymnasium.envs.registration import EnvSpec  # noqa: E402

import embodied  # noqa: E402
from embodied.chunk import ActionChunk  # noqa: E402
from embodied.robot_env import EnvSnapshot, RobotEnv  # noqa: E402
from embodied.scripted import ScriptedController  # noqa: E402
from embodied.tasks import KINDS, RobotTaskError, make_task, n_tasks  # noqa: E402
from sim.robot import RenderBackendError  # noqa: E402
from tests.env_contract import check_contract, same_obs  # noqa: E402

S = 64
IDS = {gymnasium.spec(i).kwargs["task"]: i for i in embodied.registered_env_ids()}


def _spec(kind: str) -> EnvSpec:
    """The registered spec of ``kind``, or the same spec unregistered (``gymnasium.make`` adds
    the same wrappers either way)."""
    if kind in IDS:
        return gymnasium.spec(IDS[kind])
    return EnvSpec(
        f"vlagent/Unregistered-{kind}-v0", "embodied.robot_env:RobotEnv", kwargs={"task": kind}
    )


VALID = [
    np.zeros(4, np.float32),
    np.array([1, -1, 0.5, 1], np.float32),
    [0.2, 0.1, -0.3, -1.0],  # a list of floats
    np.array([5, -5, 0, 0]),  # ints out of range: valid, the scene clips them
]
INVALID = [
    np.array([0, 0, np.nan, 0], np.float32),
    [0, np.inf, 0, 0],
    np.zeros(3, np.float32),
    np.zeros((2, 4), np.float32),
    np.zeros((1, 4), np.float32),
    "0 0 0 1",
    b"\x00",
    None,
    {"dx": 1.0},
    ["a", 0, 0, 0],
    ["0.1", "0", "0", "0"],  # numeric strings are still strings
    [True, False, True, False],
    [[0, 0], [0]],  # ragged
    np.array([1 + 2j, 0, 0, 0]),
]


@pytest.fixture(autouse=True)
def _needs_gl() -> None:
    env = RobotEnv(image_size=8)
    try:
        env.reset(seed=0)
    except RenderBackendError as exc:
        pytest.skip(f"no offscreen GL here: {exc}")
    finally:
        env.close()


def _make(kind: str, **kw) -> gymnasium.Env:
    return gymnasium.make(_spec(kind), image_size=S, **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_env_contract(kind: str) -> None:
    check_contract(lambda: _make(kind), VALID, INVALID)


@pytest.mark.parametrize("kind", KINDS)
def test_env_contract_with_action_chunks(kind: str) -> None:
    k = 3
    valid = [np.zeros((k, 4), np.float32), np.tile([0.5, 0, -1, 1], (k, 1)).tolist()]
    bad_row = np.zeros((k, 4), np.float32)
    bad_row[1, 2] = np.nan
    invalid = [bad_row, np.zeros(4), np.zeros((k + 1, 4)), "0 0 0 0", None, [[0] * 4, [0]]]
    check_contract(lambda: ActionChunk(_make(kind, second_view=True), k), valid, invalid)


@pytest.mark.parametrize("kind", KINDS)
def test_group_resets_are_identical_and_layouts_differ_by_seed(kind: str) -> None:
    group = [RobotEnv(kind, image_size=S) for _ in range(3)]
    first = [e.reset(seed=11, options={"task_id": 4}) for e in group]
    states = [e.snapshot().scene.state for e in group]
    for (obs, info), state in zip(first[1:], states[1:], strict=True):
        assert same_obs(obs, first[0][0]) and info == first[0][1]
        assert np.array_equal(state, states[0])
    cycled, info = group[1].reset(seed=11, options={"task_id": 4 + n_tasks(kind)})
    assert info["cube"] == first[0][1]["cube"], "task ids cycle through the kind's colours"
    assert info["zone"] == first[0][1]["zone"]
    assert not same_obs(cycled, first[0][0]), "each task id is its own layout at one seed"
    other, _ = group[2].reset(seed=12, options={"task_id": 4})
    assert not np.array_equal(other["image"], first[0][0]["image"])
    a = group[0].reset(seed=5)[1]["task_id"]  # without a task id: drawn from the seed
    assert all(group[0].reset(seed=5)[1]["task_id"] == a for _ in range(2))
    for e in group:
        e.close()


@pytest.mark.parametrize("kind", KINDS)
def test_snapshot_restore_replays_bit_identically(kind: str) -> None:
    env = RobotEnv(kind, image_size=S, reward={"distance": 1.0, "grasp": 0.5})
    env.reset(seed=3, options={"task_id": 1})
    actions = np.random.default_rng(0).uniform(-1, 1, (12, 4)).astype(np.float32)
    for a in actions[:4]:
        env.step(a)
    snap = env.snapshot()

    def replay(e: RobotEnv) -> list:
        out = []
        for a in actions[4:]:
            obs, reward, term, trunc, info = e.step(a)
            out.append((obs["image"], obs["proprio"], reward, term, trunc, info))
            if term or trunc:
                break
        return out

    first = replay(env)
    env.reset(seed=99, options={"task_id": 0})  # wander off, then come back
    obs = env.restore(snap)
    assert obs["instruction"] == make_task(kind, 1).instruction
    twin = RobotEnv(kind, image_size=S, reward={"distance": 1.0, "grasp": 0.5})
    twin.reset(seed=0)
    twin.restore(snap)  # another env of the same kind starts from the same state
    for e in (env, twin):
        again = replay(e)
        assert len(again) == len(first)
        for x, y in zip(again, first, strict=True):
            assert np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1])
            assert x[2:] == y[2:]
    with pytest.raises(RobotTaskError, match="EnvSnapshot"):
        env.restore(snap.scene)  # type: ignore[arg-type]
    other = RobotEnv("reach" if kind != "reach" else "push", image_size=8)
    other.reset(seed=0)
    with pytest.raises(RobotTaskError, match="cannot restore"):
        other.restore(snap)
    for e in (env, twin, other):
        e.close()


@pytest.mark.parametrize("action", INVALID, ids=range(len(INVALID)))
def test_invalid_action_is_a_recorded_no_op(action) -> None:
    env = RobotEnv("pick_place", image_size=S, reward={"invalid_action": -0.25})
    env.reset(seed=0, options={"task_id": 0})
    cube = env.scene.cube_positions()["red"]
    env.scene.data.mocap_pos[0] = cube  # the gripper at the red cube, then close on it
    env.step([0, 0, 0, 1])
    assert env.scene.held == 0
    ee, steps = env.scene.ee_position(), env.steps
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["invalid_action"] is True and info["invalid_reason"]
    assert np.array_equal(env.scene.ee_position(), ee), "an invalid action must not move"
    assert env.scene.closed and env.scene.held == 0, "nor change the gripper"
    assert obs["proprio"][3] == 1.0
    assert env.steps == info["steps"] == steps + 1, "time advances"
    assert info["reward_terms"]["invalid_action"] == -0.25 and reward == -0.25
    assert not (terminated or truncated)
    env.close()


def test_invalid_action_penalty_defaults_to_zero_and_valid_actions_are_not_penalized() -> None:
    env = RobotEnv("reach", image_size=S)
    env.reset(seed=0)
    _, reward, _, _, info = env.step([np.nan] * 4)
    assert info["invalid_action"] and info["reward_terms"]["invalid_action"] == 0.0
    assert reward == 0.0
    penalized = RobotEnv("reach", image_size=S, reward={"invalid_action": -1.0})
    penalized.reset(seed=0)
    _, reward, _, _, info = penalized.step(np.zeros(4, np.float32))
    assert not info["invalid_action"] and reward == 0.0 and info["invalid_reason"] == ""
    for e in (env, penalized):
        e.close()


@pytest.mark.parametrize("kind", KINDS)
def test_reward_terms_sum_exactly_and_shaping_signs(kind: str) -> None:
    weights = {"success": 2.0, "distance": 3.0, "proximity": 1.5, "grasp": 0.5}
    weights["invalid_action"] = -0.1
    env = RobotEnv(kind, image_size=S, reward=weights)
    controller = ScriptedController(env)
    obs, _ = env.reset(seed=7, options={"task_id": 2})
    rewards, grasps, distances, proximities = [], [], [], []
    while True:
        obs, reward, terminated, truncated, info = env.step(controller.act(obs))
        terms = info["reward_terms"]
        assert set(terms) == set(weights)
        assert reward == sum(terms.values())  # exactly, in the dict's order
        rewards.append(reward)
        grasps.append(terms["grasp"])
        distances.append(terms["distance"])
        proximities.append(terms["proximity"])
        if terminated or truncated:
            break
    assert info["success"] and terminated and terms["success"] == 2.0
    assert sum(distances) > 0, "the scripted path makes progress"
    if kind == "reach":  # ends within 1.5 cm of the goal: the Gaussian potential rose
        assert sum(proximities) > 0.5 * 1.5
    if kind != "push":  # straight to the cube (push first goes behind it)
        assert distances[0] > 0, "the first scripted step moves closer"
    if kind == "pick_place":
        nonzero = [g for g in grasps if g != 0.0]
        assert nonzero == [0.5, -0.5], "grasp once (+w), then release (-w)"
    else:
        assert set(grasps) == {0.0}
    env.close()


def test_moving_away_is_negative_distance_reward() -> None:
    env = RobotEnv("reach", image_size=S, reward={"distance": 1.0})
    env.reset(seed=0, options={"task_id": 0})
    away = env.scene.ee_position() - env.scene.cube_positions()["red"]
    _, reward, *_ = env.step([*np.sign(away), -1])
    assert reward < 0
    env.close()


def test_terminates_on_success_and_truncates_at_the_budget() -> None:
    env = RobotEnv("reach", image_size=S)
    obs, info = env.reset(seed=1, options={"task_id": 1})
    assert info["max_steps"] == make_task("reach", 1).max_steps and info["steps"] == 0
    for t in range(1, info["max_steps"] + 1):
        obs, reward, terminated, truncated, info = env.step([0, 0, 0, -1])
        assert info["steps"] == t and not terminated and reward == 0.0
        assert truncated == (t == info["max_steps"])
    controller = ScriptedController(env)
    obs, _ = env.reset(seed=1, options={"task_id": 1})
    while True:
        obs, reward, terminated, truncated, info = env.step(controller.act(obs))
        if terminated or truncated:
            break
    assert terminated and not truncated and info["success"] is True and reward == 1.0
    short = RobotEnv("push", image_size=S, max_steps=2)
    short.reset(seed=0)
    assert short.step(np.zeros(4))[3] is False and short.step(np.zeros(4))[3] is True
    for e in (env, short):
        e.close()


def test_push_moves_the_cube_by_contact_with_the_gripper_kept_open() -> None:
    def shove(kind: str) -> tuple[float, float]:
        env = RobotEnv(kind, image_size=S)
        env.reset(seed=0, options={"task_id": 0})
        red = env.scene.cube_positions()["red"]
        env.scene.data.mocap_pos[0] = red + [0, -0.06, 0]  # behind the cube, at its height
        for _ in range(3):
            obs, *_ = env.step([0, 1, 0, 1])  # push along +y, gripper asked to close
        moved = env.scene.cube_positions()["red"][1] - red[1]
        closed = float(obs["proprio"][3])
        env.close()
        return moved, closed

    moved, closed = shove("push")
    assert moved > 0.05 and closed == 0.0, "the pusher moves the cube and stays open"
    moved, closed = shove("reach")
    assert abs(moved) < 1e-3 and closed == 1.0, "without pusher contacts it passes through"


def test_observation_keys_views_and_proprio() -> None:
    env = RobotEnv("push", image_size=S, camera="top", second_view=True, proprio=True)
    obs, info = env.reset(seed=2, options={"task_id": 3})
    assert set(obs) == {"image", "image2", "proprio", "instruction"}
    assert obs in env.observation_space
    assert obs["image"].shape == obs["image2"].shape == (S, S, 3)
    assert obs["image"].dtype == np.uint8 and not np.array_equal(obs["image"], obs["image2"])
    assert np.array_equal(obs["image"], env.scene.render(S, S, "top"))
    assert np.array_equal(obs["image2"], env.scene.render(S, S, "front"))
    np.testing.assert_array_equal(obs["proprio"][:3], env.scene.ee_position().astype(np.float32))
    assert obs["proprio"].dtype == np.float32 and obs["proprio"][3] == 0.0
    assert obs["instruction"] == info["instruction"] == make_task("push", 3).instruction
    bare = RobotEnv("reach", image_size=S, proprio=False)
    assert set(bare.reset(seed=0)[0]) == {"image", "instruction"}
    for e in (env, bare):
        e.close()


def test_render_modes() -> None:
    env = RobotEnv("reach", image_size=S, render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    frame = env.render()
    assert frame is not None and np.array_equal(frame, obs["image"])
    quiet = RobotEnv("reach", image_size=S)
    quiet.reset(seed=0)
    assert quiet.render() is None
    for e in (env, quiet):
        e.close()
        e.close()  # idempotent


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"task": "stack"}, "unknown task kind 'stack'; kinds are reach, push, pick_place"),
        ({"image_size": 0}, "image_size must be in"),
        ({"image_size": 1000}, "image_size must be in"),
        ({"image_size": "64"}, "image_size must be an int"),
        ({"camera": "wrist"}, "unknown camera 'wrist'"),
        ({"max_step": 0.0}, "max_step must be in"),
        ({"max_step": float("nan")}, "max_step must be in"),
        ({"max_steps": 0}, "max_steps must be None or an int >= 1"),
        ({"reward": {"sucess": 1.0}}, "unknown reward terms \\['sucess'\\]"),
        ({"reward": {"success": float("inf")}}, "must be a finite number"),
        ({"reward": {"grasp": True}}, "must be a finite number"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_constructor_arguments_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RobotEnv(**kwargs)


def test_bad_reset_options_and_step_before_reset() -> None:
    env = RobotEnv("reach", image_size=S)
    with pytest.raises(RobotTaskError, match="reset"):
        env.step(np.zeros(4))
    for options in ({"task_id": -1}, {"task_id": "a"}, {"taskid": 1}):
        with pytest.raises(RobotTaskError):
            env.reset(seed=0, options=options)
    env.close()


def test_registered_ids_build_each_kind() -> None:
    for kind, env_id in IDS.items():
        env = gymnasium.make(env_id, image_size=8)
        assert isinstance(env.unwrapped, RobotEnv) and env.unwrapped.kind == kind
        assert env.reset(seed=0)[1]["kind"] == kind
        assert isinstance(env.unwrapped.snapshot(), EnvSnapshot)
        env.close()


def test_importing_embodied_loads_no_mujoco() -> None:
    code = "import sys, embodied; assert 'mujoco' not in sys.modules; print(embodied.RobotEnv)"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "RobotEnv" in done.stdout
