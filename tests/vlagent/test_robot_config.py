"""The ``robot`` config section: defaults, the shipped recipes, and named errors for bad values."""

from __future__ import annotations

import pytest

from vlagent.config import load_config
from vlagent.errors import ConfigError


def test_defaults_and_overrides() -> None:
    cfg = load_config(None, ["world=robot", "robot.task=push", "robot.chunk=4"])
    assert cfg.world == "robot"
    assert (cfg.robot.suite, cfg.robot.task, cfg.robot.chunk) == ("own", "push", 4)
    assert cfg.robot.n_bins == 256 and cfg.robot.action_style == "digits"
    assert cfg.robot.reward["success"] == 1.0


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("robot.task=fly", "robot.task"),
        ("robot.suite=isaac", "robot.suite"),
        ("robot.image_size=8", "robot.image_size"),
        ("robot.chunk=0", "robot.chunk"),
        ("robot.action_style=json", "robot.action_style"),
        ("robot.n_bins=1", "robot.n_bins"),
        ("robot.max_step=0", "robot.max_step"),
        ("robot.max_steps=-1", "robot.max_steps"),
        ("robot.reward={success: 1.0, speed: 2.0}", "robot.reward"),
    ],
)
def test_bad_values_name_their_field(override: str, field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        load_config(None, [override])


def test_other_suites_accept_their_own_task_names() -> None:
    cfg = load_config(None, ["robot.suite=metaworld", "robot.task=reach-v3"])
    assert cfg.robot.task == "reach-v3"


def test_robot_grpo_recipe_is_simplevla_rl() -> None:
    """No KL, clip-higher, dynamic sampling, a higher temperature, more than one minibatch (so
    the upper clip can bind at all)."""
    cfg = load_config("robot_grpo")
    g = cfg.grpo
    assert cfg.world == "robot" and cfg.algo == "dapo"
    assert g.kl_coef == 0.0
    assert g.clip_eps_high > g.clip_eps_low
    assert g.dynamic_sampling
    assert g.temperature > 1.0
    assert g.minibatches >= 2
    assert cfg.robot.reward == {
        "success": 1.0,
        "distance": 0.0,
        "proximity": 0.0,
        "grasp": 0.0,
        "invalid_action": 0.0,
    }
