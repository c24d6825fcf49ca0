"""The env contract (DESIGN.md section 5) over the multi-step app envs.

Same checks as ``test_env_contract.py`` (whose grounding-specific cases stay there), adapted
to episodes of several steps: check_env, seeded determinism, group resets, reward = sum of
terms, invalid-action fuzzing with hypothesis, double close, a crashing backend, budgets.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from test_env_contract import CASES as GROUNDING_CASES
from test_env_contract import _bad_coords

import gui
from gui.actions import ACTION_TYPES

APP_CASES: dict[str, list[dict[str, Any]]] = {
    "vlagent/Phone-v0": [{}, {"suite": "phone_heldout", "width": 320, "height": 560}],
    "vlagent/PhoneDesktop-v0": [{}],
    "vlagent/AndroidFake-v0": [{}],
    "vlagent/AndroidSynthetic-v0": [{}, {"desktop": True, "suite": "phone_heldout"}],
}
PARAMS = [
    pytest.param(env_id, i, id=f"{env_id}-{i}")
    for env_id, cases in APP_CASES.items()
    for i in range(len(cases))
]
SUITE_ENVS = {"vlagent/Phone-v0", "vlagent/PhoneDesktop-v0", "vlagent/AndroidSynthetic-v0"}


@pytest.fixture
def make() -> Callable[..., gymnasium.Env]:
    made: list[gymnasium.Env] = []

    def _make(env_id: str, case: int) -> gymnasium.Env:
        env = gymnasium.make(env_id, **APP_CASES[env_id][case])
        made.append(env)
        return env

    yield _make
    for env in made:
        env.close()


OWN_CONTRACT_FILES = {  # envs needing a display / a browser: their contract runs there
    "vlagent/DesktopOSWorld-v0": "tests/gui/osworld/test_desktop_env.py",
    "vlagent/MiniWoB-v0": "tests/gui/web/test_miniwob_env.py",
}


def test_every_registered_env_has_a_case_here_or_in_the_grounding_suite() -> None:
    assert set(gui.registered_env_ids()) == (
        set(APP_CASES) | set(GROUNDING_CASES) | set(OWN_CONTRACT_FILES)
    )
    assert not set(APP_CASES) & set(GROUNDING_CASES)
    for env_id, path in OWN_CONTRACT_FILES.items():
        text = (Path(__file__).resolve().parents[2] / path).read_text()
        assert "check_contract" in text, f"{env_id}: {path} does not run the contract"


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k] for k in a
    )


def _options(env_id: str) -> dict[str, Any]:
    return {"task_id": "basic-add-contact-0"} if env_id in SUITE_ENVS else {}


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_check_env(make, env_id: str, case: int) -> None:
    env = make(env_id, case)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the contract
        check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_seeded_determinism_and_group_reset(make, env_id: str, case: int) -> None:
    group = [make(env_id, case) for _ in range(4)]
    options = {} if case else _options(env_id)
    first = [env.reset(seed=11, options=options)[0] for env in group]
    assert all(_same(first[0], obs) for obs in first[1:])
    # the whole trajectory is a function of (seed, task, actions)
    space = group[0].action_space
    space.seed(5)
    actions = [space.sample() for _ in range(6)]
    runs = []
    for env in group[:2]:
        env.reset(seed=11, options=options)
        run = []
        for action in actions:
            obs, reward, terminated, truncated, info = env.step(action)
            run.append((obs, reward, terminated, truncated, info))
            if terminated or truncated:
                break
        runs.append(run)
    assert len(runs[0]) == len(runs[1])
    for (o1, *r1), (o2, *r2) in zip(*runs, strict=True):
        assert _same(o1, o2) and r1 == r2
    differ = {group[0].reset(seed=s)[0]["image"].tobytes() for s in range(6)}
    assert len(differ) > 1  # different seeds reach different tasks / screens


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_reward_is_sum_of_terms(make, env_id: str, case: int) -> None:
    env = make(env_id, case)
    env.action_space.seed(0)
    for seed in range(3):
        env.reset(seed=seed)
        for _ in range(12):
            _, reward, terminated, truncated, info = env.step(env.action_space.sample())
            assert isinstance(reward, float)
            assert reward == pytest.approx(sum(info["reward_terms"].values()), abs=1e-12)
            assert isinstance(info["success"], bool) and info["status"] in (
                "success",
                "failure",
                "still running",
            )
            assert terminated == (info["status"] != "still running") or truncated
            if terminated or truncated:
                break


_KNOWN = sorted(ACTION_TYPES)
_POINT_TYPES = ["click", "double_click", "right_click", "long_press"]
_INVALID = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.lists(st.floats(0, 1), max_size=4),
    st.dictionaries(st.text(max_size=8).filter(lambda k: k != "type"), st.integers(), max_size=3),
    st.fixed_dictionaries({"type": st.text(max_size=10).filter(lambda t: t not in ACTION_TYPES)}),
    st.fixed_dictionaries(
        {"type": st.one_of(st.integers(), st.none(), st.booleans(), st.floats(allow_nan=True))}
    ),
    st.fixed_dictionaries({"type": st.sampled_from(_POINT_TYPES), "point": _bad_coords(2)}),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["swipe", "drag"]),
            "start": _bad_coords(2),
            "end": st.just([0.5, 0.5]),
        }
    ),
    st.fixed_dictionaries({"type": st.sampled_from(_KNOWN)}).filter(
        lambda d: d["type"] not in ("done", "fail", "wait")
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("type"),
            "text": st.one_of(st.integers(), st.just(""), st.none(), st.lists(st.text())),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("wait"), "seconds": st.sampled_from([math.nan, -1.0, 0.0, 1e9, "1"])}
    ),
    st.fixed_dictionaries(
        {"type": st.just("click"), "point": st.just([0.5, 0.5]), "x": st.integers()}
    ),
    st.fixed_dictionaries(
        {"action_type": st.just("click"), "x": st.integers(0, 100), "y": st.integers(0, 100)}
    ),
)


@pytest.mark.parametrize("env_id", list(APP_CASES))
def test_invalid_action_fuzzing(make, env_id: str) -> None:
    env = make(env_id, 0).unwrapped  # the raw env: wrappers' checks are not under test
    penalty = env.reward_config.invalid_action

    @settings(max_examples=120, deadline=None)
    @given(action=_INVALID)
    def run(action: Any) -> None:
        before, _ = env.reset(seed=0, options=_options(env_id))
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["invalid_action"] is True and isinstance(info["invalid_reason"], str)
        assert (reward, terminated, truncated, info["success"]) == (penalty, False, False, False)
        assert reward == sum(info["reward_terms"].values())
        assert info["action"] is None and info["backend_error"] is None
        assert _same(before, obs)  # a no-op

    run()


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_double_close(make, env_id: str, case: int) -> None:
    env = make(env_id, case)
    env.reset(seed=0)
    env.close()
    env.close()
    env.unwrapped.close()


def _break_backend(env: gymnasium.Env, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("simulator exploded")

    raw = env.unwrapped
    if hasattr(raw, "phone"):
        monkeypatch.setattr(raw.phone, "tap", boom)
    else:
        monkeypatch.setattr(raw.simulator, "send_touch", boom)


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_backend_error_ends_the_episode_and_is_recorded(
    make, env_id: str, case: int, monkeypatch
) -> None:
    env = make(env_id, case)
    before, _ = env.reset(seed=3, options=_options(env_id) if case == 0 else {})
    _break_backend(env, monkeypatch)
    obs, reward, terminated, truncated, info = env.step({"type": "click", "point": [0.5, 0.5]})
    assert terminated and not truncated and info["success"] is False
    assert (
        info["backend_error"] == "RuntimeError: simulator exploded" and info["status"] == "failure"
    )
    assert reward == sum(info["reward_terms"].values()) == 0.0
    assert _same(before, obs)  # the last good observation comes back
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step({"type": "wait"})
    monkeypatch.undo()
    again, _ = env.reset(seed=3, options=_options(env_id) if case == 0 else {})
    assert _same(before, again)  # the env recovers at the next reset


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_terminal_actions_end_the_episode(make, env_id: str, case: int) -> None:
    env = make(env_id, case)
    for action in (
        {"type": "done"},
        {"type": "fail", "reason": "cannot"},
        {"type": "answer", "text": "42"},
    ):
        env.reset(seed=1, options=_options(env_id) if case == 0 else {})
        _, reward, terminated, truncated, info = env.step(action)
        assert terminated and not truncated and info["status"] in ("success", "failure")
        assert reward == sum(info["reward_terms"].values())


@pytest.mark.parametrize("env_id", list(APP_CASES))
def test_step_budget_truncates(make, env_id: str) -> None:
    env = make(env_id, 0)
    _, info = env.reset(seed=0, options=_options(env_id))
    for step in range(1, info["max_steps"] + 1):
        _, _, terminated, truncated, info = env.step({"type": "wait"})
        assert not terminated and truncated == (step == info["max_steps"])
