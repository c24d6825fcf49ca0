"""Held-out evaluation (``vlagent.eval.evaluate``): the report's numbers checked against values
computed independently in the test, on hand-built episodes and on a tiny model's episodes;
which tasks, in which order, with which reset seeds."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PIL import Image

from vlagent.codec import Answer
from vlagent.config import load_config
from vlagent.eval.evaluate import evaluate, report_of, wilson_interval
from vlagent.models.loading import load_policy
from vlagent.rollout.trajectory import Trajectory, Turn
from vlagent.worlds import make_world

Z = 1.96
REWARD = "task.reward={point_in_box: 1.0, format: 0.1}"  # terms the test recomputes by hand


def wilson_by_roots(k: int, n: int) -> tuple[float, float]:
    """The Wilson interval as the two roots of (p_hat - p)^2 = z^2 p (1 - p) / n in p (the
    score test's acceptance region), solved with numpy, not with the closed form."""
    p_hat = k / n
    a = 1 + Z * Z / n
    b = -(2 * p_hat + Z * Z / n)
    c = p_hat * p_hat
    lo, hi = sorted(np.roots([a, b, c]).real)
    return float(lo), float(hi)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 7), (3, 7), (7, 7), (50, 200), (1, 500)])
def test_wilson_interval_is_the_score_test_region(k, n):
    lo, hi = wilson_interval(k, n)
    rlo, rhi = wilson_by_roots(k, n)
    assert lo == pytest.approx(max(rlo, 0.0), abs=1e-9)
    assert hi == pytest.approx(min(rhi, 1.0), abs=1e-9)
    assert lo <= k / n <= hi
    assert (lo == 0.0) == (k == 0) and (hi == 1.0) == (k == n)


def test_wilson_interval_published_value_and_empty():
    # Newcombe (1998), Stat. Med. 17:857, Table I, example (i) 81/263: 0.2553 to 0.3662
    lo, hi = wilson_interval(81, 263)
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.fixture(scope="module")
def grounding_world(tiny_dir):
    policy = load_policy(tiny_dir)
    cfg = load_config(None, [f"model.path={tiny_dir}", REWARD])
    world = make_world(cfg, policy)
    yield world, policy
    world.close()


def _episode(task, turns, success, *, error=None, status="terminated", parsed=True):
    """A finished episode: ``turns`` = [(tokens, {term: value}, invalid)]."""
    traj = Trajectory(task_id=task, success=success, error=error, status=status)
    pos = 0
    for tokens, terms, invalid in turns:
        traj.turns.append(
            Turn(
                0,
                pos,
                pos + tokens,
                "x",
                reward=sum(terms.values()),
                reward_terms=dict(terms),
                invalid=invalid,
            )
        )
        pos += tokens
    if parsed:
        traj.extras["answer"] = Answer((0.5, 0.5), None, "x")
    return traj


def test_report_of_hand_built_episodes(grounding_world):
    world, _ = grounding_world
    hit, miss = {"point_in_box": 1.0, "format": 0.1}, {"point_in_box": 0.0, "format": 0.1}
    junk = {"point_in_box": 0.0, "format": 0.0}
    trajs = [
        _episode(0, [(5, hit, False)], True),
        _episode(1, [(7, miss, False)], False),
        _episode(2, [(3, junk, True), (4, hit, False)], True),
        _episode(3, [(9, junk, True)], False, parsed=False),
        _episode(4, [(2, hit, False)], True),
        # a backend error ended it: its reward is NaN and left out of the mean reward
        _episode(5, [(6, miss, False)], False, error="backend died", status="error"),
        _episode(6, [(20, junk, False)], False, status="over_limit", parsed=False),
    ]
    rep = report_of(world, trajs)

    n, k = 7, 3
    assert rep.n == n and rep.success_rate == rep.accuracy == k / n
    assert rep.success_ci == pytest.approx(wilson_by_roots(k, n), abs=1e-9)
    assert [t.task_id for t in rep.trajectories] == list(range(7))
    m = rep.metrics
    # episode rewards by hand: 1.1, 0.1, 1.1, 0, 1.1, (NaN), 0
    assert m["mean_reward"] == pytest.approx((1.1 + 0.1 + 1.1 + 0 + 1.1 + 0) / 6)
    assert m["reward_terms/point_in_box"] == pytest.approx((1 + 0 + 1 + 0 + 1 + 0 + 0) / 7)
    assert m["reward_terms/format"] == pytest.approx((0.1 + 0.1 + 0.1 + 0 + 0.1 + 0.1 + 0) / 7)
    assert m["mean_turns"] == pytest.approx(8 / 7)
    assert m["generated_tokens"] == pytest.approx((5 + 7 + 7 + 9 + 2 + 6 + 20) / 7)
    assert m["invalid_action_rate"] == pytest.approx(2 / 8)
    assert m["over_limit_frac"] == pytest.approx(1 / 7)
    assert m["errored"] == 1.0
    # the grounding world's own metrics
    assert m["accuracy"] == pytest.approx(3 / 7)
    assert m["format_rate"] == pytest.approx(5 / 7)
    s = rep.summary()
    assert s["n"] == 7.0 and s["success_rate"] == k / n
    assert (s["success_ci_low"], s["success_ci_high"]) == rep.success_ci
    assert {key: s[key] for key in m} == m


def test_report_of_no_episodes(grounding_world):
    rep = report_of(grounding_world[0], [])
    assert rep.n == 0 and rep.success_rate == 0.0 and rep.success_ci == (0.0, 1.0)
    assert rep.metrics["mean_reward"] == 0.0 and rep.metrics["mean_turns"] == 0.0


