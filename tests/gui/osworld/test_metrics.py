"""OSWorld metrics: our implementations against outputs recorded from OSWorld's own functions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gui.osworld.errors import MetricError, OSWorldError
from gui.osworld.metrics import METRICS, combine, indel_ratio, score
from gui.osworld.suites import BUNDLED
from gui.osworld.task_file import OSWORLD_COMMIT, load_tasks

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "osworld"
DOC = json.loads((FIXTURES / "metric_cases.json").read_text(encoding="utf-8"))
CASES = DOC["cases"]
TIMEDATECTL = (
    "               Local time: Thu 2024-01-25 12:56:06 UTC\n"
    "           Universal time: Thu 2024-01-25 12:56:06 UTC\n"
    "                 RTC time: Thu 2024-01-25 12:56:05\n"
    "                Time zone: Etc/UTC (UTC, +0000)\n"
    "System clock synchronized: yes\n"
)


def _place(value: Any, folder: Path) -> Any:
    """``"@name"`` -> the path of that fixture file in ``folder``."""
    return str(folder / value[1:]) if isinstance(value, str) and value.startswith("@") else value


def test_fixture_provenance_and_coverage() -> None:
    prov = DOC["provenance"]
    assert prov["repo"] == "github.com/xlang-ai/OSWorld" and prov["commit"] == OSWORLD_COMMIT
    assert set(prov["functions"]) == set(METRICS)
    counts = Counter(c["func"] for c in CASES)
    assert set(counts) == set(METRICS)
    assert min(counts.values()) >= 5, counts
    assert any(c["raises"] for c in CASES) and any(c["result"] is None for c in CASES)


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{i}-{c['func']}-{c['note'][:30]}" for i, c in enumerate(CASES)]
)
def test_matches_osworld(case: dict[str, Any], tmp_path: Path) -> None:
    for name, text in case["files"].items():
        with open(tmp_path / name, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    args = (_place(case["result"], tmp_path), _place(case["expected"], tmp_path))
    if case["raises"]:
        with pytest.raises(MetricError, match=case["func"]):
            score(case["func"], *args, **case["options"])
    else:
        got = score(case["func"], *args, **case["options"])
        assert isinstance(got, float)
        assert got == pytest.approx(case["score"], abs=1e-12)


def test_unknown_metric_lists_known_ones() -> None:
    with pytest.raises(MetricError, match="unknown metric 'nope'; known: check_direct_json_object"):
        score("nope", "x", None)
    with pytest.raises(MetricError, match="'infeasible' is decided by the runner"):
        score("infeasible", None, None)
    with pytest.raises(OSWorldError, match="unknown metric 3"):
        score(3, "x", None)  # type: ignore[arg-type]


def test_metric_errors_keep_the_cause() -> None:
    with pytest.raises(MetricError, match=r"is_utc_0: cannot score \(IndexError") as info:
        score("is_utc_0", "one line", None)
    assert isinstance(info.value.__cause__, IndexError)
    with pytest.raises(MetricError, match="literal_match: type 'dict' not supported"):
        score("literal_match", "a", "a", type="dict")
    with pytest.raises(MetricError, match="unexpected keyword"):
        score("exact_match", "a", {"expected": "a"}, ignore_case=True)


def test_shipped_os_tasks_score_a_right_and_a_wrong_output() -> None:
    """Each scored os task: the output its rule describes scores 1, an unrelated one 0."""
    checked = 0
    for task in load_tasks(BUNDLED["os"]):
        ev = task.evaluator
        if ev.empty or ev.infeasible or ev.unavailable:
            continue
        func, expected = ev.funcs[0], ev.expected[0]
        if func == "is_utc_0":
            assert score(func, TIMEDATECTL, None) == 1.0
            assert score(func, TIMEDATECTL.replace("+0000", "+0100"), None) == 0.0
        elif func == "exact_match":
            rules = expected.params["rules"]
            assert score(func, rules["expected"], rules) == 1.0
            assert score(func, rules["expected"].rstrip("\n"), rules) == 0.0
            assert score(func, None, rules) == 0.0
        else:
            rules = expected.params["rules"]
            assert func == "check_include_exclude"
            assert score(func, "out: " + " ".join(rules["include"]), rules) == 1.0
            wrong = " ".join(rules["exclude"]) if rules["exclude"] else "nothing"
            assert score(func, wrong, rules) == 0.0
        checked += 1
    assert checked == 16


@pytest.mark.parametrize(
    ("scores", "conj", "want"),
    [
        ([1.0, 0.5], "and", 0.75),
        ([1.0, 0.5, 0.0], "and", 0.0),
        ([0.0, 1.0], "and", 0.0),
        ([0.7], "and", 0.7),
        ([1, 1], "and", 1.0),
        ([0.2, 0.5], "or", 0.5),
        ([0.2, 1.0, 0.0], "or", 1.0),
        ([0.0, 0.0], "or", 0.0),
        ([0.7], "or", 0.7),
    ],
)
def test_combine_matches_evaluate(scores: list[float], conj: str, want: float) -> None:
    assert combine(scores, conj) == pytest.approx(want)
    assert isinstance(combine(scores, conj), float)


def test_combine_rejects_bad_input() -> None:
    with pytest.raises(MetricError, match="conj must be 'and' or 'or', got 'xor'"):
        combine([1.0], "xor")
    with pytest.raises(MetricError, match="at least one score"):
        combine([], "and")


def _lcs_dp(a: str, b: str) -> int:
    row = [0] * (len(b) + 1)
    for ca in a:
        prev = 0
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], prev + 1 if ca == cb else max(row[j], row[j - 1])
    return row[-1]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcé \n", max_size=90), st.text(alphabet="abcé \n", max_size=90))
def test_indel_ratio_is_the_lcs_ratio(a: str, b: str) -> None:
    want = 1.0 if not a and not b else 2 * _lcs_dp(a, b) / (len(a) + len(b))
    assert indel_ratio(a, b) == pytest.approx(want, abs=1e-12)
    assert indel_ratio(a, b) == pytest.approx(indel_ratio(b, a), abs=1e-12)
    assert 0.0 <= indel_ratio(a, b) <= 1.0
