"""gui.web.MiniWoBEnv over real MiniWoB++ pages in headless Chromium: the env contract, seeded
determinism, exact point mapping (DOM centres and screenshot pixels), the lifted time limit,
invalid actions, budgets, a crashing browser, and the suite / task-id / install errors.

Browser tests (``pytest.mark.browser``) share one env per module and skip when chromium,
chromedriver, selenium or miniwob is missing; suite and error tests run everywhere.
"""

from __future__ import annotations

import time

import gymnasium
import numpy as np
import pytest

import gui.web
from gui.web import errors as web_errors
from gui.web.errors import WebTaskError, WebUnavailable, require_web
from gui.web.suite import MINIWOB_SUITE, TEST_SEED_BASE, parse_task_id, resolve_tasks, task_ids
from tests.env_contract import check_contract, same_obs

try:
    require_web()
    WEB_MISSING = ""
except WebUnavailable as exc:
    WEB_MISSING = str(exc)
browser = pytest.mark.browser
needs_web = pytest.mark.skipif(bool(WEB_MISSING), reason=f"web stack missing: {WEB_MISSING}")
SMALL = ["click-button", "click-test", "enter-text", "focus-text", "click-color"]
VALID = [
    {"type": "click", "point": [0.5, 0.5]},
    {"type": "double_click", "point": [0.2, 0.9]},
    {"type": "drag", "start": [0.1, 0.5], "end": [0.6, 0.6]},
    {"type": "scroll", "point": [0.5, 0.5], "direction": "down"},
    {"type": "type", "text": "hello", "point": [0.5, 0.6]},
    {"type": "key", "key": "enter"},
    {"type": "hotkey", "keys": ["ctrl", "a"]},
    {"type": "wait"},
    {"type": "done"},
    {"type": "answer", "text": "42"},
]
INVALID = [
    {"type": "right_click", "point": [0.5, 0.5]},
    {"type": "long_press", "point": [0.5, 0.5]},
    {"type": "open_app", "name": "Mail"},
    {"type": "scroll", "point": [0.5, 0.5], "direction": "left"},
    {"type": "key", "key": "back"},
    {"type": "hotkey", "keys": ["ctrl", "shift"]},
    {"type": "type", "text": "\ue00c"},  # WebDriver's Escape code point
    {"type": "click", "point": [1.5, 0.5]},
    {"type": "click"},
    None,
    "click 0.5 0.5",
]


@pytest.fixture(scope="module")
def env():
    if WEB_MISSING:
        pytest.skip(f"web stack missing: {WEB_MISSING}")
    from gui.web.miniwob_env import MiniWoBEnv

    made = MiniWoBEnv(SMALL + ["click-tab", "click-test-2"])
    yield made
    made.close()


def _centre(el) -> tuple[float, float]:
    from gui.web.browser import css_to_normalized

    return css_to_normalized(el["left"][0] + el["width"][0] / 2, el["top"][0] + el["height"][0] / 2)


def _dom(env, pred):
    return [e for e in env.raw_observation["dom_elements"] if pred(e)]


# ---------------------------------------------------------------- suite, task ids, errors


def test_suite_and_task_id_splits_are_disjoint_and_cycle() -> None:
    assert len(MINIWOB_SUITE) >= 10 and all(b >= 1 for b in MINIWOB_SUITE.values())
    train, test = task_ids("train", 0, 3 * len(MINIWOB_SUITE)), task_ids("test", 0, 50)
    assert [t.split("/")[0] for t in train[: len(MINIWOB_SUITE)]] == list(MINIWOB_SUITE)
    assert all(parse_task_id(t)[1] < TEST_SEED_BASE for t in train)
    assert all(parse_task_id(t)[1] >= TEST_SEED_BASE for t in test)
    assert not set(train) & set(test) and len(set(train)) == len(train)
    assert task_ids("train", 5, 3) == task_ids("train", 0, 8)[5:]


@pytest.mark.parametrize("bad", ["click-tab", "click-tab/-1", "Click/1", "a/b", 7, ""])
def test_bad_task_ids_are_rejected(bad) -> None:
    with pytest.raises(WebTaskError, match="task id"):
        parse_task_id(bad)


def test_unknown_task_names_list_the_suite() -> None:
    with pytest.raises(WebTaskError, match="click-button"):
        resolve_tasks(["no-such-task"])
    with pytest.raises(WebTaskError, match="twice"):
        resolve_tasks(["click-tab", "click-tab"])
    assert resolve_tasks("miniwob") == MINIWOB_SUITE
    with pytest.raises(WebTaskError):
        task_ids("valid", 0, 1)  # type: ignore[arg-type]