def _point_in_box_by_hand(text: str, box: tuple[float, ...]) -> tuple[bool, bool]:
    """(parsed, hit) of a qwen_json answer in the K1000 space, read without the codec."""
    try:
        obj = json.loads(text.strip())
        x, y = (float(v) for v in obj["point_2d"])
    except (ValueError, KeyError, TypeError):
        return False, False
    if not (0 <= x < 1000 and 0 <= y < 1000):
        return False, False
    px, py = x / 1000, y / 1000
    return True, box[0] <= px <= box[2] and box[1] <= py <= box[3]


@pytest.fixture(scope="module")
def trained_world(sft_dir):
    """The grounding world of the SFT'd tiny model: its answers parse and some hit."""
    policy = load_policy(sft_dir)
    world = make_world(load_config(None, [f"model.path={sft_dir}", REWARD]), policy)
    yield world, policy
    world.close()


def test_evaluate_on_a_tiny_model_matches_a_recount(trained_world):
    world, policy = trained_world
    rep = evaluate(world, policy, "test", 24, batch_size=5, max_new_tokens=20)
    ids = world.task_ids("test", 0, 24)
    assert ids == [world.cfg.task.eval_seed_offset + i for i in range(24)]
    assert [t.task_id for t in rep.trajectories] == ids  # in order across batches of 5
    assert [t.seed for t in rep.trajectories] == [0] * 24

    parsed, hits, tokens = [], [], []
    for t in rep.trajectories:
        (turn,) = t.turns
        p, h = _point_in_box_by_hand(turn.text, world.sample(t.task_id).target_box_norm)
        parsed.append(p)
        hits.append(h)
        tokens.append(turn.end - turn.start)
    k = sum(hits)
    assert 0 < k < 24, "the recount needs both hits and misses"
    assert rep.success_rate == k / 24
    assert rep.success_ci == pytest.approx(wilson_by_roots(k, 24), abs=1e-9)
    rewards = [1.0 * h + 0.1 * p for h, p in zip(hits, parsed, strict=True)]
    assert rep.metrics["mean_reward"] == pytest.approx(float(np.mean(rewards)), abs=1e-9)
    assert rep.metrics["reward_terms/point_in_box"] == pytest.approx(k / 24)
    assert rep.metrics["reward_terms/format"] == pytest.approx(0.1 * sum(parsed) / 24)
    assert rep.metrics["format_rate"] == pytest.approx(sum(parsed) / 24)
    assert rep.metrics["mean_turns"] == 1.0
    assert rep.metrics["generated_tokens"] == pytest.approx(float(np.mean(tokens)))
    assert all(1 <= n <= 20 for n in tokens)


def test_episodes_per_task_resets_with_seeds_0_to_k(trained_world):
    world, policy = trained_world
    rep = evaluate(world, policy, "val", 3, batch_size=4, max_new_tokens=20, episodes_per_task=2)
    ids = world.task_ids("val", 0, 3)
    assert rep.n == 6
    assert [(t.task_id, t.seed) for t in rep.trajectories] == [(i, s) for s in (0, 1) for i in ids]
    # greedy decoding on the same screen: the second round repeats the first
    texts = [t.turns[0].text for t in rep.trajectories]
    assert texts[:3] == texts[3:]


def test_explicit_task_ids_are_kept_in_their_order(trained_world):
    world, policy = trained_world
    ids = world.task_ids("test", 0, 6)[::-1]
    rep = evaluate(world, policy, "test", 99, batch_size=4, max_new_tokens=20, task_ids=ids)
    assert [t.task_id for t in rep.trajectories] == ids and rep.n == 6


def _write_rows(folder, n):
    """n tiny PNG screens with one coloured target each, as JSONL rows (xyxy pixel boxes)."""
    rows = []
    for i in range(n):
        a = np.full((64, 80, 3), 230, np.uint8)
        x0, y0 = 8 + 6 * i, 10 + 4 * i
        a[y0 : y0 + 16, x0 : x0 + 20] = (200, 30, 30)
        Image.fromarray(a).save(folder / f"s{i}.png")
        rows.append(
            {"image": f"s{i}.png", "instruction": "click red", "bbox": [x0, y0, x0 + 20, y0 + 16]}
        )
    path = folder / "eval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_finite_split_is_cut_to_its_size(tiny_dir, tmp_path):
    path = _write_rows(tmp_path, 5)
    cfg = load_config(
        None,
        [
            f"model.path={tiny_dir}",
            "task.source=file",
            f"task.data.path={path}",
            f"task.data.eval_path={path}",
            f"task.data.image_root={tmp_path}",
            "task.data.columns.coords=xyxy_px",
        ],
    )
    policy = load_policy(tiny_dir)
    world = make_world(cfg, policy)
    assert world.num_tasks("test") == 5
    rep = evaluate(world, policy, "test", 500, batch_size=2, max_new_tokens=8)
    assert rep.n == 5  # not 500: the split has 5 records, each evaluated once
    assert [t.task_id for t in rep.trajectories] == [f"eval_eval:{i}" for i in range(5)]
    boxes = [world.sample(t.task_id).target_box_norm for t in rep.trajectories]
    assert boxes[1] == pytest.approx((14 / 80, 14 / 64, 34 / 80, 30 / 64))
    assert all(math.isfinite(t.reward) for t in rep.trajectories)
    world.close()
