"""Text for ``adb shell input text``: what can be typed, how it is escaped, what the device gets.

``adb shell input text ARG`` goes through two interpreters on the device:

1. the device shell: ``adb`` joins its arguments into one command line that the device's
   ``/system/bin/sh`` runs, so ``ARG`` must be one shell word the shell turns back into the
   text. :func:`escape_text` backslash-escapes every ASCII character outside
   ``[A-Za-z0-9%+,-./:=@_]`` (a backslash makes any character but newline literal in a POSIX
   shell); other characters (letters of other scripts) are not special to the shell;
2. Android's ``input`` command, which turns each ``%s`` into a space (a raw space would split
   the word). A literal ``%s`` is therefore typed as two requests, ``…%`` then ``s…``
   (:func:`text_chunks`).

Some text cannot be typed safely at all (:func:`typing_problem`): control characters (a newline
or carriage return ends the shell command and runs the rest as a new one; NUL cannot pass
through an argv: ``subprocess`` raises ``ValueError``), Unicode format characters (bidi
overrides, zero-width joiners), line / paragraph separators, lone surrogates (not encodable),
private-use and unassigned code points, empty text, and text longer than
:data:`MAX_TYPED_CHARS`. Callers turn a problem into an invalid action; nothing here ever
builds a request for such text.

>>> escape_text("O'Neil & Co")
"O\\\\'Neil%s\\\\&%sCo"
>>> text_chunks("100%sure")
['100%', 'sure']
>>> typing_problem("a\\nb")
'text has a control character U+000A at index 1; it cannot be typed safely through adb'
"""

from __future__ import annotations

import string
import unicodedata

MAX_TYPED_CHARS = 500
"""Longest text one action types (the adb command line stays far below adb's 4 KiB payload)."""
_SAFE_ASCII = frozenset(string.ascii_letters + string.digits + "%+,-./:=@_")
_REFUSED = {
    "Cc": "control character",
    "Cf": "format character",
    "Cs": "lone surrogate",
    "Co": "private-use character",
    "Cn": "unassigned code point",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}


def typing_problem(text: object) -> str | None:
    """Why ``text`` cannot be typed safely through ``adb shell input text``, or ``None``."""
    if not isinstance(text, str):
        return f"text must be a string, got {type(text).__name__}"
    if not text:
        return "there is no text to type"
    if len(text) > MAX_TYPED_CHARS:
        return f"text has {len(text)} characters; at most {MAX_TYPED_CHARS} are typed at once"
    for i, ch in enumerate(text):
        kind = _REFUSED.get(unicodedata.category(ch))
        if kind is not None:
            return (
                f"text has a {kind} U+{ord(ch):04X} at index {i}; "
                "it cannot be typed safely through adb"
            )
    return None


def text_chunks(text: str) -> list[str]:
    """``text`` cut between every ``%`` and ``s`` that follows it (each piece is one request).

    ``input text`` reads ``%s`` as a space, so a literal ``%s`` cannot sit in one request.
    """
    chunks, start = [], 0
    at = text.find("%s")
    while at >= 0:
        chunks.append(text[start : at + 1])
        start = at + 1
        at = text.find("%s", start)
    chunks.append(text[start:])
    return chunks


def escape_text(text: str) -> str:
    """One chunk of text as the argument of ``adb shell input text`` (spaces as ``%s``).

    Raises:
        ValueError: the text cannot be typed safely (:func:`typing_problem`) or holds a literal
            ``%s`` (type it with one request per :func:`text_chunks` piece).
    """
    problem = typing_problem(text)
    if problem is not None:
        raise ValueError(problem)
    if "%s" in text:
        raise ValueError("a literal '%s' needs one request per piece of text_chunks(text)")
    return "".join(
        "%s" if ch == " " else ("\\" + ch if ch.isascii() and ch not in _SAFE_ASCII else ch)
        for ch in text
    )


def shell_word(arg: str) -> str:
    """What a POSIX shell makes of ``arg`` as one unquoted word of a command line.

    Only backslash-escaped words are understood (what :func:`escape_text` writes).

    Raises:
        ValueError: ``arg`` holds a character the shell would interpret (unescaped
            punctuation, whitespace or a control character) or ends with a lone backslash.
    """
    out, i = [], 0
    while i < len(arg):
        ch = arg[i]
        if ch == "\\":
            if i + 1 >= len(arg) or arg[i + 1] == "\n":
                raise ValueError(f"the shell would join lines at index {i}")
            out.append(arg[i + 1])
            i += 2
            continue
        if ch.isascii() and ch not in _SAFE_ASCII:
            raise ValueError(f"the shell would interpret {ch!r} at index {i} (not escaped)")
        if unicodedata.category(ch) in _REFUSED:
            raise ValueError(f"the shell would receive U+{ord(ch):04X} at index {i}")
        out.append(ch)
        i += 1
    return "".join(out)


def input_command_text(arg: str) -> str:
    """What Android's ``input text`` types for its argument: each ``%s`` becomes a space.

    Follows ``Input.sendText`` of AOSP: a ``%`` followed by ``s`` is one space; any other
    ``%`` is typed as is.
    """
    out, i = [], 0
    while i < len(arg):
        if arg.startswith("%s", i):
            out.append(" ")
            i += 2
        else:
            out.append(arg[i])
            i += 1
    return "".join(out)


def unescape_text(arg: str) -> str:
    """The text the device types for ``adb shell input text <arg>`` (inverse of
    :func:`escape_text`).

    Raises:
        ValueError: the device shell would interpret part of ``arg`` (see :func:`shell_word`).
    """
    return input_command_text(shell_word(arg))
