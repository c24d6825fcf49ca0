"""Train / demo / validation / test splits never share a task.

Single-turn and zoom worlds (procedural screens): for every packaged recipe, the task ids a real
run uses — GRPO's key stream over ``grpo.steps × prompts_per_step`` (× resampling rounds), SFT's
batches over ``sft.steps`` (fresh tasks, or draws from the ``sft.num_demos`` demonstrations), the
``eval.monitor_screens`` validation screens and the ``eval.num_screens`` test screens — are
pairwise disjoint, and so are the screens themselves (content fingerprints). Offsets that would
let a training range reach a held-out one are refused when the config loads. Apps world: the
training and held-out toggle suites share no task (same template, parameters and phone seed).
"""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest

from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.models.loading import load_policy
from vlagent.train.keys import KeyStream
from vlagent.train.sft import batch_task_ids
from vlagent.worlds import make_world
from vlagent.worlds.apps_tasks import toggle_suites

SYNTHETIC_RECIPES = ["grpo", "sft", "quickstart", "zoom_sft", "zoom_grpo"]
SPLITS = ("train", "demo", "val", "test")


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return load_policy(tiny_dir)


def run_task_ids(cfg, world) -> dict[str, set]:
    """The task ids of each split that a run of ``cfg`` touches, drawn by the code that draws
    them: the GRPO key stream, SFT's batches, the monitor and the final evaluation."""
    g, s, e = cfg.grpo, cfg.sft, cfg.eval
    rounds = g.max_resample_rounds + 1 if g.dynamic_sampling else 1
    train = set(KeyStream(world).take(g.steps * g.prompts_per_step * rounds))
    sft = {k for step in range(s.steps) for k in batch_task_ids(cfg, world, step)}
    demo = sft if s.num_demos > 0 else set()
    if s.num_demos == 0:
        train |= sft
    return {
        "train": train,
        "demo": demo,
        "val": set(world.task_ids("val", 0, e.monitor_screens)),
        "test": set(world.task_ids("test", 0, e.num_screens)),
    }


def fingerprint(sample) -> str:
    """What the policy sees and is scored on: pixels, instruction and target box."""
    h = hashlib.sha256(np.ascontiguousarray(sample.image).tobytes())
    h.update(sample.instruction.encode())
    h.update(repr(tuple(round(v, 9) for v in sample.target_box_norm)).encode())
    return h.hexdigest()


@pytest.mark.parametrize("recipe", SYNTHETIC_RECIPES)
def test_a_runs_splits_are_disjoint(recipe, policy, tiny_dir):
    cfg = load_config(recipe, [f"model.path={tiny_dir}"])
    assert cfg.task.source == "synthetic"
    world = make_world(cfg, policy)
    ids = run_task_ids(cfg, world)
    sizes = {k: len(v) for k, v in ids.items()}
    assert sizes["val"] == cfg.eval.monitor_screens and sizes["test"] == cfg.eval.num_screens
    assert sizes["train"] >= cfg.grpo.steps * cfg.grpo.prompts_per_step
    assert sizes["demo"] == (cfg.sft.num_demos if cfg.sft.num_demos else 0)
    for a, b in itertools.combinations(SPLITS, 2):
        assert not ids[a] & ids[b], f"{recipe}: {a} and {b} share {sorted(ids[a] & ids[b])[:3]}"
    # the screens too, not only the ids: the first 40 of each split, all different
    n = 40 if cfg.world == "grounding" else 12
    seen: dict[str, str] = {}
    for split in SPLITS:
        for key in world.task_ids(split, 0, n):
            sample = world.sample(key)
            fp = fingerprint(sample)
            assert fp not in seen, f"{recipe}: {split} screen {key} repeats {seen.get(fp)}"
            seen[fp] = f"{split} {key}"
            assert sample.sample_id == f"{cfg.task.level}:{key}"
    world.close()


def test_quickstart_seeds_keep_their_demos_apart(policy, tiny_dir):
    """run_quickstart shifts the demo offset by seed × 100,000: demos of seeds 0..9 stay
    disjoint from each other and from the train, validation and test ranges."""
    cfg = load_config("quickstart", [f"model.path={tiny_dir}"])
    world = make_world(cfg, policy)
    held = run_task_ids(cfg, world)
    base = cfg.task.demo_seed_offset
    demos = [
        set(range(base + s * 100_000, base + s * 100_000 + cfg.sft.num_demos)) for s in range(10)
    ]
    for s, d in enumerate(demos):
        for split in ("train", "val", "test"):
            assert not d & held[split], (s, split)
        assert all(not d & e for e in demos[s + 1 :])
    world.close()


