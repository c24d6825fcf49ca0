"""The seeded hostile-text corpus of ``test_fuzz.py`` (and the coordinate probes).

:func:`hostile_corpus` gives ``N_STRINGS`` strings, the same for the same seed: filled answer /
action / tool-call templates with hostile numbers and typed text, random JSON values inside the
wrappers models write, random tag soups, truncated / spliced / self-nested templates, random
Unicode (control characters and lone surrogates included), and 20,000-character inputs on both
sides of the parsers' length bound. :func:`coordinate_probes` gives number pairs around the
edges of the fuzz frame (K1000: 1000; resized pixels: 308 x 252), NaN and infinities.
"""

from __future__ import annotations

import json
import random

SEED = 12
N_STRINGS = 10_000
PROBES = 2_000
BIG = 20_000

NUMBERS = [
    "0", "1", "-1", "-0", "0.5", "7", "239", "240", "319", "320", "321", "999", "1000",
    "1001", "1e309", "-1e309", "1e-400", "NaN", "-NaN", "Infinity", "-Infinity", "nan",
    "inf", "1" + "0" * 400, "9" * 5000, "12345678901234567890", "3.4e38", "0x10", "1_000",
    "true", "null", '"5"', "[]", "1e", "--1", ".5", "5.", "\u0661\u0662", "1e20", "-40",
]  # fmt: skip
TEXTS = [
    "hello", "Ana Lima", "a\nb", "\x00", "\r\n", "\x1b[31mred", "\u202eevil", "$(reboot)",
    "; rm -rf /", "`id`", "%s", "50%sure", "tab\there", "\ud800", "\u2028", "\x7f", "\u200b",
    "x" * 3000, "O'Neil & Co", "back\\slash", "no input text", "",
]  # fmt: skip
TEMPLATES = [
    '<answer>{{"point": [{x}, {y}]}}</answer>',
    '<think>{t}</think><answer>{{"bbox": [{x}, {y}, {x2}, {y2}]}}</answer>',
    '{{"point_2d": [{x}, {y}]}}',
    '```json\n[{{"bbox_2d": [{x}, {y}, {x2}, {y2}], "label": "{t}"}}]\n```',
    '<tool_call>{{"name": "zoom_in", "arguments": {{"bbox_2d": [{x}, {y}, {x2}, {y2}]}}}}</tool_call>',
    '<tool_call>{{"name": "zoom_in", "arguments": {{"bbox_2d": [{x}, {y}, {x2}, {y2}], '
    '"coords": "norm", "source": "observation_{x}"}}}}</tool_call>',
    '<tool_call>{{"name": "ground", "arguments": {{"points": [[{x}, {y}], [{x2}, {y2}]], '
    '"label": "{t}"}}}}</tool_call>',
    '<tool_call>```json\n{{"name": "{t}", "arguments": "{{\\"bbox_2d\\": [{x}]}}"}}\n```</tool_call>',
    '{{"action_type": "click", "x": {x}, "y": {y}}}',
    '{{"action_type": "input_text", "text": "{t}", "x": {x}, "y": {y}}}',
    '{{"action_type": "input_text", "text": "{t}", "index": {x}}}',
    '{{"action_type": "scroll", "direction": "{t}", "x": {x}, "y": {y}}}',
    '{{"action_type": "open_app", "app_name": "{t}"}}',
    '{{"type": "type", "text": "{t}", "point": [{x}, {y}]}}',
    '{{"type": "swipe", "start": [{x}, {y}], "end": [{x2}, {y2}]}}',
    '{{"type": "key", "key": "{t}"}}',
    '<think>{t}</think><answer>{{"type": "click", "point": [{x}, {y}]}}</answer>',
    "Action: click(start_box='({x},{y})')",
    "Thought: {t}\nAction: type(content='{t}', start_box='({x},{y})')",
    "Action: click(point='<point>{x} {y}</point>')",
    "Action: drag(start_box='({x},{y})', end_box='({x2},{y2})')",
    "<|object_ref_start|>{t}<|object_ref_end|><|box_start|>({x},{y}),({x2},{y2})<|box_end|>",
    "<|box_start|>({x},{y})<|box_end|>",
    "<answer>[{{'action': 'type', 'point': [{x}, {y}], 'input_text': '{t}'}}]</answer>",
    '<answer>{{"point": [{x}, {y}], "source": "observation_{x}"}}</answer>',
]
TAGS = [
    "<tool_call>", "</tool_call>", "<answer>", "</answer>", "<think>", "</think>", "```",
    "```json", "<|box_start|>", "<|box_end|>", "<|object_ref_start|>", "<|image_pad|>",
    "<|im_end|>", "<point>", "</point>", "Action: ", "Thought: ", "start_box='(", ")'",
    '{"', '":', "[", "]", "{", "}", ",", '"', "'", "\\", "\\u0000", "\\ud800", "\n", " ",
]  # fmt: skip
BOMBS = [
    "<tool_call>" * (BIG // 11),
    "<tool_call>" * 8000,
    "<answer>" * (BIG // 8),
    "```" * (BIG // 3),
    "```" + " " * (BIG - 4) + "x",
    "<tool_call>```" + " " * (BIG - 40) + "</tool_call>",
    "<answer>```json" + " " * (BIG - 40) + "x</answer>",
    "[" * (BIG - 1),
    '{"a":' * (BIG // 5 - 1),
    '<answer>{"point": ' + "[" * (BIG - 40) + "</answer>",
    " " * (BIG - 8) + "<think>",
    "<think>" * (BIG // 7),
    '"source"' + " " * (BIG - 10),
    "Action: click(start_box='(" + "1," * (BIG // 2 - 20) + ")')",
    "<|box_start|>(" + "9" * (BIG - 30) + ",1)<|box_end|>",
    '<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [' + "1," * 2000 + "1]}}</tool_call>",
]


def _number(rng: random.Random) -> str:
    if rng.random() < 0.35:
        return rng.choice(NUMBERS)
    return repr(rng.choice([rng.uniform(-50, 1100), rng.randint(0, 1000), rng.random()]))


def _text(rng: random.Random) -> str:
    text = rng.choice(TEXTS) if rng.random() < 0.7 else _unicode(rng, 12)
    return json.dumps(text)[1:-1] if rng.random() < 0.6 else text  # JSON-escaped or raw


def _unicode(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(rng.randint(0, n)):
        r = rng.random()
        if r < 0.3:
            out.append(chr(rng.randrange(0x20)))  # C0 controls, NUL included
        elif r < 0.6:
            out.append(chr(rng.randrange(0x20, 0x7F)))
        else:
            out.append(chr(rng.randrange(0x110000)))  # anything: surrogates, unassigned
    return "".join(out)


def _template(rng: random.Random) -> str:
    fill = {k: _number(rng) for k in ("x", "y", "x2", "y2")}
    return rng.choice(TEMPLATES).format(t=_text(rng), **fill)


KEYS = ["name", "arguments", "point", "point_2d", "bbox", "bbox_2d", "box", "type", "action_type",
        "x", "y", "text", "index", "start", "end", "direction", "key", "app_name", "source"]  # fmt: skip
WRAPPERS = ["<tool_call>{j}</tool_call>", "<answer>{j}</answer>", "{j}", "```json\n{j}\n```",
            '<tool_call>{{"name": "zoom_in", "arguments": {j}}}</tool_call>',
            '<tool_call>{{"name": "ground", "arguments": {j}}}</tool_call>']  # fmt: skip


def _json_value(rng: random.Random, depth: int = 0) -> str:
    """A random JSON value (valid, or off by a hostile number literal) of any type."""
    r = rng.random()
    if depth > 3 or r < 0.3:
        return _number(rng)
    if r < 0.45:
        return '"' + _text(rng) + '"'
    if r < 0.7:
        return "[" + ", ".join(_json_value(rng, depth + 1) for _ in range(rng.randint(0, 5))) + "]"
    items = (
        f'"{rng.choice(KEYS)}": {_json_value(rng, depth + 1)}' for _ in range(rng.randint(0, 4))
    )
    return "{" + ", ".join(items) + "}"


def _mutate(rng: random.Random, s: str) -> str:
    op = rng.randrange(4)
    at = rng.randint(0, len(s))
    if op == 0:
        return s[:at]  # truncated
    if op == 1:
        return s[:at] + rng.choice(TAGS) + s[at:]
    if op == 2:
        return s[:at] + s + s[at:]  # nested in itself
    return s[:at] + _unicode(rng, 4) + s[at:]


def hostile_corpus(seed: int = SEED, n: int = N_STRINGS) -> list[str]:
    """``n`` hostile strings, the same for the same seed."""
    rng = random.Random(seed)
    out = list(BOMBS)
    while len(out) < n:
        r = rng.random()
        if r < 0.3:
            s = _template(rng)
        elif r < 0.45:
            s = rng.choice(WRAPPERS).format(j=_json_value(rng))
        elif r < 0.6:
            s = "".join(
                rng.choice(TAGS) if rng.random() < 0.6 else _number(rng)
                for _ in range(rng.randint(1, 12))
            )
        elif r < 0.75:
            s = _unicode(rng, 200)
        elif r < 0.95:
            s = _mutate(rng, _template(rng))
        else:  # a long input just under or over the parsers' bound
            piece = rng.choice(TAGS + [_template(rng)])
            s = (piece * (BIG // max(len(piece), 1) + 2))[: rng.randint(BIG - 50, BIG + 50)]
        out.append(s)
    return out[:n]


EDGES = ["-1", "-0.5", "0", "999", "1000", "1000.5", "1001", "307", "308", "309", "251", "252",
         "253", "NaN", "Infinity", "-Infinity", "1e309", "1e20"]  # fmt: skip


def coordinate_probes(seed: int = SEED, n: int = PROBES) -> list[tuple[str, str]]:
    """``n`` (x, y) number pairs around the image's edges in both spaces, NaN and infinities."""
    rng = random.Random(seed + 1)

    def num() -> str:
        if rng.random() < 0.5:
            return rng.choice(EDGES)
        return repr(round(rng.uniform(-100, 1500), rng.choice([0, 1, 3])))

    return [(num(), num()) for _ in range(n)]
