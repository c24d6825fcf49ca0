"""The env contract (DESIGN.md section 5) over every registered gui env with a backend here.

Each registered id needs a case below: a function of a temp dir that returns the ``make``
kwargs (building whatever backend the env needs), or ``None`` when the backend is missing.
"""

from __future__ import annotations

import json
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
from PIL import Image

import gui  # noqa: F401  (registers the env ids)
from sim.screens import generate_screen


def _screenspot_dir(tmp: Path) -> dict[str, Any]:
    """A ScreenSpot-v2-format file over synthetic screens of two sizes (variable-size obs)."""
    records = []
    for i, (level, seed) in enumerate([("basic", 1), ("widgets", 2), ("basic2", 3)]):
        screen = generate_screen(level, seed)
        h, w = screen.image.shape[:2]
        name = f"img_{i}.png"
        Image.fromarray(screen.image).save(tmp / name)
        x0, y0, x1, y1 = screen.target_box_norm
        bbox = [round(x0 * w), round(y0 * h), round(x1 * w), round(y1 * h)]
        records.append(
            {
                "img_filename": name,
                "bbox": bbox,
                "instruction": screen.instruction,
                "img_size": [w, h],
            }
        )
    (tmp / "ss.json").write_text(json.dumps(records))
    return {"annotation_file": str(tmp / "ss.json"), "image_dir": str(tmp), "version": "v2"}


CASES: dict[str, list[Callable[[Path], dict[str, Any] | None]]] = {
    "vlagent/GroundingSynthetic-v0": [
        lambda _: {},
        lambda _: {"level": "widgets"},
        lambda _: {"level": "desktop_hires"},
    ],
    "vlagent/GroundingScreenSpot-v0": [_screenspot_dir],
}
PARAMS = [
    pytest.param(env_id, i, id=f"{env_id}-{i}")
    for env_id, makers in CASES.items()
    for i in range(len(makers))
]


@pytest.fixture
def make(tmp_path: Path) -> Callable[..., gymnasium.Env]:
    def _make(env_id: str, case: int) -> gymnasium.Env:
        kwargs = CASES[env_id][case](tmp_path)
        if kwargs is None:
            pytest.skip(f"{env_id}: backend not available here")
        return gymnasium.make(env_id, **kwargs)

    return _make


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["instruction"] == b["instruction"] and np.array_equal(a["image"], b["image"])


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_check_env(make, env_id: str, case: int) -> None:
    env = make(env_id, case)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the contract
        check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_seeded_determinism_and_group_reset(make, env_id: str, case: int) -> None:
    group = [make(env_id, case) for _ in range(4)]
    first = [env.reset(seed=11)[0] for env in group]
    assert all(_same(first[0], obs) for obs in first[1:])
    ids = {env.reset(seed=s)[1]["sample_id"] for s in range(6) for env in group[:1]}
    assert len(ids) > 1  # different seeds reach different samples
    again, _ = group[0].reset(seed=11)
    assert _same(first[0], again)
    for env in group:
        env.close()


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_reward_is_sum_of_terms(make, env_id: str, case: int) -> None:
    env = make(env_id, case)
    env.action_space.seed(0)
    for seed in range(5):
        _, info = env.reset(seed=seed)
        x0, y0, x1, y1 = info["target_box_norm"]
        for action in (env.action_space.sample(), {"point": ((x0 + x1) / 2, (y0 + y1) / 2)}):
            _, reward, terminated, truncated, info = env.step(action)
            assert isinstance(reward, float) and terminated and not truncated
            assert reward == pytest.approx(sum(info["reward_terms"].values()), abs=1e-12)
            assert isinstance(info["success"], bool) and info["invalid_action"] is False
            env.reset(seed=seed)
    env.close()


_FINITE = st.floats(0.0, 1.0)
_JUNK_NUMBER = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 1.0001, -0.5, 1e300]),
    st.floats(allow_nan=True).filter(lambda v: not 0.0 <= v <= 1.0),
)
_NOT_NUMBER = st.one_of(
    st.none(), st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2)
)


def _bad_coords(n: int) -> st.SearchStrategy[Any]:
    bad_slot = st.one_of(_JUNK_NUMBER, _NOT_NUMBER)
    with_bad = st.integers(0, n - 1).flatmap(
        lambda k: st.tuples(*[bad_slot if i == k else _FINITE for i in range(n)])
    )
    wrong_len = st.lists(_FINITE, max_size=6).filter(lambda v: len(v) != n)
    return st.one_of(with_bad, wrong_len, with_bad.map(list), _NOT_NUMBER, wrong_len.map(np.array))


_INVALID_ACTIONS = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.lists(_FINITE, max_size=4),
    st.fixed_dictionaries({"point": _bad_coords(2)}),
    st.fixed_dictionaries({"box": _bad_coords(4)}),
    st.fixed_dictionaries({"point": st.tuples(_FINITE, _FINITE), "box": _bad_coords(4)}),
    st.tuples(_FINITE, _FINITE, _FINITE, _FINITE)
    .filter(lambda b: not (b[0] < b[2] and b[1] < b[3]))
    .map(lambda b: {"box": b}),
    st.fixed_dictionaries(
        {"parse_error": st.one_of(st.text(max_size=30), st.none(), st.integers())}
    ),
    st.dictionaries(
        st.text(max_size=8).filter(lambda k: k not in ("point", "box", "parse_error")),
        st.integers(),
        min_size=1,
    ),
)


@pytest.mark.parametrize(("env_id", "case"), [p for p in PARAMS if p.values[1] == 0])
def test_invalid_action_fuzzing(make, env_id: str, case: int) -> None:
    env = make(env_id, case).unwrapped  # the raw env: wrappers' checks are not under test

    @settings(max_examples=200, deadline=None)
    @given(action=_INVALID_ACTIONS)
    def run(action: Any) -> None:
        env.reset(seed=0)
        _, reward, terminated, truncated, info = env.step(action)
        assert info["invalid_action"] is True and isinstance(info["invalid_reason"], str)
        assert (reward, terminated, truncated, info["success"]) == (0.0, True, False, False)
        assert reward == sum(info["reward_terms"].values())

    run()
    env.close()


@pytest.mark.parametrize(("env_id", "case"), PARAMS)
def test_double_close(make, env_id: str, case: int) -> None:
    env = make(env_id, case)
    env.reset(seed=0)
    env.close()
    env.close()
    env.unwrapped.close()
