"""Layout primitives: :class:`Node`, :class:`View`, the metrics builder and shared widgets.

One layout serves three readers: the renderer draws the nodes, hit-testing finds the node
under a touch, and the accessibility tree lists them. Nodes with an empty ``role`` are chrome
(bars, scrims) and stay out of the accessibility tree.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.phone.config import PhoneConfig
from sim.phone.state import SCREENS, PhoneState

BoxPx = tuple[int, int, int, int]
"""Integer pixel box ``(x0, y0, x1, y1)``, x1 / y1 exclusive."""

APP_ICONS: dict[str, str] = {
    "Settings": "gear",
    "Contacts": "user",
    "Notes": "folder",
    "Clock": "bell",
}
"""App -> pictogram of :mod:`sim.screens.icons` drawn on its launcher / sidebar entry."""


@dataclass(frozen=True)
class Node:
    """One element on screen.

    Attributes:
        role: accessibility role (``button``, ``switch``, ``slider``, ``textbox``,
            ``listitem``, ``list``, ``heading``, ``text``, ``dialog``); ``""`` for chrome.
        text: visible text or accessible label (the value of a textbox).
        box: pixel box, x1 / y1 exclusive.
        command: what a tap does (see :mod:`sim.phone.commands`), ``None`` if not clickable.
        long_command: what a long press does, or ``None``.
        state: ``"on"`` / ``"off"`` for switches, the value for sliders, ``"selected"``.
        hint: placeholder of a textbox.
        focused: the textbox receives typed text.
        layer: 0 for the screen, 1 for a modal menu above it (only the top layer is live).
        style: drawing hint for the renderer (``"fill:bar"``, ``"icon:gear"``, ``"app:bell"``...).
    """

    role: str
    text: str
    box: BoxPx
    command: str | None = None
    long_command: str | None = None
    state: str | None = None
    hint: str = ""
    focused: bool = False
    layer: int = 0
    style: str = ""


@dataclass(frozen=True)
class View:
    """A laid-out screen.

    Attributes:
        nodes: in drawing order (later nodes are on top).
        list_box: pixel box of the screen's scrollable list, or ``None``.
        page_rows: list rows that fit in ``list_box``.
        n_rows: rows the list has (after the search filter).
        row_px: height of one list row in pixels.
    """

    nodes: tuple[Node, ...]
    list_box: BoxPx | None
    page_rows: int
    n_rows: int
    row_px: int

    @property
    def top_layer(self) -> int:
        """The live layer: 1 while a menu is open, else 0."""
        return max(n.layer for n in self.nodes)


class Builder:
    """Metrics of the form factor (pixels) and the nodes laid out so far."""

    def __init__(self, config: PhoneConfig) -> None:
        self.w, self.h = config.size
        self.desktop = config.desktop
        u = self.h / (400 if self.desktop else 512)
        self.row = round((34 if self.desktop else 40) * u)
        self.header = round((38 if self.desktop else 44) * u)
        self.margin = max(4, round(10 * u))
        if self.desktop:
            self.bar = round(26 * u)
            self.x0, self.y0, self.x1, self.y1 = round(0.2 * self.w), self.bar, self.w, self.h
        else:
            self.bar, nav = round(22 * u), round(40 * u)
            self.x0, self.y0, self.x1, self.y1 = 0, self.bar, self.w, self.h - nav
        self.nodes: list[Node] = []
        self.list_box: BoxPx | None = None
        self.page_rows = self.n_rows = 0

    def add(self, role: str, text: str, box: tuple[float, ...], **kw: object) -> None:
        x0, y0, x1, y1 = (round(v) for v in box)
        self.nodes.append(Node(role, text, (x0, y0, x1, y1), **kw))  # type: ignore[arg-type]

    def square(self, cx: float, cy: float, side: float) -> tuple[float, ...]:
        return cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2


def chrome(b: Builder, state: PhoneState) -> None:
    app = SCREENS[state.ui.screen][0]
    b.add("", "", (0, 0, b.w, b.h), style="fill:bg")
    if b.desktop:
        b.add("", "", (0, 0, b.w, b.bar), style="fill:bar")
        b.add("", f"vlagent desktop - {app or 'Home'}", (b.margin, 0, b.w, b.bar), style="label")
        b.add("", "", (0, b.bar, b.x0, b.h), style="fill:side")
        entry = b.row
        b.add(
            "button",
            "Home",
            (0, b.bar, b.x0, b.bar + entry),
            command="home",
            style="side:home",
            state="selected" if app is None else None,
        )
        for i, name in enumerate(state.apps):
            top = b.bar + entry * (i + 1)
            b.add(
                "button",
                name,
                (0, top, b.x0, top + entry),
                command=f"open:{name}",
                style=f"side:{APP_ICONS.get(name, 'star')}",
                state="selected" if name == app else None,
            )
        return
    b.add("", "", (0, 0, b.w, b.bar), style="fill:bar")
    b.add("", "9:41", (b.margin, 0, b.w // 2, b.bar), style="label")


def nav_bar(b: Builder) -> None:
    """The handset's back / home buttons, laid out after the screen so they stay on top."""
    if b.desktop:
        return
    b.add("", "", (0, b.y1, b.w, b.h), style="fill:bar")
    side = (b.h - b.y1) * 0.55
    cy = (b.y1 + b.h) / 2
    b.add("button", "Back", b.square(b.w * 0.3, cy, side), command="back", style="icon:back")
    b.add("button", "Home", b.square(b.w * 0.7, cy, side), command="home", style="icon:home")


