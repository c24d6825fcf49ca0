"""Scripted oracle: solves every feasible task and declares ``fail`` on infeasible ones.

The oracle sees only what an agent sees, the observation's accessibility text, and acts only
through GUI actions, so its 100 % success on a suite proves the checkers, the executors and the
a11y bounds together. It is reactive (it re-reads the screen each step), so it recovers from
starting screens it did not expect.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gui.apps.tasks import PhoneTask
from sim.phone.state import TOGGLES

_LINE = re.compile(r'^\[(\d+)\] (\w+) ("(?:[^"\\]|\\.)*")(.*) @\(([^)]*)\)$')
_HINT = re.compile(r'hint=("(?:[^"\\]|\\.)*")')


@dataclass(frozen=True)
class UiElement:
    """One line of the a11y text, parsed; ``box`` is normalized ``(x0, y0, x1, y1)``."""

    role: str
    text: str
    box: tuple[float, ...]
    state: str | None
    hint: str
    focused: bool

    @property
    def center(self) -> list[float]:
        """Normalized centre ``[x, y]``."""
        x0, y0, x1, y1 = self.box
        return [round((x0 + x1) / 2, 4), round((y0 + y1) / 2, 4)]


def parse_a11y(text: str) -> tuple[str, list[UiElement]]:
    """The window name and the elements of an observation's ``a11y`` text."""
    lines = text.splitlines()
    window = json.loads(lines[0].removeprefix("window ")) if lines else ""
    out = []
    for line in lines[1:]:
        m = _LINE.match(line)
        if m is None:
            continue
        rest = m.group(4)
        hint = _HINT.search(rest)
        words = _HINT.sub("", rest).split()
        flags = {"focused", "long-clickable"}
        state = next((w for w in words if w not in flags and not w.startswith("rows")), None)
        if "rows" in words:
            state = " ".join(words[words.index("rows") :])
        box = tuple(float(v) for v in m.group(5).split(","))
        hint_text = json.loads(hint.group(1)) if hint else ""
        out.append(
            UiElement(m.group(2), json.loads(m.group(3)), box, state, hint_text, "focused" in words)
        )
    return window, out


