"""``docs/RELIABILITY.md`` names tests that exist and quotes the counts the fuzz tests use."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "RELIABILITY.md"


def test_every_named_test_exists() -> None:
    text = DOC.read_text()
    refs = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    assert len(refs) >= 25
    for path, name in refs:
        source = ROOT / path
        assert source.is_file(), f"{path} (named in RELIABILITY.md) does not exist"
        assert re.search(rf"^\s*def {name}\(", source.read_text(), re.M), f"{path}::{name}"


def test_fuzz_counts_match_the_tests() -> None:
    sys.path.insert(0, str(ROOT / "tests" / "vlagent" / "codec"))
    try:
        import hostile_text as corpus
        import test_fuzz as fuzz
    finally:
        sys.path.pop(0)
    text = DOC.read_text()

    def row(test: str) -> str:
        return next(line for line in text.splitlines() if f"::{test}`" in line)

    assert f"| {corpus.N_STRINGS:,} strings" in row("test_fuzz_corpus_through_every_parser")
    assert f"| {corpus.PROBES:,} number pairs" in row("test_no_off_image_coordinate_is_accepted")
    assert f"(seed {corpus.SEED})" in text
    assert f"{fuzz.BUDGET_S * 1000:.0f} ms" in text
