"""Config: YAML + dotted overrides into dataclasses; bad input names the file and key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vlagent.config import TrainConfig, load_any_config, load_config, to_yaml
from vlagent.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_defaults_and_overrides():
    cfg = load_config(None, ["grpo.lr=2e-5", "run.seed=3", "task.reward={point_in_box: 1.0}"])
    assert isinstance(cfg, TrainConfig)
    assert cfg.grpo.lr == 2e-5 and cfg.run.seed == 3
    assert cfg.task.reward == {"point_in_box": 1.0}


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "configs").glob("*.yaml")))
def test_shipped_configs_load(name):
    cfg = load_any_config(REPO / "configs" / name)
    assert "recipe:" in to_yaml(cfg)


def test_agent_recipe_picks_the_agent_schema():
    from vlagent.agent.config import AgentTrainConfig

    cfg = load_any_config(REPO / "configs" / "zoom_sft.yaml", ["sft.steps=3"])
    assert isinstance(cfg, AgentTrainConfig) and cfg.recipe == "agent_sft"
    assert isinstance(load_any_config(None, ["recipe=sft"]), TrainConfig)
    with pytest.raises(ConfigError, match="pixel_budget"):
        load_config(REPO / "configs" / "zoom_sft.yaml")  # the single-turn schema names the key


def test_unknown_yaml_key_names_file_and_key(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("grpo:\n  lr: 1e-5\n  learning_rate: 3\n")
    with pytest.raises(ConfigError, match=r"bad.yaml.*grpo.learning_rate"):
        load_config(f)


def test_wrong_type_names_key():
    with pytest.raises(ConfigError, match=r"grpo.lr"):
        load_config(None, ["grpo.lr=fast"])


@pytest.mark.parametrize(
    "override, field",
    [
        ("grpo.group_size=1", "grpo.group_size"),
        ("grpo.kl_coef=-0.1", "grpo.kl_coef"),
        ("algo=gspo grpo.aggregation=token_mean", "grpo.loss / grpo.aggregation"),
        ("algo=gspo grpo.dual_clip=3", "grpo.loss / grpo.dual_clip"),
        ("grpo.advantage=dr_grpo", "grpo.advantage / grpo.scale_by_std"),
        ("grpo.kl_in_reward=true", "grpo.kl_in_reward / grpo.kl_coef"),
        ("grpo.dual_clip=0.5", "grpo.dual_clip"),
        ("grpo.group_size=3 grpo.minibatches=5", "grpo.minibatches"),
        ("model.family=llava", "model.family"),
        ("task.answer_format=xml", "task.answer_format"),
        ("recipe=ppo", "recipe"),
        ("task.eval_seed_offset=5", "task.eval_seed_offset"),
    ],
)
def test_range_checks_name_field(override, field):
    with pytest.raises(ConfigError, match=re.escape(field)):
        load_config(None, override.split())


def test_missing_file_and_malformed_override(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="key=value"):
        load_config(None, ["grpo.lr"])


def test_yaml_that_is_not_a_mapping(tmp_path):
    f = tmp_path / "list.yaml"
    f.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="list.yaml"):
        load_config(f)


def test_mapping_fields_are_replaced_whole_but_dotted_keys_update(tmp_path):
    f = tmp_path / "r.yaml"
    f.write_text("task:\n  reward: {iou: 1.0}\n")
    assert load_config(f).task.reward == {"iou": 1.0}
    cfg = load_config(f, ["task.reward.format=0.2"])
    assert cfg.task.reward == {"iou": 1.0, "format": 0.2}
