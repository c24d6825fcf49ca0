"""Our phone as an android-env simulator, touch sequences, the loader and emulator configs."""

from __future__ import annotations

import os
import shutil
import string

import numpy as np
import pytest
from android_env.components import config_classes
from android_env.components.action_type import ActionType
from android_env.components.simulators.fake import fake_simulator
from android_env.proto import adb_pb2, state_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.android import touch
from sim.android.errors import AndroidConfigError
from sim.android.loader import (
    DEFAULT_TASK,
    build,
    emulator_config,
    emulator_missing,
    load,
    read_task,
    task_config,
)
from sim.android.simulator import (
    SeededFakeSimulator,
    SeededFakeSimulatorConfig,
    SyntheticPhoneConfig,
    SyntheticPhoneSimulator,
)

OK = adb_pb2.AdbResponse.Status.OK


def _types(actions: list[dict]) -> list[int]:
    return [int(a["action_type"]) for a in actions]


def test_tap_long_press_and_swipe_sequences() -> None:
    tap = touch.tap((0.25, 0.75))
    assert _types(tap) == [ActionType.TOUCH, ActionType.LIFT]
    for a in tap:
        assert a["touch_position"].dtype == np.float32
        np.testing.assert_allclose(a["touch_position"], [0.25, 0.75])
    assert _types(touch.long_press((0.5, 0.5), 4)) == [ActionType.TOUCH] * 4 + [ActionType.LIFT]
    sw = touch.swipe((0.2, 0.8), (0.2, 0.2), moves=3)
    assert _types(sw) == [ActionType.TOUCH] * 4 + [ActionType.LIFT]
    ys = [float(a["touch_position"][1]) for a in sw[:-1]]
    np.testing.assert_allclose(ys, [0.8, 0.6, 0.4, 0.2], atol=1e-6)
    clamped = touch.touch((1.5, -0.5))["touch_position"]
    assert clamped.tolist() == [1.0, 0.0]
    assert int(touch.repeat()["action_type"]) == ActionType.REPEAT


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=string.printable.strip() + " ", min_size=1, max_size=30).filter(
        lambda t: "%s" not in t
    )
)
def test_adb_text_escaping_round_trips(text: str) -> None:
    escaped = touch.escape_text(text)
    assert " " not in escaped and touch.unescape_text(escaped) == text


@pytest.fixture
def synthetic():
    config = config_classes.AndroidEnvConfig(
        task=task_config(), simulator=SyntheticPhoneConfig(seed=4)
    )
    env, sim = build(config)
    env.reset()
    yield env, sim
    env.close()


def _centre(sim: SyntheticPhoneSimulator, role: str, text: str) -> tuple[float, float]:
    node = next(n for n in sim.phone.a11y_tree() if n.role == role and n.text == text)
    x0, y0, x1, y1 = node.bounds_norm
    return (x0 + x1) / 2, (y0 + y1) / 2


def test_android_env_touches_drive_the_phone(synthetic) -> None:
    env, sim = synthetic
    for action in touch.tap(_centre(sim, "button", "Notes")):
        timestep = env.step(action)
    assert sim.phone.state.ui.screen == "notes"
    assert np.array_equal(timestep.observation["pixels"], sim.phone.screenshot())
    title = sim.phone.state.notes[0].title
    for action in touch.long_press(_centre(sim, "listitem", title), 3):
        env.step(action)
    assert sim.phone.state.ui.menu == 0  # the row's long-press menu
    for action in touch.tap(_centre(sim, "button", "Delete")):
        env.step(action)
    assert all(n.title != title for n in sim.phone.state.notes)


def test_swipe_scrolls_a_list_through_android_env(synthetic) -> None:
    env, sim = synthetic
    sim.phone.open_app("Contacts")
    x0, y0, x1, y1 = next(n for n in sim.phone.a11y_tree() if n.role == "list").bounds_norm
    if len(sim.phone.state.contacts) <= 9:
        pytest.skip("seed 4 has a list that fits one page")  # pragma: no cover
    for action in touch.swipe(((x0 + x1) / 2, y1 - 0.05), ((x0 + x1) / 2, y0 + 0.05), 5):
        env.step(action)
    assert sim.phone.state.ui.scroll > 0


def test_adb_requests_type_press_and_launch(synthetic) -> None:
    env, sim = synthetic
    assert env.execute_adb_call(touch.start_activity("com.vlagent.phone/.Contacts")).status == OK
    assert sim.phone.state.ui.screen == "contacts"
    for action in touch.tap(_centre(sim, "button", "Add contact")):
        env.step(action)
    assert env.execute_adb_call(touch.input_text("O'Neil & Co (x)")).status == OK
    assert sim.phone.state.ui.fields["name"] == "O'Neil & Co (x)"
    env.execute_adb_call(touch.keyevent("KEYCODE_DEL"))
    assert sim.phone.state.ui.fields["name"] == "O'Neil & Co (x"
    env.execute_adb_call(touch.press_button("home"))
    assert sim.phone.state.ui.screen == "launcher"
    bad = env.execute_adb_call(touch.start_activity("com.android.dialer/.Main"))
    assert bad.status != OK and sim.last_outcome is not None and sim.last_outcome.invalid