@pytest.mark.parametrize(
    "override",
    [
        "task.train_seed_offset=1020000000",  # training on the validation screens
        "task.train_seed_offset=1000000000",  # ... on the test screens
        "task.demo_seed_offset=1000000000",  # demonstrations on the test screens
        "task.demo_seed_offset=1020000000",  # ... on the validation screens
        "task.demo_seed_offset=1015000000",  # 5M demos short of the validation screens
        "task.eval_seed_offset=495000000",  # test screens start 5M below the demos
    ],
)
def test_offsets_that_reach_held_out_screens_are_refused(override):
    with pytest.raises(ConfigError, match=r"task\.\w+_seed_offset"):
        load_config(None, [override])


@pytest.mark.parametrize(
    "over",
    [
        [],
        ["task.train_seed_offset=2000000000"],
        ["task.eval_seed_offset=3000000000", "task.demo_seed_offset=7"],
    ],
)
def test_accepted_offsets_give_disjoint_ranges(over, policy, tiny_dir):
    cfg = load_config(None, [f"model.path={tiny_dir}", *over])
    world = make_world(cfg, policy)
    starts = {s: world.task_ids(s, 0, 1)[0] for s in SPLITS}
    width = 10_000_000  # each range may hold this many tasks before it can reach another
    for a, b in itertools.combinations(SPLITS, 2):
        if {a, b} != {"train", "demo"}:
            assert abs(starts[a] - starts[b]) >= width, (a, b, starts)
    world.close()


def _task_keys(suite: dict) -> dict[tuple, str]:
    """What makes a toggle task the same task: template, parameters and phone seed."""
    return {
        (t["template"], tuple(sorted(t["params"]["toggles"].items())), t["seed"]): t["id"]
        for t in suite["tasks"]
    }


@pytest.mark.parametrize(
    ("train_seeds", "heldout_seeds"), [(3, 2), (1, 0), (2, 1), (50, 50), (100, 100), (100, 7)]
)
def test_toggle_suites_share_no_task(train_seeds, heldout_seeds):
    train, held = toggle_suites(train_seeds, heldout_seeds)
    tk, hk = _task_keys(train), _task_keys(held)
    assert len(tk) == len(train["tasks"]) and len(hk) == len(held["tasks"])  # no duplicates
    assert not set(tk) & set(hk), sorted(set(tk) & set(hk))[:3]
    assert not {t["id"] for t in train["tasks"]} & {t["id"] for t in held["tasks"]}
    # the two-switch combinations split in halves: held-out combinations were never trained
    pairs = lambda s: {k[1] for k in s if len(k[1]) == 2}  # noqa: E731
    assert not pairs(tk) & pairs(hk) and len(pairs(tk)) == len(pairs(hk)) == 20


def test_too_many_toggle_seeds_are_refused():
    """Training seeds 100 × 100 and up are the held-out seeds: refused, not silently shared."""
    with pytest.raises(ValueError, match="train_seeds"):
        toggle_suites(101, 2)
    with pytest.raises(ConfigError, match=r"apps\.train_seeds"):
        load_config("apps_sft", ["apps.train_seeds=101"])


def test_apps_world_splits(policy, tiny_dir):
    """The apps world's train / demo splits read the training suite, val / test the held-out
    suite; the held-out single-switch tasks start from phone states no training task has."""
    cfg = load_config("apps_grpo", [f"model.path={tiny_dir}"])
    world = make_world(cfg, policy)
    train = world.task_ids("train", 0, world.num_tasks("train"))
    test = world.task_ids("test", 0, world.num_tasks("test"))
    assert world.task_ids("demo", 0, len(train)) == train
    assert world.task_ids("val", 0, len(test)) == test
    assert not set(train) & set(test)
    states = {(world.task(t).params.model_dump_json(), repr(world.task(t).initial)) for t in train}
    for t in test:
        task = world.task(t)
        assert (task.params.model_dump_json(), repr(task.initial)) not in states, t
    world.close()
