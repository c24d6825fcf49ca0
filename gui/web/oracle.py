"""Scripted MiniWoB++ oracle: solves every :data:`~gui.web.suite.MINIWOB_SUITE` task from the DOM.

:class:`MiniWoBOracle` reads miniwob's raw observation (``env.raw_observation``: ``utterance``,
``fields``, ``dom_elements`` in CSS pixels) and emits :mod:`gui.actions` mappings with points
normalized to [0, 1] of the screenshot, the same actions a screenshot policy sends. It clicks a
visible spot of its target (not covered by a later, unrelated element). Baseline policies and
:func:`run_episode` support tests and reports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gui.web.browser import TASK_HEIGHT, TASK_WIDTH, css_to_normalized
from gui.web.errors import WebTaskError

Action = dict[str, Any]
_COLORS = {"red": (255, 0, 0), "blue": (0, 0, 255), "olive": (128, 128, 0), "lime": (0, 255, 0),
           "black": (0, 0, 0), "white": (255, 255, 255), "grey": (128, 128, 128),
           "gray": (128, 128, 128), "purple": (128, 0, 128), "orange": (255, 165, 0),
           "yellow": (255, 255, 0), "cyan": (0, 255, 255), "pink": (255, 192, 203),
           "magenta": (255, 0, 255)}  # fmt: skip
"""CSS named colours of click-color's boxes."""
_WIDGET_TAGS = {"radio": "input_radio", "checkbox": "input_checkbox", "text": "input_text",
                "textarea": "textarea", "button": "button"}  # fmt: skip
_SHAPE_TAGS = {"rect": "Rectangle", "circle": "Circle", "polygon": "Triangle"}


@dataclass(frozen=True)
class Element:
    """One DOM element of miniwob's observation; box in CSS pixels of the page."""

    ref: int
    parent: int
    tag: str
    text: str
    value: str
    id: str
    classes: str
    bg: tuple[float, ...]
    left: float
    top: float
    width: float
    height: float

    @classmethod
    def of(cls, e: Mapping[str, Any]) -> Element:
        """From a serialized miniwob element (sizes are 1-element arrays)."""
        num = [float(np.asarray(e[k]).reshape(-1)[0]) for k in ("left", "top", "width", "height")]
        bg = tuple(float(v) for v in np.asarray(e["bg_color"]).reshape(-1))
        return cls(int(e["ref"]), int(e["parent"]), str(e["tag"]).lower(), str(e["text"]),
                   str(e["value"]), str(e["id"]), str(e["classes"]), bg, *num)  # fmt: skip

    def contains(self, x: float, y: float) -> bool:
        """Whether CSS point ``(x, y)`` lies inside the box."""
        return self.left <= x < self.left + self.width and self.top <= y < self.top + self.height


class Page:
    """The DOM of one raw observation with lookups and visible-point finding."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.utterance = str(raw.get("utterance", ""))
        self.fields = {str(k): str(v) for k, v in raw.get("fields", ())}
        self.elements = [Element.of(e) for e in raw.get("dom_elements", ())]
        self._by_ref = {e.ref: e for e in self.elements}

    def find(self, pred: Callable[[Element], bool]) -> list[Element]:
        """Elements (document order) for which ``pred`` holds."""
        return [e for e in self.elements if pred(e)]

    def first(self, pred: Callable[[Element], bool], what: str) -> Element:
        """The first element for which ``pred`` holds; ``WebTaskError`` naming ``what`` if none."""
        found = self.find(pred)
        if not found:
            raise WebTaskError(f"oracle: no {what} on the page ({self.utterance!r})")
        return found[0]

    def parent(self, el: Element) -> Element | None:
        """Parent element of ``el`` (``None`` for the root)."""
        return self._by_ref.get(el.parent)

    def children(self, el: Element) -> list[Element]:
        """Direct children of ``el``."""
        return [e for e in self.elements if e.parent == el.ref]

    def label(self, el: Element) -> str:
        """Text of ``el``: its own, else its text children's, joined."""
        return el.text or " ".join(c.text for c in self.children(el) if c.text)

    def _related(self, a: Element, b: Element) -> bool:
        for x, y in ((a, b), (b, a)):
            node = self._by_ref.get(x.parent)
            while node is not None:
                if node.ref == y.ref:
                    return True
                node = self._by_ref.get(node.parent)
        return False

    def point(self, el: Element) -> list[float]:
        """Normalized point of a visible spot of ``el`` (centre first, then a 5 x 5 grid)."""
        x0, x1 = max(el.left, 0.0), min(el.left + el.width, float(TASK_WIDTH))
        y0, y1 = max(el.top, 0.0), min(el.top + el.height, float(TASK_HEIGHT))
        if x1 <= x0 or y1 <= y0:
            raise WebTaskError(f"oracle: {el.tag} {el.text!r} lies outside the task area")
        later = self.elements[self.elements.index(el) + 1 :]
        covers = [e for e in later if e.tag != "t" and not self._related(el, e)]
        grid = [(i + 0.5) / 5 for i in range(5)]
        for fx, fy in [(0.5, 0.5)] + [(a, b) for b in grid for a in grid]:
            x, y = x0 + fx * (x1 - x0), y0 + fy * (y1 - y0)
            if not any(c.contains(x, y) for c in covers):
                return list(css_to_normalized(x, y))
        raise WebTaskError(f"oracle: {el.tag} {el.text!r} is covered by other elements")


