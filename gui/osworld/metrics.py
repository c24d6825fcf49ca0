"""OSWorld's general metrics, re-implemented with the same semantics, and their combination.

Semantics follow OSWorld (github.com/xlang-ai/OSWorld) at commit
``89426951c97d750c388ebbafcc923cfce5577616``: ``desktop_env/evaluators/metrics/general.py``
(most metrics), ``metrics/vscode.py`` (``compare_text_file``), ``metrics/basic_os.py``
(``is_utc_0``) and ``DesktopEnv.evaluate`` in ``desktop_env/desktop_env.py``. Quirks are kept:
``exact_match`` compares with ``==`` (``1 == 1.0``; no strip, so a trailing newline counts),
``check_include_exclude`` scores a None result 0 and tests ``r in result`` (substring for a
str, membership for a list; a str ``include`` is iterated character by character),
``is_utc_0`` looks only at the 4th line of ``timedatectl status``. Where OSWorld's function
raises, :func:`score` raises :class:`~gui.osworld.errors.MetricError`.

The runner's order, as in ``evaluate()``: run ``postconfig``; for ``func: "infeasible"`` the
score is 1 when the agent's last action is FAIL, else 0 (no metric runs); for any other task a
last action FAIL scores 0; else each metric gets its result (and expected value, when the file
gives one) and :func:`combine` joins several. Paths given to file metrics are local files.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gui.osworld.errors import MetricError

OSWORLD_METRICS: frozenset[str] = frozenset(
    str.split(
        "check_accessibility_tree check_auto_saving_time check_brightness_decrease_and_structure_sim "
        "check_config_status check_contrast_increase_and_structure_sim check_csv "
        "check_direct_json_object check_enabled_experiments check_file_exists "
        "check_file_exists_and_structure_sim check_font_size check_global_key_play_pause "
        "check_gnome_favorite_apps check_green_background check_highlighted_words "
        "check_history_deleted check_html_background_image check_image_file_size check_image_mirror "
        "check_image_size check_image_stretch_and_center check_include_exclude "
        "check_italic_font_size_14 check_json check_json_keybindings check_json_settings "
        "check_left_panel check_libre_locale check_line_number check_list check_moved_jpgs "
        "check_mp3_meta check_no_duplicates check_one_instance_when_started_from_file "
        "check_page_number_colors check_palette_and_structure_sim check_pdf_pages "
        "check_presenter_console_disable check_python_file_by_gold_file "
        "check_python_file_by_test_suite check_qt_bgcone check_qt_max_volume check_qt_minimal_view "
        "check_qt_slider_colours check_saturation_increase_and_structure_sim check_sharper "
        "check_slide_numbers_color check_slide_orientation_Portrait check_strikethrough "
        "check_structure_sim check_structure_sim_resized check_tabstops check_text_enlarged "
        "check_textbox_on_leftside check_thunderbird_filter check_thunderbird_folder "
        "check_thunderbird_prefs check_transition check_triangle_position compare_answer "
        "compare_archive compare_audios compare_conference_city_in_order compare_config "
        "compare_contains_image compare_csv compare_docx_files compare_docx_files_and_ignore_new_lines "
        "compare_docx_images compare_docx_lines compare_docx_tables compare_epub compare_font_names "
        "compare_highlighted_text compare_htmls compare_image_list compare_image_text compare_images "
        "compare_init_lines compare_insert_equation compare_line_spacing compare_pdf_images "
        "compare_pdfs compare_pptx_files compare_python_pure_text compare_references "
        "compare_result_files compare_subscript_contains compare_table compare_terminal_and_txt "
        "compare_text_file compare_time_in_speedtest_results compare_triangle_positions "
        "compare_videos compare_zip_files contains_page_break decrease_brightness diff_text_file "
        "evaluate_alignment evaluate_colored_words_in_tables evaluate_conversion "
        "evaluate_presentation_fill_to_rgb_distance evaluate_spacing "
        "evaluate_strike_through_last_paragraph exact_match file_contains find_default_font "
        "fuzzy_match fuzzy_place_math get_unique_train_ids has_page_numbers_in_footers "
        "increase_saturation infeasible is_added_to_steam_cart is_cookie_deleted "
        "is_expected_active_tab is_expected_bookmarks is_expected_installed_extensions "
        "is_expected_search_query is_expected_tabs is_expected_url_pattern_match "
        "is_extension_installed is_first_line_centered is_gold_text_included_in_pdf is_in_list "
        "is_in_vm_clickboard is_included_all_json_objects is_shortcut_on_desktop is_utc_0 "
        "is_vlc_fullscreen is_vlc_playing is_vlc_recordings_folder literal_match run_sqlite3"
    )
)
"""Every metric name OSWorld exports (``func`` values); :data:`METRICS`
implements a subset."""


def _read(path: Any) -> str:
    """Text of a file, newlines universal (``open(path)`` in OSWorld)."""
    return Path(path).read_text(encoding="utf-8")


def exact_match(result: Any, rules: Mapping[str, Any]) -> float:
    """1.0 when ``result == rules["expected"]`` (any types, Python ``==``), else 0.0."""
    return 1.0 if result == rules["expected"] else 0.0


def check_include_exclude(result: Any, rules: Mapping[str, Any]) -> float:
    """1.0 when every ``rules["include"]`` item is ``in`` the result and no ``exclude`` is."""
    if result is None:
        return 0.0
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    ok = all(item in result for item in include) and all(item not in result for item in exclude)
    return 1.0 if ok else 0.0


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """``str()`` equality (``type="str"``) or element-wise ``str()`` equality of two lists /
    tuples of equal length (``type="list"``); ``ignore_case`` lower-cases both sides."""
    kind = options.get("type", "str")
    ignore_case = options.get("ignore_case", False)

    def text(v: Any) -> str:
        return str(v).lower() if ignore_case else str(v)

    if kind == "str":
        return float(text(result) == text(expected))
    if kind == "list":
        seqs = (list, tuple)
        if type(result) not in seqs or type(expected) not in seqs or len(result) != len(expected):
            return 0.0
        return float([text(r) for r in result] == [text(e) for e in expected])
    raise MetricError(f"literal_match: type {kind!r} not supported; known: list, str")


def is_in_list(result: Any, rules: Mapping[str, Any]) -> float:
    """1.0 when ``rules["expected"] in result`` (a list's items, a str's substrings)."""
    return 1.0 if rules["expected"] in result else 0.0


def _codes(seq: Any) -> list[Any]:
    """Comparable elements of ``seq``: a str's code points; one-character strs in lists too."""
    if isinstance(seq, str):
        return [ord(c) for c in seq]
    if isinstance(seq, list | tuple | bytes):
        return [ord(e) if isinstance(e, str) and len(e) == 1 else e for e in seq]
    raise TypeError(f"cannot compare a {type(seq).__name__}")


