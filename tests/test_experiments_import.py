"""The experiment drivers under ``experiments/`` import (they are not run by the suite, so a
renamed or moved API would otherwise break them unnoticed) and parse their default arguments."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import experiments

MODULES = sorted(m.name for m in pkgutil.iter_modules(experiments.__path__))


def test_there_are_experiments():
    assert {"phone_chains", "phone_sft_vs_grpo", "reward_shape"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_driver_imports_and_parses_defaults(name):
    mod = importlib.import_module(f"experiments.{name}")
    parse = getattr(mod, "_args", None) or getattr(mod, "parse_args", None)
    if parse is not None:
        parse([])