def _click(page: Page, el: Element) -> Action:
    return {"type": "click", "point": page.point(el)}


def _fill(page: Page, fields: Sequence[tuple[Element, str]], submit: Element) -> Action:
    """Type each wrong field's text (clicking it first), then click ``submit``."""
    for el, text in fields:
        if el.value != text:
            return {"type": "type", "text": text, "point": page.point(el)}
    return _click(page, submit)


def _button(text: str) -> Callable[[Element], bool]:
    return lambda e: e.tag == "button" and e.text.strip().lower() == text.lower()


class MiniWoBOracle:
    """Stateful scripted solver of one suite task (``act`` once per step, in order).

    Args:
        task_name: a task of :data:`SOLVERS` (the suite).

    Raises:
        WebTaskError: the task has no solver (the message lists those that do).
    """

    def __init__(self, task_name: str) -> None:
        if task_name not in SOLVERS:
            raise WebTaskError(f"no oracle for {task_name!r}; solvable: {', '.join(SOLVERS)}")
        self.task_name = task_name
        self.steps = 0

    def act(self, raw: Mapping[str, Any]) -> Action:
        """Next action (a :mod:`gui.actions` mapping) for miniwob's raw observation ``raw``."""
        action = SOLVERS[self.task_name](Page(raw), self.steps)
        self.steps += 1
        return action


def _checkboxes(page: Page, _: int) -> Action:
    match = re.match(r"Select (.*) and click Submit", page.utterance)
    wanted = set() if not match or match.group(1) == "nothing" else set(match.group(1).split(", "))
    for box in page.find(lambda e: e.tag == "input_checkbox"):
        label = page.parent(box)
        if (box.value == "True") != (label is not None and page.label(label) in wanted):
            return _click(page, box)
    return _click(page, page.first(_button("submit"), "Submit button"))


def _option(page: Page, _: int) -> Action:
    target = page.fields["target"]
    for radio in page.find(lambda e: e.tag == "input_radio"):
        label = page.parent(radio)
        if label is not None and page.label(label) == target and radio.value != "True":
            return _click(page, radio)
    return _click(page, page.first(_button("submit"), "Submit button"))


def _collapsible(page: Page, _: int) -> Action:
    header = page.first(lambda e: e.tag == "h3", "section header")
    if "ui-accordion-header-collapsed" in header.classes:
        return _click(page, header)
    return _click(page, page.first(_button("submit"), "Submit button"))


def _color(page: Page, _: int) -> Action:
    rgb = np.array(_COLORS[page.fields["target"].lower()], float) / 255.0  # bg is RGBA in [0, 1]
    boxes = page.find(lambda e: "color" in e.classes.split())
    best = min(boxes, key=lambda e: float(np.abs(np.array(e.bg[:3]) - rgb).sum()))
    return _click(page, best)


def _dialog_button(page: Page, label: str) -> Action:
    if label == "x":
        close = page.first(lambda e: "ui-dialog-titlebar-close" in e.classes, "close button")
        return _click(page, close)
    return _click(page, page.first(_button(label), f"{label!r} button"))


def _shape(page: Page, _: int) -> Action:
    figure = page.first(lambda e: e.tag in ("rect", "circle", "polygon", "text"), "figure")
    answer = _SHAPE_TAGS.get(figure.tag) or ("Number" if figure.text.isdigit() else "Letter")
    return _click(page, page.first(_button(answer), f"{answer} button"))


def _tree(page: Page, _: int) -> Action:
    target = page.fields["target"]
    names = page.find(lambda e: e.tag == "span" and e.text == target)
    if names:
        return _click(page, names[0])
    folder = page.first(lambda e: e.tag == "li" and "expandable" in e.classes.split(), "folder")
    hit = page.first(lambda e: e.parent == folder.ref and "hitarea" in e.classes, "folder toggle")
    return _click(page, hit)