def test_missing_browser_names_it_and_the_install_command(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MINIWOB_CHROME_BINARY", raising=False)
    monkeypatch.delenv("MINIWOB_CHROMEDRIVER", raising=False)
    with pytest.raises(WebUnavailable, match="chromium and chromedriver.*apt-get install"):
        web_errors.find_browser()
    monkeypatch.setenv("MINIWOB_CHROME_BINARY", "/usr/bin/chromium")
    with pytest.raises(WebUnavailable, match="together"):
        web_errors.find_browser()
    real = web_errors.importlib.util.find_spec
    monkeypatch.setattr(
        web_errors.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "selenium" else real(name, *a),
    )
    with pytest.raises(WebUnavailable, match=r"selenium.*vlagent\[web\]"):
        require_web()


def test_action_translation_rejects_what_a_page_cannot_do() -> None:
    pytest.importorskip("miniwob")
    from gui.actions import parse_action
    from gui.web.browser import miniwob_config, to_miniwob

    config = miniwob_config()

    def convert(action):
        return to_miniwob(parse_action(action))

    (press,) = convert({"type": "hotkey", "keys": ["Ctrl", "shift", "z"]})
    assert config.allowed_keys[press["key"]] == "C-S-z"
    (press,) = convert({"type": "key", "key": "ArrowDown"})
    assert config.allowed_keys[press["key"]] == "<ArrowDown>"
    click, typing = convert({"type": "type", "text": "hi", "point": [1.0, 0.0]})
    assert click["coords"][0] < 160 and typing["text"] == "hi"
    for bad in INVALID[:7]:
        assert isinstance(convert(bad), str), bad


# ---------------------------------------------------------------- the env in Chromium


@browser
@needs_web
def test_env_contract() -> None:
    def make():
        return gymnasium.make(gui.web.ENV_ID, tasks=SMALL)

    check_contract(make, VALID, INVALID)


@browser
def test_same_task_id_same_first_observation(env) -> None:
    first, info = env.reset(options={"task_id": "click-tab/5"})
    assert info["task_id"] == "click-tab/5" and first["image"].shape == (210, 160, 3)
    assert first["instruction"].startswith("Click on Tab #")
    again, _ = env.reset(options={"task_id": "click-tab/5"})
    assert same_obs(first, again)  # a second episode of the page (jQuery UI state leaks)
    env.reset(options={"task_id": "enter-text/2"})
    again, _ = env.reset(options={"task_id": "click-tab/5"})
    assert same_obs(first, again)  # after a task switch
    other, _ = env.reset(options={"task_id": "click-tab/6"})
    assert not same_obs(first, other)
    by_index, _ = env.reset(options={"task_id": 1})
    assert env.task_id == task_ids("train", 1, 1, env.task_names)[0]
    with pytest.raises(WebTaskError, match="not one of"):
        env.reset(options={"task_id": "click-link/1"})
    with pytest.raises(WebTaskError, match="unknown"):
        env.reset(options={"task_id": "click-tab/1", "level": 2})


@browser
def test_clicking_the_normalized_centre_of_a_dom_element_hits_it(env) -> None:
    for seed in range(3):
        env.reset(options={"task_id": f"click-button/{seed}"})
        target = dict(env.raw_observation["fields"])["target"]
        (button,) = _dom(env, lambda e, t=target: e["tag"] == "button" and e["text"] == t)[:1]
        _, reward, terminated, _, info = env.step({"type": "click", "point": _centre(button)})
        assert terminated and info["success"] and reward == 1.0, info
    points = [(0.1, 0.1), (0.3336, 0.25), (0.999, 0.5), (1.0, 1.0)]
    seen = []
    for p in points:
        env.reset(options={"task_id": "click-test/0"})
        env.browser.driver.execute_script(
            "window.__c = []; document.addEventListener('mousedown',"
            " e => window.__c.push([e.clientX, e.clientY]), true);"
        )
        env.step({"type": "click", "point": p})
        seen += env.browser.driver.execute_script("return window.__c;")
    assert seen == [[min(int(x * 160), 159), min(int(y * 210), 209)] for x, y in points]


@browser
def test_screenshot_pixels_sit_where_the_dom_says(env) -> None:
    obs, _ = env.reset(options={"task_id": "click-color/3"})
    boxes = _dom(env, lambda e: e["classes"] == "color")
    assert len(boxes) == 4
    for box in boxes:
        x, y = _centre(box)
        pixel = obs["image"][int(y * 210), int(x * 160)]
        assert np.abs(pixel.astype(float) - box["bg_color"][:3] * 255).max() <= 2


@browser
@needs_web
def test_scale_renders_a_sharper_image_of_the_same_page() -> None:
    from gui.web.miniwob_env import MiniWoBEnv

    big = MiniWoBEnv(["click-color"], scale=2)
    try:
        obs, _ = big.reset(options={"task_id": "click-color/3"})
        assert obs["image"].shape == (420, 320, 3)
        for box in _dom(big, lambda e: e["classes"] == "color"):
            x, y = _centre(box)
            pixel = obs["image"][int(y * 420), int(x * 320)]
            assert np.abs(pixel.astype(float) - box["bg_color"][:3] * 255).max() <= 2
    finally:
        big.close()


@browser
def test_episode_time_limit_is_lifted(env, monkeypatch) -> None:
    import gui.web.browser as web_browser

    env.reset(options={"task_id": "click-test/0"})
    countdown = env.browser.driver.execute_script(
        "return document.getElementById('timer-countdown').textContent;"
    )
    assert countdown.startswith("86400 / 86400")
    monkeypatch.setattr(web_browser, "EPISODE_MAX_TIME_MS", 300)  # MiniWoB-like short limit
    env.reset(options={"task_id": "click-test/0"})
    time.sleep(0.5)
    _, _, terminated, _, info = env.step({"type": "wait"})
    assert terminated and info["raw_reward"] == -1.0 and info["miniwob_reason"] == "timed out"
    monkeypatch.undo()
    env.reset(options={"task_id": "click-test/0"})
    time.sleep(0.5)
    assert not env.step({"type": "wait"})[2]


@browser
def test_invalid_actions_are_recorded_no_ops(env) -> None:
    before, _ = env.reset(options={"task_id": "click-test/1"})
    for action in INVALID:
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["invalid_action"] and info["invalid_reason"], action
        assert reward == pytest.approx(-0.1) and not terminated
        assert np.array_equal(obs["image"], before["image"])
        env.reset(options={"task_id": "click-test/1"})


@browser
@pytest.mark.parametrize(
    "ending", [{"type": "done"}, {"type": "fail"}, {"type": "answer", "text": "x"}]
)
def test_terminal_actions_end_without_success(env, ending) -> None:
    env.reset(options={"task_id": "focus-text/4"})
    _, reward, terminated, truncated, info = env.step(ending)
    assert terminated and not truncated and reward == 0.0 and info["success"] is False
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step({"type": "wait"})


@browser
def test_budget_truncates(env) -> None:
    env.reset(options={"task_id": "focus-text/4"})
    budget = MINIWOB_SUITE["focus-text"]
    flags = [env.step({"type": "wait"})[2:4] for _ in range(budget)]
    assert flags == [(False, False)] * (budget - 1) + [(False, True)]


@browser
def test_typed_text_lands_in_the_field_and_the_caret_does_not_blink(env) -> None:
    env.reset(options={"task_id": "enter-text/0"})
    (field,) = _dom(env, lambda e: e["tag"] == "input_text")
    obs, _, _, _, info = env.step({"type": "type", "text": "a'b\"c", "point": _centre(field)})
    assert not info["invalid_action"]
    assert [e["value"] for e in _dom(env, lambda e: e["tag"] == "input_text")] == ["a'b\"c"]
    time.sleep(0.55)  # half a blink period: a blinking caret would have flipped
    assert np.array_equal(env.browser.observe()["screenshot"], obs["image"])


@browser
@needs_web
def test_a_dead_browser_ends_the_episode_and_the_next_reset_recovers() -> None:
    from gui.web.miniwob_env import MiniWoBEnv

    env = MiniWoBEnv(["click-test"])
    try:
        env.reset(options={"task_id": "click-test/0"})
        env.browser.driver.quit()
        obs, reward, terminated, _, info = env.step({"type": "click", "point": [0.5, 0.5]})
        assert terminated and info["backend_error"] and not info["success"]
        assert obs["image"].shape == (210, 160, 3)
        env.reset(options={"task_id": "click-test/0"})
        env.browser.driver.quit()  # dead before a reset: the reset replaces it
        obs, _ = env.reset(options={"task_id": "click-test/0"})
        assert obs["instruction"] == "Click the button."
    finally:
        env.close()
