"""The synthetic phone OS: transitions, no-op reasons, a11y, snapshot / restore, seeding."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sim.phone import (
    TOGGLES,
    Alarm,
    Contact,
    Note,
    Phone,
    PhoneConfig,
    PhoneConfigError,
    PhoneState,
    PhoneStateError,
    initial_state,
)
from sim.phone.phone import A11yNode


def _el(phone: Phone, role: str, text: str | None = None) -> A11yNode:
    for node in phone.a11y_tree():
        if node.role == role and text in (None, node.text):
            return node
    raise AssertionError(f"no {role} {text!r} on screen:\n{phone.a11y_text()}")


def _centre(node: A11yNode) -> tuple[float, float]:
    x0, y0, x1, y1 = node.bounds_norm
    return (x0 + x1) / 2, (y0 + y1) / 2


def _tap(phone: Phone, role: str, text: str | None = None):
    return phone.tap(_centre(_el(phone, role, text)))


@pytest.fixture(params=[False, True], ids=["handset", "desktop"])
def phone(request) -> Phone:
    return Phone(PhoneConfig(desktop=request.param), seed=3)


def test_settings_toggles_and_airplane_turns_radios_off(phone: Phone) -> None:
    assert phone.open_app("settings").changed  # case-insensitive
    s = phone.state.settings.toggles
    s.update(wifi=True, bluetooth=True, airplane=False)
    phone.set_state(phone.state)
    assert _el(phone, "switch", "Wi-Fi").state == "on"
    _tap(phone, "switch", "Airplane mode")
    t = phone.state.settings.toggles
    assert (t["airplane"], t["wifi"], t["bluetooth"]) == (True, False, False)
    _tap(phone, "switch", "Wi-Fi")  # Wi-Fi may come back on under airplane mode, as on Android
    assert phone.state.settings.toggles["wifi"] and phone.state.settings.toggles["airplane"]
    before = dict(phone.state.settings.toggles)
    _tap(phone, "switch", "Dark mode")
    assert phone.state.settings.toggles["dark_mode"] != before["dark_mode"]


def test_brightness_slider_tap_and_swipe(phone: Phone) -> None:
    phone.open_app("Settings")
    slider = _el(phone, "slider")
    x0, y0, x1, y1 = slider.bounds_norm
    cy = (y0 + y1) / 2
    phone.tap((x0 + 0.25 * (x1 - x0), cy))
    assert abs(phone.state.settings.brightness - 25) <= 1
    assert _el(phone, "slider").state == str(phone.state.settings.brightness)
    phone.swipe((x0 + 0.25 * (x1 - x0), cy), (x1, cy))
    assert phone.state.settings.brightness == 100


def test_add_contact_with_validation_and_search(phone: Phone) -> None:
    phone.open_app("Contacts")
    n = len(phone.state.contacts)
    _tap(phone, "button", "Add contact")
    assert phone.state.ui.focus == "name"  # the form focuses its first field
    out = _tap(phone, "button", "Save")
    assert out.changed and phone.state.ui.message == "Name is required"
    assert phone.type_text("Ana  Lima").changed
    phone.tap(_centre([e for e in phone.a11y_tree() if e.role == "textbox"][1]))
    phone.type_text("abc")
    _tap(phone, "button", "Save")
    assert phone.state.ui.message == "Enter a valid phone number" and len(phone.state.contacts) == n
    _tap(phone, "button", "Clear phone")
    phone.type_text("555-0101")
    _tap(phone, "button", "Save")
    assert phone.state.ui.screen == "contacts" and len(phone.state.contacts) == n + 1
    assert any(c.name == "Ana Lima" and c.phone == "555-0101" for c in phone.state.contacts)
    names = [c.name.casefold() for c in phone.state.contacts]
    assert names == sorted(names)
    _tap(phone, "textbox")
    phone.type_text("ana l")
    rows = [e.text for e in phone.a11y_tree() if e.role == "listitem"]
    assert rows == ["Ana Lima"]


def test_scroll_and_swipe_move_the_contact_list() -> None:
    phone = Phone(seed=11)
    while len(phone.state.contacts) < 20:
        phone.state.contacts.append(Contact(f"Zed {len(phone.state.contacts)}", "555-0000"))
    phone.set_state(phone.state)
    phone.open_app("Contacts")
    lst = _el(phone, "list")
    first = [e.text for e in phone.a11y_tree() if e.role == "listitem"][0]
    assert phone.scroll(_centre(lst), "up").changed is False  # already at the top
    assert phone.scroll(_centre(lst), "down").changed
    assert [e.text for e in phone.a11y_tree() if e.role == "listitem"][0] != first
    assert phone.scroll(_centre(lst), "left").reason.startswith("lists here scroll vertically")
    out = phone.scroll((0.5, 0.01), "down")
    assert not out.changed and "nothing scrollable" in out.reason
    cx, cy = _centre(lst)
    before = phone.state.ui.scroll
    phone.swipe((cx, cy - 0.2), (cx, cy + 0.2))  # finger down: back towards the top
    assert phone.state.ui.scroll == max(0, before - round(0.4 * 512 / 40))  # 40 px rows
    phone.swipe((cx, cy + 0.3), (cx, cy - 0.3))  # finger up: towards the end
    assert phone.state.ui.scroll > max(0, before - 5)


def test_long_press_menu_deletes_a_note_and_editor_saves(phone: Phone) -> None:
    phone.open_app("Notes")
    titles = [n.title for n in phone.state.notes]
    row = _el(phone, "listitem", titles[0])
    assert phone.long_press(_centre(row)).changed
    assert [e.role for e in phone.a11y_tree()] == ["dialog", "button", "button"]  # modal only
    _tap(phone, "button", "Delete")
    assert [n.title for n in phone.state.notes] == titles[1:]
    _tap(phone, "button", "New note")
    phone.type_text("Trip")
    phone.tap(_centre([e for e in phone.a11y_tree() if e.role == "textbox"][1]))
    phone.type_text("Book the hotel")
    _tap(phone, "button", "Save")
    assert phone.state.notes[0].title == "Trip" and phone.state.notes[0].body == "Book the hotel"
    _tap(phone, "listitem", "Trip")  # edit in place: the editor opens with the note's text
    assert phone.state.ui.fields == {"title": "Trip", "body": "Book the hotel"}
    _tap(phone, "button", "Clear body")
    phone.type_text("Book the train")
    _tap(phone, "button", "Save")
    assert phone.state.notes[0].body == "Book the train" and len(phone.state.notes) == len(titles)
    _tap(phone, "listitem", "Trip")
    _tap(phone, "button", "Delete note")
    assert all(n.title != "Trip" for n in phone.state.notes)


def test_alarm_pickers_typing_and_toggle(phone: Phone) -> None:
    phone.open_app("Clock")
    phone.state.alarms.clear()
    phone.set_state(phone.state)
    _tap(phone, "button", "Add alarm")
    hour, minute = [e for e in phone.a11y_tree() if e.role == "textbox"]
    phone.tap(_centre(hour))
    phone.type_text("7")  # a picker replaces its value on the first typing
    assert phone.type_text("x").invalid
    _tap(phone, "button", "Increase minute")
    _tap(phone, "button", "Decrease minute")
    _tap(phone, "button", "Decrease minute")
    assert phone.state.ui.fields == {"hour": "7", "minute": "55"}
    _tap(phone, "button", "Save")
    assert [(a.hour, a.minute, a.enabled) for a in phone.state.alarms] == [(7, 55, True)]
    _tap(phone, "switch", "Alarm 07:55")
    assert phone.state.alarms[0].enabled is False
    _tap(phone, "button", "Add alarm")
    phone.tap(_centre([e for e in phone.a11y_tree() if e.role == "textbox"][0]))
    phone.type_text("25")
    _tap(phone, "button", "Save")
    assert phone.state.ui.message.startswith("Enter an hour") and len(phone.state.alarms) == 1


def test_actions_that_cannot_run_are_no_ops_with_reasons(phone: Phone) -> None:
    before = phone.snapshot()
    cases = [
        (phone.type_text("hi"), True, "no text field is focused"),
        (phone.open_app("Phone"), True, "is not installed"),
        (phone.press_key("f13"), True, "is not supported"),
        (phone.press_key("backspace"), True, "needs a focused text field"),
        (phone.back(), False, "already on the home screen"),
        (
            phone.long_press((0.5, 0.9 if not phone.config.desktop else 0.95)),
            False,
            "nothing to long-press",
        ),
    ]
    for out, invalid, reason in cases:
        assert not out.changed and out.invalid is invalid and reason in out.reason
    assert phone.snapshot() == before
    with pytest.raises(ValueError, match="normalized"):
        phone.tap((1.5, 0.5))


def test_navigation_back_home_and_keys(phone: Phone) -> None:
    phone.open_app("Contacts")
    _tap(phone, "button", "Add contact")
    phone.type_text("Bo")
    phone.press_key("Backspace")
    assert phone.state.ui.fields["name"] == "B"
    phone.press_key("enter")
    assert phone.state.ui.focus is None
    phone.press_key("back")
    assert phone.state.ui.screen == "contacts" and not phone.state.ui.fields.get("name")
    phone.press_key("home")
    assert phone.state.ui.screen == "launcher"


def test_a11y_tree_is_consistent_with_hit_testing(phone: Phone) -> None:
    state = phone.state  # full lists: every row slot of every screen is used
    state.alarms[:] = [Alarm(h, 0, h % 2 == 0) for h in range(12)]
    state.notes[:] = [Note(f"Note {i}", "") for i in range(12)]
    phone.set_state(state)
    for app in ("Settings", "Contacts", "Notes", "Clock"):
        phone.open_app(app)
        text = phone.a11y_text()
        assert text.splitlines()[0] == f'window "{app}"' and text.isascii()
        for node in phone.a11y_tree():
            x0, y0, x1, y1 = node.bounds_norm
            assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
        for node in phone.a11y_tree():
            if node.role == "switch":
                before = phone.snapshot()
                phone.tap(_centre(node))
                assert phone.snapshot() != before  # every switch listed is live where listed
                phone.restore(before)


def test_snapshot_restore_gives_identical_state_and_pixels(phone: Phone) -> None:
    phone.open_app("Contacts")
    _tap(phone, "button", "Add contact")
    phone.type_text("Mid edit")
    snap, pixels = phone.snapshot(), phone.screenshot().copy()
    other = Phone(phone.config, seed=99)
    other.restore(snap)
    assert other.snapshot() == snap and other.state == phone.state
    assert np.array_equal(other.screenshot(), pixels)
    phone.type_text(" more")
    phone.restore(json.loads(snap))  # a mapping works too
    assert np.array_equal(phone.screenshot(), pixels)
    assert PhoneState.from_dict(phone.state.to_dict()) == phone.state


def test_restore_rejects_bad_snapshots() -> None:
    phone = Phone()
    good = json.loads(phone.snapshot())
    bad = [b"not json", {**good, "version": 7}, {**good, "settings": {"toggles": {}}}]
    bad.append({**good, "ui": {**good["ui"], "screen": "dialer"}})
    for snap in bad:
        with pytest.raises(PhoneStateError):
            phone.restore(snap)


def test_seeds_vary_the_phone_and_same_seed_same_pixels() -> None:
    a, b = Phone(seed=5), Phone(seed=5)
    assert np.array_equal(a.screenshot(), b.screenshot()) and a.snapshot() == b.snapshot()
    states = [initial_state(s) for s in range(12)]
    assert len({tuple(c.name for c in s.contacts) for s in states}) == 12
    assert len({s.settings.toggles["dark_mode"] for s in states}) == 2
    assert len({s.settings.accent for s in states}) > 2
    for s in states:
        assert not (s.settings.toggles["airplane"] and s.settings.toggles["wifi"])
        assert set(s.settings.toggles) == set(TOGGLES)


def test_rendering_is_lazy_and_cached() -> None:
    phone = Phone(seed=1)
    for _ in range(50):
        phone.tap((0.5, 0.5))
        phone.tap((0.1, 0.05))
    assert phone.render_count == 0
    img = phone.screenshot()
    assert img.shape == (512, 288, 3) and img.dtype == np.uint8 and not img.flags.writeable
    assert phone.screenshot() is img and phone.render_count == 1
    phone.open_app("Settings")
    assert not np.array_equal(phone.screenshot(), img) and phone.render_count == 2


def test_dark_mode_changes_pixels_not_layout() -> None:
    light, dark = Phone(seed=2), Phone(seed=2)
    for p, value in ((light, False), (dark, True)):
        p.state.settings.toggles["dark_mode"] = value
        p.set_state(p.state)
    assert light.a11y_text() == dark.a11y_text()
    assert light.screenshot().mean() > dark.screenshot().mean() + 50


def test_config_validation() -> None:
    assert PhoneConfig().size == (288, 512) and PhoneConfig(desktop=True).size == (640, 400)
    assert PhoneConfig(width=320, height=640).size == (320, 640)
    for bad in ({"width": 10}, {"height": True}, {"width": 300.5}):
        with pytest.raises(PhoneConfigError, match="PhoneConfig"):
            PhoneConfig(**bad)
