"""Mouse and keyboard on an :class:`~sim.desktop.display.XDisplay` through ``xdotool``.

Every coordinate is an integer PIXEL of the screen, origin top-left, ``0 <= x < width``,
``0 <= y < height``. xdotool always runs with an argv list (never a shell) and a timeout;
typed text is passed after ``--`` so it can never be read as an option, and key chords are
checked against a fixed set of key names before they reach xdotool.
"""

from __future__ import annotations

import operator
import subprocess
import time
from collections.abc import Sequence
from typing import Literal

from sim.desktop.display import XDisplay, require_binary
from sim.desktop.errors import CommandTimeout, DesktopError

MODIFIERS = {
    "ctrl": "ctrl",
    "control": "ctrl",
    "alt": "alt",
    "meta": "alt",
    "option": "alt",
    "shift": "shift",
    "super": "super",
    "cmd": "super",
    "command": "super",
    "win": "super",
    "windows": "super",
}
# fmt: off
_PUNCT_CHARS = "-+=,./\\;'`[]{}()<>?!@#$%^&*_:\"|~ "
_PUNCT_NAMES = [
    "minus", "plus", "equal", "comma", "period", "slash", "backslash", "semicolon", "apostrophe",
    "grave", "bracketleft", "bracketright", "braceleft", "braceright", "parenleft", "parenright",
    "less", "greater", "question", "exclam", "at", "numbersign", "dollar", "percent",
    "asciicircum", "ampersand", "asterisk", "underscore", "colon", "quotedbl", "bar",
    "asciitilde", "space",
]
_NAMED = [
    "Return", "Escape", "BackSpace", "Tab", "Delete", "Insert", "Home", "End", "Page_Up",
    "Page_Down", "Left", "Right", "Up", "Down", "Menu", "Print", "Pause", "Scroll_Lock",
    "Caps_Lock", "Num_Lock", "KP_Enter", "KP_Add", "KP_Subtract", "KP_Multiply", "KP_Divide",
    "KP_Decimal", *_PUNCT_NAMES,
]
# fmt: on
KEY_ALIASES = {
    "enter": "Return",
    "esc": "Escape",
    "backspace": "BackSpace",
    "bs": "BackSpace",
    "del": "Delete",
    "ins": "Insert",
    "pageup": "Page_Up",
    "pgup": "Page_Up",
    "pagedown": "Page_Down",
    "pgdn": "Page_Down",
    "arrowup": "Up",
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "printscreen": "Print",
    "prtsc": "Print",
    "capslock": "Caps_Lock",
    "spacebar": "space",
}
# one printable ASCII punctuation character (or a space) -> its keysym name
_PUNCT = dict(zip(_PUNCT_CHARS, _PUNCT_NAMES, strict=True))
KEY_NAMES: dict[str, str] = {n.lower(): n for n in _NAMED}
KEY_NAMES |= {f"kp_{d}": f"KP_{d}" for d in range(10)}
KEY_NAMES |= {f"f{i}": f"F{i}" for i in range(1, 36)}
KEY_NAMES |= KEY_ALIASES
BUTTONS = {"left": 1, "middle": 2, "right": 3}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
MAX_TEXT = 10_000


def parse_chord(chord: str) -> str:
    """Validate a key chord such as ``"ctrl+s"``, ``"Return"``, ``"alt+F4"`` and return it in
    xdotool's spelling (``"ctrl+s"``, ``"Return"``, ``"alt+F4"``).

    Accepted keys: modifiers (ctrl, alt, shift, super and aliases cmd/win/meta), one letter or
    digit, F1-F35, keysym names such as Return, Escape, BackSpace, Page_Up (any case, plus
    aliases enter, esc, backspace, pageup, del, up/down/left/right), and single punctuation
    characters (``"ctrl+-"``, ``"ctrl++"``). Letters are lower-cased when a modifier is held.
    Raises ``ValueError`` naming the first bad key.
    """
    if not isinstance(chord, str) or not chord.strip():
        raise ValueError(f"key chord must be a non-empty string, got {chord!r}")
    text = chord.strip()
    if text == "+":
        parts = ["+"]
    elif text.endswith("++"):
        parts = text[:-2].split("+") + ["+"]
    else:
        parts = text.split("+")
    has_modifier = any(p.strip().lower() in MODIFIERS for p in parts)
    out = []
    for raw in parts:
        part = raw.strip() if raw.strip() else raw
        low = part.lower()
        if not part:
            raise ValueError(f"empty key name in key chord {chord!r}")
        if low in MODIFIERS:
            out.append(MODIFIERS[low])
        elif len(part) == 1 and part.isascii() and part.isalnum():
            out.append(low if has_modifier else part)
        elif len(part) == 1 and part in _PUNCT:
            out.append(_PUNCT[part])
        elif low in KEY_NAMES:
            out.append(KEY_NAMES[low])
        else:
            raise ValueError(f"unknown key {part!r} in key chord {chord!r}")
    return "+".join(out)