class Oracle:
    """Per-episode scripted policy for one :class:`~gui.apps.tasks.PhoneTask`."""

    def __init__(self, task: PhoneTask) -> None:
        self.task = task
        self.p = task.params

    def act(self, obs: dict[str, Any]) -> dict[str, Any]:
        """The next GUI action for observation ``obs`` (uses ``obs["a11y"]`` only)."""
        self.window, self.els = parse_a11y(obs["a11y"])
        heading = self._find("heading")
        self.heading = heading.text if heading else ""
        if self._find("dialog") and self.task.template.id != "delete_note":
            return {"type": "key", "key": "back"}
        return getattr(self, "_" + self.task.template.id)()

    # -------------------------------------------------------------- helpers
    def _find(self, role: str, text: str | None = None) -> UiElement | None:
        return next((e for e in self.els if e.role == role and text in (None, e.text)), None)

    def _all(self, role: str) -> list[UiElement]:
        return [e for e in self.els if e.role == role]

    def _click(self, el: UiElement) -> dict[str, Any]:
        return {"type": "click", "point": el.center}

    def _tap(self, role: str, text: str) -> dict[str, Any]:
        el = self._find(role, text)
        return self._click(el) if el else {"type": "key", "key": "back"}

    def _fill(self, values: list[str], save: str = "Save") -> dict[str, Any]:
        """Fill the screen's text boxes in order with ``values``, then press ``save``."""
        for box, value in zip(self._all("textbox"), values, strict=False):
            if box.text == value:
                continue
            clear = next(
                (
                    e
                    for e in self._all("button")
                    if e.text.startswith("Clear") and box.box[1] <= e.center[1] <= box.box[3]
                ),
                None,
            )
            if box.text and clear is not None:  # text fields append; pickers replace on focus
                return self._click(clear)
            return {"type": "type", "text": value, "point": box.center}
        return self._tap("button", save)

    def _scroll_or(self, fallback: dict[str, Any]) -> dict[str, Any]:
        """Scroll the list down if it has rows below, else ``fallback``."""
        lst = self._find("list")
        if lst and lst.state and lst.state.startswith("rows"):
            shown, total = lst.state.removeprefix("rows ").split(" of ")
            if int(shown.split("-")[1]) < int(total):
                return {"type": "scroll", "point": lst.center, "direction": "down"}
        return fallback

    def _find_contact(self, name: str) -> dict[str, Any] | UiElement | None:
        """The contact's row, an action that gets closer to it, or ``None`` if it is missing."""
        row = self._find("listitem", name)
        if row:
            return row
        search = self._find("textbox")
        if search and search.text == name:
            return None  # searched for it and it is not there
        if search and search.text:
            return self._tap("button", "Clear search contacts")
        return self._scroll_or(
            {"type": "type", "text": name, "point": search.center}
            if search
            else {"type": "key", "key": "back"}
        )

    # -------------------------------------------------------------- templates
    def _set_toggles(self) -> dict[str, Any]:
        if self.window != "Settings":
            return {"type": "open_app", "name": "Settings"}
        for key in sorted(self.p.toggles, key=lambda k: k != "airplane"):
            el = self._find("switch", TOGGLES[key])
            if el and el.state != ("on" if self.p.toggles[key] else "off"):
                return self._click(el)
        return {"type": "done"}

    def _set_brightness(self) -> dict[str, Any]:
        if self.window != "Settings":
            return {"type": "open_app", "name": "Settings"}
        slider = self._find("slider")
        if slider is None:
            return {"type": "key", "key": "back"}
        x0, y0, x1, y1 = slider.box
        return {"type": "click", "point": [x0 + (x1 - x0) * self.p.percent / 100, (y0 + y1) / 2]}

    def _add_contact(self) -> dict[str, Any]:
        if self.window != "Contacts":
            return {"type": "open_app", "name": "Contacts"}
        if self.heading == "New contact":
            return self._fill([self.p.name, self.p.phone])
        if self.heading == "Contacts":
            return self._tap("button", "Add contact")
        return {"type": "key", "key": "back"}

    def _contact_step(self, on_detail: dict[str, Any] | None) -> dict[str, Any]:
        if self.window != "Contacts":
            return {"type": "open_app", "name": "Contacts"}
        if self.heading == self.p.name and on_detail is not None:
            return on_detail
        if self.heading != "Contacts":
            return {"type": "key", "key": "back"}
        found = self._find_contact(self.p.name)
        if found is None:
            return {"type": "fail", "reason": f"there is no contact named {self.p.name}"}
        return self._click(found) if isinstance(found, UiElement) else found

    def _delete_contact(self) -> dict[str, Any]:
        return self._contact_step(self._tap("button", "Delete contact"))

    def _delete_missing_contact(self) -> dict[str, Any]:
        return self._contact_step(None)

    def _lookup_phone(self) -> dict[str, Any]:
        phone = next((e.text for e in self._all("text") if e.text.startswith("Phone: ")), None)
        answer = {"type": "answer", "text": phone.removeprefix("Phone: ")} if phone else None
        return self._contact_step(answer)

    def _create_note(self) -> dict[str, Any]:
        if self.window != "Notes":
            return {"type": "open_app", "name": "Notes"}
        if self.heading == "New note":
            return self._fill([self.p.title, self.p.body])
        return (
            self._tap("button", "New note")
            if self.heading == "Notes"
            else {"type": "key", "key": "back"}
        )

    def _delete_note(self) -> dict[str, Any]:
        if self._find("dialog"):
            return self._tap("button", "Delete")
        if self.window != "Notes":
            return {"type": "open_app", "name": "Notes"}
        if self.heading != "Notes":
            return {"type": "key", "key": "back"}
        row = self._find("listitem", self.p.title)
        if row:
            return {"type": "long_press", "point": row.center}
        return self._scroll_or({"type": "fail", "reason": "note not found"})

    def _add_alarm(self) -> dict[str, Any]:
        if self.window != "Clock":
            return {"type": "open_app", "name": "Clock"}
        if self.heading == "New alarm":
            return self._fill([f"{self.p.hour:02d}", f"{self.p.minute:02d}"])
        return (
            self._tap("button", "Add alarm")
            if self.heading == "Alarms"
            else {"type": "key", "key": "back"}
        )

    def _alarm_switch(self, enabled: bool | None) -> dict[str, Any]:
        if self.window != "Clock":
            return {"type": "open_app", "name": "Clock"}
        if self.heading != "Alarms":
            return {"type": "key", "key": "back"}
        el = self._find("switch", f"Alarm {self.p.hour:02d}:{self.p.minute:02d}")
        if el is None:
            return self._scroll_or({"type": "fail", "reason": "no such alarm"})
        if enabled is None or el.state == ("on" if enabled else "off"):
            return {"type": "done"}
        return self._click(el)

    def _set_alarm_enabled(self) -> dict[str, Any]:
        return self._alarm_switch(self.p.enabled)

    def _disable_missing_alarm(self) -> dict[str, Any]:
        return self._alarm_switch(False)

    def _call_contact(self) -> dict[str, Any]:
        return {"type": "fail", "reason": "this phone has no dialer app"}

    def _open_missing_app(self) -> dict[str, Any]:
        return {"type": "fail", "reason": f"{self.p.app} is not installed"}
