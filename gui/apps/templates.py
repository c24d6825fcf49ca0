"""Task templates: parameters, instruction, initial-state setup and the state checker.

A :class:`TaskTemplate` turns validated parameters into an instruction, prepares the seeded
initial state so the task is well posed (the contact to delete exists, the alarm to add does
not...) and says when the state completes the task. Infeasible templates ("call Bob" on a
phone without a dialer) are completed only by ending the episode with ``fail``.
"""

from __future__ import annotations

import abc
import enum
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from sim.phone import Alarm, Contact, Note, PhoneState, digits
from sim.phone.seeding import NOTE_SEEDS, phone_number
from sim.phone.state import sort_alarms, sort_contacts

PersonName = Annotated[
    str, Field(pattern=r"^[A-Z][A-Za-z'-]*( [A-Z][A-Za-z'-]*){0,3}$", max_length=40)
]
PhoneNumber = Annotated[str, Field(pattern=r"^\+?[0-9][0-9 -]{2,18}[0-9]$")]
Title = Annotated[str, Field(pattern=r"^[!-~]([ -~]*[!-~])?$", max_length=60)]
Body = Annotated[str, Field(pattern=r"^[!-~]([ -~]*[!-~])?$", max_length=200)]
Hour = Annotated[int, Field(strict=True, ge=0, le=23)]
Minute = Annotated[int, Field(strict=True, ge=0, le=59)]
ToggleKey = Literal["wifi", "bluetooth", "airplane", "dark_mode", "location", "dnd"]
_SAY = {
    "wifi": "Wi-Fi",
    "bluetooth": "Bluetooth",
    "airplane": "airplane mode",
    "dark_mode": "dark mode",
    "location": "location",
    "dnd": "Do not disturb",
}


class TaskStatus(str, enum.Enum):
    """A task's verdict on the episode so far."""

    SUCCESS = "success"
    FAILURE = "failure"
    RUNNING = "still running"


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskTemplate(abc.ABC):
    """A family of tasks. Subclasses set the class attributes and override the hooks."""

    id: ClassVar[str]
    Params: ClassVar[type[_Params]]
    feasible: ClassVar[bool] = True
    answers: ClassVar[bool] = False
    budget: ClassVar[int] = 15
    """Default step budget when a suite does not give one."""

    @abc.abstractmethod
    def instruction(self, p: Any) -> str:
        """The task text shown to the agent for parameters ``p``."""

    def setup(self, state: PhoneState, p: Any, rng: np.random.Generator) -> None:
        """Make the seeded state fit the task (mutates ``state``); the default keeps it."""
        return None

    def goal(self, initial: PhoneState, state: PhoneState, p: Any) -> bool:
        """Whether ``state`` completes the task (feasible, non-answer templates)."""
        return False

    def expected_answer(self, initial: PhoneState, p: Any) -> str:
        """The right answer (answer templates)."""
        raise TypeError(f"task template {self.id!r} is not an answer task: it has no answer")


def _say_time(hour: int, minute: int) -> str:
    return f"{hour}:{minute:02d}"


