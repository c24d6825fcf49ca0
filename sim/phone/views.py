"""Screen layout: the phone state becomes a list of :class:`Node` s (pixel space).

One layout serves three readers: the renderer draws the nodes, hit-testing finds the node
under a touch, and the accessibility tree lists them. Each app screen is one function below;
the chrome and shared widgets live in :mod:`sim.phone.layout`.
"""

from __future__ import annotations

from sim.phone.config import PhoneConfig
from sim.phone.layout import (
    APP_ICONS,
    Builder,
    Node,
    View,
    chrome,
    form,
    header,
    nav_bar,
    scroll_list,
    textbox,
)
from sim.phone.state import TOGGLES, PhoneState

__all__ = ["APP_ICONS", "Node", "View", "build_view"]


def _launcher(b: Builder, state: PhoneState) -> None:
    cols = 4 if b.desktop else 3
    top = b.y0 + b.margin
    b.add("heading", "Apps", (b.x0 + b.margin, top, b.x1, top + b.row * 0.8), style="title")
    top += b.row
    cell = (b.x1 - b.x0) / cols
    for i, name in enumerate(state.apps):
        x = b.x0 + (i % cols) * cell
        y = top + (i // cols) * cell * 1.1
        b.add(
            "button",
            name,
            (x + 4, y, x + cell - 4, y + cell),
            command=f"open:{name}",
            style=f"app:{APP_ICONS.get(name, 'star')}",
        )


def _settings(b: Builder, state: PhoneState) -> None:
    y = header(b, "Settings")
    for key, label in TOGGLES.items():
        on = state.settings.toggles[key]
        b.add(
            "switch",
            label,
            (b.x0, y, b.x1, y + b.row),
            command=f"toggle:{key}",
            state="on" if on else "off",
            style="switch",
        )
        y += b.row
    value = state.settings.brightness
    b.add(
        "text", f"Brightness {value}%", (b.x0 + b.margin, y, b.x1, y + b.row * 0.7), style="label"
    )
    y += b.row * 0.7
    b.add(
        "slider",
        "Brightness",
        (b.x0 + 2 * b.margin, y, b.x1 - 2 * b.margin, y + b.row * 0.6),
        command="slider:brightness",
        state=str(value),
        style="slider",
    )


def _contacts(b: Builder, state: PhoneState) -> None:
    y = header(b, "Contacts", (("plus", "Add contact", "add_contact"),))
    y = textbox(b, state, "search", "Search contacts", y + b.margin / 2) + b.margin / 2
    query = state.ui.fields.get("search", "").casefold()
    rows = [(i, c.name) for i, c in enumerate(state.contacts) if query in c.name.casefold()]
    scroll_list(b, state, y, rows, "contact", "No contacts")


def _contact_detail(b: Builder, state: PhoneState) -> None:
    target = state.ui.target
    contact = (
        state.contacts[target] if target is not None and target < len(state.contacts) else None
    )
    name = contact.name if contact else "Contact"
    y = header(b, name, (("trash", "Delete contact", "delete_contact"),)) + b.margin
    if contact:
        for text in (f"Name: {contact.name}", f"Phone: {contact.phone}"):
            b.add("text", text, (b.x0 + b.margin, y, b.x1, y + b.row), style="label")
            y += b.row


def _contact_add(b: Builder, state: PhoneState) -> None:
    y = header(b, "New contact") + b.margin / 2
    form(b, state, y, (("name", "Name", 1.0), ("phone", "Phone", 1.0)), "save_contact")


def _note_edit(b: Builder, state: PhoneState) -> None:
    existing = state.ui.target is not None
    right = (("trash", "Delete note", "delete_note"),) if existing else ()
    y = header(b, "Edit note" if existing else "New note", right) + b.margin / 2
    form(b, state, y, (("title", "Title", 1.0), ("body", "Body", 2.5)), "save_note")


def _notes(b: Builder, state: PhoneState) -> None:
    y = header(b, "Notes", (("plus", "New note", "add_note"),))
    scroll_list(
        b,
        state,
        y,
        [(i, n.title or "(untitled)") for i, n in enumerate(state.notes)],
        "note",
        "No notes",
    )


def _clock(b: Builder, state: PhoneState) -> None:
    y = header(b, "Alarms", (("plus", "Add alarm", "add_alarm"),))
    scroll_list(
        b, state, y, [(i, a.label) for i, a in enumerate(state.alarms)], "alarm", "No alarms"
    )


def _alarm_edit(b: Builder, state: PhoneState) -> None:
    existing = state.ui.target is not None
    right = (("trash", "Delete alarm", "delete_alarm"),) if existing else ()
    y = header(b, "Edit alarm" if existing else "New alarm", right) + b.margin
    side = b.row * 0.8
    for name, label in (("hour", "Hour"), ("minute", "Minute")):
        b.add(
            "text",
            label,
            (b.x0 + b.margin, y, b.x0 + b.margin + b.row * 2, y + side),
            style="label",
        )
        left = b.x0 + b.margin + b.row * 2
        b.add(
            "button",
            f"Decrease {name}",
            (left, y, left + side, y + side),
            command=f"dec:{name}",
            style="icon:minimize",
        )
        box = (left + side + b.margin, y, left + 3 * side + b.margin, y + side)
        b.add(
            "textbox",
            state.ui.fields.get(name, ""),
            box,
            command=f"focus:{name}",
            hint=label,
            focused=state.ui.focus == name,
            style="textbox",
        )
        right_x = box[2] + b.margin
        b.add(
            "button",
            f"Increase {name}",
            (right_x, y, right_x + side, y + side),
            command=f"inc:{name}",
            style="icon:plus",
        )
        y += side + b.margin
    form(b, state, y, (), "save_alarm")


def _menu(b: Builder, state: PhoneState) -> None:
    b.add("", "", (0, 0, b.w, b.h), command="menu_cancel", layer=1, style="fill:scrim")
    cx, cy = (b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2
    hw = min((b.x1 - b.x0) * 0.4, b.row * 4)
    box = (cx - hw, cy - b.row * 1.2, cx + hw, cy + b.row * 1.2)
    b.add("dialog", "Options", box, layer=1, style="fill:surface")
    for k, (label, command) in enumerate((("Delete", "menu_delete"), ("Cancel", "menu_cancel"))):
        y = box[1] + b.margin / 2 + k * b.row * 1.1
        b.add(
            "button",
            label,
            (box[0] + b.margin, y, box[2] - b.margin, y + b.row),
            command=command,
            layer=1,
            style="menuitem",
        )


_SCREENS = {
    "launcher": _launcher,
    "settings": _settings,
    "contacts": _contacts,
    "contact_detail": _contact_detail,
    "contact_add": _contact_add,
    "notes": _notes,
    "note_edit": _note_edit,
    "clock": _clock,
    "alarm_edit": _alarm_edit,
}


def build_view(state: PhoneState, config: PhoneConfig) -> View:
    """Lay out the current screen of ``state`` for the form factor of ``config``."""
    b = Builder(config)
    chrome(b, state)
    _SCREENS[state.ui.screen](b, state)
    nav_bar(b)
    if state.ui.menu is not None:
        _menu(b, state)
    return View(tuple(b.nodes), b.list_box, b.page_rows, b.n_rows, b.row)