def _choose_list(page: Page, step: int) -> Action:
    select = page.first(lambda e: e.tag == "select", "list")
    script: list[Action] = [
        _click(page, select),
        {"type": "type", "text": page.fields["target"]},
        {"type": "key", "key": "enter"},
    ]
    return (
        script[step]
        if step < len(script)
        else _click(page, page.first(_button("submit"), "Submit"))
    )


def _input(page: Page, id_: str) -> Element:
    return page.first(lambda e: e.id == id_, f"#{id_} field")


SOLVERS: dict[str, Callable[[Page, int], Action]] = {
    "click-button": lambda p, _: _click(p, p.first(_button(p.fields["target"]), "button")),
    "click-button-sequence": lambda p, s: _click(
        p, p.first(_button("TWO" if s else "ONE"), "button")
    ),
    "click-checkboxes": _checkboxes,
    "click-collapsible": _collapsible,
    "click-color": _color,
    "click-dialog": lambda p, _: _dialog_button(p, "x"),
    "click-dialog-2": lambda p, _: _dialog_button(p, p.fields["target"]),
    "click-link": lambda p, _: _click(
        p, p.first(lambda e: "alink" in e.classes and e.text == p.fields["target"], "link")
    ),
    "click-option": _option,
    "click-tab": lambda p, _: _click(
        p, p.first(lambda e: e.tag == "a" and e.text == f"Tab #{p.fields['target']}", "tab")
    ),
    "click-test": lambda p, _: _click(p, p.first(lambda e: e.tag == "button", "button")),
    "click-test-2": lambda p, _: _click(p, p.first(_button(p.fields["target"]), "button")),
    "click-widget": lambda p, _: _click(
        p, p.first(lambda e: e.tag == _WIDGET_TAGS[p.fields["target"]], "widget")
    ),
    "enter-password": lambda p, _: _fill(
        p,
        [(_input(p, i), p.fields["target"]) for i in ("password", "verify")],
        p.first(_button("submit"), "Submit button"),
    ),  # fmt: skip
    "enter-text": lambda p, _: _fill(
        p, [(_input(p, "tt"), p.fields["target"])], p.first(_button("submit"), "Submit button")
    ),
    "focus-text": lambda p, _: _click(p, p.first(lambda e: e.tag == "input_text", "textbox")),
    "focus-text-2": lambda p, _: _click(p, _input(p, f"tt{p.fields['target']}")),
    "identify-shape": _shape,
    "login-user": lambda p, _: _fill(
        p,
        [(_input(p, k), p.fields[k]) for k in ("username", "password")],
        p.first(_button("login"), "Login button"),
    ),  # fmt: skip
    "navigate-tree": _tree,
    "choose-list": _choose_list,
}
"""Task name -> solver ``(page, step index) -> action``."""


def done_policy(obs: Mapping[str, Any], raw: Mapping[str, Any]) -> Action:
    """Baseline: claim success at once (scores 0 on every task)."""
    return {"type": "done"}


def random_click_policy(seed: int) -> Callable[[Mapping[str, Any], Mapping[str, Any]], Action]:
    """Baseline: clicks at uniform random points of the screenshot."""
    rng = np.random.default_rng(seed)
    return lambda obs, raw: {"type": "click", "point": [float(v) for v in rng.random(2)]}


def run_episode(
    env: Any,
    task_id: str,
    policy: Callable[[Mapping[str, Any], Mapping[str, Any]], Action] | None = None,
) -> dict[str, Any]:
    """Run one episode of ``task_id`` on a :class:`~gui.web.miniwob_env.MiniWoBEnv`.

    Args:
        env: the env (its ``raw_observation`` feeds the policy).
        task_id: ``"{task_name}/{seed}"``.
        policy: ``(obs, raw_observation) -> action``; ``None``: the task's oracle.

    Returns:
        ``{"task_id", "success", "steps", "return", "invalid"}`` (``invalid``: invalid steps).
    """
    obs, _ = env.reset(options={"task_id": task_id})
    if policy is None:
        oracle = MiniWoBOracle(task_id.split("/")[0])
        policy = lambda _obs, raw: oracle.act(raw)  # noqa: E731
    total, steps, invalid, info = 0.0, 0, 0, {"success": False}
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs, env.raw_observation))
        total, steps, invalid = total + reward, steps + 1, invalid + bool(info["invalid_action"])
        if terminated or truncated:
            break
    return {"task_id": task_id, "success": bool(info["success"]), "steps": steps,
            "return": total, "invalid": invalid}  # fmt: skip
