"""Small task suites a tiny CPU policy can learn: Settings toggles from the launcher.

Every task starts on the launcher: open Settings (``open_app`` or a tap on its icon), then tap
one switch (2 steps) or two switches (3 steps). Training tasks: each single toggle (5 switches x
on/off) on a few phone-state seeds, plus half of the two-switch combinations. Held-out tasks:
the singles on unseen seeds (other switch states and brightness differ on screen) and the
other half of the two-switch combinations (unseen parameters).

>>> train, heldout = toggle_suites(train_seeds=2, heldout_seeds=1)
>>> len(train["tasks"]), len(heldout["tasks"])
(40, 30)
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np

TOGGLE_KEYS: tuple[str, ...] = ("wifi", "bluetooth", "dark_mode", "location", "dnd")
"""Switches the suites use (airplane mode is left out: it also flips Wi-Fi / Bluetooth)."""
_HELDOUT_SEED_BASE = 10_000


def _task(tid: str, toggles: dict[str, bool], seed: int, split: str) -> dict[str, Any]:
    return {
        "id": tid,
        "template": "set_toggles",
        "params": {"toggles": toggles},
        "seed": seed,
        "max_steps": len(toggles) + 3,
        "split": split,
    }


def _pairs() -> list[dict[str, bool]]:
    """All two-switch tasks (10 key pairs x 4 on/off combinations), in a fixed shuffled order."""
    out = [
        {a: va, b: vb}
        for a, b in itertools.combinations(TOGGLE_KEYS, 2)
        for va, vb in itertools.product((True, False), repeat=2)
    ]
    order = np.random.default_rng(1234).permutation(len(out))
    return [out[i] for i in order]


def _tag(toggles: dict[str, bool]) -> str:
    return "-".join(f"{k}_{'on' if v else 'off'}" for k, v in toggles.items())


def toggle_suites(
    train_seeds: int = 3, heldout_seeds: int = 2
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Suite mappings (the JSON suite format) of the train and held-out toggle tasks.

    Args:
        train_seeds: phone-state seeds per single-toggle training task (seeds 0..n-1).
        heldout_seeds: unseen phone-state seeds per single-toggle held-out task.

    Returns:
        ``(train, heldout)`` mappings for :func:`gui.apps.suite.parse_suite`.

    Raises:
        ValueError: ``train_seeds`` over 100 (training seeds would reach the held-out ones).
    """
    if train_seeds > _HELDOUT_SEED_BASE // 100:
        raise ValueError(
            f"train_seeds={train_seeds}: at most {_HELDOUT_SEED_BASE // 100}, else training "
            f"phone seeds reach the held-out ones (from {_HELDOUT_SEED_BASE:,})"
        )
    singles = [{k: v} for k in TOGGLE_KEYS for v in (True, False)]
    pairs = _pairs()
    train, heldout = [], []
    for i, t in enumerate(singles):
        for s in range(train_seeds):
            train.append(_task(f"train-{_tag(t)}-s{s}", t, s * 100 + i, "train"))
        for s in range(heldout_seeds):
            seed = _HELDOUT_SEED_BASE + s * 100 + i
            heldout.append(_task(f"heldout-{_tag(t)}-s{s}", t, seed, "test"))
    for i, t in enumerate(pairs[: len(pairs) // 2]):
        train.append(_task(f"train-{_tag(t)}", t, 5_000 + i, "train"))
    for i, t in enumerate(pairs[len(pairs) // 2 :]):
        heldout.append(_task(f"heldout-{_tag(t)}", t, _HELDOUT_SEED_BASE + 5_000 + i, "test"))
    suite = {"version": 1}
    return {"name": "phone_toggles_train", **suite, "tasks": train}, {
        "name": "phone_toggles_heldout",
        **suite,
        "tasks": heldout,
    }


CHAIN_SIZES: tuple[int, ...] = (3, 4, 5)
"""Switches per chain task: 4 to 6 steps (open Settings, one tap per switch, done)."""
_CHAIN_TRAIN_SEED = 200_000
_CHAIN_HELDOUT_SEED = 300_000


def chain_combos() -> list[dict[str, bool]]:
    """Every 3-, 4- and 5-switch task (80 + 80 + 32 = 192), in a fixed shuffled order."""
    out = [
        dict(zip(keys, values, strict=True))
        for k in CHAIN_SIZES
        for keys in itertools.combinations(TOGGLE_KEYS, k)
        for values in itertools.product((True, False), repeat=k)
    ]
    order = np.random.default_rng(5678).permutation(len(out))
    return [out[i] for i in order]


def chain_suites(
    train_seeds: int = 3, heldout_seeds: int = 4
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Suite mappings of the longer-horizon toggle chains (3 to 5 switches, 4 to 6 steps).

    The 192 switch combinations are split in half: 96 training combinations, each on
    ``train_seeds`` phone-state seeds, and 96 held-out combinations (unseen task parameters),
    each on ``heldout_seeds`` unseen phone-state seeds (4 seeds: 384 held-out episodes, a 95 %
    interval of about +-5 points). Training tasks are ordered seed-major, so the first n tasks
    (``sft.num_demos = n``, the demonstrated ones) are n different combinations.

    >>> train, heldout = chain_suites(train_seeds=2, heldout_seeds=4)
    >>> len(train["tasks"]), len(heldout["tasks"]), heldout["tasks"][0]["max_steps"] >= 6
    (192, 384, True)
    """
    if not 1 <= train_seeds <= 100:
        raise ValueError(f"train_seeds={train_seeds}: must be in [1, 100]")
    combos = chain_combos()
    half = len(combos) // 2
    train, heldout = [], []
    for s in range(train_seeds):
        for i, t in enumerate(combos[:half]):
            seed = _CHAIN_TRAIN_SEED + s * 1000 + i
            train.append(_task(f"train-chain-{_tag(t)}-s{s}", t, seed, "train"))
    for s in range(heldout_seeds):
        for i, t in enumerate(combos[half:]):
            seed = _CHAIN_HELDOUT_SEED + s * 1000 + i
            heldout.append(_task(f"heldout-chain-{_tag(t)}-s{s}", t, seed, "test"))
    suite = {"version": 1}
    return {"name": "phone_chains_train", **suite, "tasks": train}, {
        "name": "phone_chains_heldout",
        **suite,
        "tasks": heldout,
    }


GENERATED_SUITES = {"toggles": toggle_suites, "chains": chain_suites}
"""Suites the apps world generates from ``apps.train_seeds`` / ``apps.heldout_seeds``."""


def write_suite(suite: dict[str, Any], path: str | Path) -> Path:
    """Write a suite mapping as a JSON suite file (one task per line) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ",\n".join("  " + json.dumps(t) for t in suite["tasks"])
    head = f'{{\n "name": {json.dumps(suite["name"])},\n "version": {suite["version"]},\n'
    path.write_text(head + f' "tasks": [\n{lines}\n ]\n}}\n', encoding="utf-8")
    return path
