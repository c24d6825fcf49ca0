"""MetaWorldEnv: the install message without metaworld; with it (``vlagent[metaworld]``), reset,
step, render, success, seeding and the env contract through our wrapper.

Without the ``metaworld`` package only the first tests run; the rest skip with the reason.
Run them where it is installed: ``pip install 'vlagent[metaworld]'`` (metaworld 3.1.1, mujoco
3.3.0), then this file.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # before the first `import mujoco`

from embodied.metaworld_env import (  # noqa: E402
    CAMERAS,
    DEFAULT_REWARD,
    UPSIDE_DOWN_CAMERAS,
    MetaWorldEnv,
    _build,
    instruction_for,
)
from embodied.suites import (  # noqa: E402
    EmbodiedSuiteError,
    EmbodiedSuiteMissing,
    parse_action,
    reward_weights,
)

S = 64  # small renders keep the suite fast


# ----------------------------------------------------------------- without metaworld installed
def test_missing_metaworld_names_package_and_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "metaworld", None)  # `import metaworld` now fails
    with pytest.raises(EmbodiedSuiteMissing) as err:
        MetaWorldEnv("reach-v3", image_size=S)
    msg = str(err.value)
    assert "'metaworld'" in msg
    assert "pip install 'vlagent[metaworld]'" in msg
    assert isinstance(err.value, ImportError)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"image_size": 0}, "image_size"),
        ({"image_size": 64.0}, "image_size"),
        ({"camera": "left"}, "unknown camera"),
        ({"max_steps": 0}, "max_steps"),
        ({"render_mode": "human"}, "render_mode"),
        ({"reward": {"distance": 1.0}}, "unknown"),
        ({"reward": {"invalid_action": 0.5}}, "invalid_action <= 0"),
        ({"reward": {"dense": -1.0}}, "other weight >= 0"),
        ({"reward": {"success": float("nan")}}, "finite"),
    ],
)
def test_bad_arguments_are_named_before_any_import(monkeypatch, kwargs, words):
    monkeypatch.setitem(sys.modules, "metaworld", None)  # argument errors come first
    with pytest.raises(EmbodiedSuiteError, match=words):
        MetaWorldEnv("reach-v3", **kwargs)


def test_parse_action_clips_valid_and_holds_on_invalid():
    a, bad = parse_action([2.0, -3.0, 0.5, 1.0], last_grip=-1.0)
    assert not bad and a.tolist() == [1.0, -1.0, 0.5, 1.0]
    for junk in ([np.nan, 0, 0, 0], [0, 0, np.inf, 0], [0, 0, 0], "abc", None, {"a": 1}):
        a, bad = parse_action(junk, last_grip=0.7)
        assert bad and a.tolist() == [0.0, 0.0, 0.0, 0.7], junk


def test_reward_weights_default_and_override():
    assert reward_weights(None, DEFAULT_REWARD) == {
        "success": 1.0,
        "dense": 0.0,
        "invalid_action": -0.1,
    }
    assert reward_weights({"dense": 0.5}, DEFAULT_REWARD)["dense"] == 0.5


def test_instructions_table_and_fallback():
    assert instruction_for("pick-place-v3") == "pick up the puck and place it at the goal position"
    assert instruction_for("faucet-open-v3") == "complete the task: faucet open"


# ----------------------------------------------------------------------- with metaworld
@pytest.fixture(scope="module")
def mw():
    return pytest.importorskip(
        "metaworld", reason="metaworld not installed: pip install 'vlagent[metaworld]'"
    )


@pytest.fixture(scope="module")
def env(mw):
    e = MetaWorldEnv("reach-v3", image_size=S, render_mode="rgb_array")
    yield e
    e.close()


def test_env_contract(mw):
    from tests.env_contract import check_contract

    check_contract(
        lambda: MetaWorldEnv("reach-v3", image_size=S),
        valid_actions=[np.zeros(4, np.float32), np.ones(4, np.float32), [3.0, -2.0, 0.0, 1.0]],
        invalid_actions=[[np.nan, 0, 0, 0], [0, np.inf, 0, 0], [0, 0, 0], "move left", None],
    )


def test_reset_step_render_shapes_and_proprio(env):
    obs, info = env.reset(seed=0, options={"task_id": 5})
    assert obs["image"].shape == (S, S, 3) and obs["image"].dtype == np.uint8
    assert obs["proprio"].shape == (4,) and obs["proprio"].dtype == np.float32
    assert obs["instruction"] == "move the gripper to the goal position"
    assert info["variation"] == 5 and info["task"] == "reach-v3"
    assert np.allclose(obs["proprio"][:3], env._env.get_endeff_pos(), atol=1e-6)
    assert obs["proprio"][3] < 0.5  # gripper open after reset
    for _ in range(15):  # the fingers take about 15 steps to close
        obs2, _, _, _, info = env.step([1.0, 0.0, 0.0, 1.0])  # move +x, close the gripper
    assert obs2["proprio"][0] > obs["proprio"][0] + 0.1  # 1 cm per step at |dx| = 1
    assert obs2["proprio"][3] > 0.6  # closed (empty fingers settle at about 0.7)
    assert not np.array_equal(obs2["image"], obs["image"])
    assert np.array_equal(env.render(), obs2["image"])
    assert info["steps"] == 15 and not info["invalid_action"]


def test_corner_cameras_are_upright(mw):
    env = MetaWorldEnv("reach-v3", image_size=S, camera="corner2")
    env.reset(seed=0, options={"task_id": 0})
    m, d = env._env.model, env._env.data
    for cam in CAMERAS:  # a camera's image-up axis (cam_xmat column 1) in world z
        up_z = d.cam_xmat[m.camera(cam).id].reshape(3, 3)[2, 1]
        assert (up_z < 0) == (cam in UPSIDE_DOWN_CAMERAS), cam
    raw = env._renderer.render(d, S, S, "corner2")
    assert np.array_equal(env.render_camera(), raw[::-1, ::-1])  # rotated, not mirrored
    env.close()


def test_expert_reaches_success_through_our_env(mw):
    env = MetaWorldEnv("reach-v3", image_size=S, max_steps=150)
    env.reset(seed=0, options={"task_id": 1})
    for _ in range(150):
        _, reward, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            break
    assert info["success"] is True and terminated and not truncated
    assert info["reward_terms"]["success"] == 1.0 and reward == pytest.approx(1.0)
    assert info["metaworld"]["success"] == 1.0
    with pytest.raises(EmbodiedSuiteError, match="episode is over"):
        env.step(np.zeros(4))
    env.close()


def test_random_actions_do_not_succeed_and_truncate_at_budget(mw):
    env = MetaWorldEnv("reach-v3", image_size=S, max_steps=3)
    env.reset(seed=0, options={"task_id": 2})
    flags = [env.step(np.zeros(4))[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    env.close()


def test_seeded_resets_are_equal_across_envs_and_after_steps(mw):
    a, b = (MetaWorldEnv("push-v3", image_size=S) for _ in range(2))
    oa, _ = a.reset(seed=1, options={"task_id": 7})
    for _ in range(5):
        a.step([0.5, 0.5, -0.5, 1.0])
    oa2, _ = a.reset(seed=2, options={"task_id": 7})
    ob, _ = b.reset(seed=9, options={"task_id": 57})  # ids wrap modulo the 50 variations
    for o in (oa2, ob):
        assert np.array_equal(o["image"], oa["image"]) and np.array_equal(
            o["proprio"], oa["proprio"]
        )
    assert np.array_equal(a._env.data.qpos, b._env.data.qpos)
    oc, _ = b.reset(seed=1, options={"task_id": 8})
    assert not np.array_equal(oc["image"], oa["image"])  # another placement of the puck
    a.close()
    b.close()


def test_invalid_action_is_a_recorded_noop(env):
    env.reset(seed=0, options={"task_id": 3})
    env.step([0.0, 0.0, 0.0, 1.0])  # gripper closed
    _, reward, _, _, info = env.step([np.nan, 0.0, 0.0, 0.0])
    assert info["invalid_action"] is True and reward == pytest.approx(-0.1)
    invalid_qpos = env._env.data.qpos.copy()
    env.reset(seed=0, options={"task_id": 3})
    env.step([0.0, 0.0, 0.0, 1.0])
    env.step([0.0, 0.0, 0.0, 1.0])  # what the no-op must equal: hold, keep the gripper closed
    assert np.array_equal(env._env.data.qpos, invalid_qpos)


def test_reset_rejects_bad_options(env):
    with pytest.raises(EmbodiedSuiteError, match="unknown"):
        env.reset(seed=0, options={"level": 1})
    for bad in (-1, "3", True):
        with pytest.raises(EmbodiedSuiteError, match="task_id"):
            env.reset(seed=0, options={"task_id": bad})


def test_unknown_task_lists_names(mw):
    with pytest.raises(EmbodiedSuiteError, match="push-v3"):
        MetaWorldEnv("push-v9", image_size=S)


def test_incompatible_mujoco_is_reported_with_the_pin(mw):
    class BrokenLikeMujoco317:  # what metaworld 3.1.1 raises under mujoco >= 3.17
        def __init__(self) -> None:
            raise ValueError("could not broadcast input array from shape (11,) into shape (12,)")

    with pytest.raises(EmbodiedSuiteError, match="mujoco 3.3.0"):
        _build(BrokenLikeMujoco317)


def test_dense_term_and_close_is_idempotent(mw):
    env = MetaWorldEnv("reach-v3", image_size=S, reward={"dense": 1.0})
    env.reset(seed=0, options={"task_id": 0})
    _, reward, _, _, info = env.step(np.zeros(4))
    assert 0.0 < info["reward_terms"]["dense"] <= 1.0
    assert reward == pytest.approx(sum(info["reward_terms"].values()))
    env.close()
    env.close()
    with pytest.raises(EmbodiedSuiteError, match="closed"):
        env.reset(seed=0)