def _same_name(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _ensure_contact(state: PhoneState, name: str, rng: np.random.Generator) -> Contact:
    for c in state.contacts:
        if _same_name(c.name, name):
            return c
    contact = Contact(name, phone_number(rng))
    state.contacts.append(contact)
    sort_contacts(state.contacts)
    return contact


def _drop_contact(state: PhoneState, name: str) -> None:
    state.contacts[:] = [c for c in state.contacts if not _same_name(c.name, name)]


def _others_kept(before: list[Any], after: list[Any], removed: Any) -> bool:
    rest = [x for x in before if not removed(x)]
    return all(rest.count(x) <= after.count(x) for x in rest)


class _Toggles(_Params):
    toggles: Annotated[dict[ToggleKey, bool], Field(min_length=1)]


class SetToggles(TaskTemplate):
    id, Params, budget = "set_toggles", _Toggles, 10

    def instruction(self, p: _Toggles) -> str:
        on = [_SAY[k] for k, v in p.toggles.items() if v]
        off = [_SAY[k] for k, v in p.toggles.items() if not v]
        parts = [
            f"turn {word} {' and '.join(keys)}" for word, keys in (("on", on), ("off", off)) if keys
        ]
        text = " and ".join(parts)
        return text[0].upper() + text[1:] + "."

    def setup(self, state: PhoneState, p: _Toggles, rng: np.random.Generator) -> None:
        for key, value in p.toggles.items():
            state.settings.toggles[key] = not value

    def goal(self, initial: PhoneState, state: PhoneState, p: _Toggles) -> bool:
        return all(state.settings.toggles[k] == v for k, v in p.toggles.items())


class _Brightness(_Params):
    percent: Annotated[int, Field(strict=True, ge=0, le=100)]


class SetBrightness(TaskTemplate):
    id, Params, budget = "set_brightness", _Brightness, 8
    tolerance: ClassVar[int] = 3

    def instruction(self, p: _Brightness) -> str:
        return f"Set the screen brightness to {p.percent}%."

    def setup(self, state: PhoneState, p: _Brightness, rng: np.random.Generator) -> None:
        state.settings.brightness = 20 if p.percent > 50 else 85

    def goal(self, initial: PhoneState, state: PhoneState, p: _Brightness) -> bool:
        return abs(state.settings.brightness - p.percent) <= self.tolerance


class _NewContact(_Params):
    name: PersonName
    phone: PhoneNumber


class AddContact(TaskTemplate):
    id, Params = "add_contact", _NewContact

    def instruction(self, p: _NewContact) -> str:
        return f"Add a contact named {p.name} with phone number {p.phone}."

    def setup(self, state: PhoneState, p: _NewContact, rng: np.random.Generator) -> None:
        _drop_contact(state, p.name)

    def goal(self, initial: PhoneState, state: PhoneState, p: _NewContact) -> bool:
        return any(
            _same_name(c.name, p.name) and digits(c.phone) == digits(p.phone)
            for c in state.contacts
        )


class _Person(_Params):
    name: PersonName


class DeleteContact(TaskTemplate):
    id, Params, budget = "delete_contact", _Person, 12

    def instruction(self, p: _Person) -> str:
        return f"Delete the contact {p.name}."

    def setup(self, state: PhoneState, p: _Person, rng: np.random.Generator) -> None:
        _ensure_contact(state, p.name, rng)

    def goal(self, initial: PhoneState, state: PhoneState, p: _Person) -> bool:
        gone = not any(_same_name(c.name, p.name) for c in state.contacts)
        match = lambda c: _same_name(c.name, p.name)  # noqa: E731
        return gone and _others_kept(initial.contacts, state.contacts, match)


class LookupPhone(TaskTemplate):
    id, Params, answers, budget = "lookup_phone", _Person, True, 10

    def instruction(self, p: _Person) -> str:
        return f"What is the phone number of {p.name}? Answer with the number."

    def setup(self, state: PhoneState, p: _Person, rng: np.random.Generator) -> None:
        _ensure_contact(state, p.name, rng)

    def expected_answer(self, initial: PhoneState, p: _Person) -> str:
        return next(c.phone for c in initial.contacts if _same_name(c.name, p.name))


class _NewNote(_Params):
    title: Title
    body: Body


class CreateNote(TaskTemplate):
    id, Params = "create_note", _NewNote

    def instruction(self, p: _NewNote) -> str:
        return f'Create a note titled "{p.title}" with the text "{p.body}".'

    def setup(self, state: PhoneState, p: _NewNote, rng: np.random.Generator) -> None:
        state.notes[:] = [n for n in state.notes if not _same_name(n.title, p.title)]

    def goal(self, initial: PhoneState, state: PhoneState, p: _NewNote) -> bool:
        return any(_same_name(n.title, p.title) and _same_name(n.body, p.body) for n in state.notes)


class _NoteTitle(_Params):
    title: Title


class DeleteNote(TaskTemplate):
    id, Params, budget = "delete_note", _NoteTitle, 10

    def instruction(self, p: _NoteTitle) -> str:
        return f'Delete the note titled "{p.title}".'

    def setup(self, state: PhoneState, p: _NoteTitle, rng: np.random.Generator) -> None:
        if not any(_same_name(n.title, p.title) for n in state.notes):
            body = NOTE_SEEDS[int(rng.integers(len(NOTE_SEEDS)))][1]
            state.notes.insert(int(rng.integers(len(state.notes) + 1)), Note(p.title, body))

    def goal(self, initial: PhoneState, state: PhoneState, p: _NoteTitle) -> bool:
        match = lambda n: _same_name(n.title, p.title)  # noqa: E731
        return not any(map(match, state.notes)) and _others_kept(initial.notes, state.notes, match)


class _Time(_Params):
    hour: Hour
    minute: Minute


def _find_alarm(state: PhoneState, hour: int, minute: int) -> Alarm | None:
    return next((a for a in state.alarms if (a.hour, a.minute) == (hour, minute)), None)


class AddAlarm(TaskTemplate):
    id, Params = "add_alarm", _Time

    def instruction(self, p: _Time) -> str:
        return f"Set an alarm for {_say_time(p.hour, p.minute)}."

    def setup(self, state: PhoneState, p: _Time, rng: np.random.Generator) -> None:
        state.alarms[:] = [a for a in state.alarms if (a.hour, a.minute) != (p.hour, p.minute)]

    def goal(self, initial: PhoneState, state: PhoneState, p: _Time) -> bool:
        alarm = _find_alarm(state, p.hour, p.minute)
        return alarm is not None and alarm.enabled


class _AlarmSwitch(_Time):
    enabled: bool


class SetAlarmEnabled(TaskTemplate):
    id, Params, budget = "set_alarm_enabled", _AlarmSwitch, 8

    def instruction(self, p: _AlarmSwitch) -> str:
        return f"Turn {'on' if p.enabled else 'off'} the {_say_time(p.hour, p.minute)} alarm."

    def setup(self, state: PhoneState, p: _AlarmSwitch, rng: np.random.Generator) -> None:
        alarm = _find_alarm(state, p.hour, p.minute)
        if alarm is None:
            state.alarms.append(Alarm(p.hour, p.minute, not p.enabled))
            sort_alarms(state.alarms)
        else:
            alarm.enabled = not p.enabled

    def goal(self, initial: PhoneState, state: PhoneState, p: _AlarmSwitch) -> bool:
        alarm = _find_alarm(state, p.hour, p.minute)
        return alarm is not None and alarm.enabled == p.enabled


class CallContact(TaskTemplate):
    id, Params, feasible, budget = "call_contact", _Person, False, 8

    def instruction(self, p: _Person) -> str:
        return f"Call {p.name}."

    def setup(self, state: PhoneState, p: _Person, rng: np.random.Generator) -> None:
        _ensure_contact(state, p.name, rng)  # the contact exists; the dialer does not


class DeleteMissingContact(DeleteContact):
    id, feasible = "delete_missing_contact", False

    def setup(self, state: PhoneState, p: _Person, rng: np.random.Generator) -> None:
        _drop_contact(state, p.name)


class DisableMissingAlarm(TaskTemplate):
    id, Params, feasible, budget = "disable_missing_alarm", _Time, False, 8

    def instruction(self, p: _Time) -> str:
        return f"Turn off the {_say_time(p.hour, p.minute)} alarm."

    def setup(self, state: PhoneState, p: _Time, rng: np.random.Generator) -> None:
        AddAlarm().setup(state, p, rng)


class _MissingApp(_Params):
    app: Literal["Camera", "Phone", "Mail", "Maps", "Calculator"]


class OpenMissingApp(TaskTemplate):
    id, Params, feasible, budget = "open_missing_app", _MissingApp, False, 6

    def instruction(self, p: _MissingApp) -> str:
        return f"Open the {p.app} app."


TEMPLATES: dict[str, TaskTemplate] = {
    t.id: t
    for t in (
        SetToggles(),
        SetBrightness(),
        AddContact(),
        DeleteContact(),
        LookupPhone(),
        CreateNote(),
        DeleteNote(),
        AddAlarm(),
        SetAlarmEnabled(),
        CallContact(),
        DeleteMissingContact(),
        DisableMissingAlarm(),
        OpenMissingApp(),
    )  # fmt: skip
}
"""Every task template by id."""