def _lcs(a: list[Any], b: list[Any]) -> int:
    """Length of the longest common subsequence (bit-parallel, Allison-Dix / Hyyrö)."""
    masks: dict[Any, int] = {}
    for i, e in enumerate(a):
        masks[e] = masks.get(e, 0) | (1 << i)
    full = (1 << len(a)) - 1
    s = full
    for e in b:
        u = s & masks.get(e, 0)
        s = ((s + u) | (s - u)) & full
    return len(a) - s.bit_count()


def indel_ratio(a: Any, b: Any) -> float:
    """Similarity in [0, 1] as ``rapidfuzz.fuzz.ratio(a, b) / 100``: ``1 - indel / (|a|+|b|)``.

    ``indel`` (insertions + deletions) is ``|a| + |b| - 2 * LCS``. None on either side gives
    0.0; two empty sequences give 1.0. Strings compare by character, lists by element.
    """
    if a is None or b is None:
        return 0.0
    ca, cb = _codes(a), _codes(b)
    total = len(ca) + len(cb)
    if total == 0:
        return 1.0
    return 1.0 - (total - 2 * _lcs(ca, cb)) / total


def fuzzy_match(result: Any, rules: Mapping[str, Any]) -> float:
    """:func:`indel_ratio` of the result and ``rules["expected"]`` (case-sensitive)."""
    return indel_ratio(result, rules["expected"])


def diff_text_file(result: Any, expect: Any) -> float:
    """``difflib.SequenceMatcher`` ratio of the two files' lines; None result gives 0.0."""
    if result is None:
        return 0.0
    a, b = _read(result).splitlines(), _read(expect).splitlines()
    return difflib.SequenceMatcher(a=a, b=b).ratio()


def _blanks(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text).strip())


def compare_text_file(actual: Any, expected: Any, **options: Any) -> float:
    """1.0 when two files' texts are equal, optionally ``ignore_blanks`` (runs of whitespace
    become one space, ends stripped) and ``ignore_case``; a falsy ``actual`` gives 0.0."""
    if not actual:
        return 0.0
    a, b = _read(actual), _read(expected)
    if options.get("ignore_blanks", False):
        a, b = _blanks(a), _blanks(b)
    if options.get("ignore_case", False):
        a, b = a.lower(), b.lower()
    return 1.0 if a == b else 0.0


def check_list(result: Any, rules: Mapping[str, Any]) -> float:
    """1.0 when each ``rules["expect"]`` regex matches (``re.search``) some line of the file and
    no ``rules["unexpect"]`` regex matches any line; None result gives 0.0."""
    if result is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    clean = True
    with open(result, encoding="utf-8") as f:
        for line in f:
            found = [
                hit or p.search(line) is not None for hit, p in zip(found, expect, strict=True)
            ]
            clean = clean and all(p.search(line) is None for p in unexpect)
    return float(all(found) and clean)


def _json_contains(result: Any, expected: Mapping[str, Any]) -> float:
    for key, want in expected.items():
        got = result.get(key)
        if isinstance(want, list):
            if not (isinstance(got, list) and any(w in got for w in want)):
                return 0.0
        elif isinstance(want, str):
            if want not in got:
                return 0.0
        else:
            return 0.0
    return 1.0


