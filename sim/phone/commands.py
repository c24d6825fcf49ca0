"""State transitions of the phone: what each on-screen command, key and typed text does.

Commands are the strings :mod:`sim.phone.views` attaches to nodes (``"toggle:wifi"``,
``"open_contact:3"``...). Every function mutates the state in place and returns an
:class:`Outcome`; nothing here raises for a user action that makes no sense, it reports why.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from sim.phone.errors import PhoneError
from sim.phone.state import (
    APP_ROOTS,
    FIELD_LIMITS,
    RADIOS,
    SCREENS,
    TOGGLES,
    Alarm,
    Contact,
    Note,
    PhoneState,
    Ui,
    digits,
    sort_alarms,
    sort_contacts,
)

KEYS: dict[str, str] = {
    "back": "back",
    "escape": "back",
    "home": "home",
    "enter": "enter",
    "backspace": "backspace",
    "delete": "backspace",
    "del": "backspace",
}
"""Key names the phone understands -> the key they act as (case-insensitive)."""
_TYPABLE = frozenset(string.printable) - frozenset("\t\n\r\x0b\x0c")
_STEP = {"hour": 1, "minute": 5}
_RANGE = {"hour": 24, "minute": 60}


@dataclass(frozen=True)
class Outcome:
    """Result of one user action.

    Attributes:
        changed: the state changed.
        reason: why nothing (or less than asked) happened, else ``None``.
        invalid: the action cannot be executed at all (unknown app, no focused field, bad key),
            as opposed to a valid action that happened to hit nothing.
    """

    changed: bool
    reason: str | None = None
    invalid: bool = False


DONE = Outcome(True)


def _noop(reason: str) -> Outcome:
    return Outcome(False, reason)


def _invalid(reason: str) -> Outcome:
    return Outcome(False, reason, invalid=True)


def go(state: PhoneState, screen: str, **ui: object) -> Outcome:
    """Show ``screen`` with a fresh UI state (drafts, focus, scroll and menu reset)."""
    state.ui = Ui(screen=screen, **ui)  # type: ignore[arg-type]
    return DONE


def back(state: PhoneState) -> Outcome:
    """Close the open menu, else go to the parent screen."""
    if state.ui.menu is not None:
        state.ui.menu = None
        return DONE
    parent = SCREENS[state.ui.screen][1]
    if parent is None:
        return _noop("already on the home screen")
    return go(state, parent)


def home(state: PhoneState) -> Outcome:
    """Go to the launcher."""
    if state.ui.screen == "launcher" and state.ui.menu is None:
        return _noop("already on the home screen")
    return go(state, "launcher")


def open_app(state: PhoneState, name: str) -> Outcome:
    """Open an installed app by name (case-insensitive)."""
    wanted = name.strip().casefold()
    for app in state.apps:
        if app.casefold() == wanted:
            return go(state, APP_ROOTS[app])
    return _invalid(f"app {name!r} is not installed; installed: {', '.join(state.apps)}")


def type_text(state: PhoneState, text: str) -> Outcome:
    """Type ``text`` into the focused field (appending, or replacing in a numeric picker)."""
    ui = state.ui
    if ui.focus is None:
        return _invalid("no text field is focused; tap a text field first")
    bad = sorted(set(text) - _TYPABLE)
    if bad:
        return _invalid(f"the keyboard cannot type {''.join(bad)!r} (printable ASCII only)")
    if ui.focus in _STEP and not text.isdigit():
        return _invalid(f"the {ui.focus} field accepts digits only, got {text!r}")
    old = "" if ui.replace_on_type else ui.fields.get(ui.focus, "")
    limit = FIELD_LIMITS[ui.focus]
    new = (old + text)[:limit]
    ui.fields[ui.focus] = new
    ui.replace_on_type = False
    if ui.focus == "search":
        ui.scroll = 0
    if len(old + text) > limit:
        return Outcome(True, f"text truncated to {limit} characters")
    return DONE


def press_key(state: PhoneState, key: str) -> Outcome:
    """Press a key of :data:`KEYS`."""
    action = KEYS.get(key.strip().lower())
    if action is None:
        return _invalid(f"key {key!r} is not supported; supported: {', '.join(KEYS)}")
    if action == "back":
        return back(state)
    if action == "home":
        return home(state)
    ui = state.ui
    if ui.focus is None:
        return _invalid(f"key {key!r} needs a focused text field")
    if action == "enter":
        ui.focus = None
        return DONE
    value = ui.fields.get(ui.focus, "")
    if not value:
        return _noop(f"the {ui.focus} field is already empty")
    ui.fields[ui.focus] = value[:-1]
    ui.replace_on_type = False
    return DONE


def scroll(state: PhoneState, rows: int, page_rows: int, n_rows: int) -> Outcome:
    """Move the current list by ``rows`` (positive: towards the end), clamped to its length."""
    last = max(0, n_rows - page_rows)
    new = min(max(state.ui.scroll + rows, 0), last)
    if new == state.ui.scroll:
        return _noop("the list cannot scroll further that way")
    state.ui.scroll = new
    return DONE


def _items(state: PhoneState) -> list[Contact] | list[Note] | list[Alarm]:
    app = SCREENS[state.ui.screen][0]
    return {"Contacts": state.contacts, "Notes": state.notes}.get(app or "", state.alarms)


def _delete(state: PhoneState, index: int | None, parent: str) -> Outcome:
    items = _items(state)
    if index is None or not 0 <= index < len(items):
        return _noop("nothing to delete")
    del items[index]
    return go(state, parent)


def _save_contact(state: PhoneState) -> Outcome:
    name = state.ui.fields.get("name", "").strip()
    phone = state.ui.fields.get("phone", "").strip()
    if not name:
        state.ui.message = "Name is required"
        return Outcome(True, "contact not saved: name is required")
    if len(digits(phone)) < 3 or any(ch not in "0123456789 -+()" for ch in phone):
        state.ui.message = "Enter a valid phone number"
        return Outcome(True, "contact not saved: invalid phone number")
    state.contacts.append(Contact(" ".join(name.split()), phone))
    sort_contacts(state.contacts)
    return go(state, "contacts")


def _save_note(state: PhoneState) -> Outcome:
    title = state.ui.fields.get("title", "").strip()
    body = state.ui.fields.get("body", "").strip()
    if not title and not body:
        state.ui.message = "Write a title or a body"
        return Outcome(True, "note not saved: it is empty")
    target = state.ui.target
    if target is not None and 0 <= target < len(state.notes):
        state.notes[target] = Note(title, body)
    else:
        state.notes.insert(0, Note(title, body))
    return go(state, "notes")


def _save_alarm(state: PhoneState) -> Outcome:
    raw = [state.ui.fields.get(k, "") for k in ("hour", "minute")]
    if not all(v.isdigit() for v in raw) or int(raw[0]) > 23 or int(raw[1]) > 59:
        state.ui.message = "Enter an hour 0-23 and a minute 0-59"
        return Outcome(True, "alarm not saved: invalid time")
    hour, minute = int(raw[0]), int(raw[1])
    target = state.ui.target
    if target is not None and 0 <= target < len(state.alarms):
        del state.alarms[target]
    same = [a for a in state.alarms if (a.hour, a.minute) == (hour, minute)]
    if same:
        same[0].enabled = True
    else:
        state.alarms.append(Alarm(hour, minute, True))
    sort_alarms(state.alarms)
    return go(state, "clock")


def _step_field(state: PhoneState, name: str, sign: int) -> Outcome:
    raw = state.ui.fields.get(name, "")
    value = int(raw) if raw.isdigit() else 0
    value = (value + sign * _STEP[name]) % _RANGE[name]
    state.ui.fields[name] = f"{value:02d}"
    state.ui.replace_on_type = False
    return DONE


def _toggle(state: PhoneState, key: str) -> Outcome:
    toggles = state.settings.toggles
    toggles[key] = not toggles[key]
    if key == "airplane" and toggles[key]:
        toggles.update(dict.fromkeys(RADIOS, False))
    return DONE


def execute(state: PhoneState, command: str, x_frac: float = 0.5) -> Outcome:
    """Run the tap command of a node.

    Args:
        state: mutated in place.
        command: a node's ``command`` or ``long_command``.
        x_frac: where in the node the touch landed, as a fraction of its width (sliders).
    """
    name, _, arg = command.partition(":")
    ui = state.ui
    if name == "back":
        return back(state)
    if name == "home":
        return home(state)
    if name == "open":
        return open_app(state, arg)
    if name == "toggle" and arg in TOGGLES:
        return _toggle(state, arg)
    if name == "slider":
        value = int(round(min(max(x_frac, 0.0), 1.0) * 100))
        changed = value != state.settings.brightness
        state.settings.brightness = value
        return Outcome(changed, None if changed else f"brightness is already {value}%")
    if name == "focus":
        ui.focus, ui.replace_on_type = arg, arg in _STEP
        return DONE
    if name == "clear":
        ui.fields[arg], ui.focus, ui.scroll = "", arg, 0
        return DONE
    if name in ("inc", "dec"):
        return _step_field(state, arg, 1 if name == "inc" else -1)
    if name == "menu":
        ui.menu = int(arg)
        return DONE
    if name == "menu_cancel":
        ui.menu = None
        return DONE
    if name == "menu_delete":
        return _delete(state, ui.menu, ui.screen)  # menus open on list screens only
    if name == "toggle_alarm":
        alarm = state.alarms[int(arg)]
        alarm.enabled = not alarm.enabled
        return DONE
    if name == "add_contact":
        return go(state, "contact_add", fields={"name": "", "phone": ""}, focus="name")
    if name == "open_contact":
        return go(state, "contact_detail", target=int(arg))
    if name == "add_note":
        return go(state, "note_edit", fields={"title": "", "body": ""}, focus="title")
    if name == "open_note":
        note = state.notes[int(arg)]
        return go(
            state, "note_edit", target=int(arg), fields={"title": note.title, "body": note.body}
        )
    if name == "add_alarm":
        return go(state, "alarm_edit", fields={"hour": "08", "minute": "00"})
    if name == "open_alarm":
        alarm = state.alarms[int(arg)]
        fields = {"hour": f"{alarm.hour:02d}", "minute": f"{alarm.minute:02d}"}
        return go(state, "alarm_edit", target=int(arg), fields=fields)
    if name.startswith("delete_"):
        return _delete(state, ui.target, SCREENS[ui.screen][1] or "launcher")
    saves = {"save_contact": _save_contact, "save_note": _save_note, "save_alarm": _save_alarm}
    if name in saves:
        return saves[name](state)
    raise PhoneError(
        f"unknown phone command {command!r} (a view attached a command no handler knows)"
    )
