"""Forced (demonstration) turns: text is tokenized, token ids are kept exactly as given."""

from __future__ import annotations

import numpy as np
import pytest

from vlagent.rollout.runner import forced_ids


class _Tok:
    """Tokenizes one char per id (ord) so the test can tell tokenized text from given ids."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) for c in text]}


def test_text_is_tokenized() -> None:
    assert forced_ids("ab", _Tok()) == [97, 98]


def test_ids_are_kept_exactly() -> None:
    assert forced_ids([5, 700, 6], _Tok()) == [5, 700, 6]
    assert forced_ids(np.array([3, 4]), _Tok()) == [3, 4]
    assert all(type(i) is int for i in forced_ids(np.array([3, 4]), _Tok()))


@pytest.mark.parametrize("bad", [[1.5, 2], [True], [None], ["a"]])
def test_non_ids_are_a_named_error(bad) -> None:
    with pytest.raises(TypeError, match="not token ids"):
        forced_ids(bad, _Tok())
