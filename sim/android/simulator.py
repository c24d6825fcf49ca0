"""android-env simulators backed by our code: the synthetic phone, and a seeded fake.

:class:`SyntheticPhoneSimulator` plugs :class:`sim.phone.Phone` into android-env as a
``BaseSimulator``: android-env's coordinator sends touch events in pixels (``send_touch``),
a gesture recognizer turns TOUCH / LIFT sequences back into taps, long presses and swipes,
and a synthetic adb controller answers the adb commands android-env's ``AdbCallParser``
issues (``input text``, ``input keyevent``, ``am start``...) by acting on the phone.

:class:`SeededFakeSimulator` is android-env's ``FakeSimulator`` whose random screenshots come
from a per-instance seeded generator instead of the global ``np.random``, so a reset with a
seed gives the same first frame (android-env's fake is otherwise left unchanged).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from android_env.components import adb_controller, config_classes, fake_log_stream, log_stream
from android_env.components.simulators import base_simulator
from android_env.components.simulators.fake import fake_simulator
from android_env.proto import state_pb2

from sim.android.adb_text import unescape_text
from sim.phone import Outcome, Phone, PhoneConfig, PhoneStateError
from sim.phone.state import SCREENS

PACKAGE = "com.vlagent.phone"
ACTIVITIES: dict[str, str] = {
    app: f"{PACKAGE}/.{app}" for app in ("Settings", "Contacts", "Notes", "Clock")
}
"""App name -> the activity ``am start -n`` launches on the synthetic phone."""
_KEYS = {
    "KEYCODE_HOME": "home",
    "KEYCODE_BACK": "back",
    "KEYCODE_ENTER": "enter",
    "KEYCODE_DEL": "backspace",
    "KEYCODE_ESCAPE": "escape",
}
ANDROID_KEYCODES: dict[int, str] = {
    3: "home",
    4: "back",
    66: "enter",
    67: "backspace",
    111: "escape",
}
"""Android ``KeyEvent`` codes ``send_key`` understands -> phone key names."""


@dataclasses.dataclass
class SyntheticPhoneConfig(config_classes.SimulatorConfig):
    """Config of :class:`SyntheticPhoneSimulator` (android-env's ``SimulatorConfig`` + ours).

    Attributes:
        desktop: the desktop-like form factor.
        width: screen width in pixels (``None``: the form factor's default).
        height: screen height in pixels.
        seed: seed of the phone's initial state.
        long_press_touches: TOUCH events at one spot (before LIFT) that make a long press.
        tap_slop: finger travel (fraction of the screen diagonal) below which a gesture is a tap.
    """

    desktop: bool = False
    width: int | None = None
    height: int | None = None
    seed: int = 0
    long_press_touches: int = 3
    tap_slop: float = 0.02


@dataclasses.dataclass
class SeededFakeSimulatorConfig(config_classes.FakeSimulatorConfig):
    """android-env's ``FakeSimulatorConfig`` plus the seed of its noise screenshots."""

    seed: int = 0


class SyntheticAdbController(adb_controller.AdbController):
    """Answers adb commands by acting on a phone instead of running the ``adb`` binary."""

    def __init__(self, simulator: SyntheticPhoneSimulator) -> None:
        # Reading the port from the OS env keeps AdbController from editing os.environ.
        super().__init__(config_classes.AdbControllerConfig(use_adb_server_port_from_os_env=True))
        self._sim = simulator

    def execute_command(
        self, args: list[str], timeout: float | None = None, device_specific: bool = True
    ) -> bytes:
        """Output android-env's parsers expect; ``input`` / ``am start`` change the phone."""
        del timeout, device_specific
        sim, phone = self._sim, self._sim.phone
        args = [a for a in args if a]
        if args[:3] == ["shell", "input", "text"] and len(args) == 4:
            try:  # a real device shell would run what an unescaped character means
                text = unescape_text(args[3])
            except ValueError as err:
                sim.record(Outcome(False, f"input text {args[3][:40]!r}: {err}", True))
                return b""
            sim.record(phone.type_text(text))
        elif args[:3] == ["shell", "input", "keyevent"] and len(args) == 4:
            key = _KEYS.get(args[3])
            sim.record(
                phone.press_key(key) if key else Outcome(False, f"{args[3]} unsupported", True)
            )
        elif args[:3] == ["shell", "input", "tap"] and len(args) == 5:
            sim.record(phone.tap(sim.to_norm(float(args[3]), float(args[4]))))
        elif args[:3] == ["shell", "am", "start"]:
            activity = args[args.index("-n") + 1] if "-n" in args[:-1] else ""
            app = next((a for a, act in ACTIVITIES.items() if act == activity), None)
            if app is None or app not in phone.state.apps:
                sim.record(Outcome(False, f"activity {activity!r} is not installed", True))
                return b"Error: Activity not started, unable to resolve Intent"
            sim.record(phone.open_app(app))
        elif args[:4] == ["shell", "am", "stack", "list"]:
            app = SCREENS[phone.state.ui.screen][0] or "Launcher"
            activity = f"{PACKAGE}/.{app}"
            return (
                f"taskId=1 {activity} visible=true topActivity=ComponentInfo{{{activity}}}".encode()
            )
        elif args == ["shell", "dumpsys", "input"]:
            return b" SurfaceOrientation: 0"
        elif args[:3] == ["shell", "service", "check"]:
            return f"Service {args[-1]}: found".encode()
        return b""


class SyntheticPhoneSimulator(base_simulator.BaseSimulator):
    """The synthetic phone as an android-env simulator (touches in pixels, screenshots out)."""

    def __init__(self, config: SyntheticPhoneConfig) -> None:
        super().__init__(config)
        self._cfg = config
        self.phone = Phone(
            PhoneConfig(config.desktop, config.width, config.height), seed=config.seed
        )
        self.last_outcome: Outcome | None = None
        """What the last gesture, key or adb command did (``None`` after :meth:`clear_outcome`)."""
        self._gesture: list[tuple[float, float]] = []
        self._saved: dict[str, bytes] = {}

    def record(self, outcome: Outcome) -> Outcome:
        """Remember ``outcome`` as :attr:`last_outcome`."""
        self.last_outcome = outcome
        return outcome

    def cancel_gesture(self) -> None:
        """Drop a half-done gesture (its LIFT never came), e.g. before a reset."""
        self._gesture = []

    def clear_outcome(self) -> None:
        """Forget the last outcome (call before a new action)."""
        self.last_outcome = None

    def to_norm(self, x_px: float, y_px: float) -> tuple[float, float]:
        """Pixel (android-env's ``int(x * width)``) to the normalized centre of that pixel."""
        w, h = self.phone.config.size
        return min((x_px + 0.5) / w, 1.0), min((y_px + 0.5) / h, 1.0)

    def adb_device_name(self) -> str:
        return "vlagent-synthetic-phone"

    def create_adb_controller(self) -> SyntheticAdbController:
        return SyntheticAdbController(self)

    def create_log_stream(self) -> log_stream.LogStream:
        return fake_log_stream.FakeLogStream()  # queue-fed: silent unless lines are sent

    def _launch_impl(self) -> None:
        self._gesture = []

    def send_touch(self, touches: list[tuple[int, int, bool, int]]) -> None:
        """Recognize gestures from the first finger: TOUCH* then LIFT."""
        x, y, down, _ = touches[0]
        if down:
            self._gesture.append(self.to_norm(x, y))
            return
        if not self._gesture:
            return  # a LIFT with no finger down (android-env lifts at every reset)
        start, end, count = self._gesture[0], self._gesture[-1], len(self._gesture)
        self._gesture = []
        if math.dist(start, end) >= self._cfg.tap_slop:
            self.record(self.phone.swipe(start, end))
        elif count >= self._cfg.long_press_touches:
            self.record(self.phone.long_press(start))
        else:
            self.record(self.phone.tap(start))

    def send_key(self, keycode: np.int32, event_type: str) -> None:
        """Android ``KeyEvent`` codes (:data:`ANDROID_KEYCODES`) on keydown / keypress."""
        if event_type == "keyup":
            return
        key = ANDROID_KEYCODES.get(int(keycode))
        outcome = self.phone.press_key(key) if key else Outcome(False, f"keycode {keycode}", True)
        self.record(outcome)

    def _get_screenshot_impl(self) -> np.ndarray:
        return self.phone.screenshot().copy()

    def save_state(self, request: state_pb2.SaveStateRequest) -> state_pb2.SaveStateResponse:
        """Keep a phone snapshot under ``args["name"]``; it is also in ``additional_info``."""
        snapshot = self.phone.snapshot()
        self._saved[request.args.get("name", "default")] = snapshot
        return state_pb2.SaveStateResponse(
            status=state_pb2.SaveStateResponse.Status.OK,
            additional_info={"snapshot": snapshot.decode()},
        )

    def load_state(self, request: state_pb2.LoadStateRequest) -> state_pb2.LoadStateResponse:
        """Restore ``args["snapshot"]`` (JSON) or the snapshot saved as ``args["name"]``."""
        status = state_pb2.LoadStateResponse.Status
        snapshot = request.args.get("snapshot") or self._saved.get(
            request.args.get("name", "default")
        )
        if snapshot is None:
            return state_pb2.LoadStateResponse(
                status=status.NOT_FOUND, error_message="no such state"
            )
        try:
            self.phone.restore(snapshot)
        except PhoneStateError as err:
            return state_pb2.LoadStateResponse(status=status.ERROR, error_message=str(err))
        self._gesture = []
        return state_pb2.LoadStateResponse(status=status.OK)


class SeededFakeSimulator(fake_simulator.FakeSimulator):
    """android-env's ``FakeSimulator`` with seeded noise screenshots; records touches sent."""

    def __init__(self, config: SeededFakeSimulatorConfig) -> None:
        super().__init__(config)
        self._rng = np.random.default_rng(config.seed)
        self.touches: list[tuple[int, int, bool, int]] = []
        """Every first-finger touch event received, in pixels (for tests and debugging)."""

    def reseed(self, seed: int) -> None:
        """Restart the screenshot noise from ``seed``."""
        self._rng = np.random.default_rng(seed)

    def send_touch(self, touches: list[tuple[int, int, bool, int]]) -> None:
        self.touches.append(touches[0])

    def _get_screenshot_impl(self) -> np.ndarray:
        return self._rng.integers(0, 256, size=(*self._screen_dimensions, 3), dtype=np.uint8)
