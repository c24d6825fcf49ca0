"""The phone's state tree: settings, app data and UI (plain dataclasses, JSON round-trip).

Everything a task checker reads lives here; rendering and hit-testing are derived from it, so a
snapshot of this tree is a snapshot of the whole phone.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import Any

from sim.phone.errors import PhoneStateError

APPS: tuple[str, ...] = ("Settings", "Contacts", "Notes", "Clock")
"""Apps installed on the synthetic phone (there is no dialer, camera or mail app)."""

TOGGLES: dict[str, str] = {
    "wifi": "Wi-Fi",
    "bluetooth": "Bluetooth",
    "airplane": "Airplane mode",
    "dark_mode": "Dark mode",
    "location": "Location",
    "dnd": "Do not disturb",
}
"""Settings switches: key -> label shown on screen."""

RADIOS: tuple[str, ...] = ("wifi", "bluetooth")
"""Switches that airplane mode turns off when it is switched on."""

SCREENS: dict[str, tuple[str | None, str | None]] = {
    "launcher": (None, None),
    "settings": ("Settings", "launcher"),
    "contacts": ("Contacts", "launcher"),
    "contact_detail": ("Contacts", "contacts"),
    "contact_add": ("Contacts", "contacts"),
    "notes": ("Notes", "launcher"),
    "note_edit": ("Notes", "notes"),
    "clock": ("Clock", "launcher"),
    "alarm_edit": ("Clock", "clock"),
}
"""Screen -> (app it belongs to, screen ``back`` returns to)."""

APP_ROOTS: dict[str, str] = {
    "Settings": "settings",
    "Contacts": "contacts",
    "Notes": "notes",
    "Clock": "clock",
}
"""App -> the screen opening it shows."""

FIELD_LIMITS: dict[str, int] = {
    "search": 40,
    "name": 40,
    "phone": 20,
    "title": 60,
    "body": 240,
    "hour": 2,
    "minute": 2,
}
"""Text fields and their maximum length in characters."""

STATE_VERSION = 1


@dataclass
class Contact:
    """An address-book entry."""

    name: str
    phone: str


@dataclass
class Note:
    """A note of the Notes app."""

    title: str
    body: str


@dataclass
class Alarm:
    """An alarm of the Clock app; ``hour`` in [0, 23], ``minute`` in [0, 59]."""

    hour: int
    minute: int
    enabled: bool = True

    @property
    def label(self) -> str:
        """``"HH:MM"``."""
        return f"{self.hour:02d}:{self.minute:02d}"


@dataclass
class Settings:
    """System settings: every switch of :data:`TOGGLES`, brightness in percent, accent colour."""

    toggles: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(TOGGLES, False))
    brightness: int = 50
    accent: str = "blue"


@dataclass
class Ui:
    """What is on screen.

    Attributes:
        screen: a key of :data:`SCREENS`.
        scroll: index of the first visible row of the screen's list.
        focus: the text field receiving typed text (a key of :data:`FIELD_LIMITS`) or ``None``.
        replace_on_type: the next typed text replaces the focused field (numeric pickers).
        fields: drafts of the text fields of the current screen.
        target: index of the contact / note / alarm being viewed or edited (``None``: new).
        menu: index of the row whose long-press menu is open, or ``None``.
        message: a one-line notice shown on the current screen (validation errors).
    """

    screen: str = "launcher"
    scroll: int = 0
    focus: str | None = None
    replace_on_type: bool = False
    fields: dict[str, str] = field(default_factory=dict)
    target: int | None = None
    menu: int | None = None
    message: str = ""


@dataclass
class PhoneState:
    """The whole phone: settings, app data and UI."""

    settings: Settings = field(default_factory=Settings)
    contacts: list[Contact] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    alarms: list[Alarm] = field(default_factory=list)
    ui: Ui = field(default_factory=Ui)
    apps: tuple[str, ...] = APPS

    def copy(self) -> PhoneState:
        """A deep copy."""
        return copy.deepcopy(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping (lists and dicts of str / int / bool only)."""
        out = asdict(self)
        out["apps"] = list(self.apps)
        out["version"] = STATE_VERSION
        return out

    @classmethod
    def from_dict(cls, data: Any) -> PhoneState:
        """Inverse of :meth:`to_dict`.

        Raises:
            PhoneStateError: naming the field that is missing or malformed.
        """
        if not isinstance(data, dict):
            raise PhoneStateError(f"phone state must be a mapping, got {type(data).__name__}")
        if data.get("version") != STATE_VERSION:
            raise PhoneStateError(
                f"phone state version {data.get('version')!r} is not {STATE_VERSION}"
            )
        try:
            s, ui = data["settings"], data["ui"]
            state = cls(
                settings=Settings(dict(s["toggles"]), int(s["brightness"]), str(s["accent"])),
                contacts=[Contact(str(c["name"]), str(c["phone"])) for c in data["contacts"]],
                notes=[Note(str(n["title"]), str(n["body"])) for n in data["notes"]],
                alarms=[
                    Alarm(int(a["hour"]), int(a["minute"]), bool(a["enabled"]))
                    for a in data["alarms"]
                ],
                ui=Ui(**ui),
                apps=tuple(data["apps"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise PhoneStateError(f"phone state field is missing or malformed: {err!r}") from err
        validate(state)
        return state


def validate(state: PhoneState) -> None:
    """Check the invariants every transition keeps.

    Raises:
        PhoneStateError: naming the offending field and value.
    """
    toggles = state.settings.toggles
    if set(toggles) != set(TOGGLES) or not all(isinstance(v, bool) for v in toggles.values()):
        raise PhoneStateError(f"settings.toggles must map {sorted(TOGGLES)} to bools: {toggles}")
    if not 0 <= state.settings.brightness <= 100:
        raise PhoneStateError(f"settings.brightness {state.settings.brightness} not in [0, 100]")
    if state.ui.screen not in SCREENS:
        raise PhoneStateError(f"ui.screen {state.ui.screen!r} unknown; known: {sorted(SCREENS)}")
    if state.ui.focus is not None and state.ui.focus not in FIELD_LIMITS:
        raise PhoneStateError(f"ui.focus {state.ui.focus!r} is not a text field")
    for i, alarm in enumerate(state.alarms):
        if not (0 <= alarm.hour <= 23 and 0 <= alarm.minute <= 59):
            raise PhoneStateError(f"alarms[{i}] time {alarm.label} is not a valid time")


def sort_contacts(contacts: list[Contact]) -> None:
    """Sort in place the way the Contacts app lists them (case-insensitive by name)."""
    contacts.sort(key=lambda c: (c.name.casefold(), c.phone))


def sort_alarms(alarms: list[Alarm]) -> None:
    """Sort in place the way the Clock app lists them (by time of day)."""
    alarms.sort(key=lambda a: (a.hour, a.minute))


def digits(text: str) -> str:
    """The digits of a phone number (``"555-0101"`` -> ``"5550101"``)."""
    return "".join(ch for ch in text if ch.isdigit())
