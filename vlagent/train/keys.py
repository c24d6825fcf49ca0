"""Which training samples a GRPO step draws: a resumable cursor plus the difficulty filter.

Synthetic sources are unbounded, so every step draws fresh screens. A finite source (ScreenSpot
files, task suites) cycles through its records; with a difficulty band, records whose running
success rate left [lo, hi] are skipped (too easy or too hard to teach anything).
"""

from __future__ import annotations

import logging
from typing import Any

from vlagent.algos.filters import difficulty_filter

log = logging.getLogger(__name__)


class KeyStream:
    """Draws training task ids of a world in order; its ``state()`` goes into checkpoints.

    Args:
        task: a ``World`` (``num_tasks`` and ``task_ids`` of the train split).
    """

    def __init__(
        self,
        task: Any,
        band: list[float] | None = None,
        cursor: int = 0,
        stats: dict[str, list[int]] | None = None,
    ) -> None:
        self.task = task
        self.band = tuple(band) if band else None
        self.cursor = cursor
        self.stats: dict[str, list[int]] = stats or {}  # key -> [successes, tries]

    @classmethod
    def restore(
        cls, task: Any, state: dict[str, Any] | None, band: list[float] | None
    ) -> KeyStream:
        if not state:
            return cls(task, band)
        stats = {str(k): list(v) for k, v in state.get("stats", {}).items()}
        return cls(task, band, int(state["cursor"]), stats)

    def state(self) -> dict[str, Any]:
        return {"cursor": self.cursor, "stats": {str(k): v for k, v in self.stats.items()}}

    def _allowed(self, key: int) -> bool:
        if self.band is None or str(key) not in self.stats:
            return True
        s, n = self.stats[str(key)]
        return bool(difficulty_filter({key: s / n}, *self.band))

    def take(self, n: int) -> list[int]:
        """The next ``n`` keys (skipping out-of-band records of a finite source)."""
        total = self.task.num_tasks("train")
        if total is None or self.band is None:
            keys = self.task.task_ids("train", self.cursor, n)
            self.cursor += n
            return keys
        out: list[int] = []
        scanned = 0
        while len(out) < n:
            key = self.task.task_ids("train", self.cursor, 1)[0]
            self.cursor += 1
            scanned += 1
            if self._allowed(key) or scanned > total:
                out.append(key)
            if scanned == total + 1:
                log.warning(
                    "difficulty band %s excludes every task; sampling without it", self.band
                )
        return out

    def record(self, keys: list[int], successes: list[bool]) -> None:
        """Update running success rates (only tracked when a band is set)."""
        if self.band is None:
            return
        for k, ok in zip(keys, successes, strict=True):
            s = self.stats.setdefault(str(k), [0, 0])
            s[0] += int(ok)
            s[1] += 1
