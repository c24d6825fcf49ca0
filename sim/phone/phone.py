"""``Phone``: the synthetic phone OS behind one object (gestures in, pixels and a11y out).

Coordinates: every public method takes points normalized to [0, 1] of the screen (x right,
y down); pixels exist only inside (``x_px = x_norm * width``). Rendering is lazy: the state
changes on every action, pixels are drawn only when :meth:`Phone.screenshot` is called and the
last screenshot is cached until the state changes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from sim.phone import commands
from sim.phone.commands import Outcome
from sim.phone.config import PhoneConfig
from sim.phone.errors import PhoneStateError
from sim.phone.seeding import initial_state
from sim.phone.state import SCREENS, PhoneState, validate
from sim.phone.views import Node, View, build_view

Direction = Literal["up", "down", "left", "right"]
PointNorm = tuple[float, float]
_TAP_SLOP = 0.02  # a swipe shorter than this (fraction of the screen) is a tap


@dataclass(frozen=True)
class A11yNode:
    """One accessibility-tree element.

    Attributes:
        index: position in the tree (stable for one screen).
        role: ``button``, ``switch``, ``slider``, ``textbox``, ``listitem``, ``list``,
            ``heading``, ``text`` or ``dialog``.
        text: visible text / label (a textbox's value).
        bounds_norm: ``(x0, y0, x1, y1)`` in [0, 1] of the screen.
        state: ``"on"`` / ``"off"``, a slider value, ``"selected"`` or ``None``.
        hint: a textbox's placeholder.
        clickable: a tap does something.
        long_clickable: a long press does something.
        focused: the textbox receives typed text.
    """

    index: int
    role: str
    text: str
    bounds_norm: tuple[float, float, float, float]
    state: str | None
    hint: str
    clickable: bool
    long_clickable: bool
    focused: bool

    def line(self) -> str:
        """Compact one-line form, e.g. ``[3] switch "Wi-Fi" on @(0.00,0.13,1.00,0.21)``."""
        parts = [f"[{self.index}] {self.role} {json.dumps(self.text)}"]
        if self.hint and not self.text:
            parts.append(f"hint={json.dumps(self.hint)}")
        if self.state:
            parts.append(self.state)
        if self.focused:
            parts.append("focused")
        if self.long_clickable:
            parts.append("long-clickable")
        parts.append("@(" + ",".join(f"{v:.2f}" for v in self.bounds_norm) + ")")
        return " ".join(parts)


class Phone:
    """A seeded synthetic phone: settings, contacts, notes and alarms apps.

    Args:
        config: form factor and screen size (default: a 288x512 handset).
        seed: seed of the initial state (see :func:`sim.phone.seeding.initial_state`).
    """

    def __init__(self, config: PhoneConfig | None = None, seed: int = 0) -> None:
        self.config = config or PhoneConfig()
        self._state = initial_state(seed)
        self._version = 0
        self._view: tuple[int, View] | None = None
        self._image: tuple[int, np.ndarray] | None = None
        self.render_count = 0
        """How many screenshots were actually drawn (cache misses)."""

    # ----------------------------------------------------------------- state
    @property
    def state(self) -> PhoneState:
        """The live state tree (read it; change it through actions or :meth:`set_state`)."""
        return self._state

    @property
    def version(self) -> int:
        """Increases whenever the state changes."""
        return self._version

    def reset(self, seed: int) -> None:
        """Replace the state with the seeded initial state."""
        self.set_state(initial_state(seed))

    def set_state(self, state: PhoneState) -> None:
        """Replace the state with a validated copy of ``state``."""
        validate(state)
        self._state = state.copy()
        self._touch()

    def snapshot(self) -> bytes:
        """The full state as canonical JSON bytes (equal states give equal bytes)."""
        return json.dumps(self._state.to_dict(), sort_keys=True, separators=(",", ":")).encode()

    def restore(self, snapshot: bytes | str | dict[str, Any]) -> None:
        """Restore a :meth:`snapshot` (bytes / str) or a :meth:`PhoneState.to_dict` mapping.

        Raises:
            PhoneStateError: the snapshot is not valid JSON or not a valid state.
        """
        data: Any = snapshot
        if isinstance(snapshot, (bytes, str)):
            try:
                data = json.loads(snapshot)
            except ValueError as err:
                raise PhoneStateError(f"phone snapshot is not valid JSON: {err}") from err
        self._state = PhoneState.from_dict(data)
        self._touch()

    def _touch(self) -> None:
        self._version += 1

    def _apply(self, outcome: Outcome) -> Outcome:
        if outcome.changed:
            self._touch()
        return outcome

    # ------------------------------------------------------------ derived views
    @property
    def view(self) -> View:
        """The laid-out current screen (cached per state version)."""
        if self._view is None or self._view[0] != self._version:
            self._view = (self._version, build_view(self._state, self.config))
        return self._view[1]

    def screenshot(self) -> np.ndarray:
        """Read-only ``uint8 (H, W, 3)`` RGB screenshot, drawn only if the state changed."""
        if self._image is None or self._image[0] != self._version:
            from sim.phone.render import render

            s = self._state.settings
            image = render(self.view, self.config.size, s.toggles["dark_mode"], s.accent)
            image.setflags(write=False)
            self._image = (self._version, image)
            self.render_count += 1
        return self._image[1]

    def a11y_tree(self) -> list[A11yNode]:
        """Elements of the live layer (only the menu while one is open), in drawing order."""
        view = self.view
        w, h = self.config.size
        out: list[A11yNode] = []
        for node in view.nodes:
            if not node.role or node.layer != view.top_layer:
                continue
            x0, y0, x1, y1 = node.box
            bounds = (
                round(max(x0, 0) / w, 4),
                round(max(y0, 0) / h, 4),
                round(min(x1, w) / w, 4),
                round(min(y1, h) / h, 4),
            )
            out.append(
                A11yNode(
                    len(out),
                    node.role,
                    node.text,
                    bounds,
                    node.state,
                    node.hint,
                    node.command is not None,
                    node.long_command is not None,
                    node.focused,
                )
            )
        return out

    def a11y_text(self) -> str:
        """The accessibility tree as compact text: a window line, then one line per element."""
        app = SCREENS[self._state.ui.screen][0] or "Home"
        return "\n".join([f"window {json.dumps(app)}"] + [n.line() for n in self.a11y_tree()])

    # ----------------------------------------------------------------- gestures
    def _px(self, point: PointNorm) -> tuple[float, float]:
        x, y = float(point[0]), float(point[1])
        if not (math.isfinite(x) and math.isfinite(y) and 0 <= x <= 1 and 0 <= y <= 1):
            raise ValueError(f"point {point!r} is not normalized to [0, 1]")
        w, h = self.config.size
        return min(x * w, w - 0.5), min(y * h, h - 0.5)

    def _hit(self, point: PointNorm) -> Node | None:
        x, y = self._px(point)
        view = self.view
        for node in reversed(view.nodes):
            if node.layer != view.top_layer or (node.command is None and node.long_command is None):
                continue
            x0, y0, x1, y1 = node.box
            if x0 <= x < x1 and y0 <= y < y1:
                return node
        return None

    def tap(self, point: PointNorm) -> Outcome:
        """Tap at ``point`` (normalized): runs the topmost live element's command there."""
        node = self._hit(point)
        if node is None or node.command is None:
            return Outcome(False, f"nothing to tap at ({point[0]:.3f}, {point[1]:.3f})")
        x, _ = self._px(point)
        frac = (x - node.box[0]) / max(1, node.box[2] - node.box[0])
        return self._apply(commands.execute(self._state, node.command, frac))

    def double_tap(self, point: PointNorm) -> Outcome:
        """Two taps at ``point`` (the apps give double taps no meaning of their own)."""
        first = self.tap(point)
        second = self.tap(point)
        return Outcome(
            first.changed or second.changed, second.reason if not first.changed else None
        )

    def long_press(self, point: PointNorm) -> Outcome:
        """Long press at ``point``: opens a list row's menu (Delete / Cancel)."""
        node = self._hit(point)
        if node is None or node.long_command is None:
            return Outcome(False, f"nothing to long-press at ({point[0]:.3f}, {point[1]:.3f})")
        return self._apply(commands.execute(self._state, node.long_command))

    def swipe(self, start: PointNorm, end: PointNorm) -> Outcome:
        """Drag a finger from ``start`` to ``end``: moves a slider, or scrolls a list.

        A finger moving up scrolls the list down (towards later rows), as on Android.
        """
        (x0, y0), (x1, y1) = self._px(start), self._px(end)
        w, h = self.config.size
        if math.hypot((x1 - x0) / w, (y1 - y0) / h) < _TAP_SLOP:
            return self.tap(start)
        node = self._hit(start)
        if node is not None and node.command == "slider:brightness":
            frac = (x1 - node.box[0]) / max(1, node.box[2] - node.box[0])
            return self._apply(commands.execute(self._state, node.command, frac))
        view = self.view
        box = view.list_box
        if box is None or view.top_layer or not (box[0] <= x0 < box[2] and box[1] <= y0 < box[3]):
            return Outcome(False, "nothing to drag or scroll where the swipe starts")
        if abs(y1 - y0) < abs(x1 - x0):
            return Outcome(False, "lists here scroll vertically only")
        rows = round((y0 - y1) / max(1, view.row_px)) or (1 if y0 > y1 else -1)
        return self._apply(commands.scroll(self._state, rows, view.page_rows, view.n_rows))

    def scroll(self, point: PointNorm, direction: Direction) -> Outcome:
        """Scroll the list under ``point`` by most of a page; ``"down"`` reveals later rows."""
        x, y = self._px(point)
        view = self.view
        box = view.list_box
        if box is None or view.top_layer or not (box[0] <= x < box[2] and box[1] <= y < box[3]):
            return Outcome(False, f"nothing scrollable at ({point[0]:.3f}, {point[1]:.3f})")
        if direction not in ("up", "down"):
            return Outcome(False, f"lists here scroll vertically only, not {direction!r}")
        rows = max(1, view.page_rows - 1) * (1 if direction == "down" else -1)
        return self._apply(commands.scroll(self._state, rows, view.page_rows, view.n_rows))

    def type_text(self, text: str) -> Outcome:
        """Type into the focused text field."""
        return self._apply(commands.type_text(self._state, text))

    def press_key(self, key: str) -> Outcome:
        """Press a key (``back``, ``home``, ``enter``, ``backspace``...)."""
        return self._apply(commands.press_key(self._state, key))

    def open_app(self, name: str) -> Outcome:
        """Launch an installed app by name (case-insensitive)."""
        return self._apply(commands.open_app(self._state, name))

    def back(self) -> Outcome:
        """The system back button."""
        return self._apply(commands.back(self._state))

    def home(self) -> Outcome:
        """The system home button."""
        return self._apply(commands.home(self._state))
