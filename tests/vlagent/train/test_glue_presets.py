"""Each ``algo=`` preset resolves, field by field, to what ``docs/ALGORITHMS.md`` says.

The test reads the doc's Presets table, so the doc and ``algo_config.PRESETS`` cannot drift
apart: a changed defining setting (Dr.GRPO's aggregation, GSPO's clip range, REINFORCE++'s
group baseline, ...) or a key a preset sets that the table does not list fails here. Fields the
table does not mention must keep the ``GRPOConfig`` defaults (the doc says so).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from vlagent.algo_config import PRESETS, GRPOConfig
from vlagent.config import load_config

DOC = Path(__file__).resolve().parents[3] / "docs" / "ALGORITHMS.md"
COLUMNS = ["algo=", "advantage", "loss", "clip (lo / hi)", "aggregation", "other"]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _settings(cell: str) -> dict[str, object]:
    """``key=value`` settings in backticks (``grpo.`` optional), and ``key`` (default V)."""
    out: dict[str, object] = {}
    for tick in _ticked(cell):
        for pair in tick.split():
            if "=" in pair:
                key, value = pair.split("=", 1)
                out[key.removeprefix("grpo.")] = yaml.safe_load(value)
    for key, value in re.findall(r"`(?:grpo\.)?(\w+)` \(default ([^)]+)\)", cell):
        out[key] = yaml.safe_load(value)
    return out


def doc_presets() -> dict[str, dict[str, object]]:
    """algo name -> the grpo.* values its row of the Presets table states."""
    text = DOC.read_text()
    section = text.split("\n## Presets\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    assert _cells(lines[0]) == [f"`{c}`" if c == "algo=" else c for c in COLUMNS], lines[0]
    out: dict[str, dict[str, object]] = {}
    for line in lines[2:]:
        algo, adv, loss, clip, agg, other = _cells(line)
        (name,) = _ticked(algo)
        want: dict[str, object] = {"advantage": _ticked(adv)[0]}
        if "group std" in adv:
            want.update(scale_by_std=True, std_level="group")
        want.update(_settings(adv))
        if "group baseline" in adv:
            want["reinforce_group_baseline"] = True
        (want["loss"],) = _ticked(loss)
        low, high = (float(x) for x in clip.split("/"))
        want.update(clip_eps_low=low, clip_eps_high=high)
        (want["aggregation"],) = _ticked(agg)
        if not other.startswith("add "):  # "add ..." is advice, not part of the preset
            want.update(_settings(other))
        out[name] = want
    return out


def test_the_doc_lists_every_preset_and_only_known_fields():
    doc = doc_presets()
    assert list(doc) == list(PRESETS)
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    for name, want in doc.items():
        assert set(want) <= fields, (name, set(want) - fields)
    # the table is parsed, not skipped: the settings that define each method are read
    assert doc["dr_grpo"]["aggregation"] == "seq_mean_token_sum_norm"
    assert doc["dr_grpo"]["scale_by_std"] is False
    assert doc["dapo"]["dynamic_sampling"] is True and doc["dapo"]["kl_coef"] == 0
    assert doc["grpo"]["kl_coef"] == 0
    assert doc["reinforce_pp"]["reinforce_group_baseline"] is True


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_resolves_to_the_doc_field_by_field(name):
    want = dataclasses.asdict(GRPOConfig())
    want.update(doc_presets()[name])
    got = dataclasses.asdict(load_config(None, [f"algo={name}"]).grpo)
    diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    assert not diff, f"algo={name}: field: (resolved, docs/ALGORITHMS.md) {diff}"


def test_preset_sits_under_the_recipe_and_overrides():
    """The doc's example: ``--config grpo algo=dapo grpo.clip_eps_high=0.3``."""
    text = DOC.read_text()
    assert "vlagent train --config grpo algo=dapo grpo.clip_eps_high=0.3" in text
    g = load_config("grpo", ["algo=dapo", "grpo.clip_eps_high=0.3"]).grpo
    assert g.clip_eps_high == 0.3
    assert g.dynamic_sampling and g.mask_truncated and g.clip_eps_low == 0.2
    assert g.lr == load_config("grpo").grpo.lr  # the recipe's own values stay


def test_every_config_key_the_doc_names_exists_and_its_examples_load():
    """Every ``grpo.key`` in the doc is a GRPOConfig field, and each backticked example of
    literal ``grpo.key=value`` settings loads as written (a value like β or [lo, hi] is a
    placeholder and is left out)."""
    text = DOC.read_text()
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    named = set(re.findall(r"\bgrpo\.(\w+)", text)) - {"group_advantages"}  # an old function
    assert len(named) > 20 and named <= fields, named - fields
    literal = r"\bgrpo\.(\w+)=([A-Za-z0-9_.\-]+)(?=\s|$)"
    examples = [re.findall(literal, tick) for tick in _ticked(text)]
    examples = [pairs for pairs in examples if pairs]
    assert len(examples) > 10
    needs = {"kl_in_reward": ["grpo.kl_coef=0.1"]}  # its example's β is a placeholder
    for pairs in examples:
        extra = [x for key, _ in pairs for x in needs.get(key, [])]
        g = load_config(None, [*extra, *(f"grpo.{k}={v}" for k, v in pairs)]).grpo
        for key, value in pairs:
            assert getattr(g, key) == yaml.safe_load(value), (key, value)
