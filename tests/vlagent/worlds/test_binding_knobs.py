"""The binding knobs of the grounding world. ``task.targets_per_screen``: training batches hold
one screen with several targets; held-out screens keep one target each. ``task.prompt_order``:
the instruction before or after the screenshot."""

from __future__ import annotations

import pytest

from gui.grounding.sources import SyntheticSource
from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.worlds import make_world


def test_source_groups_k_targets_on_one_screen():
    src = SyntheticSource("shapes", targets_per_screen=4)
    block = [src.sample(k) for k in range(40, 44)]
    assert all((s.image == block[0].image).all() for s in block)
    assert block[0].meta["screen_seed"] == 40 and block[3].meta["seed"] == 43
    assert len({s.target_box_norm for s in block}) >= 2  # the targets differ
    assert not (
        src.sample(44).image.shape == block[0].image.shape
        and (src.sample(44).image == block[0].image).all()
    )  # next block: next screen
    plain = SyntheticSource("shapes")
    assert plain.sample(40).instruction == block[0].instruction  # variant 0 = the plain screen
    with pytest.raises(ValueError, match="targets_per_screen"):
        SyntheticSource("shapes", targets_per_screen=0)


def test_world_retargets_training_screens_only(tiny_dir):
    cfg = load_config(
        None, [f"model.path={tiny_dir}", "task.level=shapes", "task.targets_per_screen=3"]
    )
    world = make_world(cfg, load_policy(tiny_dir))
    train = [world.sample(k) for k in world.task_ids("train", 0, 3)]
    assert all((s.image == train[0].image).all() for s in train)
    assert len({s.instruction for s in train}) > 1
    test_ids = world.task_ids("test", 0, 3)
    held = [world.sample(k) for k in test_ids]
    plain = SyntheticSource("shapes")
    assert [s.instruction for s in held] == [plain.sample(k).instruction for k in test_ids]
    remote = world.env_factory("train")
    assert remote is not None and remote.args[0].targets_per_screen == 3


def test_config_refuses_bad_values():
    with pytest.raises(ConfigError, match="targets_per_screen"):
        load_config(None, ["task.targets_per_screen=0"])
    with pytest.raises(ConfigError, match="panel"):
        load_config(None, ["task.targets_per_screen=2", "task.level=hires_panel"])
    with pytest.raises(ConfigError, match="synthetic"):
        load_config(None, ["task.targets_per_screen=2", "task.source=screenspot"])


def test_prompt_order_puts_the_instruction_before_the_image(tiny_dir):
    from vlagent.rollout.trajectory import Trajectory

    policy = load_policy(tiny_dir)
    pad = policy.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    first_word = policy.tokenizer.encode(" red", add_special_tokens=False)
    positions = {}
    for order in ("image_first", "text_first"):
        cfg = load_config(None, [f"model.path={tiny_dir}", f"task.prompt_order={order}"])
        world = make_world(cfg, policy)
        sample = world.sample(world.task_ids("test", 0, 1)[0])
        traj = Trajectory(task_id=0)
        obs = {"image": sample.image, "instruction": "Click the red thing."}
        world.adapter().start(traj, obs, {"target_box_norm": sample.target_box_norm})
        ids = traj.segments[0].prompt.input_ids.tolist()
        word = next(i for i in range(len(ids)) if ids[i : i + len(first_word)] == first_word)
        positions[order] = (word, ids.index(pad))
    assert positions["image_first"][0] > positions["image_first"][1]
    assert positions["text_first"][0] < positions["text_first"][1]


def test_zoom_world_and_bad_order_are_refused(tiny_dir):
    with pytest.raises(ConfigError, match="prompt_order"):
        load_config(None, ["task.prompt_order=sideways"])
    cfg = load_config(
        None, [f"model.path={tiny_dir}", "world=zoom", "task.prompt_order=text_first"]
    )
    with pytest.raises(ConfigError, match="zoom world"):
        make_world(cfg, load_policy(tiny_dir))