def header(b: Builder, title: str, right: tuple[tuple[str, str, str], ...] = ()) -> float:
    """App bar with a back button, a title and icon buttons; returns its bottom edge."""
    y0, y1 = b.y0, b.y0 + b.header
    b.add("", "", (b.x0, y0, b.x1, y1), style="fill:bar")
    side = b.header * 0.55
    cy = (y0 + y1) / 2
    b.add(
        "button",
        "Back",
        b.square(b.x0 + b.margin + side / 2, cy, side),
        command="back",
        style="icon:back",
    )
    right_edge = b.x1 - b.margin - len(right) * (side + b.margin)
    b.add("heading", title, (b.x0 + 2 * b.margin + side, y0, right_edge, y1), style="title")
    for k, (icon, label, command) in enumerate(right):
        cx = b.x1 - b.margin - side / 2 - k * (side + b.margin)
        b.add("button", label, b.square(cx, cy, side), command=command, style=f"icon:{icon}")
    return y1


def textbox(
    b: Builder, state: PhoneState, name: str, hint: str, y: float, rows: float = 1.0
) -> float:
    """A text field with a clear button when it holds text; returns the bottom edge."""
    ui = state.ui
    h = b.row * 0.8 * rows
    value = ui.fields.get(name, "")
    box = (b.x0 + b.margin, y, b.x1 - b.margin, y + h)
    b.add(
        "textbox",
        value,
        box,
        command=f"focus:{name}",
        hint=hint,
        focused=ui.focus == name,
        style="textbox",
    )
    if value and name not in ("hour", "minute"):
        side = b.row * 0.4
        b.add(
            "button",
            f"Clear {hint.lower()}",
            b.square(box[2] - side, y + b.row * 0.4, side),
            command=f"clear:{name}",
            style="icon:close",
        )
    return y + h


def scroll_list(
    b: Builder, state: PhoneState, top: float, labels: list[tuple[int, str]], kind: str, empty: str
) -> None:
    """Scrollable rows ``(index into the app's data, label)`` below ``top``."""
    box = (b.x0, round(top), b.x1, b.y1)
    b.list_box = box
    b.page_rows = max(1, (box[3] - box[1]) // b.row)
    b.n_rows = len(labels)
    first = min(state.ui.scroll, max(0, len(labels) - b.page_rows))
    shown = labels[first : first + b.page_rows]
    rows = f"rows {first + 1}-{first + len(shown)} of {len(labels)}" if labels else "empty"
    b.add("list", f"{kind} list", box, state=rows)
    if not labels:
        b.add("text", empty, (b.x0 + b.margin, top, b.x1, top + b.row), style="muted")
    for k, (index, label) in enumerate(shown):
        y = top + k * b.row
        b.add(
            "listitem",
            label,
            (b.x0, y, b.x1, y + b.row),
            command=f"open_{kind}:{index}",
            long_command=f"menu:{index}",
            style="row",
        )
        if kind == "alarm":
            alarm = state.alarms[index]
            sh = b.row * 0.5
            sw = sh * 1.8
            sy = y + (b.row - sh) / 2
            b.add(
                "switch",
                f"Alarm {label}",
                (b.x1 - b.margin - sw, sy, b.x1 - b.margin, sy + sh),
                command=f"toggle_alarm:{index}",
                state="on" if alarm.enabled else "off",
                style="switch_only",
            )


def form(
    b: Builder, state: PhoneState, y: float, fields: tuple[tuple[str, str, float], ...], save: str
) -> None:
    for name, hint, rows in fields:
        b.add("text", hint, (b.x0 + b.margin, y, b.x1, y + b.row * 0.6), style="muted")
        y = textbox(b, state, name, hint, y + b.row * 0.6, rows) + b.margin / 2
    bw = min(b.x1 - b.x0 - 2 * b.margin, b.row * 3)
    b.add(
        "button",
        "Save",
        (b.x1 - b.margin - bw, y, b.x1 - b.margin, y + b.row * 0.8),
        command=save,
        style="button",
    )
    if state.ui.message:
        y += b.row
        b.add("text", state.ui.message, (b.x0 + b.margin, y, b.x1, y + b.row * 0.7), style="error")
