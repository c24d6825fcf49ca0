"""A small synthetic phone OS (numpy + PIL): launcher, Settings, Contacts, Notes and Clock.

State is a dataclass tree (:class:`PhoneState`); gestures change it; the screen, hit-testing
and the accessibility tree are all derived from one layout. A desktop-like form factor
(sidebar of apps, wider window) shares the apps and the state. PIL is loaded only when a
screenshot is first drawn.

>>> from sim.phone import Phone
>>> phone = Phone(seed=0)
>>> phone.open_app("Settings").changed
True
>>> phone.screenshot().shape
(512, 288, 3)
"""

from __future__ import annotations

from sim.phone.commands import KEYS, Outcome
from sim.phone.config import DESKTOP_SIZE, PHONE_SIZE, PhoneConfig
from sim.phone.errors import PhoneConfigError, PhoneError, PhoneStateError
from sim.phone.phone import A11yNode, Phone
from sim.phone.seeding import initial_state
from sim.phone.state import (
    APPS,
    TOGGLES,
    Alarm,
    Contact,
    Note,
    PhoneState,
    Settings,
    Ui,
    digits,
)

__all__ = [
    "APPS",
    "DESKTOP_SIZE",
    "KEYS",
    "PHONE_SIZE",
    "TOGGLES",
    "A11yNode",
    "Alarm",
    "Contact",
    "Note",
    "Outcome",
    "Phone",
    "PhoneConfig",
    "PhoneConfigError",
    "PhoneError",
    "PhoneState",
    "PhoneStateError",
    "Settings",
    "Ui",
    "digits",
    "initial_state",
]