def check_direct_json_object(result: Any, rules: Mapping[str, Any]) -> float:
    """Compare a JSON object (or its text) with ``rules["expected"]`` key by key.

    A str result is stripped, every ``'`` becomes ``"`` and it is parsed (invalid JSON raises,
    as in OSWorld). Without ``expect_in_result`` each expected value must equal
    ``result.get(key)``; with it a list value needs one of its items in the result's list and a
    str value must be a substring. Any other failure scores 0.0.
    """
    if isinstance(result, str):
        result = json.loads(result.strip().replace("'", '"'))
    if result is None:
        return 0.0
    try:
        expected = rules["expected"]
        if rules.get("expect_in_result", False):
            return _json_contains(result, expected)
        return 1.0 if all(v == result.get(k) for k, v in expected.items()) else 0.0
    except Exception:  # OSWorld: a bare except scores any failure 0
        return 0.0


def file_contains(file_path: Any, config: Mapping[str, Any]) -> float:
    """1.0 when the file's text contains every string of ``config["expected"]``; a falsy path,
    an unreadable file or a missing ``expected`` gives 0.0."""
    if not file_path:
        return 0.0
    try:
        text = _read(file_path)
        return 1.0 if all(item in text for item in config["expected"]) else 0.0
    except Exception:  # OSWorld: a bare except scores any failure 0
        return 0.0


_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")


def check_line_number(file_path: Any, line_number: Mapping[str, Any]) -> float:
    """1.0 when the number of lines holding an ``HH:MM:SS`` time equals
    ``int(line_number["expected"])``; a missing file or a bad ``expected`` gives 0.0."""
    if file_path is None or not os.path.isfile(file_path):
        return 0.0
    try:
        with open(file_path, encoding="utf-8") as f:
            count = sum(1 for line in f if _TIME.search(line))
        return 1.0 if count == int(line_number["expected"]) else 0.0
    except Exception:  # OSWorld: a bare except scores any failure 0
        return 0.0


def is_utc_0(timedatectl_output: Any) -> float:
    """1.0 when the 4th line of ``timedatectl status`` (``Time zone: ...``) ends ``+0000)``."""
    return 1.0 if timedatectl_output.split("\n")[3].endswith("+0000)") else 0.0


METRICS: dict[str, Callable[..., float]] = {
    f.__name__: f
    for f in (
        check_direct_json_object,
        check_include_exclude,
        check_line_number,
        check_list,
        compare_text_file,
        diff_text_file,
        exact_match,
        file_contains,
        fuzzy_match,
        is_in_list,
        is_utc_0,
        literal_match,
    )
}
"""OSWorld metric name -> our implementation (same positional parameters)."""


def score(func: str, result: Any, expected: Any, **options: Any) -> float:
    """Score ``result`` with metric ``func`` as OSWorld's ``evaluate()`` calls it.

    Args:
        func: a metric name of :data:`METRICS`.
        result: the result getter's value (text, a local file path, a parsed object...).
        expected: the expected getter's value; None calls the metric without one, as OSWorld
            does (so metrics that need one raise).
        options: the evaluator's ``options`` for this metric, passed as keywords.

    Returns:
        The score as a float (OSWorld's metrics return 0/1 or a ratio in [0, 1]).

    Raises:
        MetricError: unknown ``func`` (the message lists the known ones; ``infeasible`` is the
            runner's), or OSWorld's metric raises on these inputs too.
    """
    fn = METRICS.get(func) if isinstance(func, str) else None
    if fn is None:
        hint = " ('infeasible' is decided by the runner)" if func == "infeasible" else ""
        raise MetricError(f"unknown metric {func!r}{hint}; known: {', '.join(sorted(METRICS))}")
    try:
        value = fn(result, **options) if expected is None else fn(result, expected, **options)
    except MetricError:
        raise
    except Exception as err:
        raise MetricError(f"{func}: cannot score ({type(err).__name__}: {err})") from err
    return float(value)


def combine(scores: Sequence[float], conj: str) -> float:
    """Join several metric scores as ``DesktopEnv.evaluate`` does (commit ``89426951``).

    ``"and"``: the first score equal to 0 makes the task 0 (OSWorld returns at once); otherwise
    the mean of all scores. ``"or"``: the first score equal to 1 makes the task 1; otherwise
    the max. (OSWorld also returns 0 at once when a result getter raises FileNotFoundError
    under ``"and"``; that is the runner's to do.)

    Raises:
        OSWorldError: ``conj`` is not ``"and"`` / ``"or"`` or ``scores`` is empty.
    """
    if conj not in ("and", "or"):
        raise MetricError(f"conj must be 'and' or 'or', got {conj!r}")
    values = [float(s) for s in scores]
    if not values:
        raise MetricError("combine() needs at least one score")
    if conj == "and":
        return 0.0 if any(v == 0.0 for v in values) else sum(values) / len(values)
    return 1.0 if any(v == 1.0 for v in values) else max(values)
