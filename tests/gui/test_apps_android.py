"""GUI actions -> android-env steps, and the android-env backed envs' own behaviour."""

from __future__ import annotations

import dm_env
import gymnasium
import numpy as np
import pytest
from android_env.components.action_type import ActionType
from android_env.proto import adb_pb2

import gui  # noqa: F401  (registers the env ids)
from gui.actions import InvalidAction, parse_action
from gui.apps.android_actions import PlanConfig, plan_action
from gui.apps.oracle import Oracle

TOUCH, LIFT, REPEAT = int(ActionType.TOUCH), int(ActionType.LIFT), int(ActionType.REPEAT)
APPS = {"Contacts": "com.vlagent.phone/.Contacts"}


def _plan(action: dict, **config) -> list:
    out = plan_action(parse_action(action), PlanConfig(**{"activities": APPS, **config}))
    assert not isinstance(out, InvalidAction), out
    return out


def _touches(steps: list) -> list[tuple[int, list[float]]]:
    return [
        (int(s["action_type"]), [round(float(v), 4) for v in s["touch_position"]]) for s in steps
    ]


def test_tap_long_press_swipe_and_scroll_plans() -> None:
    assert _touches(_plan({"type": "click", "point": [0.25, 0.5]})) == [
        (TOUCH, [0.25, 0.5]),
        (LIFT, [0.25, 0.5]),
    ]
    assert [t for t, _ in _touches(_plan({"type": "double_click", "point": [0.1, 0.1]}))] == [
        TOUCH,
        LIFT,
    ] * 2
    held = _touches(_plan({"type": "long_press", "point": [0.3, 0.4]}, long_press_touches=4))
    assert held == [(TOUCH, [0.3, 0.4])] * 4 + [(LIFT, [0.3, 0.4])]
    assert (
        _touches(_plan({"type": "right_click", "point": [0.3, 0.4]})) == held[1:]
    )  # default: 3 held
    swipe = _touches(
        _plan({"type": "swipe", "start": [0.5, 0.9], "end": [0.5, 0.1]}, swipe_moves=4)
    )
    assert [t for t, _ in swipe] == [TOUCH] * 5 + [LIFT]
    assert [p[1] for _, p in swipe] == [0.9, 0.7, 0.5, 0.3, 0.1, 0.1]
    down = _touches(_plan({"type": "scroll", "point": [0.5, 0.5], "direction": "down"}))
    assert down[0][1] == [0.5, 0.7] and down[-2][1] == [0.5, 0.3]  # the finger moves up
    edge = _touches(_plan({"type": "scroll", "point": [0.0, 0.99], "direction": "right"}))
    assert edge[0][1] == [0.2, 0.98] and edge[-2][1] == [0.02, 0.98]  # clamped on screen
    for _, (x, y) in down + edge + swipe:
        assert 0 <= x <= 1 and 0 <= y <= 1
    assert _touches(_plan({"type": "wait"})) == [(REPEAT, [0.0, 0.0])]


def test_text_keys_and_apps_go_through_adb() -> None:
    typed = _plan({"type": "type", "text": "Ana Lima", "point": [0.5, 0.2]})
    assert [int(s["action_type"]) for s in typed[:2]] == [TOUCH, LIFT]
    assert typed[2].input_text.text == "Ana%sLima" and int(typed[3]["action_type"]) == REPEAT
    back = _plan({"type": "key", "key": "Back"})[0]
    assert back.press_button.button == adb_pb2.AdbRequest.PressButton.Button.BACK
    assert list(_plan({"type": "key", "key": "backspace"})[0].generic.args) == [
        "shell",
        "input",
        "keyevent",
        "KEYCODE_DEL",
    ]
    assert (
        _plan({"type": "open_app", "name": "contacts"})[0].start_activity.full_activity
        == APPS["Contacts"]
    )


@pytest.mark.parametrize(
    ("action", "config", "reason"),
    [
        ({"type": "type", "text": "hi"}, {"adb": False}, "needs adb"),
        ({"type": "key", "key": "home"}, {"adb": False}, "needs adb"),
        ({"type": "key", "key": "f13"}, {}, "has no Android keycode"),
        ({"type": "open_app", "name": "Camera"}, {}, "not known to this device"),
        ({"type": "hotkey", "keys": ["ctrl", "c"]}, {}, "hotkeys are not supported"),
        ({"type": "done"}, {}, "not executed on the device"),
    ],
)
def test_actions_that_cannot_run_on_android(action: dict, config: dict, reason: str) -> None:
    out = plan_action(parse_action(action), PlanConfig(**{"activities": APPS, **config}))
    assert isinstance(out, InvalidAction) and reason in out.reason


def test_fake_env_sends_touches_at_the_right_pixels() -> None:
    env = gymnasium.make("vlagent/AndroidFake-v0", width=100, height=200)
    env.reset(seed=0)
    sim = env.unwrapped.simulator
    sim.touches.clear()
    env.step({"type": "long_press", "point": [0.25, 0.5]})
    assert sim.touches == [(25, 100, True, 0)] * 3 + [(25, 100, False, 0)]
    env.close()


def test_text_input_without_adb_is_invalid() -> None:
    env = gymnasium.make("vlagent/AndroidFake-v0", adb=False)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step({"type": "type", "text": "hello"})
    assert info["invalid_action"] and "needs adb" in info["invalid_reason"]
    assert (reward, terminated) == (-0.1, False)
    env.close()


def test_fake_env_success_comes_from_android_env_task_reward(monkeypatch) -> None:
    env = gymnasium.make("vlagent/AndroidFake-v0")
    obs, _ = env.reset(seed=0)
    android = env.unwrapped._env
    end = dm_env.termination(reward=1.5, observation={"pixels": obs["image"]})
    monkeypatch.setattr(android, "step", lambda action: end)
    _, reward, terminated, truncated, info = env.step({"type": "click", "point": [0.5, 0.5]})
    assert (reward, terminated, truncated, info["success"]) == (1.5, True, False, True)
    assert info["reward_terms"] == {"task_reward": 1.5, "invalid_action": 0.0}
    assert info["android_episode_end"] == "termination"
    env.close()


@pytest.mark.parametrize("desktop", [False, True])
def test_android_synthetic_matches_the_direct_phone_env(desktop: bool) -> None:
    """The same task and actions give the same pixels through android-env as directly."""
    direct = gymnasium.make("vlagent/Phone-v0" if not desktop else "vlagent/PhoneDesktop-v0")
    android = gymnasium.make("vlagent/AndroidSynthetic-v0", desktop=desktop)
    for task_id in ("basic-add-contact-0", "basic-delete-note-0", "heldout-set-brightness-0"):
        a, _ = direct.reset(seed=0, options={"task_id": task_id})
        b, _ = android.reset(seed=0, options={"task_id": task_id})
        oracle = Oracle(direct.unwrapped.task)
        done = False
        while not done:
            assert np.array_equal(a["image"], b["image"]) and a["a11y"] == b["a11y"]
            action = oracle.act(a)
            a, ra, ta, _, ia = direct.step(action)
            b, rb, tb, _, ib = android.step(action)
            assert (ra, ta, ia["success"]) == (rb, tb, ib["success"])
            done = ta
        assert ia["success"]
    direct.close()
    android.close()