def test_save_and_load_state_through_android_env(synthetic) -> None:
    env, sim = synthetic
    sim.phone.open_app("Clock")
    saved = env.save_state(state_pb2.SaveStateRequest(args={"name": "clock"}))
    assert saved.status == state_pb2.SaveStateResponse.Status.OK
    pixels = sim.phone.screenshot().copy()
    sim.phone.home()
    loaded = env.load_state(state_pb2.LoadStateRequest(args={"name": "clock"}))
    assert loaded.status == state_pb2.LoadStateResponse.Status.OK
    assert sim.phone.state.ui.screen == "clock" and np.array_equal(sim.phone.screenshot(), pixels)
    missing = env.load_state(state_pb2.LoadStateRequest(args={"name": "nope"}))
    assert missing.status == state_pb2.LoadStateResponse.Status.NOT_FOUND


def test_send_key_uses_android_keycodes() -> None:
    sim = SyntheticPhoneSimulator(SyntheticPhoneConfig())
    sim.phone.open_app("Notes")
    sim.send_key(np.int32(4), "keydown")
    assert sim.phone.state.ui.screen == "launcher"
    sim.send_key(np.int32(999), "keydown")
    assert sim.last_outcome is not None and sim.last_outcome.invalid


def test_seeded_fake_is_deterministic_and_records_touches() -> None:
    tc = task_config()
    config = config_classes.AndroidEnvConfig(
        task=tc, simulator=SeededFakeSimulatorConfig(screen_dimensions=(40, 20), seed=1)
    )
    env, sim = build(config)
    try:
        assert isinstance(sim, SeededFakeSimulator)
        assert isinstance(sim, fake_simulator.FakeSimulator)  # android-env's fake, subclassed
        sim.reseed(7)
        first = env.reset().observation["pixels"]
        sim.reseed(7)
        assert np.array_equal(env.reset().observation["pixels"], first)
        sim.touches.clear()
        for action in touch.tap((0.5, 0.25)):
            env.step(action)
        assert sim.touches == [(10, 10, True, 0), (10, 10, False, 0)]  # int(x * w), int(y * h)
    finally:
        env.close()


def test_loader_matches_config_types() -> None:
    tc = task_config()
    fake = load(
        config_classes.AndroidEnvConfig(
            task=tc, simulator=config_classes.FakeSimulatorConfig((8, 8))
        )
    )
    ours = load(config_classes.AndroidEnvConfig(task=tc, simulator=SyntheticPhoneConfig()))
    try:
        assert type(fake._simulator) is fake_simulator.FakeSimulator  # android-env's own path
        assert isinstance(ours._simulator, SyntheticPhoneSimulator)
    finally:
        fake.close()
        ours.close()
    with pytest.raises(AndroidConfigError, match="use load"):
        build(
            config_classes.AndroidEnvConfig(task=tc, simulator=config_classes.FakeSimulatorConfig())
        )


def test_task_textproto_loads_through_android_env() -> None:
    task = read_task(task_config())
    assert task.id == "vlagent_phone" and task.description and not task.reset_steps
    assert task_config().path == str(DEFAULT_TASK)
    with pytest.raises(AndroidConfigError, match="does not exist"):
        task_config("/no/such/task.textproto")


def test_emulator_config_passthrough() -> None:
    config = emulator_config(
        "Pixel_6_API_33", adb_path="/opt/sdk/adb", emulator_path="/opt/sdk/emulator", grpc_port=8554
    )
    assert isinstance(config, config_classes.EmulatorConfig)
    launcher = config.emulator_launcher
    assert (launcher.avd_name, launcher.emulator_path, launcher.grpc_port) == (
        "Pixel_6_API_33",
        "/opt/sdk/emulator",
        8554,
    )
    assert config.adb_controller.adb_path == "/opt/sdk/adb"
    assert "adb not found" in emulator_missing(config)
    attach = emulator_config(
        "", grpc_port=8554, adb_port=5555, console_port=5554, adb_path=shutil.which("ls")
    )
    assert emulator_missing(attach) is None  # attaching needs adb only
    with pytest.raises(AndroidConfigError, match="avd_name"):
        emulator_config("")
    with pytest.raises(AndroidConfigError, match="grpc_port"):
        emulator_config("x", grpc_port=70000)


_AVD = os.environ.get("VLAGENT_AVD", "")
_EMULATOR = emulator_config(
    _AVD or "none",
    adb_path=shutil.which("adb") or "adb",
    emulator_path=shutil.which("emulator") or "emulator",
)


@pytest.mark.emulator
@pytest.mark.skipif(
    not _AVD or emulator_missing(_EMULATOR) is not None,
    reason="no Android emulator/adb or VLAGENT_AVD here",
)
def test_emulator_env_runs_unchanged() -> None:  # pragma: no cover - needs an SDK
    from gui.apps.android_env import make_android_emulator_env

    env = make_android_emulator_env(_EMULATOR)
    try:
        obs, _ = env.reset(seed=0)
        obs, _, _, _, info = env.step({"type": "click", "point": [0.5, 0.5]})
        assert obs["image"].ndim == 3 and info["backend_error"] is None
    finally:
        env.close()
