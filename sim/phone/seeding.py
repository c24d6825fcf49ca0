"""Seeded initial states: who is in the address book, which notes and alarms exist, the theme.

>>> from sim.phone.seeding import initial_state
>>> initial_state(3) == initial_state(3)
True
"""

from __future__ import annotations

import numpy as np

from sim.phone.state import (
    RADIOS,
    TOGGLES,
    Alarm,
    Contact,
    Note,
    PhoneState,
    Settings,
    sort_alarms,
    sort_contacts,
)

FIRST_NAMES: tuple[str, ...] = (
    "Alice", "Bruno", "Carla", "Diego", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas",
    "Keiko", "Liam", "Maya", "Nadia", "Omar", "Paula", "Quinn", "Rosa", "Sven", "Tara",
)  # fmt: skip
LAST_NAMES: tuple[str, ...] = (
    "Adams", "Brooks", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Hansen", "Ito",
    "Jensen", "Kowalski", "Lopez", "Moreau", "Novak", "Oliveira", "Petrov", "Rossi", "Silva",
)  # fmt: skip
NOTE_SEEDS: tuple[tuple[str, str], ...] = (
    ("Groceries", "Milk, eggs, bread"),
    ("Ideas", "Write a short story"),
    ("Packing list", "Charger, passport"),
    ("Books", "Read two chapters"),
    ("Gym", "Legs on Monday"),
    ("Recipes", "Lentil soup"),
    ("Meeting", "Agenda for Friday"),
)
ACCENTS: tuple[str, ...] = ("blue", "green", "purple", "orange", "pink", "cyan")
"""Accent colours (palette names of :mod:`sim.screens.palette`) a phone may have."""


def phone_number(rng: np.random.Generator) -> str:
    """A fictional ``555-01NN`` / ``555-NNNN`` number."""
    return f"555-{int(rng.integers(100, 10000)):04d}"


def initial_state(seed: int) -> PhoneState:
    """A phone on its launcher with seeded contacts, notes, alarms, switches and theme.

    Args:
        seed: any non-negative int; equal seeds give equal states.
    """
    rng = np.random.default_rng(seed)
    toggles = {key: bool(rng.random() < 0.5) for key in TOGGLES}
    if toggles["airplane"]:
        toggles.update(dict.fromkeys(RADIOS, False))
    settings = Settings(
        toggles=toggles,
        brightness=int(rng.integers(4, 19)) * 5,
        accent=ACCENTS[int(rng.integers(len(ACCENTS)))],
    )
    n_contacts = int(rng.integers(7, 15))
    firsts = rng.choice(len(FIRST_NAMES), size=n_contacts, replace=False)
    contacts = [
        Contact(
            f"{FIRST_NAMES[int(i)]} {LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]}",
            phone_number(rng),
        )
        for i in firsts
    ]
    sort_contacts(contacts)
    picks = rng.choice(len(NOTE_SEEDS), size=int(rng.integers(1, 5)), replace=False)
    notes = [Note(*NOTE_SEEDS[int(i)]) for i in picks]
    alarms: list[Alarm] = []
    for _ in range(int(rng.integers(1, 5))):
        alarm = Alarm(
            int(rng.integers(5, 11)), int(rng.integers(0, 12)) * 5, bool(rng.random() < 0.6)
        )
        if all((a.hour, a.minute) != (alarm.hour, alarm.minute) for a in alarms):
            alarms.append(alarm)
    sort_alarms(alarms)
    return PhoneState(settings=settings, contacts=contacts, notes=notes, alarms=alarms)