def split_text(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Split ``text`` into ``("type", chunk)`` / ``("key", "Return" | "Tab")`` steps.

    ``\\n`` becomes Return, ``\\t`` becomes Tab; every other control character (code point
    below 0x20, or 0x7f) is dropped, and so are lone surrogates (not encodable as UTF-8).
    Returns ``(steps, dropped_characters)``.
    """
    steps: list[tuple[str, str]] = []
    dropped: list[str] = []
    chunk: list[str] = []

    def flush() -> None:
        if chunk:
            steps.append(("type", "".join(chunk)))
            chunk.clear()

    for ch in text:
        if ch in "\n\t":
            flush()
            steps.append(("key", "Return" if ch == "\n" else "Tab"))
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF:
            dropped.append(ch)
        else:
            chunk.append(ch)
    flush()
    return steps, dropped


def keysym_of(ch: str) -> int:
    """The X keysym of one character: Latin-1 code points are their own keysym, every other
    Unicode character is ``0x1000000 + code point``."""
    cp = ord(ch)
    return cp if 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xFF else 0x1000000 + cp


def plan_typing(
    text: str, fixed: set[int], bound: dict[int, int], spare: Sequence[int]
) -> list[tuple[dict[int, int], str]]:
    """Cut ``text`` into chunks whose characters are all on the keymap.

    ``fixed``: keysyms the keymap already has; ``bound``: keycode -> keysym that we bound
    earlier (reusable, least recently used first); ``spare``: keycodes with no keysym. Returns
    ``[(bindings keycode -> keysym to make first, chunk), ...]``; a new chunk starts only when
    every reusable keycode is taken by a character of the current chunk.
    """
    pool = [*spare, *bound]  # empty keycodes first, then ours from least recently used
    where = {ks: kc for kc, ks in bound.items()}
    holds = dict(bound)
    steps: list[tuple[dict[int, int], str]] = []
    chunk: list[str] = []
    changes: dict[int, int] = {}
    locked: set[int] = set()
    for ch in text:
        ks = keysym_of(ch)
        if ks in fixed:
            chunk.append(ch)
            continue
        kc = where.get(ks)
        if kc is None:
            free = [c for c in pool if c not in locked]
            if not free:
                if not pool:
                    raise DesktopError(f"no spare keycode on the keymap to type {ch!r}")
                steps.append((changes, "".join(chunk)))
                chunk, changes, locked, free = [], {}, set(), pool
            kc = free[0]
            if kc in holds:
                where.pop(holds[kc], None)
            holds[kc], where[ks], changes[kc] = ks, kc, ks
        pool.remove(kc)
        pool.append(kc)
        locked.add(kc)
        chunk.append(ch)
    if chunk or changes:
        steps.append((changes, "".join(chunk)))
    return steps


class XInput:
    """xdotool driver for one display. ``timeout`` (seconds) bounds each xdotool call; a call
    that runs past it is killed and :class:`CommandTimeout` is raised."""

    def __init__(self, display: XDisplay, timeout: float = 5.0) -> None:
        self.display = display
        self.timeout = float(timeout)
        self._xdotool = require_binary("xdotool")
        self._bound: dict[int, int] = {}  # keycode -> keysym this instance bound, LRU first

    # -- plumbing ---------------------------------------------------------------------------
    def _run(self, args: Sequence[str], timeout: float | None = None) -> str:
        argv = [self._xdotool, *args]
        limit = self.timeout if timeout is None else timeout
        try:
            done = subprocess.run(
                argv,
                env=self.display.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=limit,
            )
        except subprocess.TimeoutExpired as exc:
            raise CommandTimeout(f"xdotool {args[0]} ran past {limit:.1f} s: {argv!r}") from exc
        if done.returncode != 0:
            raise DesktopError(
                f"xdotool {args[0]} failed (exit {done.returncode}): {done.stderr.strip()!r}"
            )
        return done.stdout

    def _point(self, x: int, y: int) -> list[str]:
        w, h = self.display.size
        out = []
        for field, v, limit in (("x", x, w), ("y", y, h)):
            if isinstance(v, bool):
                raise ValueError(f"{field} must be an integer pixel, got {v!r}")
            try:
                v = operator.index(v)
            except TypeError:
                raise ValueError(f"{field} must be an integer pixel, got {v!r}") from None
            if not 0 <= v < limit:
                raise ValueError(f"{field}={v} is off the {w}x{h} screen (0 <= {field} < {limit})")
            out.append(str(v))
        return out

    @staticmethod
    def _count(field: str, v: int, top: int) -> str:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
            raise ValueError(f"{field} must be an int in [1, {top}], got {v!r}")
        return str(v)

    # -- mouse ------------------------------------------------------------------------------
    def move(self, x: int, y: int) -> None:
        """Move the pointer to pixel ``(x, y)``."""
        self._run(["mousemove", *self._point(x, y)])

    def click(self, x: int, y: int, button: int = 1, count: int = 1) -> None:
        """Move to pixel ``(x, y)`` and click ``button`` (1 left, 2 middle, 3 right) ``count``
        times (2 = double click)."""
        button = BUTTONS.get(button, button) if isinstance(button, str) else button
        b = self._count("button", button, 9)
        n = self._count("count", count, 10)
        point = self._point(x, y)
        self._run(["mousemove", *point, "click", "--repeat", n, "--delay", "80", b])

    def drag(self, x0: int, y0: int, x1: int, y1: int, button: int = 1, steps: int = 10) -> None:
        """Press ``button`` at pixel ``(x0, y0)``, move in ``steps`` straight-line steps to
        ``(x1, y1)`` (apps see motion events), release there."""
        p0, p1 = self._point(x0, y0), self._point(x1, y1)
        b = self._count("button", button, 9)
        n = int(self._count("steps", steps, 100))
        args = ["mousemove", *p0, "mousedown", b, "sleep", "0.05"]
        for i in range(1, n + 1):
            x = round(int(p0[0]) + (int(p1[0]) - int(p0[0])) * i / n)
            y = round(int(p0[1]) + (int(p1[1]) - int(p0[1])) * i / n)
            args += ["mousemove", str(x), str(y), "sleep", "0.01"]
        args += ["sleep", "0.05", "mouseup", b]
        self._run(args, timeout=self.timeout + 0.05 * n)

    def scroll(
        self,
        x: int,
        y: int,
        direction: Literal["up", "down", "left", "right"],
        clicks: int = 3,
    ) -> None:
        """Scroll ``clicks`` wheel notches ``direction`` with the pointer at pixel ``(x, y)``."""
        if direction not in SCROLL_BUTTONS:
            raise ValueError(
                f"scroll direction must be one of {list(SCROLL_BUTTONS)}, got {direction!r}"
            )
        n = self._count("clicks", clicks, 100)
        point = self._point(x, y)
        b = str(SCROLL_BUTTONS[direction])
        self._run(["mousemove", *point, "click", "--repeat", n, "--delay", "30", b])

    def mouse_location(self) -> tuple[int, int]:
        """The pointer's pixel ``(x, y)`` as the X server reports it."""
        fields = dict(
            line.split("=", 1) for line in self._run(["getmouselocation", "--shell"]).split()
        )
        return int(fields["X"]), int(fields["Y"])

    # -- keyboard ---------------------------------------------------------------------------
    def type_text(self, text: str) -> list[str]:
        """Type ``text`` literally into the focused window; returns the dropped characters.

        ``\\n`` is sent as Return, ``\\t`` as Tab; other control characters (below 0x20, and
        0x7f, lone surrogates) are dropped and returned. Characters the keymap lacks (``"é"``,
        ``"漢"``) are first bound to spare keycodes (see :func:`plan_typing`). At most
        ``MAX_TEXT`` characters.
        """
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        if len(text) > MAX_TEXT:
            raise ValueError(f"text is {len(text)} characters; at most {MAX_TEXT} may be typed")
        steps, dropped = split_text(text)
        for kind, value in steps:
            if kind == "key":
                self._run(["key", "--clearmodifiers", value])
            elif all(0x20 <= ord(c) <= 0x7E for c in value):  # on every US keymap
                self._type(value)
            else:
                self._type_unicode(value)
        return dropped

    def _type(self, chunk: str) -> None:
        limit = self.timeout + 0.05 * len(chunk)
        self._run(["type", "--clearmodifiers", "--delay", "1", "--", chunk], limit)

    def _type_unicode(self, text: str) -> None:
        """Bind the characters the keymap lacks to spare keycodes, then type. xdotool's own
        fallback (bind a scratch keycode per character and unbind it at once) races with the
        app reading the keymap and loses characters; bindings made here stay in place."""
        from Xlib import display as xdisplay

        d = xdisplay.Display(self.display.name)
        try:
            lo, hi = d.display.info.min_keycode, d.display.info.max_keycode
            rows = d.get_keyboard_mapping(lo, hi - lo + 1)
            # our earlier bindings that are still in place (the server keeps 4 of the 7 copies)
            ours = {kc: ks for kc, ks in self._bound.items() if set(rows[kc - lo]) - {0} == {ks}}
            fixed = {ks for i, row in enumerate(rows) if lo + i not in ours for ks in row if ks}
            spare = [lo + i for i, row in enumerate(rows) if not any(row)]
            self._bound = ours
            for n, (changes, chunk) in enumerate(plan_typing(text, fixed, ours, spare)):
                if n:  # reusing keycodes of the previous chunk: let the app read it first
                    time.sleep(0.15)
                for kc, ks in changes.items():
                    d.change_keyboard_mapping(kc, [[ks] * len(rows[0])])
                    self._bound.pop(kc, None)
                    self._bound[kc] = ks
                if changes:
                    d.sync()
                if chunk:
                    self._type(chunk)
        finally:
            d.close()

    def key(self, chord: str) -> str:
        """Press and release a key chord (``"ctrl+s"``, ``"Return"``, ``"alt+F4"``); see
        :func:`parse_chord` for the accepted names. Returns the chord as sent to xdotool.
        Raises ``ValueError`` naming an unknown key before anything is sent."""
        canonical = parse_chord(chord)
        self._run(["key", "--clearmodifiers", "--", canonical])
        return canonical
