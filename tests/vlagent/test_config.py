"""Config: YAML + dotted overrides into dataclasses; bad input names the file and key;
packaged recipes load by name; presets set what they claim."""

from __future__ import annotations

import dataclasses
import re

import pytest

from vlagent.algo_config import PRESETS, GRPOConfig
from vlagent.config import RECIPES_DIR, TrainConfig, load_config, to_yaml
from vlagent.errors import ConfigError

RECIPES = sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def test_defaults_and_overrides():
    cfg = load_config(None, ["grpo.lr=2e-5", "run.seed=3", "task.reward={point_in_box: 1.0}"])
    assert isinstance(cfg, TrainConfig)
    assert cfg.grpo.lr == 2e-5 and cfg.run.seed == 3
    assert cfg.task.reward == {"point_in_box": 1.0}


def test_packaged_recipes_are_all_there():
    assert set(RECIPES) >= {
        "grpo",
        "sft",
        "quickstart",
        "screenspot_eval",
        "zoom_sft",
        "zoom_grpo",
        "apps_sft",
        "apps_grpo",
    }


@pytest.mark.parametrize("name", RECIPES)
def test_packaged_recipes_load_by_name(name):
    cfg = load_config(name)
    assert isinstance(cfg, TrainConfig)
    assert "recipe:" in to_yaml(cfg)
    assert load_config(RECIPES_DIR / f"{name}.yaml") == cfg  # a name is its packaged file


def test_world_recipes_fill_the_world_sections():
    """One schema for every world: the zoom / apps recipes set task, tools, loop and apps."""
    cfg = load_config("zoom_sft", ["sft.steps=3"])
    assert isinstance(cfg, TrainConfig)
    assert (cfg.recipe, cfg.world, cfg.sft.steps) == ("sft", "zoom", 3)
    assert cfg.task.pixel_budget == 114688 and cfg.task.level == "hires_tiny_small"
    assert (
        cfg.tools.enabled and cfg.tools.names == ["zoom_in"] and cfg.tools.system_prompt == "short"
    )
    assert (cfg.loop.max_turns, cfg.loop.max_episode_tokens, cfg.loop.over_limit) == (3, 96, "mask")
    zg = load_config("zoom_grpo")
    assert (zg.recipe, zg.world) == ("grpo", "zoom")
    assert zg.tools.reward.bonus == 0.2 and zg.tools.reward.per_call == 0.05
    assert zg.grpo.clip_eps_high == 0.28 and zg.grpo.micro_batch_size == 16
    apps = load_config("apps_sft")
    assert (apps.recipe, apps.world) == ("sft", "apps")
    assert apps.apps.train_suite == "toggles" and apps.apps.keep_images == 1
    assert (load_config("apps_grpo").recipe, load_config("apps_grpo").world) == ("grpo", "apps")
    plain = load_config(None, ["recipe=sft"])
    assert (plain.recipe, plain.world) == ("sft", "grounding")
    # an override of a world section key goes through the same schema
    assert load_config("zoom_sft", ["tools.enabled=false"]).tools.enabled is False


def test_unknown_world_section_key_names_it():
    with pytest.raises(ConfigError, match=r"loop\.max_turnz"):
        load_config("zoom_sft", ["loop.max_turnz=3"])


def test_unknown_world_name_lists_the_known_ones():
    from vlagent.worlds import make_world

    with pytest.raises(ConfigError, match=r"world: 'nope'.*grounding"):
        make_world(load_config(None, ["world=nope"]), policy=None)


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
        ("grpo.gamma=1.5", "grpo.gamma"),
        ("grpo.gigpo_weight=-1", "grpo.gigpo_weight"),
        ("model.family=llava", "model.family"),
        ("task.answer_format=xml", "task.answer_format"),
        ("task.pixel_budget=-1", "task.pixel_budget"),
        ("recipe=ppo", "recipe"),
        ("algo=ppo", "algo"),
        ("task.eval_seed_offset=5", "task.eval_seed_offset"),
        ("loop.over_limit=drop", "loop.over_limit"),
        ("loop.batch_size=0", "loop.batch_size"),
        ("tools.system_prompt=long", "tools.system_prompt"),
        ("tools.names=[hammer]", "tools.names"),
        ("apps.keep_images=0", "apps.keep_images"),
        ("apps.reward.bonus=1.0", "apps.reward"),
    ],
)
def test_range_checks_name_field(override, field):
    with pytest.raises(ConfigError, match=re.escape(field)):
        load_config(None, override.split())


# What each preset claims (docs/ALGORITHMS.md), written out here rather than read from PRESETS,
# so a preset that stops setting its defining values fails.
PRESET_CLAIMS = {
    "grpo": {"advantage": "grpo", "scale_by_std": True, "loss": "ppo_clip"},
    "dr_grpo": {
        "advantage": "dr_grpo",
        "scale_by_std": False,
        "aggregation": "seq_mean_token_sum_norm",
    },
    "dapo": {
        "clip_eps_low": 0.2,
        "clip_eps_high": 0.28,
        "dynamic_sampling": True,
        "aggregation": "token_mean",
        "kl_coef": 0.0,
        "mask_truncated": True,
    },
    "gspo": {
        "loss": "gspo",
        "clip_eps_low": 3e-4,
        "clip_eps_high": 4e-4,
        "aggregation": "seq_mean_token_mean",
    },
    "rloo": {"advantage": "rloo"},
    "reinforce_pp": {"advantage": "reinforce_pp", "reinforce_group_baseline": True},
}


def test_every_preset_has_claims():
    assert set(PRESETS) == set(PRESET_CLAIMS)


@pytest.mark.parametrize("name", sorted(PRESET_CLAIMS))
def test_preset_sets_what_it_claims(name):
    cfg = load_config(None, [f"algo={name}"])
    assert cfg.algo == name
    for key, want in PRESET_CLAIMS[name].items():
        assert getattr(cfg.grpo, key) == pytest.approx(want), f"algo={name}: grpo.{key}"
    # everything else stays at the defaults
    default = GRPOConfig()
    others = {f.name for f in dataclasses.fields(GRPOConfig)} - set(PRESET_CLAIMS[name])
    for key in others:
        assert getattr(cfg.grpo, key) == getattr(default, key), f"algo={name}: grpo.{key}"
    # a preset that claims nothing new would be the default in disguise
    if name != "grpo":
        assert cfg.grpo != default


def test_preset_sits_under_yaml_and_overrides(tmp_path):
    cfg = load_config(None, ["algo=dapo", "grpo.clip_eps_high=0.3"])
    assert cfg.grpo.clip_eps_high == 0.3 and cfg.grpo.dynamic_sampling
    f = tmp_path / "r.yaml"
    f.write_text("algo: dapo\ngrpo:\n  clip_eps_high: 0.25\n")
    assert load_config(f).grpo.clip_eps_high == 0.25
    assert load_config(f, ["algo=grpo"]).grpo.dynamic_sampling is False  # the last algo wins


def test_missing_file_and_malformed_override(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="packaged recipes: .*zoom_sft"):
        load_config("no_such_recipe")
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
